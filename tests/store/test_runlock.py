"""One process per run, sweep and fleet folder (store/runlock.py), with real processes: a second
``loadgen compare --resume`` on a folder that a first ``loadgen compare`` is measuring is refused at once
(exit 2, one line naming the first's pid) and leaves the folder alone, so the first's card is complete and
correct; a lock left by a killed process is taken over with one note; a sweep's lock covers its arms'
folders; a fleet folder is locked before Ray is reached."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.fleet.fleetflow import run_fleet
from loadgen.run import flow
from loadgen.run.flow import resume_compare
from loadgen.run.sweep import SweepOptions, run_sweep
from loadgen.store.rundir import read_jsonl
from loadgen.store.runlock import LOCK_NAME, FolderBusy
from tests.support.fakerun import cell, run_folder
from tests.support.lockholder import hold
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import PAIR, REPO, WORKLOAD


def _env() -> dict[str, str]:
    return os.environ | {"PYTHONPATH": str(REPO)}


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    folder = tmp_path / "held"
    folder.mkdir()
    proc = hold(folder)
    yield folder, proc
    proc.kill()
    proc.communicate(timeout=10)  # waits and closes its pipe


def _scripted_pair(tmp_path: Path) -> Path:
    """The scripted engines' pair (ngram, K = 1: spec/plain TPOT 0.5), 2 blocks of 8 requests per arm."""
    (tmp_path / "profiles" / "workloads").mkdir(parents=True)
    (tmp_path / "profiles" / "workloads" / "w.toml").write_text(WORKLOAD)
    text = (
        PAIR.format(name="locked", k=1, python=sys.executable, repo=REPO)
        .replace(
            f'env = {{ PYTHONPATH = "{REPO}" }}', f'env = {{ PYTHONPATH = "{REPO}", SCRIPTED_ENGINE_STEP_S = "0.02" }}'
        )
        .replace("port = 8300", f"port = {free_port_block()}")
        .replace("min_requests = 6", "min_requests = 8")
        + '[design]\nblocks = 2\nplacebo = "blocks"\nco_resident = true\n'
    )
    path = tmp_path / "locked.toml"
    path.write_text(text)
    return path


def _loadgen(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "loadgen", *args],
        cwd=tmp_path,
        env=_env(),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _measuring(runs: Path, timeout_s: float = 60.0) -> Path:
    """The run folder under ``runs`` once 2 measured requests are on disk."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        for folder in runs.glob("locked/*"):
            if sum(1 for r in read_jsonl(folder / "requests.jsonl") if r.get("phase") == "measured") >= 2:
                return folder
        time.sleep(0.1)
    raise AssertionError("the first run measured nothing in time")


@pytest.mark.slow
def test_a_second_process_on_a_run_folder_is_refused_and_the_first_card_is_complete(tmp_path: Path) -> None:
    pair = _scripted_pair(tmp_path)
    first = _loadgen(tmp_path, "compare", str(pair), "--runs-dir", "runs", "--allow-unpinned", "--no-progress")
    try:
        run_dir = _measuring(tmp_path / "runs")
        t0 = time.monotonic()
        second = subprocess.run(
            [sys.executable, "-m", "loadgen", "compare", "--resume", str(run_dir)],
            cwd=tmp_path,
            env=_env(),
            text=True,
            capture_output=True,
            timeout=60,
        )
        assert time.monotonic() - t0 < 10  # at once: no server started, no port tried
        assert first.poll() is None, "the first run ended before the second was refused; the test proved nothing"
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:  # the test failed midway: end the run and close its pipes
            first.kill()
            first.communicate(timeout=30)
    assert second.returncode == 2, (second.stdout, second.stderr)
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{run_dir} is in use by pid {first.pid} " in lines[0], second.stderr
    assert f"loadgen compare {pair} --runs-dir runs" in lines[0] and second.stdout == ""
    assert first.returncode == 0, (out, err)
    assert not (run_dir / "requests.partial.jsonl").exists() and not (run_dir / LOCK_NAME).exists()
    card = json.loads((run_dir / "card.json").read_text())
    assert card["complete"] is True and card["failure"] is None
    (cell,) = card["cells"]
    measured = [r for r in read_jsonl(run_dir / "requests.jsonl") if r.get("phase") == "measured"]
    for arm in ("plain", "placebo", "speculative"):  # 2 blocks of 8 each
        assert sum(1 for r in measured if r["role"] == arm) == 16
    for arm in ("plain", "speculative"):  # every one on the card
        assert cell[arm]["requests"] == 16 and cell[arm]["failure"] is None
    assert cell["complete"] is True and cell["noise_floor"]["ratios"]["tpot_p50"]["blocks"] == 2
    assert 0.4 < cell["ratios"]["tpot_p50"]["value"] < 0.65  # K = 1 on a perfect draft: half the plain TPOT
    assert "Status: **complete**" in (run_dir / "card.md").read_text()


def test_a_lock_left_by_a_killed_process_is_taken_over_with_one_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, folder = run_folder(tmp_path, [cell(1, 2, "a")])
    dead = hold(folder, die=True)
    assert dead.returncode == -signal.SIGKILL and json.loads((folder / LOCK_NAME).read_text())["pid"] == dead.pid
    held_by: list[int] = []
    monkeypatch.setattr(
        flow, "execute_run", lambda rd, *a, **k: held_by.append(json.loads((rd / LOCK_NAME).read_text())["pid"])
    )
    lines: list[str] = []
    flow.resume_compare(folder, log=lines.append)
    assert held_by == [os.getpid()]  # the resume measured holding the lock it took over
    assert lines[0].startswith(f"{folder}: took over the lock of pid {dead.pid} on {socket.gethostname()}, started ")
    assert lines[0].endswith("which ended without releasing it") and lines[1].startswith(f"resuming {folder}: ")
    assert len(lines) == 2 and not (folder / LOCK_NAME).exists()  # released: the next holder takes it quietly
    lines.clear()
    flow.resume_compare(folder, log=lines.append)
    assert len(lines) == 1 and lines[0].startswith("resuming ")


def test_a_held_folder_is_refused_before_anything_is_read_or_rewritten(
    holder: tuple[Path, subprocess.Popen[str]],
) -> None:
    folder, proc = holder
    (folder / "requests.jsonl").write_text('{"role": "plain"}\n')
    with pytest.raises(FolderBusy, match=f"is in use by pid {proc.pid} ") as err:
        resume_compare(folder, log=lambda _: None)
    assert err.value.exit_code == 2
    assert (folder / "requests.jsonl").read_text() == '{"role": "plain"}\n'
    assert not (folder / "requests.partial.jsonl").exists()


def test_a_sweep_folder_lock_covers_its_arms_and_a_fleet_is_locked_before_ray(
    holder: tuple[Path, subprocess.Popen[str]],
) -> None:
    folder, proc = holder
    (folder / "sweep.toml").write_text('name = "s"\n')
    (folder / "cand").mkdir()
    with pytest.raises(FolderBusy, match=f"{folder} is in use by pid {proc.pid} "):
        run_sweep(None, SweepOptions(), log=lambda _: None, resume=folder)
    with pytest.raises(FolderBusy, match=f"{folder} is in use by pid {proc.pid} "):  # an arm's folder within
        resume_compare(folder / "cand", log=lambda _: None)
    assert not (folder / "cand" / LOCK_NAME).exists()
    t0 = time.monotonic()
    with pytest.raises(FolderBusy, match=f"is in use by pid {proc.pid} "):  # no cluster at that address: not tried
        run_fleet(None, "127.0.0.1:9", lambda _: None, resume=folder)
    assert time.monotonic() - t0 < 2
    for command in (["report", str(folder)], ["fleet", "report", str(folder)]):  # nor is a card written into it
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
        assert f"{folder} is in use by pid {proc.pid} " in result.output
    assert sorted(p.name for p in folder.iterdir()) == ["cand", LOCK_NAME, "sweep.toml"]
