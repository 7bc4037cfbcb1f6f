"""measure/traceslo.py: SLO attainment of a replay on requests with known timings, the fastest speed whose SLOs
hold, and the bisection of a capacity search against servers scripted to hold up to a known speed.

Scripted servers: ``plain`` holds at speeds up to 3, ``speculative`` up to 1.5. Searching [0.5, 8] tests 8 and
0.5, then the geometric midpoint of the widest open interval: sqrt(0.5 x 8) = 2 (both 16x wide), then
sqrt(2 x 8) = 4 (plain's 4x beats speculative's 0.5..2, also 4x, by its larger midpoint), then sqrt(0.5 x 2) = 1.
"""

from __future__ import annotations

from loadgen.measure.traceslo import attainment, bisect_capacity, trace_capacity
from loadgen.profile.pair import SLO
from loadgen.records.request import RequestRecord

LIMITS = {"plain": 3.0, "speculative": 1.5}


def scripted(calls: list[float]) -> object:
    def measure(speed: float) -> dict[str, bool]:
        calls.append(speed)
        return {server: speed <= limit for server, limit in LIMITS.items()}

    return measure


def test_the_bisection_converges_on_each_servers_limit() -> None:
    calls: list[float] = []
    best, tested = bisect_capacity(scripted(calls), 0.5, 8.0, 3)  # type: ignore[arg-type]
    assert calls == [8.0, 0.5, 2.0, 4.0, 1.0]
    assert best == {"plain": 2.0, "speculative": 1.0}
    assert tested[4.0] == {"plain": False, "speculative": False} and tested[1.0] == {"plain": True, "speculative": True}
    calls.clear()
    assert bisect_capacity(scripted(calls), 0.5, 8.0, 0)[0] == {"plain": 0.5, "speculative": 0.5}  # type: ignore[arg-type]
    assert calls == [8.0, 0.5]


def test_a_search_with_nothing_to_split_stops_at_once() -> None:
    calls: list[float] = []
    best, _ = bisect_capacity(scripted(calls), 0.25, 1.0, 5)  # type: ignore[arg-type]
    assert best == {"plain": 1.0, "speculative": 1.0} and calls == [1.0, 0.25]  # both held at the fastest
    never = bisect_capacity(lambda s: {"plain": False}, 0.5, 2.0, 5)[0]
    assert never == {"plain": None}


def test_trace_capacity_is_the_fastest_speed_held() -> None:
    assert trace_capacity([2.0, 1.0, 0.5, 0.25], [True, True, False, None]) == 1.0  # time_scale 1 = speed 1
    assert trace_capacity([4.0, 2.0], [True, True]) == 0.5
    assert trace_capacity([1.0], [False]) is None


def rec(ttft: float, tpot: float, error: str | None = None) -> RequestRecord:
    """Sent at 0: the first token at ``ttft``, then 4 tokens ``tpot`` apart in one chunk (E2E = ttft + 4 tpot)."""
    return RequestRecord(
        "p",
        "plain",
        "tr",
        1,
        "measured",
        0.0,
        send_s=0.0,
        chunk_arrivals_s=[ttft, ttft + 4 * tpot],
        chunk_tokens=[1, 4],
        error=error,
    )


def test_attainment_shares_and_hold() -> None:
    records = [rec(0.1, 0.01), rec(0.3, 0.01), rec(0.1, 0.05), rec(0.2, 0.02), rec(0.1, 0.01, "HTTP 500")]
    got = attainment(records, SLO(percentile=50.0, ttft_s=0.25, tpot_s=0.03))
    # ttft met by 3 of 5, tpot by 3 of 5 (the failed request meets nothing), both by 2; medians 0.15 s and 0.015 s
    assert (got.requests, got.shares, got.every, got.hold) == (5, {"ttft_s": 0.6, "tpot_s": 0.6}, 0.4, True)
    assert attainment(records, SLO(percentile=99.0, ttft_s=0.25)).hold is False
    assert attainment(records, SLO()).shares == {} and attainment([], SLO(ttft_s=1.0)).every is None
