"""``loadgen sweep --deploy-schedule`` (run/scheddeploy.py) against scripted servers on loopback: a sweep whose
engine reports vLLM 0.24.0 recommends a K schedule; deploying it measures one schedule candidate on the same
prompts and cells in a new sweep folder and compares each cell with the prediction. A schedule server as fast
as its sweep's best K is "as predicted"; one that streams like K = 1 (2x instead of 3x) is "worse than
predicted" in every cell. The committed 7B sweep ("do not speculate") has nothing to deploy: exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.records.schedule import DeployedSchedule, schedule_sweep_doc
from loadgen.run import sweepsetup
from loadgen.run.sweep import run_sweep
from tests.run.test_sweep_flow import GETS, _attach, _options, _stream
from tests.support.scripted_server import scripted_server

#: Timed scripted runs: ratios a vLLM server's load beside them would move (make test runs them in a round of
#: their own, after the end-to-end tests).
pytestmark = pytest.mark.timed


def _engine_024(monkeypatch: pytest.MonkeyPatch) -> None:
    real = sweepsetup.check_pairs
    monkeypatch.setattr(sweepsetup, "check_pairs", lambda *given: ("0.24.0", real(*given)[1]))


@pytest.mark.slow
def test_a_deployed_schedule_is_checked_against_its_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _engine_024(monkeypatch)
    o, path = _options(tmp_path)
    lines: list[str] = []
    with (
        scripted_server(_stream(0), None, GETS) as p,
        scripted_server(_stream(1), None, GETS) as k1,
        scripted_server(_stream(2), None, GETS) as k2,
        scripted_server(_stream(3), None, GETS) as k3,
    ):
        _attach(monkeypatch, {0: p, 1: k1, 2: k2, 3: k3})
        first = run_sweep(path, o, lines.append)
        rec = json.loads((first / "sweep.json").read_text())["recommendation"]["workloads"][0]["schedule"]
        k = rec["config"]["num_speculative_tokens"]
        assert rec["config"]["num_speculative_tokens_per_batch_size"] == [[1, 2, k]] and k in (2, 3)
        fair = run_sweep(None, o, lines.append, deploy=first)
        _attach(monkeypatch, {0: p, k: k1})  # the schedule's server now streams 2 tokens a chunk, not k + 1
        slow = run_sweep(None, o, lines.append, deploy=first)
    for folder in (fair, slow):
        assert folder.parent.name == "scripted-sweep-schedule" and (folder / "sweep.md").is_file()
        proto = json.loads((folder / "protocol.json").read_text())
        assert list(proto["candidates"]) == [f"schedule-k{k}"]
        assert proto["prompts_sha256"] == json.loads((first / "protocol.json").read_text())["prompts_sha256"]
        assert {a for a, *_ in proto["design"]["order"]} == {"plain", "placebo", f"schedule-k{k}"}
    fair_check = json.loads((fair / "schedule-check.json").read_text())
    assert fair_check["sweep_dir"] == str(first) and fair_check["candidates"] == {"w": f"schedule-k{k}"}
    assert [(c["level"], c["k"], c["status"]) for c in fair_check["cells"]] == [
        ("c1", k, "as predicted"),
        ("c2", k, "as predicted"),
    ]
    assert all(c["measured"] == pytest.approx(3.0, rel=0.15) for c in fair_check["cells"])
    slow_check = json.loads((slow / "schedule-check.json").read_text())
    assert [c["status"] for c in slow_check["cells"]] == ["worse than predicted"] * 2
    assert all(c["measured"] == pytest.approx(2.0, rel=0.15) for c in slow_check["cells"])
    assert "2 of 2 cells did worse than the sweep predicted: w c1" in (slow / "schedule-check.md").read_text()
    assert f"2 of 2 cells did worse than the sweep predicted; schedule check: {slow / 'schedule-check.md'}" in lines


def test_two_workloads_with_different_schedules_get_one_candidate_each() -> None:
    a = {"method": "ngram", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[1, 4, 3]]}
    b = {**a, "num_speculative_tokens_per_batch_size": [[1, 4, 3], [5, 16, 0]]}
    doc, index = schedule_sweep_doc(
        {"name": "s", "speculative": {}, "candidates": [{}], "run": {"x": 1}},
        [DeployedSchedule("w1", a), DeployedSchedule("w2", b), DeployedSchedule("w3", a)],
    )
    assert doc["name"] == "s-schedule" and doc["run"] == {"x": 1}
    assert doc["speculative"] == {"name": "schedule1", **a} and doc["candidates"] == [{"name": "schedule2", **b}]
    assert index == {"w1": 0, "w2": 1, "w3": 0}


def test_a_sweep_that_recommends_no_schedule_has_nothing_to_deploy(tmp_path: Path) -> None:
    sweep_dir = "docs/examples/h200/h200-7b-sweep"
    result = CliRunner().invoke(main, ["sweep", "--deploy-schedule", sweep_dir, "--runs-dir", str(tmp_path)])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert result.output.startswith(f"loadgen: error: {sweep_dir}/sweep.json recommends no K schedule")
    result = CliRunner().invoke(main, ["sweep", "--deploy-schedule", str(tmp_path)])
    assert result.exit_code == 2 and f"{tmp_path} has no sweep.json: pass a finished sweep folder" in result.output
    result = CliRunner().invoke(main, ["sweep", "--deploy-schedule", sweep_dir, "--concurrency", "1"])
    assert result.exit_code == 2 and "--deploy-schedule repeats or finishes a run as it was recorded" in result.output
    assert not any(tmp_path.iterdir())
