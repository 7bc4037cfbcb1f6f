"""report/tracemd.py: the "Trace replay" section written from a hand-built ``card["trace"]`` (one workload,
one arm, two windows), line by line: the send lag, the window table, the outcome shares, SLO attainment, the K
schedule's estimate, capacity and the recommendation."""

from __future__ import annotations

from typing import Any

from loadgen.records.trace import TraceSection
from loadgen.report.tracemd import trace_rows


def side(mean: float, peak: int, tpot: float, ttft: float | None) -> dict[str, Any]:
    return {
        "requests": 0,
        "in_flight_mean": mean,
        "in_flight_max": peak,
        "tpot_p50_s": tpot,
        "tpot_p90_s": tpot * 1.5,
        "ttft_p50_s": ttft,
        "ttft_p90_s": None if ttft is None else ttft * 2,
    }


WINDOWS = [
    {
        "start_s": 0.0,
        "end_s": 10.0,
        "requests": 12,
        "speedup": 1.8,
        "ci_low": 1.6,
        "ci_high": 2.05,
        "outcome": "pays",
        "ci": "blocks",
        "arms": {"plain": side(2.0, 4, 0.02, 0.05), "ngram": side(1.5, 3, 0.011, 0.06)},
    },
    {
        "start_s": 10.0,
        "end_s": 20.0,
        "requests": 3,
        "speedup": None,
        "ci_low": None,
        "ci_high": None,
        "outcome": "unknown",
        "ci": "blocks",
        "arms": {"plain": side(30.0, 41, 0.05, None), "ngram": side(33.3, 44, 0.1, None)},
    },
]
SLO = {"requests": 15, "shares": {"tpot_s": 0.8, "ttft_s": 1.0}, "every": 0.8, "hold": True}
TRACE = {
    "workloads": [
        {
            "workload": "chat",
            "base": "chat",
            "requests": 15,
            "span_s": 19.5,
            "time_scale": 0.5,
            "window_s": 10.0,
            "servers": {
                "plain": {"lag_p50_s": 0.0002, "lag_p99_s": 0.0011, "behind": False, "slo": SLO, "tpot_p50_s": None},
                "ngram": {
                    "lag_p50_s": 0.0003,
                    "lag_p99_s": 0.009,
                    "behind": True,
                    "slo": SLO | {"hold": False},
                    "tpot_p50_s": None,
                },
            },
            "arms": {
                "ngram": {
                    "speedup": 1.25,
                    "ci_low": 1.1,
                    "ci_high": 1.4,
                    "windows": WINDOWS,
                    "shares": {
                        "time": {"pays": 0.5, "unknown": 0.5, "loses": 0.0},
                        "requests": {"pays": 0.8, "unknown": 0.2},
                    },
                }
            },
            "schedule": {
                "from_workload": "short",
                "tpot_p50_s": 0.015,
                "config": {},
                "slo": {"requests": 10, "shares": {}, "every": 0.9, "hold": None},
                "windows": [
                    {"start_s": 0.0, "batch": 2, "k": 4, "arm": "ngram"},
                    {"start_s": 10.0, "batch": 30, "k": 0, "arm": "plain"},
                ],
            },
        }
    ],
    "capacity": {"chat": {"plain": 2.0, "ngram": None}},
    "recommendation": {"chat": {"server": "plain", "tpot_p50_s": 0.021, "time_scale": 0.5}, "other": None},
}


def test_the_section_line_by_line() -> None:
    rows = trace_rows(TraceSection.from_json(TRACE, source="trace"))
    assert rows[:4] == ["## Trace replay", "", "### chat: 15 requests over 19.5 s, time_scale 0.5, windows of 10 s", ""]
    assert rows[4] == (
        "- send lag against the trace's schedule: plain p50 0.2 ms / p99 1.1 ms, ngram p50 0.3 ms / p99 9.0 ms"
    )
    assert rows[5].startswith("- the client fell behind the trace on ngram (send lag p99 above 5 ms")
    assert "- ngram over the whole trace: speedup 1.25x [1.10, 1.40]" in rows
    assert (
        "- ngram: speculation pays during 50% of the trace's time (80% of its requests); unknown during 50% of "
        "the trace's time (20% of its requests)."
    ) in rows
    assert (
        "| 0-10 | 12 | 2.0 / 4 | 1.5 / 3 | 20.0 / 30.0 | 11.0 / 16.5 | 50.0 / 100.0 | 60.0 / 120.0 | "
        "1.80x [1.60, 2.05] | pays |"
    ) in rows
    assert "| 10-20 | 3 | 30.0 / 41 | 33.3 / 44 | 50.0 / 75.0 | 100.0 / 150.0 | - / - | - / - | - | unknown |" in rows
    assert "| server | requests | met tpot_s | met ttft_s | met all | SLOs hold |" in rows
    assert "| plain | 15 | 80% | 100% | 80% | yes |" in rows and "| ngram | 15 | 80% | 100% | 80% | no |" in rows
    assert (
        "- the sweep's K schedule (from short's fixed-level cells) on this trace, estimated from the arms' own "
        "windows: TPOT p50 15.0 ms, met all SLOs 90%, SLOs hold -; 0 s: batch 2 -> K 4 (ngram), 10 s: batch 30 "
        "-> K 0 (plain)"
    ) in rows
    assert rows[-4:] == [
        "- capacity on chat (fastest declared time_scale meeting the SLOs): plain holds 2x this trace, ngram holds "
        "none of the declared speeds",
        "- recommendation on chat: plain (lowest TPOT p50 21.0 ms at time_scale 0.5 while holding the SLOs)",
        "- recommendation on other: no server holds the SLOs",
        "",
    ]


def test_no_trace_no_section_and_no_slo_declared() -> None:
    assert trace_rows(None) == []
    bare = {"requests": 15, "shares": {}, "every": None, "hold": None}
    row = TRACE["workloads"][0] | {
        "servers": {"plain": {"lag_p50_s": None, "lag_p99_s": None, "behind": False, "slo": bare, "tpot_p50_s": None}},
        "schedule": None,
    }
    rows = trace_rows(
        TraceSection.from_json({"workloads": [row], "capacity": {}, "recommendation": {}}, source="trace")
    )
    assert "- SLO attainment: no [slo] declared." in rows
    assert "- send lag against the trace's schedule: plain p50 - ms / p99 - ms" in rows
    assert not any(r.startswith("- the client fell behind") or r.startswith("- the sweep's K schedule") for r in rows)
