"""report/traceschedule.py: a K schedule judged on a trace, on scripted replays with known load and TPOT.

The plain replay has one short request at t = 0 (window [0, 10) s: about 0.03 in flight, batch 1) and four
requests from t = 10 s lasting 10.1 s (window [10, 20): 4 in flight). The schedule runs K = 4 up to batch 2 and
K = 1 from 3 to 8, so window 0 takes arm ngram-k4's request and window 1 ngram-k1's four: pooled TPOT 0.01, 0.3,
0.4, 0.6, 0.7 s, median 0.4 s; against a 0.5 s TPOT objective 3 of 5 meet it.
"""

from __future__ import annotations

from typing import Any

import pytest

from loadgen.profile.pair import SCHEDULE_KEY, SLO
from loadgen.records.request import RequestRecord
from loadgen.records.sweep import KSchedule, SweepCandidate
from loadgen.report import traceschedule
from loadgen.run.traceplan import trace_level

SCHEDULE = {
    "method": "ngram",
    "num_speculative_tokens": 4,
    "prompt_lookup_max": 4,
    SCHEDULE_KEY: [[1, 2, 4], [3, 8, 1]],
}
CONFIGS = {
    "ngram-k4": {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4},
    "ngram-k1": {"prompt_lookup_max": 4, "method": "ngram", "num_speculative_tokens": 1},
    "draft-k1": {"method": "draft_model", "num_speculative_tokens": 1},
}


def arm_of_k(schedule: dict[str, Any], configs: dict[str, dict[str, Any]], k: int) -> str | None:
    """traceschedule.arm_of_k of a schedule config and the arms' configs."""
    return traceschedule.arm_of_k(
        KSchedule("", supported=True, config=schedule), [SweepCandidate(n, c) for n, c in configs.items()], k
    )


def schedule_on_trace(
    blocks: dict[str, Any], window_s: float, schedule: dict[str, Any], configs: dict[str, dict[str, Any]], slo: SLO
) -> dict[str, Any] | None:
    """traceschedule.schedule_on_trace of a schedule config and the arms' configs, as the card writes it."""
    sweep = traceschedule.SweepSchedule(
        "w", KSchedule("", supported=True, config=schedule), [SweepCandidate(n, c) for n, c in configs.items()]
    )
    got = traceschedule.schedule_on_trace(blocks, window_s, sweep, slo)
    return None if got is None else got.to_json()


DUE = {"a": 0.0, "b1": 10.0, "b2": 10.0, "b3": 10.0, "b4": 10.0}


def rec(role: str, prompt: str, tpot: float) -> RequestRecord:
    """A request due and sent at DUE[prompt]: first token after 0.1 s, then 10 tokens ``tpot`` s apart (one chunk)."""
    t = 100.0 + DUE[prompt]  # the replay's clock starts anywhere: offsets are from the first due time
    end = t + 0.1 + 10 * tpot
    return RequestRecord(
        prompt,
        role,
        "tr",
        4,
        "measured",
        t,
        arrival_s=t,
        level="r0.5",
        send_s=t,
        chunk_arrivals_s=[t + 0.1, end],
        chunk_tokens=[1, 10],
        done_s=end,
    )


def block(role: str, tpots: dict[str, float]) -> list[RequestRecord]:
    return [rec(role, p, v) for p, v in tpots.items()]


BLOCKS = {
    "plain": [block("plain", {"a": 0.02, "b1": 1.0, "b2": 1.0, "b3": 1.0, "b4": 1.0})],
    "ngram-k4": [block("ngram-k4", {"a": 0.01, "b1": 0.5, "b2": 0.5, "b3": 0.5, "b4": 0.5})],
    "ngram-k1": [block("ngram-k1", {"a": 0.05, "b1": 0.3, "b2": 0.4, "b3": 0.6, "b4": 0.7})],
}


def test_the_arm_of_each_k_is_found_in_the_schedules_family() -> None:
    assert arm_of_k(SCHEDULE, CONFIGS, 0) == "plain"
    assert arm_of_k(SCHEDULE, CONFIGS, 4) == "ngram-k4" and arm_of_k(SCHEDULE, CONFIGS, 1) == "ngram-k1"
    assert arm_of_k(SCHEDULE, CONFIGS, 2) is None  # no arm of that K was measured
    assert arm_of_k({"method": "draft_model", "num_speculative_tokens": 3}, CONFIGS, 1) == "draft-k1"


def test_the_schedule_on_the_trace_pools_the_chosen_arms_requests() -> None:
    got = schedule_on_trace(BLOCKS, 10.0, SCHEDULE, CONFIGS, SLO(tpot_s=0.5))
    assert got is not None
    assert got["windows"] == [
        {"start_s": 0.0, "batch": 1, "k": 4, "arm": "ngram-k4"},
        {"start_s": 10.0, "batch": 4, "k": 1, "arm": "ngram-k1"},
    ]
    assert got["tpot_p50_s"] == pytest.approx(0.4)
    assert got["slo"] == {
        "requests": 5,
        "shares": {"tpot_s": pytest.approx(0.6)},
        "every": pytest.approx(0.6),
        "hold": False,
    }


def test_no_estimate_without_plain_or_without_the_arm_a_window_needs() -> None:
    assert schedule_on_trace({"ngram-k4": BLOCKS["ngram-k4"]}, 10.0, SCHEDULE, CONFIGS, SLO()) is None
    only_k4: dict[str, Any] = {k: v for k, v in BLOCKS.items() if k != "ngram-k1"}
    assert schedule_on_trace(only_k4, 10.0, SCHEDULE, CONFIGS, SLO()) is None  # window 1 needs K = 1
    wide = schedule_on_trace(only_k4, 30.0, SCHEDULE, CONFIGS, SLO())  # one window: 4 requests over 30 s, batch 1
    assert wide is not None and wide["windows"] == [{"start_s": 0.0, "batch": 1, "k": 4, "arm": "ngram-k4"}]
    assert wide["tpot_p50_s"] == pytest.approx(0.5) and wide["slo"]["hold"] is None  # no objective declared


@pytest.mark.parametrize(
    ("offsets", "cap", "rate"),
    [
        ((0.0, 1.0, 2.0, 4.0), 64, 1.0),
        ((0.0, 3.0), 8, 0.667),
        ((5.0,), 16, 1.0),
        ((2.0, 2.0, 2.0), 4, 3.0),
        ((), 4, 1.0),
    ],
)
def test_a_trace_level_is_its_mean_rate(offsets: tuple[float, ...], cap: int, rate: float) -> None:
    level = trace_level(offsets, cap)
    assert (level.concurrency, level.rate_rps) == (cap, rate)
