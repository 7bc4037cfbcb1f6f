"""flow's pure pieces: the served name, launch_spec for both roles (ports, argv, env, attach URLs) and the
bookkeeping of --resume (which cells are kept, which run again, where partial requests go)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.profile.pair import RoleServer
from loadgen.profile.pairfile import load_pair
from loadgen.run import arms, flow
from loadgen.store.rundir import read_jsonl
from tests.profile.test_pairfile import BASE
from tests.support.fakerun import cell, cell_line, request_line, run_folder


def _pair(tmp_path: Path, text: str = BASE) -> Any:
    path = tmp_path / "p.toml"
    path.write_text(text)
    return load_pair(str(path))


def test_the_served_name_is_the_models_folder_name_or_the_hub_id(tmp_path: Path) -> None:
    assert arms.served_name(_pair(tmp_path, BASE.replace('model = "t"', 'model = ".models/smol-135m"'))) == "smol-135m"
    assert arms.served_name(_pair(tmp_path, BASE.replace('model = "t"', 'model = "org/name"'))) == "name"


def test_the_plain_launch_has_no_speculative_config(tmp_path: Path) -> None:
    spec = arms.launch_spec(_pair(tmp_path), "plain", tmp_path)
    assert spec.argv == [
        "vllm",
        "serve",
        "--model",
        "t",
        "--served-model-name",
        "t",
        "--host",
        "127.0.0.1",
        "--port",
        "8300",
        "--seed",
        "0",
    ]
    assert (spec.role, spec.host, spec.port, spec.served_model, spec.startup_timeout_s) == (
        "plain",
        "127.0.0.1",
        8300,
        "t",
        600.0,
    )
    assert spec.log_path == tmp_path / "servers" / "plain.log"
    assert spec.attach_url is None and spec.api_key is None and spec.headers == {}


def test_the_speculative_launch_takes_port_plus_one_and_the_config_as_json(tmp_path: Path) -> None:
    spec = arms.launch_spec(_pair(tmp_path), "speculative", tmp_path, api_key="k")
    assert spec.port == 8301 and spec.argv[spec.argv.index("--port") + 1] == "8301"
    assert spec.argv[-2:] == [
        "--speculative-config",
        '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}',
    ]
    assert spec.log_path == tmp_path / "servers" / "speculative.log"
    assert spec.headers == {"Authorization": "Bearer k"}


def test_role_tables_add_args_env_port_and_a_url(tmp_path: Path) -> None:
    text = BASE.replace(
        'command = ["vllm", "serve"]',
        'command = ["vllm", "serve"]\nargs = ["--a"]\nenv = { X = "1", Y = "1" }\nport = 9000\nseed = 7',
    )
    pair = dataclasses.replace(
        _pair(tmp_path, text),
        servers={"speculative": RoleServer(("--b",), {"Y": "2"}, 9100, None), "plain": RoleServer(url="http://h:1")},
    )
    spec = arms.launch_spec(pair, "speculative", tmp_path)
    assert spec.port == 9100 and spec.env == {"X": "1", "Y": "2"}
    assert spec.argv[spec.argv.index("--seed") : spec.argv.index("--speculative-config")] == [
        "--seed",
        "7",
        "--a",
        "--b",
    ]
    plain = arms.launch_spec(pair, "plain", tmp_path)
    assert (plain.port, plain.env, plain.attach_url) == (9000, {"X": "1", "Y": "1"}, "http://h:1")
    assert arms.launch_spec(pair, "plain", tmp_path, attach_url="http://g:2").attach_url == "http://g:2"


def test_a_pinned_target_revision_is_passed(tmp_path: Path) -> None:
    spec = arms.launch_spec(
        _pair(tmp_path, BASE.replace('model = "t"', 'model = "t"\nrevision = "abc"')), "plain", tmp_path
    )
    assert spec.argv[-2:] == ["--revision", "abc"]


def test_resume_keeps_finished_cells_and_runs_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, run_dir = run_folder(tmp_path, [cell(1, 2, "a"), cell(2, 2, "b")])
    # c1 finished on both; c2 failed on plain and was cut short (no entry) on speculative
    entries = [
        cell_line("plain", "c1"),
        cell_line("speculative", "c1"),
        cell_line("plain", "c2", failure="server died"),
    ]
    (run_dir / "cells.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    records = [request_line(role, lv, i) for lv in ("c1", "c2") for role in ("plain", "speculative") for i in range(2)]
    (run_dir / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    seen: dict[str, Any] = {}

    def execute(run_dir: Path, m: flow.Measurement, *args: Any, **kwargs: Any) -> None:
        seen.update(
            todo=[(s.arm, s.cell.level.label) for s in m.slots],
            attach={a.name: a.attach_url for a in m.arms if a.attach_url},
        )

    monkeypatch.setattr(flow, "execute_run", execute)
    lines: list[str] = []
    assert flow.resume_compare(run_dir, log=lines.append) == run_dir
    # a run of older code (no recorded order) finishes in its own order: plain's cells, then speculative's
    assert seen["todo"] == [("plain", "c2"), ("speculative", "c2")]
    assert lines == [f"resuming {run_dir}: 2 of 4 slots left (4 partial requests moved to requests.partial.jsonl)"]
    assert [(e["role"], e["level"]) for e in read_jsonl(run_dir / "cells.jsonl")] == [
        ("plain", "c1"),
        ("speculative", "c1"),
    ]
    assert [r["level"] for r in read_jsonl(run_dir / "requests.jsonl")] == ["c1"] * 4
    assert list(read_jsonl(run_dir / "requests.partial.jsonl")) == records[4:]
    assert seen["attach"] == {}


def test_resume_with_nothing_left_starts_no_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, run_dir = run_folder(tmp_path, [cell(1, 2, "a")])
    (run_dir / "cells.jsonl").write_text(
        "".join(json.dumps(cell_line(r, "c1")) + "\n" for r in ("plain", "speculative"))
    )
    seen: dict[str, Any] = {}
    monkeypatch.setattr(flow, "execute_run", lambda rd, m, *a, **k: seen.update(todo=m.slots))
    lines: list[str] = []
    flow.resume_compare(run_dir, log=lines.append)
    assert seen["todo"] == []
    assert lines[0].endswith(": 0 of 2 slots left (0 partial requests moved to requests.partial.jsonl)")
