"""Peak output throughput: closed form, and peak >= mean over random timelines."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadgen.measure.metrics import MeasuredRequest, cell_stats
from loadgen.measure.throughput import peak_output_tps


def test_peak_closed_form() -> None:
    # window 0.0 .. 2.5 s: buckets [0, 1) and [1, 2.5] (the half second joins the last bucket)
    # tokens 3 at 0.5, 2 at 0.9 -> 5 in the first second; 4 at 1.2, 1 at 2.5 -> 5 over 1.5 s
    assert peak_output_tps(0.0, 2.5, [[0.5, 0.9, 1.2, 2.5]], [[3, 2, 4, 1]]) == pytest.approx(5.0)
    # a burst in the last second: 9 tokens at 2.1 -> 9 / 1.5 tokens/s
    assert peak_output_tps(0.0, 2.5, [[0.5, 2.1]], [[1, 9]]) == pytest.approx(6.0)
    # counted from per-chunk token counts, never one per chunk: one chunk of 8 tokens
    assert peak_output_tps(0.0, 1.0, [[0.4, 1.0]], [[8, 2]]) == pytest.approx(10.0)
    # a window under one second is one bucket of its length: peak = mean
    assert peak_output_tps(0.0, 0.5, [[0.2, 0.5]], [[1, 1]]) == pytest.approx(4.0)
    assert peak_output_tps(1.0, 1.0, [[1.0]], [[3]]) == 0.0


def test_cell_stats_carry_the_peak() -> None:
    reqs = [MeasuredRequest(0.0, 0.0, [0.5, 1.0, 1.5], [1, 3, 2], False),  # [0,1): 1; [1,2.01]: 3+2
            MeasuredRequest(0.0, 0.01, [0.6, 2.01], [2, 2], False),  # [0,1): 2; [1,2.01]: 2
            MeasuredRequest(1.0, 1.02, [1.1], [50], True)]  # failed: its tokens are not output
    s = cell_stats(reqs, None)
    assert s.window_s == pytest.approx(2.01)
    assert s.peak_output_throughput_tps == pytest.approx(7 / 1.01)
    assert s.peak_output_throughput_tps >= s.output_throughput_tps == pytest.approx(10 / 2.01)
    assert cell_stats([], None).peak_output_throughput_tps == 0.0


_request = st.tuples(
    st.floats(0.0, 20.0),  # send
    st.lists(st.tuples(st.floats(0.0, 5.0), st.integers(1, 8)), min_size=0, max_size=12),  # chunk gaps, tokens
    st.booleans())  # failed


@settings(max_examples=300, deadline=None)
@given(st.lists(_request, min_size=1, max_size=8))
def test_peak_is_never_below_the_mean(raw: list[tuple[float, list[tuple[float, int]], bool]]) -> None:
    reqs = []
    for send, chunks, failed in raw:
        arrivals, t = [], send
        for gap, _ in chunks:
            t += gap
            arrivals.append(t)
        reqs.append(MeasuredRequest(send, send, arrivals, [k for _, k in chunks], failed))
    s = cell_stats(reqs, None)
    assert s.peak_output_throughput_tps >= s.output_throughput_tps * (1 - 1e-9)
    if s.output_tokens and s.window_s > 0:
        assert s.peak_output_throughput_tps > 0
