"""Tests for loadgen.prom: parsing, reset-aware deltas, spec-decode counters, histogram quantiles.

Fixtures tests/data/vllm032_*.prom were produced by prometheus_client (the library vLLM exports with)
using vLLM 0.32's metric names, label sets and TTFT buckets, with chosen values:

spec_t0 -> spec_t1 (both engines grew), per engine (drafts, draft tokens, accepted, per position 0..2):
    engine 0: (100, 300, 150, [70, 50, 30]) -> (160, 480, 240, [110, 80, 50])
    engine 1: ( 40, 120,  48, [24, 16,  8]) -> ( 80, 240, 108, [54, 36, 18])
spec_t1 -> spec_t2_engine1_restarted (engine 1 restarted, counters start again):
    engine 0: -> (190, 570, 285, [130, 95, 60]);  engine 1: -> (10, 30, 12, [6, 4, 2])
TTFT observations (s) added t0 -> t1: engine 0: 0.09 0.2 0.2 0.3 0.6 3.0; engine 1: 0.15 0.4 0.45 0.9
TTFT t1 -> t2: engine 0: 0.2 0.3; engine 1 restarted with one observation 0.05.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from loadgen.prom.deltas import (
    CounterDelta,
    HistogramDelta,
    SpecDecodeCounters,
    counter_delta,
    has_spec_decode,
    histogram_delta,
    spec_decode_delta,
    spec_decode_positions,
)
from loadgen.prom.exposition import PromParseError, Snapshot, cache_config_info, only_families, parse_metrics

DATA = Path(__file__).parents[1] / "data"
TTFT = "vllm:time_to_first_token_seconds"


def load(name: str) -> Snapshot:
    return parse_metrics((DATA / f"vllm032_{name}.prom").read_text())


@pytest.fixture(scope="module")
def t0() -> Snapshot:
    return load("spec_t0")


@pytest.fixture(scope="module")
def t1() -> Snapshot:
    return load("spec_t1")


@pytest.fixture(scope="module")
def t2() -> Snapshot:
    return load("spec_t2_engine1_restarted")


@pytest.fixture(scope="module")
def plain0() -> Snapshot:
    return load("plain_t0")


@pytest.fixture(scope="module")
def plain1() -> Snapshot:
    return load("plain_t1")


# --- parsing -----------------------------------------------------------------------------------------


def test_parse_drops_created_and_keeps_types(t1: Snapshot) -> None:
    assert not [s for s in t1.samples if s.name.endswith("_created")]
    assert t1.types["vllm:spec_decode_num_drafts"] == "counter"
    assert t1.types[TTFT] == "histogram"
    assert t1.types["vllm:num_requests_running"] == "gauge"
    assert not [n for n in t1.types if n.endswith("_created")]
    drafts = t1.values("vllm:spec_decode_num_drafts_total")
    assert sorted((dict(s.labels)["engine"], s.value) for s in drafts) == [("0", 160.0), ("1", 80.0)]
    assert all(s.labels["model_name"] == "target" for s in drafts)


def test_values_label_filter_and_total(t1: Snapshot) -> None:
    assert [s.value for s in t1.values("vllm:num_requests_running", engine="1")] == [2.0]
    assert t1.total("vllm:num_requests_running") == 5.0
    assert t1.total("vllm:num_requests_running", engine="0") == 3.0
    assert t1.total("vllm:num_requests_running", model_name="other") is None
    assert t1.total("vllm:no_such_metric") is None
    assert t1.total("vllm:spec_decode_num_accepted_tokens_per_pos_total", position="2") == 68.0
    assert t1.total("vllm:request_success_total", finished_reason="length") == 25.0
    # Exact sample names only: the bare counter family name has no samples.
    assert t1.values("vllm:spec_decode_num_drafts") == []


def test_has_family_prefix(t1: Snapshot, plain0: Snapshot) -> None:
    assert t1.has_family_prefix("vllm:spec_decode_")
    assert not plain0.has_family_prefix("vllm:spec_decode_")
    assert plain0.has_family_prefix("vllm:")
    assert plain0.has_family_prefix("python_gc")


def test_empty_text_is_an_empty_snapshot() -> None:
    snap = parse_metrics("")
    assert (snap.samples, dict(snap.types)) == ((), {})


@pytest.mark.parametrize(
    "text",
    [
        "<!DOCTYPE html>\n<html><body>Bad gateway</body></html>",
        "404 page not found",
        "Internal Server Error",
        '{"error": "not found"}',
        "vllm:x_total{engine=0} 1",
        '# TYPE vllm:x_total counter\nvllm:x_total{engine="0"} abc',
    ],
)
def test_garbage_raises_prom_parse_error(text: str) -> None:
    with pytest.raises(PromParseError, match="not Prometheus text exposition") as info:
        parse_metrics(text)
    assert isinstance(info.value, ValueError)
    assert "\n" not in str(info.value)


# --- counters ----------------------------------------------------------------------------------------


def test_counter_delta_sums_engines(t0: Snapshot, t1: Snapshot) -> None:
    # engine 0: 700-400=300, engine 1: 350-150=200
    assert counter_delta(t0, t1, "vllm:generation_tokens_total") == CounterDelta(500.0, False, 2)
    assert counter_delta(t0, t1, "vllm:generation_tokens_total", engine="1") == CounterDelta(200.0, False, 1)
    # finished_reason="length": (16-10) + (9-5)
    delta = counter_delta(t0, t1, "vllm:request_success_total", finished_reason="length")
    assert delta == CounterDelta(10.0, False, 2)
    assert counter_delta(t0, t1, "vllm:request_success_total").value == 10.0


def test_counter_delta_reset(t1: Snapshot, t2: Snapshot) -> None:
    # engine 0: 800-700=100; engine 1 restarted 350 -> 40: counts 40.
    assert counter_delta(t1, t2, "vllm:generation_tokens_total") == CounterDelta(140.0, True, 2)
    assert counter_delta(t1, t2, "vllm:generation_tokens_total", engine="0") == CounterDelta(100.0, False, 1)


def test_counter_delta_series_only_after_and_vanished() -> None:
    before = parse_metrics('# TYPE c_total counter\nc_total{engine="0"} 10\n')
    after = parse_metrics('# TYPE c_total counter\nc_total{engine="0"} 15\nc_total{engine="1"} 7\n')
    assert counter_delta(before, after, "c_total") == CounterDelta(12.0, False, 2)
    # A vanished series contributes nothing and flags the delta as not continuous.
    assert counter_delta(after, parse_metrics('c_total{engine="0"} 19\n'), "c_total") == CounterDelta(4.0, True, 1)


def test_counter_delta_absent_counter(plain0: Snapshot, plain1: Snapshot) -> None:
    assert counter_delta(plain0, plain1, "vllm:spec_decode_num_drafts_total") == CounterDelta(0.0, False, 0)


# --- spec decode -------------------------------------------------------------------------------------


def test_spec_decode_delta_closed_form(t0: Snapshot, t1: Snapshot) -> None:
    got = spec_decode_delta(t0, t1)
    # drafts (60+40), draft tokens (180+120), accepted (90+60), per position (40+30, 30+20, 20+10)
    assert got == SpecDecodeCounters(100.0, 300.0, 150.0, (70.0, 50.0, 30.0), reset=False)
    assert got is not None
    assert got.num_accepted_tokens / got.num_draft_tokens == 0.5  # acceptance rate
    assert 1 + got.num_accepted_tokens / got.num_drafts == 2.5  # mean acceptance length
    assert [a / got.num_drafts for a in got.accepted_per_position] == [0.7, 0.5, 0.3]
    assert got.num_draft_tokens / got.num_drafts == 3.0  # mean proposed length == K


def test_spec_decode_delta_with_engine_restart(t1: Snapshot, t2: Snapshot) -> None:
    got = spec_decode_delta(t1, t2)
    # engine 0: +30 drafts, +90 draft tokens, +45 accepted, +(20, 15, 10); engine 1 counts from 0.
    assert got == SpecDecodeCounters(40.0, 120.0, 57.0, (26.0, 19.0, 12.0), reset=True)


def test_spec_decode_delta_label_filter(t0: Snapshot, t1: Snapshot) -> None:
    assert spec_decode_delta(t0, t1, engine="1") == SpecDecodeCounters(
        40.0, 120.0, 60.0, (30.0, 20.0, 10.0), reset=False
    )
    assert spec_decode_delta(t0, t1, model_name="other") == SpecDecodeCounters(0.0, 0.0, 0.0, (), False)


def test_spec_decode_delta_from_plain_baseline_counts_fully(plain0: Snapshot, t0: Snapshot) -> None:
    got = spec_decode_delta(plain0, t0)
    assert got == SpecDecodeCounters(140.0, 420.0, 198.0, (94.0, 66.0, 38.0), reset=False)


def test_plain_server_has_no_spec_decode(plain0: Snapshot, plain1: Snapshot, t0: Snapshot) -> None:
    assert spec_decode_delta(plain0, plain1) is None
    assert spec_decode_delta(t0, plain1) is None
    assert not has_spec_decode(plain1)
    assert has_spec_decode(t0)
    assert spec_decode_positions(plain1) == 0


def test_spec_decode_positions_counts_k(t0: Snapshot) -> None:
    assert spec_decode_positions(t0) == 3
    assert spec_decode_positions(t0, engine="1") == 3
    k5 = "\n".join(
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="{e}",model_name="m",position="{p}"}} 0'
        for e in "01"
        for p in range(5)
    )
    assert spec_decode_positions(parse_metrics(k5)) == 5


def test_positions_ordered_numerically() -> None:
    text = "\n".join(
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",position="{p}"}} {p}'
        for p in (10, 2, 0, 1, 3, 4, 5, 6, 7, 8, 9)
    )
    got = spec_decode_delta(parse_metrics(""), parse_metrics(text))
    assert got is not None and got.accepted_per_position == tuple(float(p) for p in range(11))


# --- histograms --------------------------------------------------------------------------------------


def test_quantile_hand_computed() -> None:
    h = HistogramDelta((0.1, 0.5, 1.0, math.inf), (2.0, 6.0, 8.0, 10.0), count=10.0, sum=4.2)
    assert h.quantile(0.5) == pytest.approx(0.4)  # 0.1 + (5-2)/(6-2) * 0.4
    assert h.quantile(0.1) == pytest.approx(0.05)  # 0 + 1/2 * 0.1
    assert h.quantile(0.7) == pytest.approx(0.75)  # 0.5 + (7-6)/(8-6) * 0.5
    assert h.quantile(0.8) == pytest.approx(1.0)  # rank 8 falls exactly on le=1
    assert h.quantile(0.0) == 0.0
    assert h.quantile(0.9) == 1.0  # rank 9 in the +Inf bucket: highest finite bound
    assert h.quantile(1.0) == 1.0


def test_quantile_empty_and_degenerate() -> None:
    assert HistogramDelta((0.1, math.inf), (0.0, 0.0), 0.0, 0.0).quantile(0.5) is None
    assert HistogramDelta((), (), 0.0, 0.0).quantile(0.5) is None
    assert HistogramDelta((math.inf,), (3.0,), 3.0, 1.0).quantile(0.5) is None
    assert HistogramDelta((0.1, 0.5), (1.0, 2.0), 2.0, 0.3).quantile(0.5) is None  # no +Inf bucket
    assert HistogramDelta((0.0, 1.0, math.inf), (0.0, 4.0, 4.0), 4.0, 2.0).quantile(0.0) == 0.0
    # Rank in a first bucket whose bound is <= 0: that bound, no interpolation from 0 (Prometheus).
    assert HistogramDelta((-1.0, 1.0, math.inf), (2.0, 4.0, 4.0), 4.0, 0.0).quantile(0.25) == -1.0
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        HistogramDelta((1.0, math.inf), (1.0, 1.0), 1.0, 1.0).quantile(1.5)


def test_quantile_non_monotonic_counts_are_fixed() -> None:
    h = HistogramDelta((1.0, 2.0, 3.0, math.inf), (4.0, 3.0, 8.0, 8.0), 8.0, 10.0)
    # counts become (4, 4, 8, 8): rank 6 lies in (2, 3]: 2 + (6-4)/(8-4)
    assert h.quantile(0.75) == pytest.approx(2.5)


def test_histogram_delta_fixture(t0: Snapshot, t1: Snapshot) -> None:
    h = histogram_delta(t0, t1, TTFT)
    assert len(h.upper_bounds) == 23 and h.upper_bounds[-1] == math.inf
    cumulative = dict(zip(h.upper_bounds, h.cumulative_counts, strict=True))
    assert [cumulative[le] for le in (0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, math.inf)] == [
        0.0, 1.0, 4.0, 7.0, 8.0, 9.0, 9.0, 10.0, 10.0,
    ]  # fmt: skip
    assert (h.count, h.reset) == (10.0, False)
    assert h.sum == pytest.approx(0.09 + 0.2 + 0.2 + 0.3 + 0.6 + 3.0 + 0.15 + 0.4 + 0.45 + 0.9)
    assert h.quantile(0.5) == pytest.approx(0.25 + 0.25 / 3)  # rank 5 in (0.25, 0.5]: (5-4)/(7-4)
    assert h.quantile(0.9) == pytest.approx(1.0)  # rank 9 reaches le=1.0 exactly
    assert h.quantile(0.95) == pytest.approx(3.75)  # rank 9.5 in (2.5, 5]: 2.5 + 0.5 * 2.5
    one = histogram_delta(t0, t1, TTFT, engine="1")
    # engine 1 alone: cumulative 0 (le 0.1), 1 (0.25), 3 (0.5), 4 (1.0); rank 2: 0.25 + 0.25 * (2-1)/(3-1)
    assert one.count == 4.0
    assert one.quantile(0.5) == pytest.approx(0.375)


def test_histogram_delta_reset(t1: Snapshot, t2: Snapshot) -> None:
    h = histogram_delta(t1, t2, TTFT)
    cumulative = dict(zip(h.upper_bounds, h.cumulative_counts, strict=True))
    # engine 0: +0.2 +0.3; engine 1 restarted with one 0.05 observation
    assert [cumulative[le] for le in (0.04, 0.06, 0.1, 0.25, 0.5, math.inf)] == [0, 1, 1, 2, 3, 3]
    assert (h.count, h.reset) == (3.0, True)
    assert h.sum == pytest.approx(0.55)


def test_histogram_delta_empty_and_absent(plain0: Snapshot, t0: Snapshot) -> None:
    empty = histogram_delta(plain0, plain0, TTFT)
    assert (empty.count, empty.sum, empty.quantile(0.5)) == (0.0, 0.0, None)
    assert set(empty.cumulative_counts) == {0.0} and len(empty.upper_bounds) == 23
    absent = histogram_delta(t0, t0, "vllm:no_such_histogram")
    assert absent == HistogramDelta((), (), 0.0, 0.0, False)


def test_histogram_delta_series_only_after_and_bucket_change() -> None:
    before = parse_metrics('h_bucket{engine="0",le="1"} 1\nh_bucket{engine="0",le="+Inf"} 1\nh_count{engine="0"} 1\n')
    after = parse_metrics(
        'h_bucket{engine="0",le="1"} 3\nh_bucket{engine="0",le="+Inf"} 4\n'
        'h_count{engine="0"} 4\nh_sum{engine="0"} 9\n'
        'h_bucket{engine="1",le="1"} 2\nh_bucket{engine="1",le="+Inf"} 2\n'
        'h_count{engine="1"} 2\nh_sum{engine="1"} 1\n'
    )
    h = histogram_delta(before, after, "h")
    assert h == HistogramDelta((1.0, math.inf), (4.0, 5.0), count=5.0, sum=10.0, reset=False)
    rebucketed = parse_metrics(
        'h_bucket{engine="0",le="2"} 1\nh_bucket{engine="0",le="+Inf"} 1\nh_count{engine="0"} 1\n'
    )
    assert histogram_delta(before, rebucketed, "h") == HistogramDelta((2.0, math.inf), (1.0, 1.0), 1.0, 0.0, True)
    mixed = parse_metrics(
        'h_bucket{engine="0",le="1"} 1\nh_bucket{engine="0",le="+Inf"} 1\n'
        'h_bucket{engine="1",le="2"} 1\nh_bucket{engine="1",le="+Inf"} 1\n'
    )
    with pytest.raises(ValueError, match="different bucket bounds"):
        histogram_delta(before, mixed, "h")


# --- cache_config_info -------------------------------------------------------------------------------


def test_cache_config_info(t0: Snapshot, plain0: Snapshot) -> None:
    info = cache_config_info(t0)
    assert info["engine"] == "0"
    assert (info["num_gpu_blocks"], info["block_size"], info["gpu_memory_utilization"]) == (
        "3451",
        "16",
        "0.3",
    )
    assert cache_config_info(t0, engine="1")["engine"] == "1"
    assert cache_config_info(plain0)["num_gpu_blocks"] == "4096"
    assert cache_config_info(parse_metrics("vllm:num_requests_running 0\n")) == {}
    assert cache_config_info(t0, engine="7") == {}


@pytest.mark.parametrize("name", ["vllm032_spec_t1.prom", "vllm032_plain_t0.prom"])
def test_only_families_keeps_exactly_their_samples(name: str) -> None:
    text = (DATA / name).read_text()
    full = parse_metrics(text)
    gauges = ("vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting")
    small = parse_metrics(only_families(text, gauges))
    assert {s.name for s in small.samples} == set(gauges)
    for g in gauges:
        assert small.values(g) == full.values(g) and small.types[g] == full.types[g] == "gauge"
    counter = parse_metrics(only_families(text, ["vllm:request_success"]))  # a counter: its _total samples
    assert counter.total("vllm:request_success_total") == full.total("vllm:request_success_total")
    assert only_families(text, ["vllm:no_such_family"]) == "" and only_families("<html>", gauges) == ""
