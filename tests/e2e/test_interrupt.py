"""Ctrl-C in the middle of a run against two real vLLM CPU servers: nothing measured is lost and no
server process survives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from loadgen.profile.pairfile import load_pair
from loadgen.run.plan import plan_cells, probe_host, protocol
from loadgen.store.files import load_records
from loadgen.store.rundir import read_jsonl
from tests.e2e.conftest import ROOT, _require_engine


def _servers_on(ports: tuple[int, ...]) -> list[int]:
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info.get("cmdline") or [])
        if "vllm.entrypoints" in cmd and any(f"--port {p}" in cmd for p in ports):
            found.append(proc.info["pid"])
    return found


def test_sigint_mid_run_keeps_the_partial_run_and_leaves_no_server(tmp_path: Path) -> None:
    _require_engine()
    proc = subprocess.Popen(
        [sys.executable, "-m", "loadgen", "compare", "tests/data/pairs/interrupt.toml", "--runs-dir", str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # SIGINT as in a terminal, even when the tests run as a shell's background job (SIGINT ignored there)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 900
    for line in proc.stdout:
        lines.append(line)
        # the speculative server has finished its first block: interrupt the next one (its second block of the
        # first cell: block 1 takes the arms in reverse order)
        if line.startswith("[speculative] short-homogeneous c1") and not line.rstrip().endswith(": started"):
            time.sleep(1.0)
            proc.send_signal(signal.SIGINT)
            break
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the run never reached its speculative cells:\n" + "".join(lines[-20:]))
    rest, _ = proc.communicate(timeout=120)
    output = "".join(lines) + rest
    assert proc.returncode == 1, output[-2000:]
    assert "interrupted" in output

    # no server process survives, and both servers recorded a clean teardown
    assert _servers_on((8350, 8351)) == []
    run_dir = next((tmp_path / "interrupt").iterdir())
    for role in ("plain", "speculative"):
        teardown = json.loads((run_dir / "servers" / f"{role}-teardown.json").read_text())
        assert teardown["survivors"] == []

    # everything measured is on disk: the first block of the first cell on every arm, in the balanced order
    status = json.loads((run_dir / "status.json").read_text())
    assert status["complete"] is False and "interrupted" in status["failure"]
    cells = list(read_jsonl(run_dir / "cells.jsonl"))
    assert [(c["role"], c["workload"], c["level"], c["repetition"]) for c in cells][:3] == [
        ("plain", "short-homogeneous", "c1", 0),
        ("placebo", "short-homogeneous", "c1", 0),
        ("speculative", "short-homogeneous", "c1", 0),
    ]
    finished = sum(1 for c in cells if not c.get("failure"))
    records = [r for r in load_records(run_dir) if not r.warmup]
    assert sum(1 for r in records if r.role == "plain") == 3
    assert all(r.error is None and r.output_tokens == 33 for r in records if r.role == "plain")
    card = (run_dir / "card.md").read_text()
    assert "INCOMPLETE: interrupted" in card
    card_json = json.loads((run_dir / "card.json").read_text())
    first = card_json["cells"][0]
    assert first["speculative"]["acceptance"]["acceptance_rate"] == 1.0

    # resume: only the unfinished speculative cells run again, with the same protocol
    protocol_before = (run_dir / "protocol.json").read_text()
    resumed = subprocess.run(
        [sys.executable, "-m", "loadgen", "compare", "--resume", str(run_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    # the resumed run finishes: exit 0 or 3 as its verdict passes or not (a self-draft on a CPU is rarely clear
    # of the A/A floor, so the verdict is whatever the one decision says: docs/metrics.md "The decision")
    assert resumed.returncode in (0, 3), resumed.stdout[-2000:] + resumed.stderr[-2000:]
    # 3 arms x 2 blocks x 2 cells = 12 slots
    assert f"{12 - finished} of 12 slots left" in resumed.stdout
    assert (run_dir / "protocol.json").read_text() == protocol_before
    final = json.loads((run_dir / "card.json").read_text())
    assert final["complete"] is True and final["failure"] is None
    assert resumed.returncode == (0 if final["verdict"]["passed"] else 3)
    assert f"verdict: {final['verdict']['status'].upper()}" in resumed.stdout
    # the same cells, prompts and protocol as an uninterrupted run of this pair would have
    pair = load_pair("tests/data/pairs/interrupt.toml")
    fresh = plan_cells(pair)
    prompts = [p for c in fresh for p in (*c.warmup, *c.measured, *c.cooldown)]
    expected = protocol(pair, fresh, prompts, probe_host()).to_json()
    saved = json.loads(protocol_before)
    assert saved["cells"] == expected["cells"] and saved["prompts_sha256"] == expected["prompts_sha256"]
    assert [(c["workload"], c["level"]) for c in final["cells"]] == list(
        dict.fromkeys((c.workload, c.level.label) for c in fresh)
    )  # one card cell per (workload, level)
    assert all(c["complete"] for c in final["cells"])
    records = [r for r in load_records(run_dir) if not r.warmup]
    assert len(records) == 12 * 3 and all(r.error is None for r in records)
    assert (run_dir / "requests.partial.jsonl").is_file()
