"""prom/deltas.py and prom/exposition.py on hand-written exposition text with known answers: counter increases
across a reset, histogram deltas and their quantiles with PromQL ``histogram_quantile`` semantics (Prometheus
promql/quantile.go), a rank in the +Inf bucket, and the families kept by ``only_families``."""

from __future__ import annotations

import math

import pytest

from loadgen.prom.deltas import (
    HistogramDelta,
    SpecDecodeCounters,
    above_bound,
    counter_delta,
    engine_counter_delta,
    has_spec_decode,
    histogram_delta,
    spec_decode_delta,
    spec_decode_held,
)
from loadgen.prom.exposition import only_families, parse_metrics


def test_counter_increase_per_series_across_a_reset() -> None:
    before = parse_metrics('c_total{engine="0"} 10\nc_total{engine="1"} 50\nc_total{engine="2"} 7\n')
    after = parse_metrics('c_total{engine="0"} 25\nc_total{engine="1"} 4\n')
    got = counter_delta(before, after, "c_total")
    # engine 0: +15; engine 1 restarted (50 -> 4): its 4 count; engine 2 vanished: a reset
    assert (got.value, got.reset, got.series) == (19.0, True, 2)
    held = counter_delta(
        before, parse_metrics('c_total{engine="0"} 12\nc_total{engine="1"} 51\nc_total{engine="2"} 7\n'), "c_total"
    )
    assert (held.value, held.reset, held.series) == (3.0, False, 3)
    assert counter_delta(before, after, "c_total", engine="1").value == 4.0


def hist(counts: tuple[int, int, int, int], total: float, engine: str = "0") -> str:
    le = ("0.1", "0.5", "1.0", "+Inf")
    lines = [f'h_bucket{{engine="{engine}",le="{b}"}} {c}' for b, c in zip(le, counts, strict=True)]
    return "\n".join([*lines, f'h_count{{engine="{engine}"}} {counts[-1]}', f'h_sum{{engine="{engine}"}} {total}'])


def test_histogram_delta_and_quantiles() -> None:
    before = parse_metrics(hist((1, 2, 2, 2), 0.5) + "\n")
    after = parse_metrics(hist((3, 8, 10, 12), 9.5) + "\n" + hist((0, 0, 0, 4), 40.0, "1") + "\n")
    h = histogram_delta(before, after, "h")
    assert h.upper_bounds == (0.1, 0.5, 1.0, math.inf) and h.cumulative_counts == (2.0, 6.0, 8.0, 14.0)
    assert (h.count, h.sum, h.reset) == (14.0, 49.0, False)
    # rank 0.25 x 14 = 3.5 in (0.1, 0.5] holding ranks 2..6: 0.1 + (3.5 - 2) / 4 x 0.4
    assert h.quantile(0.25) == pytest.approx(0.25)
    assert h.quantile(0.1) == pytest.approx(0.1 * 1.4 / 2)  # the first bucket starts at 0
    assert h.quantile(0.9) == 1.0 and above_bound(h, 0.9) is True  # rank 12.6 lies in +Inf: the highest bound
    assert above_bound(h, 0.5) is False
    with pytest.raises(ValueError, match="quantile q must be in \\[0, 1\\], got 1.5"):
        h.quantile(1.5)
    empty = histogram_delta(before, parse_metrics("other 1\n"), "h")
    assert (empty.upper_bounds, empty.count, empty.reset) == ((), 0.0, True) and empty.quantile(0.5) is None
    assert above_bound(HistogramDelta((1.0, math.inf), (0.0, 0.0), 0.0, 0.0, False), 0.5) is False


def test_a_series_that_went_down_counts_its_after_values() -> None:
    before = parse_metrics(hist((5, 9, 10, 10), 3.0) + "\n")
    after = parse_metrics(hist((1, 1, 2, 2), 1.2) + "\n")
    h = histogram_delta(before, after, "h")
    assert (h.cumulative_counts, h.count, h.sum, h.reset) == ((1.0, 1.0, 2.0, 2.0), 2.0, 1.2, True)


def test_only_families_keeps_their_lines() -> None:
    text = (
        "# HELP a_total A.\n# TYPE a_total counter\na_total 1\na_created 5\n# TYPE h histogram\n"
        'h_bucket{le="+Inf"} 2\nh_count 2\nh_sum 1\nhx 9\n# TYPE b gauge\nb 3\n'
    )
    assert only_families(text, ["a", "h"]) == (
        "# HELP a_total A.\n# TYPE a_total counter\na_total 1\na_created 5\n"
        '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_count 2\nh_sum 1\n'
    )
    assert only_families(text, ["nope"]) == ""
    assert not has_spec_decode(parse_metrics(text))
    assert has_spec_decode(parse_metrics("vllm:spec_decode_num_drafts_total 1\n"))


def spec(engine: str, drafts: int, tokens: int, accepted: int, per_pos: tuple[int, ...]) -> str:
    lab = f'engine="{engine}"'
    lines = [
        f"vllm:spec_decode_num_drafts_total{{{lab}}} {drafts}",
        f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {tokens}",
        f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {accepted}",
    ]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{i}"}} {v}' for i, v in enumerate(per_pos)
    ]
    return "\n".join(lines) + "\n"


def test_spec_decode_deltas_from_the_engines_that_held() -> None:
    before = parse_metrics(spec("0", 10, 20, 8, (5, 3)) + spec("1", 100, 200, 90, (60, 30)))
    after = parse_metrics(spec("0", 30, 60, 28, (17, 11)) + spec("1", 5, 10, 4, (3, 1)))  # engine 1 restarted
    held = spec_decode_held(before, after)
    assert held == SpecDecodeCounters(20.0, 40.0, 20.0, (12.0, 8.0), False, ("0", "1"), ("1",))
    whole = spec_decode_delta(before, after)  # increase() over both: engine 1 counts its after values
    assert whole is not None and (whole.num_drafts, whole.accepted_per_position, whole.reset) == (
        25.0,
        (15.0, 9.0),
        True,
    )
    lost = engine_counter_delta(before, after, "vllm:spec_decode_num_drafts_total")
    assert (lost.value, lost.engines, lost.reset_engines) == (20.0, ("0", "1"), ("1",))
    assert spec_decode_held(before, parse_metrics("other 1\n")) is None  # no spec-decode series: not measured
