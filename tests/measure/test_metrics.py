"""Closed-form checks of every docs/metrics.md definition."""

from __future__ import annotations

import pytest

from loadgen.measure.metrics import Acceptance, ClientUse, Distribution, MeasuredRequest, cell_stats, request_timings
from loadgen.prom.deltas import SpecDecodeCounters


def test_single_token_chunks() -> None:
    # sent at 1.0; chunks of one token at 1.5, 1.6, 1.8, 2.1
    t = request_timings(1.0, [1.5, 1.6, 1.8, 2.1], [1, 1, 1, 1])
    assert t is not None
    assert t.ttft_s == pytest.approx(0.5)
    assert t.e2e_s == pytest.approx(1.1)
    assert t.tpot_s == pytest.approx(0.6 / 3)
    assert t.icl_s == pytest.approx((0.1, 0.2, 0.3))
    assert t.itl_s == pytest.approx((0.1, 0.2, 0.3))
    assert t.output_tokens == 4 and t.chunks == 4


def test_multi_token_chunks_split_itl_but_not_icl() -> None:
    # speculation: first chunk 1 token at 0.2; then 4 tokens 0.4 later; then 2 tokens 0.1 later
    t = request_timings(0.0, [0.2, 0.6, 0.7], [1, 4, 2])
    assert t is not None
    assert t.ttft_s == pytest.approx(0.2)
    assert t.e2e_s == pytest.approx(0.7)
    assert t.output_tokens == 7
    assert t.tpot_s == pytest.approx(0.5 / 6)
    assert t.icl_s == pytest.approx((0.4, 0.1))
    assert t.itl_s == pytest.approx((0.1, 0.1, 0.1, 0.1, 0.05, 0.05))
    # ITL samples of the chunks after the first sum to E2E - TTFT
    assert sum(t.itl_s) == pytest.approx(t.e2e_s - t.ttft_s)


def test_one_token_output_has_no_tpot() -> None:
    t = request_timings(0.0, [0.3], [1])
    assert t is not None
    assert t.tpot_s is None and t.icl_s == () and t.itl_s == ()


def test_no_tokens_is_none_and_mismatch_raises() -> None:
    assert request_timings(0.0, [], []) is None
    with pytest.raises(ValueError):
        request_timings(0.0, [0.1], [1, 2])


def test_distribution_percentiles() -> None:
    d = Distribution.of([float(x) for x in range(1, 101)])
    assert d.count == 100
    assert d.mean == pytest.approx(50.5)
    assert d.p50 == pytest.approx(50.5)
    assert d.p90 == pytest.approx(90.1)
    assert d.p95 == pytest.approx(95.05)  # linear interpolation: 1 + 0.95 * 99
    assert d.p99 == pytest.approx(99.01)
    assert Distribution.of([]).p50 is None and Distribution.of([]).p95 is None


def test_acceptance_formulas() -> None:
    # K=3: 10 drafts, 30 draft tokens, 21 accepted; per position 9, 7, 5
    a = Acceptance.of(SpecDecodeCounters(10, 30, 21, (9, 7, 5), False))
    assert a.acceptance_rate == pytest.approx(0.7)
    assert a.mean_acceptance_length == pytest.approx(3.1)
    assert a.per_position == pytest.approx((0.9, 0.7, 0.5))
    empty = Acceptance.of(SpecDecodeCounters(0, 0, 0, (0, 0, 0), False))
    assert empty.acceptance_rate is None and empty.mean_acceptance_length is None


def test_cell_stats_window_and_throughput() -> None:
    reqs = [
        MeasuredRequest(0.0, 0.0, [0.5, 1.0], [1, 3], False),  # 4 tokens, ends 1.0
        MeasuredRequest(0.0, 0.01, [0.6, 2.01], [2, 2], False),  # 4 tokens, ends 2.01
        MeasuredRequest(1.0, 1.02, [], [], True),  # failed
    ]
    s = cell_stats(reqs, None)
    assert s.requests == 3 and s.errors == 1
    assert s.output_tokens == 8
    assert s.window_s == pytest.approx(2.01)
    assert s.output_throughput_tps == pytest.approx(8 / 2.01)
    assert s.request_throughput_rps == pytest.approx(2 / 2.01)
    assert s.mean_tokens_per_chunk == pytest.approx(2.0)
    assert s.send_lag_s.p50 == pytest.approx(0.01)
    assert s.ttft_s.p50 == pytest.approx(0.545)
    assert s.acceptance is None


def test_tokens_per_decode_chunk() -> None:
    from loadgen.measure.metrics import tokens_per_decode_chunk

    # prefill chunk of 1 token, then 8 verify steps of K+1 = 4 tokens
    assert tokens_per_decode_chunk([1] + [4] * 8) == 4.0
    assert tokens_per_decode_chunk([1, 4, 4, 3]) == pytest.approx(11 / 3)
    assert tokens_per_decode_chunk([5]) is None
    s = cell_stats(
        [MeasuredRequest(0, 0, [0.1, 0.2, 0.3], [1, 4, 4], False), MeasuredRequest(0, 0, [0.1, 0.2], [1, 2], False)],
        None,
    )
    assert s.mean_tokens_per_decode_chunk == pytest.approx(10 / 3)
    assert s.mean_tokens_per_chunk == pytest.approx(12 / 5)


def test_client_use_and_its_saturation_note() -> None:
    calm = ClientUse.of(0.25, 1.0, [0.001] * 10)
    assert calm.cores == 0.25 and calm.send_lag.count == 10 and calm.saturation_note() is None
    busy = ClientUse.of(1.8, 2.0, [0.001] * 10)  # 0.9 of the event loop's core
    assert busy.cores == 0.9 and "0.90 of its one event-loop core" in (busy.saturation_note() or "")
    lagging = ClientUse.of(0.1, 1.0, [0.001] * 8 + [0.02, 0.02])  # p99 of the send lag 20 ms > 5 ms
    assert lagging.send_lag.p99 is not None and abs(lagging.send_lag.p99 - 0.02) < 1e-12
    note = lagging.saturation_note() or ""
    assert "send lag p99 20.0 ms" in note and "held up" in note
    assert "near saturation" in (busy.saturation_note() or "")
    assert ClientUse.of(0.0, 0.0, []).cores == 0.0 and ClientUse.of(0.0, 0.0, []).saturation_note() is None
