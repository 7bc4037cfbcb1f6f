"""Real vLLM (CPU): ``loadgen compare`` replays the example trace (profiles/data/trace-example.jsonl, 38
requests over ~20 s, two bursts, shared prefix blocks) on a plain and an n-gram server, through the real CLI.
Every request reaches both servers with its exact input length (the server's own prompt token count) and
output length, and the card holds the trace section: 5 s windows, outcome shares, SLO attainment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loadgen.store.files import load_records
from tests.e2e.conftest import ROOT, _require_engine


def test_the_example_trace_replays_on_the_cpu_engine(tmp_path: Path) -> None:
    _require_engine()
    proc = subprocess.run(
        [sys.executable, "-m", "loadgen", "compare", "tests/data/pairs/trace-cpu.toml", "--runs-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    run_dirs = sorted((tmp_path / "trace-cpu").glob("*"))
    assert run_dirs, proc.stdout[-3000:] + proc.stderr[-3000:]
    card = json.loads((run_dirs[-1] / "card.json").read_text())
    assert card["complete"] is True, (card.get("failure"), proc.stdout[-3000:])
    trace = [json.loads(line) for line in (ROOT / "profiles/data/trace-example.jsonl").read_text().splitlines()]
    lengths = sorted((t["input_length"], t["output_length"]) for t in trace)
    records = [r for r in load_records(run_dirs[-1]) if not r.warmup]
    for role in ("plain", "speculative"):
        mine = [r for r in records if r.role == role]
        assert all(r.error is None for r in mine), [r.error for r in mine if r.error]
        assert sorted((r.usage_prompt_tokens, r.output_tokens) for r in mine) == lengths
    (row,) = card["trace"]["workloads"]
    assert row["requests"] == len(trace) and len(row["arms"]["speculative"]["windows"]) == 4
    shares = row["arms"]["speculative"]["shares"]["time"]
    assert sum(shares.values()) == pytest.approx(1.0)
    assert set(row["servers"]) == {"plain", "speculative"}
    assert all(s["slo"]["requests"] == len(trace) for s in row["servers"].values())
    assert "## Trace replay" in (run_dirs[-1] / "card.md").read_text()
    print(f"trace replay on the CPU engine: {json.dumps(row['arms']['speculative']['shares'])}")
