"""``loadgen runs [PAIR]`` over hand-written run, sweep and fleet folders (and one a live process holds), and a
run refused before measuring: marked ``refused.json`` with nothing else written, listed as refused, and
``loadgen report`` on it exits 2 (store/refused.py, cli/runlist.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import ServerError
from loadgen.profile.pairfile import load_pair
from loadgen.run.flow import run_compare
from tests.support.cards import full_card
from tests.support.faultrun import engines, env, run_dir, write_pair
from tests.support.lockholder import hold
from tests.support.promstack import free_port, free_port_block
from tests.support.scripted_engine import PAIR, REPO, WORKLOAD


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _run(root: Path, pair: str, stamp: str, status: dict[str, object] | None, verdict: str | None = None) -> Path:
    folder = root / pair / stamp
    _write(folder / "protocol.json", {"pair": pair})
    if status is not None:
        _write(folder / "status.json", status)
    if verdict is not None:
        _write(folder / "card.json", full_card({"verdict": {"summary": verdict}}))
    return folder


def test_runs_lists_every_folder_with_its_status_and_verdict(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = _run(runs, "a", "20260101T000000Z", {"complete": True, "failure": None}, "PASS: tpot_p50 0.61 <= 0.9")
    cut = _run(runs, "a", "20260101T010000Z", {"complete": False, "failure": "interrupted (Ctrl-C or SIGTERM)"})
    died = _run(
        runs,
        "a",
        "20260101T020000Z",
        {"complete": False, "failure": "plain server died (exit -9)"},
        "INCONCLUSIVE: nothing measured",
    )
    # the interrupted run holds 45 measured requests (and a warmup one): said, with the command that finishes it
    lines = [{"phase": "warmup"}] + [{"phase": "measured"}] * 45
    (cut / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"phase": "meas')
    killed = _run(runs, "a", "20260101T030000Z", None)  # killed before its status was written
    refused = runs / "a" / "20260101T040000Z"
    _write(
        refused / "refused.json",
        {
            "reason": "plain server: connection refused at http://h:1",
            "exit_code": 1,
            "refused_utc": "2026-01-01T04:00:00+00:00",
        },
    )
    sweep = runs / "b" / "sweep-20260101T000000Z"
    _write(sweep / "status.json", {"complete": True, "failure": None})
    long = "speculate with k2 at every level " + "because the noise floor is narrow " * 12  # over 400 characters
    _write(sweep / "sweep.json", {"recommendation": {"lines": [long]}})
    (sweep / "sweep.toml").write_text('name = "b"\n')
    _write(sweep / "k2" / "protocol.json", {})  # a candidate's folder: part of the sweep, not listed
    fleet = runs / "fleet-f-20260101T000000Z"
    _write(
        fleet / "tasks.json",
        {"tasks": [{"pair": "a", "status": "done", "exit_code": 3}, {"pair": "c", "status": "failed", "exit_code": 1}]},
    )
    live = _run(runs, "b", "20260101T050000Z", {"complete": False, "failure": "the run stopped"})
    holder = hold(live)
    try:
        result = CliRunner().invoke(main, ["runs", "--runs-dir", str(runs)])
        only_b = CliRunner().invoke(main, ["runs", "b", "--runs-dir", str(runs)])
    finally:
        holder.kill()
        holder.communicate(timeout=10)  # waits and closes its pipe
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"complete  run   {done}  PASS: tpot_p50 0.61 <= 0.9",
        f"partial   run   {cut}  45 measured requests on disk; stopped: interrupted (Ctrl-C or SIGTERM); "
        f"`loadgen compare --resume {cut}` finishes it",
        f"failed    run   {died}  0 measured requests on disk; stopped: plain server died (exit -9)",
        f"partial   run   {killed}  0 measured requests on disk; stopped: the run stopped before it wrote "
        f"its status (killed, or its folder could not be written); `loadgen compare --resume {killed}` finishes it",
        f"refused   run   {refused}  plain server: connection refused at http://h:1",
        f"running   run   {live}  held by pid {holder.pid} since " + result.output.split(" since ")[1].split("\n")[0],
        f"complete  sweep {sweep}  {long[:120].rsplit(' ', 1)[0]} ... (in full: {sweep / 'sweep.md'})",
        f"failed    fleet {fleet}  1 of 2 tasks done, 1 failed their declared criteria",
    ]
    assert only_b.exit_code == 0 and [line.split()[2] for line in only_b.output.splitlines()] == [str(live), str(sweep)]
    none = CliRunner().invoke(main, ["runs", "zz", "--runs-dir", str(runs)])
    assert none.exit_code == 0 and none.output == f"no run folders of zz under {runs}\n"
    missing = CliRunner().invoke(main, ["runs", "--runs-dir", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and missing.output.count("\n") == 1 and "pass --runs-dir DIR" in missing.output


def test_a_run_refused_before_measuring_leaves_only_its_plan_and_a_refused_marker(tmp_path: Path) -> None:
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "w.toml").write_text(WORKLOAD)
    path = tmp_path / "refused.toml"
    path.write_text(PAIR.format(name="refused", k=1, python=sys.executable, repo=REPO) + '[design]\nplacebo = "off"\n')
    pair = load_pair(str(path), workloads_dir=tmp_path / "workloads")
    plain, spec = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
    lines: list[str] = []
    try:
        run_compare(
            pair, tmp_path / "runs", log=lines.append, attach={"plain": plain, "speculative": spec}, allow_unpinned=True
        )
        raise AssertionError("an unreachable attached server was measured")
    except ServerError as exc:
        error = str(exc)
    (run_dir,) = (tmp_path / "runs" / "refused").iterdir()
    assert f"connection refused at {plain}" in error
    marker = json.loads((run_dir / "refused.json").read_text())
    assert marker["reason"] == error and marker["exit_code"] == 1
    assert lines[-1] == f"nothing measured; {run_dir} is marked refused (refused.json)"
    written = sorted(p.name for p in run_dir.iterdir())
    assert written == [
        "checks.json",
        "metrics",
        "pair.toml",
        "prompts.jsonl",
        "protocol.json",
        "refused.json",
        "servers",
    ]
    assert not any((run_dir / "servers").iterdir()) and not any((run_dir / "metrics").iterdir())
    listed = CliRunner().invoke(main, ["runs", "--runs-dir", str(tmp_path / "runs")])
    assert listed.output == f"refused   run   {run_dir}  {error}\n"
    report = CliRunner().invoke(main, ["report", str(run_dir)])
    assert report.exit_code == 2 and report.output.count("\n") == 1
    assert f"{run_dir} was refused before measuring (" in report.output
    assert f"run `loadgen compare --resume {run_dir}`" in report.output
    assert not (run_dir / "card.json").exists()


def test_report_of_a_refused_sweep_exits_2_and_names_sweep_resume(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep-20260101T000000Z"
    (sweep / "candidates").mkdir(parents=True)
    (sweep / "sweep.toml").write_text('name = "s"\n')
    _write(
        sweep / "refused.json",
        {
            "reason": "plain server: connection refused at http://h:1",
            "exit_code": 1,
            "refused_utc": "2026-01-01T00:00:00+00:00",
        },
    )
    result = CliRunner().invoke(main, ["report", str(sweep)])
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert "(plain server: connection refused at http://h:1)" in result.output
    assert f"run `loadgen sweep --resume {sweep}`" in result.output
    assert sorted(p.name for p in sweep.iterdir()) == ["candidates", "refused.json", "sweep.toml"]


def test_runs_names_a_card_that_does_not_match_its_type(tmp_path: Path) -> None:
    folder = _run(tmp_path / "runs", "a", "20260101T000000Z", {"complete": True, "failure": None}, "PASS")
    _write(folder / "card.json", full_card({"verdict": {"summary": "PASS", "passed": "yes"}}))
    result = CliRunner().invoke(main, ["runs", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 0
    assert result.output.splitlines() == [
        f"complete  run   {folder}  unreadable card ({folder / 'card.json'}: verdict.passed: expected true or "
        "false, got 'yes'; re-render with `loadgen report` or restore the file)"
    ]


def test_diff_against_a_refused_or_running_folder_says_what_it_is(tmp_path: Path) -> None:
    measured = _run(tmp_path / "runs", "a", "20260101T000000Z", {"complete": True, "failure": None}, "PASS")
    refused = tmp_path / "runs" / "a" / "20260101T010000Z"
    reason = "plain server: connection refused at http://h:1"
    _write(refused / "refused.json", {"reason": reason, "exit_code": 1, "refused_utc": "2026-01-01T01:00:00+00:00"})
    # a candidate that measured nothing lost every cell of the baseline: a regression (exit 3), not bad input
    lost = CliRunner().invoke(main, ["diff", str(measured), str(refused)])
    assert lost.exit_code == 3 and lost.output.count("\n") == 1, lost.output
    assert f"{refused} was refused before measuring ({reason}): nothing was measured" in lost.output
    assert f"`loadgen compare --resume {refused}`" in lost.output and "loadgen report" not in lost.output
    baseline = CliRunner().invoke(main, ["diff", str(refused), str(measured)])
    assert baseline.exit_code == 2 and f"the baseline {refused} was refused before measuring" in baseline.output
    live = _run(tmp_path / "runs", "a", "20260101T020000Z", {"complete": False, "failure": None})
    holder = hold(live)
    try:
        busy = CliRunner().invoke(main, ["diff", str(measured), str(live)])
    finally:
        holder.kill()
        holder.communicate(timeout=10)  # waits and closes its pipe
    assert busy.exit_code == 2 and "loadgen report" not in busy.output, busy.output
    assert f"{live} is being measured now by process {holder.pid} and has no card yet" in busy.output


@pytest.mark.slow
def test_runs_shows_a_measuring_run_s_slot_counter_and_time_left(tmp_path: Path) -> None:
    """``loadgen compare`` in a subprocess against two attached scripted engines (2 blocks x plain, placebo and
    speculative: 6 slots, 3 requests each at 9 tokens of 50 ms); ``loadgen runs`` read while it measures shows
    the slot counter and, once a slot has ended, the time left; the finished folder's progress.json counts every
    slot done."""
    port = free_port_block(4)
    slow = {"SCRIPTED_ENGINE_STEP_S": "0.05"}
    with engines(tmp_path, {"plain": port + 2, "speculative": port + 3}, {"plain": slow, "speculative": slow}) as urls:
        pair = write_pair(tmp_path, port, "blocks")
        argv = [sys.executable, "-m", "loadgen", "compare", str(pair), "--allow-unpinned", "--no-progress"]
        argv += ["--runs-dir", str(tmp_path / "runs"), "--attach-plain", urls["plain"]]
        argv += ["--attach-speculative", urls["speculative"]]
        proc = subprocess.Popen(argv, cwd=tmp_path, env=env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        seen: list[str] = []
        while proc.poll() is None:
            listed = CliRunner().invoke(main, ["runs", "--runs-dir", str(tmp_path / "runs")])
            seen += [line for line in listed.output.splitlines() if line.startswith("running ") and "slot" in line]
            time.sleep(0.05)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out.decode()
    run = run_dir(tmp_path)
    shape = re.compile(
        rf"running   run   {re.escape(str(run))}  held by pid {proc.pid} since \S+; "
        r"(?:slot (\d)/6|(\d)/6 slots done)(?:, (time left not known yet|about \d+ s left))? \(at \S+\)"
    )
    matched = [shape.fullmatch(line) for line in seen]
    assert seen and all(matched), [line for line, m in zip(seen, matched, strict=True) if not m]
    running = [int(m.group(1)) for m in matched if m and m.group(1)]  # the slot being measured
    assert running == sorted(running) and len(set(running)) >= 3, seen
    assert any(m.group(3).startswith("about") for m in matched if m and m.group(3)), seen
    assert all(m.group(3) == "time left not known yet" for m in matched if m and m.group(1) == "1"), seen
    assert all(m.group(3) is None for m in matched if m and m.group(2) == "6"), seen  # measured: no time left
    saved = json.loads((run / "progress.json").read_text())
    assert (saved["slots_done"], saved["slots_planned"], saved["sizing"], saved["current"]) == (6, 6, False, None)
    done = CliRunner().invoke(main, ["runs", "--runs-dir", str(tmp_path / "runs")])
    assert done.output.startswith(f"complete  run   {run}  ")
