"""`loadgen sweep` through click's CliRunner: its argument checks and a bad sweep file end with one line
and exit 2 before any server starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main

#: Timed scripted runs: ratios a vLLM server's load beside them would move (make test runs them in a round of
#: their own, after the end-to-end tests).
pytestmark = pytest.mark.timed


def test_sweep_needs_exactly_one_of_pair_or_resume(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sweep"])
    one_of = "give exactly one of PAIR, --protocol SWEEP_DIR/protocol.json, --resume SWEEP_DIR or --deploy-schedule"
    assert result.exit_code == 2 and one_of in result.output
    result = CliRunner().invoke(main, ["sweep", "--resume", str(tmp_path)])
    assert result.exit_code == 2 and "is not a sweep folder (no sweep.toml)" in result.output
    result = CliRunner().invoke(main, ["sweep", "demo-cpu-sweep", "--protocol", str(tmp_path / "protocol.json")])
    assert result.exit_code == 2 and one_of in result.output


def test_sweep_protocol_of_a_run_folder_points_at_compare(tmp_path: Path) -> None:
    run = Path("docs/examples/h200/h200-1b-ngram/protocol.json")
    result = CliRunner().invoke(main, ["sweep", "--protocol", str(run), "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1] == (
        f"loadgen: error: {run} is not a sweep folder's protocol.json (no candidates or no sweep.toml beside it); "
        "pass SWEEP_DIR/protocol.json, or repeat a run with `loadgen compare --protocol`"
    )
    assert not (tmp_path / "runs").exists()


def test_sweep_protocol_refuses_overrides(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sweep", "--protocol", str(tmp_path / "p.json"), "--concurrency", "1"])
    assert result.exit_code == 2 and "--protocol repeats or finishes a run as it was recorded" in result.output


def test_a_k_listed_twice_is_refused_before_anything_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(Path("profiles/pairs/demo-cpu-sweep.toml").read_text().replace("[1, 2]", "[1, 2, 2]"))
    result = CliRunner().invoke(main, ["sweep", str(bad), "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "num_speculative_tokens lists a K twice" in result.output
    assert not (tmp_path / "runs").exists()


def test_check_and_compare_point_a_sweep_file_at_sweep() -> None:
    result = CliRunner().invoke(main, ["check", "demo-cpu-sweep"])
    assert result.exit_code == 2 and "is a sweep pair file" in result.output
    assert "loadgen sweep demo-cpu-sweep" in result.output


def test_the_sweep_command_named_for_a_path_with_a_space_can_be_pasted(tmp_path: Path) -> None:
    """`loadgen check "my pairs/s.toml"` said to run `loadgen sweep my pairs/s.toml`: two arguments once pasted."""
    pair = tmp_path / "my pairs" / "s.toml"
    pair.parent.mkdir()
    pair.write_text(Path("profiles/pairs/demo-cpu-sweep.toml").read_text())
    result = CliRunner().invoke(main, ["check", str(pair)])
    assert result.exit_code == 2 and f"run `loadgen sweep '{pair}'` (make sweep PAIR=...)" in result.output


def test_a_history_folder_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sweep", "demo-cpu-sweep", "--history", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "--history" in result.output and "does not exist" in result.output


@pytest.mark.slow
def test_a_sweep_whose_criteria_fail_ends_as_a_compare_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real sweep flow on scripted servers (tests/run/test_sweep_flow.py) under criteria no candidate can
    meet: the card's path, then compare's kind of exit 3 line, and no error line after it."""
    from loadgen.cli.ending import RUN_FAILED, SWEEP_FAILED
    from tests.run.test_sweep_flow import GETS, SWEEP, WORKLOAD, _attach, _stream
    from tests.support.scripted_server import scripted_server

    (tmp_path / "profiles" / "workloads").mkdir(parents=True)
    (tmp_path / "profiles" / "workloads" / "w.toml").write_text(WORKLOAD)
    one = SWEEP[: SWEEP.index("[[candidates]]")] + SWEEP[SWEEP.index("[engine]") :]  # plain, placebo, K = 1 and 2
    one = one.replace("concurrency = [1, 2]", "concurrency = [2]").replace("min_requests = 4", "min_requests = 2")
    (tmp_path / "sweep.toml").write_text(one + '[criteria]\nprimary = ["tpot_p50"]\nmin_speedup = 10.0\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tests.run.test_sweep_flow.STEP_S", 0.005)
    with (
        scripted_server(_stream(0), None, GETS) as p,
        scripted_server(_stream(1), None, GETS) as k1,
        scripted_server(_stream(2), None, GETS) as k2,
    ):
        _attach(monkeypatch, {0: p, 1: k1, 2: k2})
        result = CliRunner().invoke(main, ["sweep", str(tmp_path / "sweep.toml"), "--runs-dir", str(tmp_path / "r")])
    assert result.exit_code == 3
    sweep_dir = next((tmp_path / "r" / "scripted-sweep").glob("sweep-*"))
    assert result.output.splitlines()[-2:] == [f"sweep card: {sweep_dir / 'sweep.md'}", SWEEP_FAILED]
    assert "loadgen: error" not in result.output
    assert SWEEP_FAILED.replace("the sweep finished and no candidate meets", "") == RUN_FAILED.replace(
        "the run finished and its verdict failed", ""
    )  # the same words after what failed


@pytest.mark.parametrize("bad", ["-5", "0", "nan", "inf", "ten"])
def test_a_budget_that_is_no_positive_finite_number_is_a_usage_error(bad: str, tmp_path: Path) -> None:
    """`--budget-min -5` or `nan` was taken and refused the sweep as over it ("more than --budget-min nan")."""
    result = CliRunner().invoke(
        main, ["sweep", "demo-cpu-sweep", "--budget-min", bad, "--runs-dir", str(tmp_path / "runs")]
    )
    assert result.exit_code == 2 and result.output.startswith("Usage: ")
    assert f"{bad!r} is no budget; give the minutes the sweep may take, a number above 0 such as 30" in result.output
    assert not (tmp_path / "runs").exists()


def test_sweep_takes_no_progress_as_compare_does(tmp_path: Path) -> None:
    # the flag is taken (no "No such option"); the run then stops at its own first check, as without it
    result = CliRunner().invoke(main, ["sweep", "--no-progress", "--resume", str(tmp_path)])
    assert result.exit_code == 2 and "is not a sweep folder (no sweep.toml)" in result.output
    assert "No such option" not in result.output
    help_text = " ".join(CliRunner().invoke(main, ["compare", "--help"]).output.split())
    assert "one after the other" not in help_text and "kept up together when they fit" in help_text
