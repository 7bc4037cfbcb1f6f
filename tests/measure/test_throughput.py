"""Peak output throughput: whole one-second buckets only, closed form; no peak under two buckets; the peak
is never below the mean of the whole buckets (random timelines)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadgen.measure.metrics import MeasuredRequest, cell_stats
from loadgen.measure.throughput import Peak, peak_output


def test_the_trailing_partial_second_is_not_folded_into_the_last_whole_one() -> None:
    # issue 28: window 0 .. 2.7 s; 4 tokens in [0, 1), 16 in [1, 2) (8 at 1.2, 8 at 1.8), 1 at 2.7.
    # Folding the 0.7 s tail into [1, 2.7] read (16 + 1) / 1.7 = 10 tokens/s; whole buckets read 16.
    got = peak_output(0.0, 2.7, [[0.5, 1.2, 1.8, 2.7]], [[4, 8, 8, 1]])
    assert got.tps == 16.0 and got.reason is None and got.whole_buckets == 2
    assert got.partial_s == pytest.approx(0.7)


def test_a_busy_tail_is_left_out_and_the_peak_can_fall_below_the_window_mean() -> None:
    # window 0 .. 2.5 s: 1 token at 0.5, 9 at 2.1 (in the 0.5 s tail): whole buckets [0,1) = 1, [1,2) = 0
    got = peak_output(0.0, 2.5, [[0.5, 2.1]], [[1, 9]])
    assert got == Peak(1.0, None, 2, 0.5)
    assert got.tps is not None and got.tps < 10 / 2.5  # the window's mean, 4 tokens/s
    # 3 at 0.5 and 2 at 0.9: 5 in [0, 1); 4 at 1.2: 4 in [1, 2); 1 at 2.5 in the tail
    assert peak_output(0.0, 2.5, [[0.5, 0.9, 1.2, 2.5]], [[3, 2, 4, 1]]).tps == 5.0


def test_a_window_of_whole_seconds_keeps_its_last_arrival() -> None:
    # window 0 .. 3 s exactly: the last chunk (at 3.0) closes bucket [2, 3]; a chunk 1 ms before the
    # start (rounding) counts in the first bucket; tokens per chunk, never one per chunk
    assert peak_output(10.0, 13.0, [[9.999, 10.5, 11.5, 13.0]], [[2, 1, 3, 7]]) == Peak(7.0, None, 3, 0.0)
    assert peak_output(0.0, 2.0, [[0.1, 1.0, 2.0]], [[8, 1, 1]]) == Peak(8.0, None, 2, 0.0)


def test_under_two_whole_buckets_there_is_no_peak() -> None:
    # issue 28's 1.7 s window: one whole second and a tail is not a peak (was read as 17 / 1.7 = 10 "1 s")
    got = peak_output(0.0, 1.7, [[0.2, 0.9, 1.7]], [[8, 8, 1]])
    assert got.tps is None and got.whole_buckets == 1
    assert got.reason == "window too short for a peak (1.70 s < 2 whole 1 s buckets)"
    assert (
        peak_output(0.0, 0.5, [[0.2, 0.5]], [[1, 1]]).reason == "window too short for a peak (0.50 s < 2 whole "
        "1 s buckets)"
    )
    assert peak_output(1.0, 1.0, [[1.0]], [[3]]) == Peak(
        None, "window too short for a peak (0.00 s < 2 whole 1 s buckets)", 0, 0.0
    )


def test_shapes_must_match() -> None:
    with pytest.raises(ValueError, match="same shape"):
        peak_output(0.0, 3.0, [[0.5, 1.0]], [[1]])
    with pytest.raises(ValueError, match="same shape"):
        peak_output(0.0, 3.0, [[0.5], [1.0]], [[1]])


def test_cell_stats_carry_the_peak() -> None:
    reqs = [
        MeasuredRequest(0.0, 0.0, [0.5, 1.0, 1.5], [1, 3, 2], False),  # [0,1): 1; [1,2): 3+2
        MeasuredRequest(0.0, 0.01, [0.6, 2.01], [2, 2], False),  # [0,1): 2; tail (2, 2.01]: 2, left out
        MeasuredRequest(1.0, 1.02, [1.1], [50], True),
    ]  # failed: its tokens are not output
    s = cell_stats(reqs, None)
    assert s.window_s == pytest.approx(2.01)
    assert s.peak_output_throughput_tps == 5.0  # was 7 / 1.01 with the tail folded into [1, 2.01]
    assert s.peak_output_throughput_tps >= s.output_throughput_tps == pytest.approx(10 / 2.01)
    assert s.peak_output_note is None
    empty = cell_stats([], None)  # no window at all: no peak, and the reason
    assert empty.peak_output_throughput_tps is None
    assert empty.peak_output_note == "window too short for a peak (0.00 s < 2 whole 1 s buckets)"


_request = st.tuples(
    st.floats(0.0, 20.0),  # send
    st.lists(st.tuples(st.floats(0.0, 5.0), st.integers(1, 8)), min_size=0, max_size=12),  # chunk gaps, tokens
    st.booleans(),
)  # failed


@settings(max_examples=300, deadline=None)
@given(st.lists(_request, min_size=1, max_size=8))
def test_peak_is_never_below_the_mean_of_the_whole_buckets(
    raw: list[tuple[float, list[tuple[float, int]], bool]],
) -> None:
    reqs = []
    for send, chunks, failed in raw:
        arrivals, t = [], send
        for gap, _ in chunks:
            t += gap
            arrivals.append(t)
        reqs.append(MeasuredRequest(send, send, arrivals, [k for _, k in chunks], failed))
    ok = [r for r in reqs if not r.failed and r.arrivals_s]
    if not ok:
        return
    start, end = min(r.send_s for r in ok), max(r.arrivals_s[-1] for r in ok)
    got = peak_output(start, end, [r.arrivals_s for r in ok], [r.tokens for r in ok])
    whole = math.floor(end - start)
    assert (got.tps is None) == (whole < 2)
    if got.tps is not None:
        closes = end - start == whole  # a window of whole seconds: its last arrival is in the last bucket
        in_whole = sum(
            k
            for r in ok
            for t, k in zip(r.arrivals_s, r.tokens, strict=True)
            if t - start < whole or (closes and t == end)
        )
        assert got.tps >= in_whole / whole * (1 - 1e-9)
        assert cell_stats(reqs, None).peak_output_throughput_tps == got.tps
