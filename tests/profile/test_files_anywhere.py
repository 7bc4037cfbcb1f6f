"""Workload files and prompt files anywhere (profile/locate.py): a path outside the checkout works as well as a
name under profiles/: absolute, relative to the current directory, or relative to the file that names it (the
pair file for its workloads, the workload file for its prompt file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.pairfile import load_pair
from loadgen.records.usage import ClientHost, Hardware
from loadgen.run.plan import protocol, replay_protocol
from tests.support.tokfactory import trained_vocab, write_model


def write_pair(folder: Path, model: Path, workloads: list[str], run_extra: str = "") -> Path:
    """A pair file in ``folder`` (an ngram pair on ``model``; its engine is never started)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pair.toml"
    path.write_text(
        f'name = "outside"\n[target]\nmodel = "{model}"\n[speculative]\nmethod = "ngram"\n'
        "num_speculative_tokens = 2\nprompt_lookup_min = 1\nprompt_lookup_max = 3\n[engine]\n"
        'command = ["/bin/true"]\nargs = ["--max-model-len", "64"]\n[run]\n'
        f"workloads = {json.dumps(workloads)}\nconcurrency = [1]\n{run_extra}"
    )
    return path


def write_workload(path: Path, prompt_path: str, lines: list[object]) -> Path:
    """A ``file`` workload at ``path`` whose ``path`` key is ``prompt_path``; the prompt file (resolved from the
    workload's folder) holds ``lines``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'kind = "file"\npath = "{prompt_path}"\noutput_tokens = 4\n')
    target = Path(prompt_path) if Path(prompt_path).is_absolute() else path.parent / prompt_path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return target


def test_a_workload_and_its_prompt_file_beside_the_pair_file(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m", trained_vocab())
    prompts = write_workload(tmp_path / "mine" / "wl" / "chat.toml", "data/p.jsonl", [{"prompt": "the cat"}])
    pair = load_pair(str(write_pair(tmp_path / "mine", model, ["wl/chat.toml"])))
    (w,) = pair.workloads
    assert (w.name, w.kind, Path(w.path or "")) == ("chat", "file", prompts)
    # a run folder's copy of the pair file finds them from the original's folder (--resume, --protocol)
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "pair.toml").write_text(pair.path.read_text())
    (run / "prompts.jsonl").write_text("")
    host = (ClientHost("3.12.0", "x86_64", "Linux"), Hardware(None, None, 0, ()))
    (run / "protocol.json").write_text(json.dumps(protocol(pair, [], [], host).to_json() | {"cells": []}))
    assert [w.name for w in replay_protocol(run / "protocol.json")[0].workloads] == ["chat"]


def test_absolute_paths_and_paths_relative_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = write_model(tmp_path / "m", trained_vocab())
    absolute = write_workload(tmp_path / "w" / "abs.toml", str(tmp_path / "p" / "a.jsonl"), [{"prompt": "the dog"}])
    cwd_rel = write_workload(tmp_path / "x" / "rel.toml", "q.jsonl", [{"prompt": "a bird"}])
    monkeypatch.chdir(tmp_path)  # x/rel.toml is relative to here, not to the pair file's folder a/
    pair = load_pair(str(write_pair(tmp_path / "a", model, [str(tmp_path / "w" / "abs.toml"), "x/rel.toml"])))
    assert [(w.name, Path(w.path or "").resolve()) for w in pair.workloads] == [("abs", absolute), ("rel", cwd_rel)]


def test_a_missing_workload_path_names_where_it_was_looked_for(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m", trained_vocab())
    with pytest.raises(
        ProfileError,
        match=r"workload file 'nope/w.toml' not found: no .*nope/w.toml nor "
        rf"{tmp_path}/a/nope/w.toml; give its absolute path",
    ):
        load_pair(str(write_pair(tmp_path / "a", model, ["nope/w.toml"])))


def test_a_sweeps_candidate_files_keep_workload_paths_from_the_sweep_files_folder(tmp_path: Path) -> None:
    from loadgen.profile.locate import anchor_workloads

    (tmp_path / "s" / "wl").mkdir(parents=True)
    (tmp_path / "s" / "wl" / "x.toml").write_text("")
    doc = {"name": "s", "run": {"workloads": ["wl/x.toml", "short-homogeneous"], "concurrency": [1]}}
    assert anchor_workloads(doc, tmp_path / "s" / "sweep.toml")["run"] == {
        "workloads": [str(tmp_path / "s" / "wl" / "x.toml"), "short-homogeneous"],
        "concurrency": [1],
    }
    assert doc["run"]["workloads"][0] == "wl/x.toml"  # the sweep file's own table is left as it was
