"""Step time that bursts cannot fool, the burst share, and the ratios withheld on bursty cells: closed-form
timelines, a run folder built from them (report.build_card) and the committed H200 example (saved
statistics only)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from loadgen.measure.steptime import burst_share, client_step_s, role_steps, server_step_s
from loadgen.records.cardcell import Distribution, RoleStats
from loadgen.records.cell import CellEntry
from loadgen.records.cellparts import ServerHistogram
from loadgen.records.request import RequestRecord
from loadgen.report.carddata import build_card
from loadgen.report.cardwrite import finish_card

STEP_S = 0.0025  # the engine's step
EPS_S = 30e-6  # the client's cost per event: chunks read together are stamped this far apart
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-1b-draft"


def bursty(t0: float, bursts: int, per_burst: int = 3, step_s: float = STEP_S) -> list[float]:
    """The first chunk alone at ``t0`` (prefill), then ``bursts`` bursts of ``per_burst`` decode steps each:
    the steps of a burst all arrive at the end of its last step, ``EPS_S`` apart, the last exactly then."""
    out = [t0]
    for j in range(bursts):
        end = t0 + (j + 1) * per_burst * step_s
        out += [end - (per_burst - 1 - i) * EPS_S for i in range(per_burst)]
    return out


def test_bursts_fool_the_median_gap_but_not_the_decode_time_per_chunk() -> None:
    requests = [bursty(0.1 * k, 21) for k in range(8)]  # 64 chunks each, 1 token per chunk
    gaps = np.concatenate([np.diff(a) for a in requests])
    assert float(np.median(gaps)) == pytest.approx(EPS_S)  # the old estimate: 0.03 ms
    # (last - first) / (chunks - 1) = 63 steps / 63 gaps = the true step, whatever the bursts
    assert client_step_s(requests) == pytest.approx(STEP_S, rel=1e-9)
    assert burst_share(requests) == pytest.approx(2 / 3)  # two of every three gaps are EPS_S
    assert burst_share([bursty(0.0, 4, per_burst=1)]) == 0.0  # one chunk per step: no bursts
    assert client_step_s([[0.0]]) is None and burst_share([[0.0]]) is None
    line = CellEntry("plain", "w", 64, server_histograms={"icl_s": ServerHistogram(sum=124.095, count=48705.0)})
    assert server_step_s(line) == pytest.approx(124.095 / 48705)
    assert server_step_s(CellEntry("plain", "w", 64)) is None and server_step_s(None) is None


def _run_dir(tmp_path: Path, histograms: bool) -> Path:
    """A run folder of one cell (long-diverse-gpu c=64 of the H200 example's protocol) whose plain stream
    arrives in bursts of 3 steps of 2.5 ms and whose speculative stream has one chunk per 15 ms step."""
    run = tmp_path / "run"
    run.mkdir()
    proto = json.loads((EXAMPLE / "protocol.json").read_text())
    cell = next(c for c in proto["cells"] if c["level"] == "c64" and c["workload"] == "long-diverse-gpu")
    proto["cells"] = [cell]
    (run / "protocol.json").write_text(json.dumps(proto))
    (run / "status.json").write_text(json.dumps({"complete": True, "failure": None}))
    lines = []
    for e in map(json.loads, (EXAMPLE / "cells.jsonl").read_text().splitlines()):
        if (e["level"], e["workload"]) == ("c64", "long-diverse-gpu"):
            lines.append(json.dumps(e if histograms else {**e, "server_histograms": {}}))
    (run / "cells.jsonl").write_text("\n".join(lines) + "\n")
    records = []
    for role, arrivals in (("plain", lambda t: bursty(t, 85)), ("speculative", lambda t: bursty(t, 255, 1, 0.015))):
        for k, pid in enumerate(cell["measured"][:16]):
            a = arrivals(0.02 + 0.001 * k)
            records.append(
                RequestRecord(
                    pid,
                    role,
                    "long-diverse-gpu",
                    64,
                    "measured",
                    0.0,
                    level="c64",
                    send_s=0.001 * k,
                    chunk_arrivals_s=a,
                    chunk_tokens=[1] * len(a),
                    token_ids=[7] * len(a),
                ).to_json()
            )
    (run / "requests.jsonl").write_text("\n".join(map(json.dumps, records)) + "\n")
    return run


def test_a_bursty_cell_gets_the_true_step_time_and_no_itl_ratio(tmp_path: Path) -> None:
    cell = build_card(_run_dir(tmp_path, histograms=False)).to_json()["cells"][0]
    assert cell["plain"]["icl_s"]["p50"] == pytest.approx(EPS_S)  # the burst artefact is still shown...
    assert cell["ratios"]["itl_p50"]["value"] is None  # ...but no ratio is built on it
    assert "burst artefact" in cell["ratios"]["itl_p50"]["unavailable"]
    steps = cell["plain"]["step_time"]
    assert steps["client_step_s"] == pytest.approx(STEP_S, rel=1e-9) and steps["burst_share"] == pytest.approx(2 / 3)
    cost = cell["cost"]
    assert cost["step_source"] == "client"
    assert cost["step_time_ratio"] == pytest.approx(0.015 / STEP_S, rel=1e-9)  # 6, not 500
    assert cost["predicted_speedup"] == pytest.approx(1.0 / 6, rel=1e-4)  # acceptance length 1.00004
    assert any(n.startswith("plain: bursty delivery: 67% of inter-chunk gaps under 0.1 ms") for n in cell["notes"])
    assert not any(n.startswith("speculative: bursty") for n in cell["notes"])


def test_the_server_histogram_gives_the_step_time_when_present(tmp_path: Path) -> None:
    cell = build_card(_run_dir(tmp_path, histograms=True)).to_json()["cells"][0]
    assert cell["cost"]["step_source"] == "server"
    # the example's vllm:inter_token_latency_seconds deltas: 124.095 s / 48,705 and 805.14 s / 48,704
    plain = cell["plain"]["step_time"]["server_step_s"]
    spec = cell["speculative"]["step_time"]["server_step_s"]
    assert plain == pytest.approx(0.0025479, rel=1e-3) and spec == pytest.approx(0.016531, rel=1e-3)
    assert cell["cost"]["step_time_ratio"] == pytest.approx(spec / plain)


def test_report_on_a_saved_example_keeps_its_statistics_and_fixes_the_diagnosis(tmp_path: Path) -> None:
    run = tmp_path / "h200-1b-draft"
    shutil.copytree(EXAMPLE, run)
    before = json.loads((run / "card.json").read_text())
    card = finish_card(run, log=lambda _line: None).to_json()
    assert card["statistics_from"] == "card.json"
    assert len(card["cells"]) == 8
    # its protocol.json declares no criteria (the run judged invented defaults): not judged now
    assert "criteria" not in json.loads((run / "protocol.json").read_text())
    assert card["verdict"]["declared"] is False and card["verdict"]["passed"] is None
    for old, new in zip(before["cells"], card["cells"], strict=True):
        assert new["plain"]["tpot_s"] == old["plain"]["tpot_s"]  # per-request statistics are kept
    long64 = next(c for c in card["cells"] if c["level"] == "c64" and c["workload"] == "long-diverse-gpu")
    assert long64["ratios"]["itl_p50"]["value"] is None  # 449x before
    assert long64["cost"]["step_time_ratio"] == pytest.approx((805.14 / 48704) / (124.095 / 48705), rel=1e-3)
    assert long64["cost"]["agrees"] is True  # predicted 0.15x, measured 0.16x (was 0.00x against 0.16x)
    assert sum(n.startswith("plain: bursty delivery: over half") for n in long64["notes"]) == 1
    again = finish_card(run, log=lambda _line: None).to_json()  # idempotent: no second note
    assert again["cells"] == card["cells"]
    assert "n/a (bursts)" in (run / "card.md").read_text()


def test_saved_statistics_keep_the_step_time_measured_on_the_requests() -> None:
    """Without requests.jsonl, a client step time and burst share the card computed from the requests are
    kept (they cannot be measured again); a card that never had them falls back on the pooled mean."""
    side = RoleStats(
        requests=2,
        errors=0,
        output_throughput_tps=None,
        request_throughput_rps=None,
        ttft_s=None,
        tpot_s=None,
        itl_s=Distribution(count=5, p50=0.002, p99=None),
        e2e_s=None,
        failure=None,
        icl_s=Distribution(count=5, p50=0.002, p99=None, mean=0.004),
    )
    pooled = role_steps(side, None, None)
    assert (pooled.client_step_s, pooled.client_basis, pooled.burst_share) == (
        0.004,
        "pooled (mean inter-chunk latency)",
        None,
    )
    arrivals = [[0.0, 0.002, 0.004, 0.006], [0.0, 0.003, 0.006]]
    measured = role_steps(side, arrivals, None)
    assert measured.client_basis == "median over requests" and measured.burst_share == 0.0
    kept = role_steps(replace(side, step_time=measured), None, None)
    assert kept.client_step_s == measured.client_step_s == client_step_s(arrivals)
    assert (kept.client_basis, kept.burst_share) == ("median over requests", 0.0)
