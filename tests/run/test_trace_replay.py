"""A trace replayed by the ordinary compare on scripted engines whose speculative server slows down with its
crowd (tests/support/scripted_engine.py, ``SCRIPTED_ENGINE_CROWD``): K = 1 makes it 2.0x faster per token while
fewer than 8 requests are in flight on it, and 4x slower steps (0.5x plain) from 8 on. The trace is quiet
(4 requests/s, about 1 in flight), bursts (30 requests/s for 4 s, up to ~36 in flight), then quiet again. The
card's windows follow the script and the share of time speculation pays matches it within 5 points."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from loadgen.profile.pairfile import load_pair
from loadgen.profile.trace import WORDS
from loadgen.run.flow import run_compare
from tests.run.test_drift import _toml_table
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import PAIR, REPO
from tests.support.tokfactory import trained_vocab, write_model

#: Timed scripted runs: ratios a vLLM server's load beside them would move (make test runs them in a round of
#: their own, after the end-to-end tests).
pytestmark = pytest.mark.timed

STEP_S, CROWD, FACTOR, OUT = 0.05, 8, 4.0, 11
QUIET_RPS, BURST_RPS, BURST = 4.0, 30.0, (12.0, 16.0)
SPAN = 28.0


def _trace(path: Path) -> None:
    """Quiet, burst, quiet (module docstring), as a Mooncake trace with shared prefix blocks."""
    times, t = [], 0.0
    while t < SPAN:
        times.append(t)
        t += 1 / (BURST_RPS if BURST[0] <= t < BURST[1] else QUIET_RPS)
    path.write_text(
        "".join(
            json.dumps(
                {"timestamp": round(x * 1000, 3), "input_length": 12, "output_length": OUT, "hash_ids": [i % 3, i]}
            )
            + "\n"
            for i, x in enumerate(times)
        )
    )


def _scripted_pays_share(last_s: float) -> float:
    """The share of the trace's time during which the script has fewer than 8 requests in flight on the
    speculative server: all but the burst and its drain. In the burst each request holds the server for
    (1 + 5 steps) x 4 x STEP_S = 1.2 s, so 30/s keep 36 in flight; after it, they drop under 8 once fewer than
    8 burst requests remain, 1.2 - 8 / 30 s after its end."""
    busy = 1 + (OUT - 1) // 2
    drain = busy * FACTOR * STEP_S - CROWD / BURST_RPS
    return (last_s - (BURST[1] - BURST[0]) - drain) / last_s


@pytest.mark.slow
def test_a_burst_trace_on_scripted_servers_follows_the_script(tmp_path: Path) -> None:
    model = write_model(tmp_path / "model", trained_vocab((" ".join(WORDS),)))
    _trace(tmp_path / "trace.jsonl")
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "tr.toml").write_text(
        f'kind = "trace"\npath = "{tmp_path / "trace.jsonl"}"\noutput_tokens = {OUT}\nblock_tokens = 4\n'
        "window_s = 1.0\n"
    )
    env = {"PYTHONPATH": str(REPO), "SCRIPTED_ENGINE_STEP_S": str(STEP_S)}
    text = (
        PAIR.format(name="trace", k=1, python=sys.executable, repo=REPO)
        .replace(f'env = {{ PYTHONPATH = "{REPO}" }}', f"env = {_toml_table(env)}")
        .replace('model = "org/target"\nrevision = "0123456789abcdef0123456789abcdef01234567"', f'model = "{model}"')
        .replace("port = 8300", f"port = {free_port_block()}")
        .replace('workloads = ["w"]', 'workloads = ["tr"]')
        + f"[servers.speculative]\nenv = {_toml_table(env | {'SCRIPTED_ENGINE_CROWD': f'{CROWD}:{FACTOR}'})}\n"
        '[design]\nblocks = 1\nplacebo = "off"\nco_resident = true\n[slo]\npercentile = 90.0\ntpot_s = 0.07\n'
    )
    (tmp_path / "pair.toml").write_text(text)
    pair = load_pair(str(tmp_path / "pair.toml"), workloads_dir=tmp_path / "workloads")
    run_dir = run_compare(pair, tmp_path / "runs", log=lambda _: None, allow_unpinned=True)
    card = json.loads((run_dir / "card.json").read_text())
    assert card["complete"] is True, card.get("failure")
    (row,) = card["trace"]["workloads"]
    arm = row["arms"]["speculative"]
    windows = arm["windows"]
    peak = max(w["arms"]["speculative"]["in_flight_max"] for w in windows)
    quiet = max(w["arms"]["speculative"]["in_flight_max"] for w in windows if w["end_s"] <= BURST[0])
    assert quiet <= 3 and peak >= 30, (quiet, peak)  # from ~2 to ~40 in flight
    for w in windows:  # away from the burst's edges each window's speedup is the script's within its CI
        if w["end_s"] <= BURST[0] or w["start_s"] >= BURST[1] + 2:
            scripted = 2.0
        elif BURST[0] + 1 <= w["start_s"] and w["end_s"] <= BURST[1]:
            scripted = 0.5
        else:
            continue
        assert w["ci_low"] / 1.05 <= scripted <= w["ci_high"] * 1.05, w  # 5%: the per-chunk overhead of both sides
        assert w["outcome"] == ("pays" if scripted > 1 else "loses"), w
    assert abs(arm["shares"]["time"]["pays"] - _scripted_pays_share(row["span_s"])) <= 0.05, arm["shares"]
    slo = row["servers"]
    assert slo["plain"]["slo"]["hold"] is True and slo["speculative"]["slo"]["hold"] is False
    assert card["trace"]["recommendation"]["tr"]["server"] == "plain"
    assert (run_dir / "plots" / "trace_tr_speculative.png").is_file()
    assert "## Trace replay" in (run_dir / "card.md").read_text()
