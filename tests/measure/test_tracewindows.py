"""tracewindows / traceslo: requests in flight over a window, per-window paired speedups with the blocks CI
and the bootstrap one, outcome shares of time and requests, the send lag against the trace, SLO attainment and
capacity on a trace; closed-form records."""

from __future__ import annotations

import numpy as np
import pytest

from loadgen.measure.traceslo import attainment, trace_capacity
from loadgen.measure.tracewindows import EVEN, LOSES, PAYS, UNKNOWN, in_flight, schedule_lag, shares, trace_windows
from loadgen.profile.pair import SLO
from loadgen.records.request import RequestRecord


def _rec(
    role: str,
    i: int,
    due: float,
    tpot: float,
    ttft: float = 0.1,
    lag: float = 0.0,
    tokens: int = 5,
    origin: float = 100.0,
) -> RequestRecord:
    send = origin + due + lag
    arrivals = [send + ttft + k * tpot for k in range(tokens)]
    return RequestRecord(
        f"w-{i:03d}",
        role,
        "w",
        64,
        "measured",
        origin + due,
        arrival_s=origin + due,
        send_s=send,
        chunk_arrivals_s=arrivals,
        chunk_tokens=[1] * tokens,
        done_s=arrivals[-1],
    )


def _blocks(role: str, tpot_of: object, blocks: int = 2, n: int = 20) -> list[list[RequestRecord]]:
    """``n`` requests due 1 s apart per block; TPOT ``tpot_of(i)`` s with a 1% spread over i."""
    return [
        [
            _rec(role, i, float(i), tpot_of(i) * (1 + 0.01 * (i % 3)), origin=1000.0 * b)  # type: ignore[operator]
            for i in range(n)
        ]
        for b in range(blocks)
    ]


def test_in_flight_is_the_time_mean_and_the_peak_within_the_window() -> None:
    iv = np.array([[0.0, 2.0], [1.0, 3.0], [5.0, 9.0]])
    assert in_flight(iv, 0.0, 4.0) == (1.0, 2)  # (2 + 2) / 4 s; both open at 1..2 s
    assert in_flight(iv, 4.0, 6.0) == (0.5, 1)
    assert in_flight(iv, 10.0, 12.0) == (0.0, 0)


def test_windows_follow_a_speedup_that_flips_and_the_shares_follow_the_time() -> None:
    plain = _blocks("plain", lambda i: 0.04)
    spec = _blocks("speculative", lambda i: 0.02 if i < 10 else 0.08)  # 2x faster, then 2x slower
    windows = trace_windows(plain, spec, 10.0)
    assert [(w.start_s, w.end_s, w.requests, w.ci) for w in windows] == [(0, 10, 10, "blocks"), (10, 20, 10, "blocks")]
    assert [round(w.speedup or 0, 6) for w in windows] == [2.0, 0.5]
    # the two blocks agree exactly: the t interval has no width
    assert [(round(w.ci_low or 0, 6), round(w.ci_high or 0, 6)) for w in windows] == [(2.0, 2.0), (0.5, 0.5)]
    assert [w.outcome for w in windows] == [PAYS, LOSES]
    got = shares(windows, last_s=19.0)  # the last window runs to the last arrival, 19 s: 10 s then 9 s
    assert got.time[PAYS] == pytest.approx(10 / 19) and got.time[LOSES] == pytest.approx(9 / 19)
    assert got.requests[PAYS] == 0.5 and got.requests[LOSES] == 0.5 and got.time[EVEN] == 0.0
    a = windows[0].arms
    assert a["plain"].tpot_p50_s == pytest.approx(0.0404) and a["speculative"].tpot_p50_s == pytest.approx(0.0202)
    assert a["plain"].ttft_p50_s == pytest.approx(0.1) and a["plain"].requests == 20
    # each request lasts 0.1 + 4 x TPOT; one at a time, so the mean in flight is that over 1 s
    assert a["plain"].in_flight_max == 1 and a["plain"].in_flight_mean == pytest.approx(0.1 + 4 * 0.0404, rel=0.01)


def test_one_block_takes_the_bootstrap_ci_and_a_band_makes_a_small_gain_break_even() -> None:
    plain = _blocks("plain", lambda i: 0.04, blocks=1)
    spec = _blocks("speculative", lambda i: 0.039, blocks=1)
    w = trace_windows(plain, spec, 10.0)[0]
    assert w.ci == "bootstrap" and w.ci_low is not None and w.ci_low <= w.speedup <= (w.ci_high or 0)  # type: ignore[operator]
    assert trace_windows(plain, spec, 10.0, band=(0.9, 1.1))[0].outcome == EVEN
    lone = trace_windows(plain[:1], [[r for r in spec[0] if r.prompt_id != "w-000"]], 1.0)[0]
    assert lone.outcome == UNKNOWN and lone.speedup is None  # no paired request in that window


def test_the_send_lag_is_measured_against_the_trace() -> None:
    blocks = [[_rec("plain", i, float(i), 0.04, lag=0.001 * i) for i in range(101)]]
    p50, p99 = schedule_lag(blocks)
    assert p50 == pytest.approx(0.050) and p99 == pytest.approx(0.099)


def test_slo_attainment_counts_each_objective_and_capacity_takes_the_fastest_holding_speed() -> None:
    recs = [_rec("plain", i, float(i), tpot=0.01 * (i + 1)) for i in range(10)]  # TPOT 10 .. 100 ms
    a = attainment(recs, SLO(percentile=50.0, tpot_s=0.0505, ttft_s=1.0))
    assert (a.requests, a.shares, a.every, a.hold) == (10, {"ttft_s": 1.0, "tpot_s": 0.5}, 0.5, False)
    assert attainment(recs, SLO(percentile=50.0, tpot_s=0.06)).hold is True
    assert attainment(recs, SLO()).every is None
    assert trace_capacity([1.0, 0.625, 0.5], [True, True, False]) == 1.6
    assert trace_capacity([1.0], [False]) is None


def test_bisection_brackets_each_servers_capacity_from_below() -> None:
    from loadgen.measure.traceslo import bisect_capacity

    truth = {"plain": 1.6, "speculative": 1.3}
    calls: list[float] = []

    def measure(speed: float) -> dict[str, bool]:
        calls.append(speed)
        return {s: speed <= limit for s, limit in truth.items()}

    found, tested = bisect_capacity(measure, 0.5, 4.0, steps=10)
    assert calls[:3] == [4.0, 0.5, pytest.approx(2**0.5)] and set(tested) == set(calls)
    for server, limit in truth.items():
        got = found[server]
        # 10 midpoints, shared between two servers: about 5 halvings of a 3-octave interval each, 2 ** (3 / 32)
        assert got is not None and got <= limit and limit / got < 2 ** (3 / 32), (server, got)
    assert bisect_capacity(measure, 0.5, 1.0, steps=5)[0] == {"plain": 1.0, "speculative": 1.0}  # held at the top
    assert bisect_capacity(measure, 2.0, 4.0, steps=5)[0] == {"plain": None, "speculative": None}
