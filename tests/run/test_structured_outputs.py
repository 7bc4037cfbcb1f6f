"""Structured outputs as a workload option, black box: a workload file's ``structured_outputs`` is sent as declared
and identically to both scripted servers that loadgen launches (without ``ignore_eos`` and ``min_tokens``: the
grammar ends each output), outputs shorter than asked are no failure, and the card says the workload is
grammar-constrained and why fewer draft tokens than K per step come; ``loadgen check`` refuses a bad shape (a
workload's or a prompt line's) in one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli.commands import main
from loadgen.profile.pairfile import load_pair
from loadgen.run.flow import run_compare
from loadgen.serve.portlock import ENV_DIR
from tests.support.clirun import exited
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import WORKLOAD, write_small_pair

CHOICE = 'structured_outputs = { choice = ["yes", "no"] }\n'


@pytest.fixture(autouse=True)
def _own_hold_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "holds"))


def _pair(root: Path, workload: str, tail: str = "") -> Path:
    """The scripted engine's small pair, an MTP head at K = 2 (a method that holds K), whose workload file
    ``w.toml`` is ``workload``."""
    path = write_small_pair(root, "grammar", free_port_block(2), '[design]\nblocks = 2\nplacebo = "off"\n' + tail)
    text = path.read_text().replace('workloads = ["w"]', f'workloads = ["{root / "workloads" / "w.toml"}"]')
    start, end = text.index("[speculative]"), text.index("[engine]")
    path.write_text(text[:start] + '[speculative]\nmethod = "mtp"\nnum_speculative_tokens = 2\n' + text[end:])
    (root / "workloads" / "w.toml").write_text(workload)
    return path


def test_a_grammar_workload_is_sent_alike_and_named_on_the_card(tmp_path: Path) -> None:
    bodies = {role: tmp_path / f"{role}-bodies.jsonl" for role in ("plain", "speculative")}
    tail = "".join(
        f'[servers.{role}]\nenv = {{ SCRIPTED_ENGINE_METRICS = "1", SCRIPTED_ENGINE_BODIES = "{path}" }}\n'
        for role, path in bodies.items()
    )
    pair = load_pair(str(_pair(tmp_path, WORKLOAD + CHOICE, tail)))
    run_dir = run_compare(pair, tmp_path / "runs", log=lambda _: None, allow_unpinned=True)
    sent = {role: [json.loads(x) for x in path.read_text().splitlines()] for role, path in bodies.items()}
    measured = {role: [b for b in got if b.get("cache_salt")] for role, got in sent.items()}  # not the readiness one
    for got in measured.values():
        assert got and all(b["structured_outputs"] == {"choice": ["yes", "no"]} for b in got)
        assert all(b["ignore_eos"] is False and "min_tokens" not in b and b["max_tokens"] == 9 for b in got)
    strip = ("cache_salt",)
    same = [{k: v for k, v in b.items() if k not in strip} for b in measured["plain"]]
    assert sorted(map(json.dumps, same)) == sorted(
        json.dumps({k: v for k, v in b.items() if k not in strip}) for b in measured["speculative"]
    )
    card = json.loads((run_dir / "card.json").read_text())
    assert card["complete"] is True and card["failure"] is None
    (cell,) = card["cells"]
    assert cell["plain"]["failure"] is None and cell["speculative"]["failure"] is None  # 4 of 9 tokens: the grammar
    text = (run_dir / "card.md").read_text()
    assert "grammar-constrained: structured_outputs choice on every request, received " in text
    assert "fewer draft tokens than K per step are expected there" in text
    assert (
        "speculative: mean verified tokens per step 1.00 of K = 2 (the workload is grammar-constrained "
        "(structured_outputs choice on every request): fewer than K per step is by design)"
    ) in text
    assert "spec-decode counters inconsistent" not in text


@pytest.mark.parametrize(
    ("workload", "prompts", "says"),
    [
        (
            WORKLOAD + "structured_outputs = { choice = [] }\n",
            None,
            "structured_outputs.choice must be a non-empty list of strings, got [] (see profiles/README.md, "
            "Structured outputs)",
        ),
        (
            WORKLOAD + 'structured_outputs = { regex = "[a-z]+", json_object = true }\n',
            None,
            "structured_outputs needs exactly one of json, regex, choice, grammar, json_object, structural_tag, got 2",
        ),
        (
            WORKLOAD.replace("short-homogeneous", "file") + 'path = "p.jsonl"\n',
            '{"prompt": "a", "response_format": {"type": "json_object"}}\n{"prompt": "b", "guided_json": {}}\n',
            "line 2: guided_json is vLLM's older field (removed in 0.12.0): write structured_outputs = { json = ... }",
        ),
    ],
)
def test_check_refuses_a_bad_grammar_in_one_line(tmp_path: Path, workload: str, prompts: str | None, says: str) -> None:
    path = _pair(tmp_path, workload)
    if prompts is not None:
        (tmp_path / "workloads" / "p.jsonl").write_text(prompts)
    [line] = exited(CliRunner().invoke(main, ["check", str(path)]), 2)
    assert line.startswith("loadgen: error: ") and says in line, line


def test_a_prompt_lines_own_grammar_is_counted_for_the_card(tmp_path: Path) -> None:
    from loadgen.profile.promptfile import read_prompt_file
    from loadgen.profile.workload import constrained_words

    path = tmp_path / "p.jsonl"
    path.write_text(
        '{"prompt": "a", "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}}\n'
        '{"prompt": "b"}\n'
    )
    entries = read_prompt_file(path).entries
    assert json.loads(entries[0].constraint or "")["response_format"]["type"] == "json_schema"
    assert entries[1].constraint is None
    assert constrained_words(None, entries) == "response_format json_schema on 1 of 2 lines"
    workload = json.dumps({"structured_outputs": {"regex": "[0-9]+"}})
    assert constrained_words(workload, entries) == (
        "response_format json_schema on 1 of 2 lines; the others structured_outputs regex"
    )
