"""tracedata / tracemd: a sweep folder's trace section over every arm (closed-form records): SLO attainment
per server, capacity over the time-scale variants, the recommendation among plain and the candidates, and its
Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.records.request import RequestRecord
from loadgen.records.sweep import SweepCard
from loadgen.report.sweepmd import render_sweep_markdown
from loadgen.report.tracedata import sweep_trace
from loadgen.report.tracemd import trace_rows


def _rec(role: str, workload: str, i: int, tpot: float) -> RequestRecord:
    due = 100.0 + i * 0.5
    arrivals = [due + 0.05 + k * tpot for k in range(5)]
    return RequestRecord(
        f"{workload}-{i}",
        role,
        workload,
        64,
        "measured",
        due,
        arrival_s=due,
        send_s=due,
        chunk_arrivals_s=arrivals,
        chunk_tokens=[1] * 5,
        done_s=arrivals[-1],
    )


# TPOT (s) per arm at each time scale: k2 is fastest at real time but misses the 50 ms SLO when twice as fast
TPOT = {"tr@ts1": {"plain": 0.040, "k1": 0.030, "k2": 0.020}, "tr@ts0.5": {"plain": 0.045, "k1": 0.048, "k2": 0.060}}


def _sweep(tmp_path: Path) -> Path:
    proto = {
        "workloads": [
            {"name": w, "kind": "trace", "time_scale": s, "window_s": 5.0, "output_tokens": 5}
            for w, s in (("tr@ts1", 1.0), ("tr@ts0.5", 0.5))
        ],
        "slo": {"percentile": 90.0, "tpot_s": 0.05},
        "cells": [],
    }
    (tmp_path / "protocol.json").write_text(json.dumps(proto))
    records = [
        _rec(arm, w, i, tpot * (1 + 0.01 * (i % 3)))
        for w, arms in TPOT.items()
        for arm, tpot in arms.items()
        for i in range(20)
    ]
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    return tmp_path


def test_a_sweep_folder_gets_capacity_and_the_recommendation_on_the_trace(tmp_path: Path) -> None:
    section = sweep_trace(_sweep(tmp_path))
    assert section is not None
    trace = section.to_json()
    rows = {r["workload"]: r for r in trace["workloads"]}
    assert set(rows["tr@ts1"]["arms"]) == {"k1", "k2"}  # every candidate against plain
    assert round(rows["tr@ts1"]["arms"]["k2"]["speedup"], 2) == 2.0
    assert [round(w["speedup"], 2) for w in rows["tr@ts1"]["arms"]["k1"]["windows"]] == [1.33, 1.33]
    assert rows["tr@ts0.5"]["servers"]["k2"]["slo"] == {
        "requests": 20,
        "shares": {"tpot_s": 0.0},
        "every": 0.0,
        "hold": False,
    }
    assert trace["capacity"] == {"tr": {"k1": 2.0, "k2": 1.0, "plain": 2.0}}
    rec = trace["recommendation"]["tr"]
    assert (rec["server"], rec["time_scale"]) == ("k2", 1.0) and abs(rec["tpot_p50_s"] - 0.0202) < 1e-9
    md = "\n".join(trace_rows(section))
    assert "k1 holds 2x this trace, k2 holds 1x this trace, plain holds 2x this trace" in md
    assert "recommendation on tr: k2 (lowest TPOT p50 20.2 ms at time_scale 1" in md
    assert "speculation pays during 100% of the trace's time (100% of its requests)" in md


def test_no_trace_no_section(tmp_path: Path) -> None:
    (tmp_path / "protocol.json").write_text(json.dumps({"workloads": [{"name": "w", "kind": "file"}], "cells": []}))
    (tmp_path / "requests.jsonl").write_text("")
    assert sweep_trace(tmp_path) is None and trace_rows(None) == []
    assert "Trace replay" not in render_sweep_markdown(
        SweepCard.from_json(
            {
                "pair": "p",
                "schema": "s",
                "primary_metric": "tpot_p50",
                "speedup_definition": "",
                "upper_bound_formula": "",
                "recommendation": {"lines": []},
                "candidates": [],
                "cells": [],
                "drift_warnings": [],
                "times_s": {},
            },
            source="test",
        )
    )


def test_the_workload_statement_names_the_trace_and_how_it_was_replayed() -> None:
    from loadgen.records.protocol import Protocol
    from loadgen.report.workloadmd import workload_statement

    text = workload_statement(
        Protocol.from_json(
            {
                "workloads": [
                    {
                        "name": "tr",
                        "kind": "trace",
                        "path": "t.jsonl",
                        "source_sha256": "ab",
                        "source_lines": 7,
                        "skipped": ["line 7: too long"],
                        "time_scale": 0.5,
                        "block_tokens": 64,
                        "output_tokens": 5,
                    }
                ],
                "cells": [],
            },
            source="p.json",
        ),
        [],
    )
    assert (
        "tr (trace, completions; trace t.jsonl (format detected (not recorded); sha256 ab, 7 lines, 1 skipped: "
        "line 7: too long; replayed at "
        "its times x 0.5, blocks of 64 tokens)"
    ) in text


def _rec2(role: str, i: int, tpot: float, tokens: int) -> RequestRecord:
    due = 100.0 + i * 0.25
    arrivals = [due + 0.05 + k * tpot for k in range(tokens)]
    return RequestRecord(
        f"tr-{i}",
        role,
        "tr",
        64,
        "measured",
        due,
        arrival_s=due,
        send_s=due,
        chunk_arrivals_s=arrivals,
        chunk_tokens=[1] * tokens,
        done_s=arrivals[-1],
    )


def test_the_sweeps_k_schedule_is_judged_on_the_trace_from_the_arms_own_windows(tmp_path: Path) -> None:
    from loadgen.profile.pair import SCHEDULE_KEY
    from loadgen.records.sweep import KSchedule, Recommendation, SweepCandidate, WorkloadChoice
    from loadgen.report.tracedata import SCHEDULE_NAME

    # 0-5 s: short requests, under one in flight; 5-10 s: 100-token requests every 0.25 s, up to 16 in flight
    tpot = {"plain": (0.040, 0.040), "k1": (0.030, 0.060), "k2": (0.020, 0.080)}
    records = [
        _rec2(arm, i, t[i >= 20] * (1 + 0.01 * (i % 3)), 5 if i < 20 else 100)
        for arm, t in tpot.items()
        for i in range(40)
    ]
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    (tmp_path / "protocol.json").write_text(
        json.dumps(
            {
                "workloads": [{"name": "tr", "kind": "trace", "time_scale": 1.0, "window_s": 5.0, "output_tokens": 5}],
                "slo": {"percentile": 90.0, "tpot_s": 0.05},
                "cells": [],
            }
        )
    )
    ngram = {"method": "ngram", "prompt_lookup_max": 4}
    schedule = {**ngram, "num_speculative_tokens": 2, SCHEDULE_KEY: [[1, 3, 2], [4, 64, 0]]}
    rec = Recommendation(
        lines=[], workloads=[WorkloadChoice("w", schedule=KSchedule("", supported=True, config=schedule))]
    )
    rows = [SweepCandidate(f"k{k}", {**ngram, "num_speculative_tokens": k}) for k in (1, 2)]
    section = sweep_trace(tmp_path, rec, rows)
    assert section is not None
    trace = section.to_json()
    (row,) = trace["workloads"]
    sched = row["schedule"]
    # the second window fills up over 4 s (each request lasts 4 s), then holds 16: a mean of (4 x 8 + 16) / 5 = 9.6
    assert [(w["batch"], w["k"], w["arm"]) for w in sched["windows"]] == [(1, 2, "k2"), (10, 0, "plain")]
    # pooled: k2's 20 requests of the first window (20 ms) and plain's 20 of the second (40 ms)
    assert sched["tpot_p50_s"] == pytest.approx((0.0204 + 0.040) / 2) and sched["slo"]["hold"] is True
    assert row["servers"]["k1"]["slo"]["hold"] is False and row["servers"]["plain"]["slo"]["hold"] is True
    assert trace["recommendation"]["tr"]["server"] == SCHEDULE_NAME
    md = "\n".join(trace_rows(section))
    assert "the sweep's K schedule (from w's fixed-level cells) on this trace" in md


def test_a_client_behind_the_trace_says_so(tmp_path: Path) -> None:
    from dataclasses import replace as copy

    from loadgen.records.protocol import Protocol
    from loadgen.report.tracedata import trace_section

    late = [copy(r, send_s=r.send_s + 0.012) for r in (_rec2("speculative", i, 0.02, 5) for i in range(10))]
    on_time = [_rec2("plain", i, 0.04, 5) for i in range(10)]
    proto = Protocol.from_json(
        {"workloads": [{"name": "tr", "kind": "trace", "window_s": 5.0}], "cells": []}, source="p"
    )
    section = trace_section(proto, on_time + late)
    assert section is not None
    servers = section.to_json()["workloads"][0]["servers"]
    assert servers["plain"]["behind"] is False and servers["speculative"]["behind"] is True
    assert servers["speculative"]["lag_p99_s"] == pytest.approx(0.012)
    assert "the client fell behind the trace on speculative" in "\n".join(trace_rows(section))
