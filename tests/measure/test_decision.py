"""The one decision of a cell (measure/decision.py): each rule of its docstring on intervals of known ends."""

from __future__ import annotations

import math

import pytest

from loadgen.measure.decision import (
    AHEAD,
    BEHIND,
    FASTER,
    INCONCLUSIVE,
    NOT_DISTINGUISHABLE,
    SHORT,
    SLOWER,
    STATUS_OF,
    Bar,
    as_speedup,
    crossover_range,
    decide,
    side,
)
from loadgen.records.cardcell import Ratio
from loadgen.records.criteria import Criteria


def ratio(low: float | None, high: float | None, value: float | None = None) -> Ratio:
    point = value if value is not None else (math.sqrt(low * high) if low and high else None)
    return Ratio(point, ci_low=low, ci_high=high)


FLOOR = ratio(0.97, 1.03, 1.0)  # the band of speedups [1/1.03, 1/0.97] = [0.971, 1.031]


def test_speedup_is_the_inverse_of_a_latency_ratio_and_the_ratio_of_a_throughput() -> None:
    s, lo, hi = as_speedup(ratio(0.5, 0.8, 0.625), lower_is_better=True)
    assert (s, lo, hi) == pytest.approx((1.6, 1.25, 2.0))
    assert as_speedup(ratio(1.1, 1.3, 1.2), lower_is_better=False) == (1.2, 1.1, 1.3)
    assert as_speedup(None, True) == (None, None, None)


def test_a_ci_clear_of_the_floor_on_the_fast_side_is_faster_and_passes() -> None:
    d = decide("tpot_p50", ratio(0.69, 0.91), FLOOR)
    assert d.outcome == FASTER and d.passes and d.decided and STATUS_OF[d.outcome] == "pass"
    assert d.band == pytest.approx((1 / 1.03, 1 / 0.97))


def test_a_ci_inside_the_floor_never_passes_whatever_its_point() -> None:
    # the user's case: 0.793 [0.693, 0.908] beside a floor of [0.85, 1.12]: overlapping, not passed
    wide = ratio(0.85, 1.12, 0.98)
    d = decide("tpot_p50", ratio(0.693, 0.908, 0.793), wide)
    # speedups [1.10, 1.44] overlap the band [0.89, 1.18] and reach past it widened by ±5%: more blocks
    assert not d.passes and d.outcome == INCONCLUSIVE
    inside = decide("tpot_p50", ratio(0.90, 1.10), wide)  # [0.91, 1.11]: inside the widened band of a floor
    assert inside.outcome == INCONCLUSIVE and not inside.passes  # itself ±0.14: the noise not yet known to ±5%
    known = decide("tpot_p50", ratio(0.95, 1.07), FLOOR)  # [0.93, 1.05] inside a floor of ±0.03 widened by 5%
    assert known.outcome == NOT_DISTINGUISHABLE and known.decided
    narrow = decide("tpot_p50", ratio(0.99, 1.02), FLOOR)
    assert narrow.outcome == NOT_DISTINGUISHABLE and narrow.decided and not narrow.passes


def test_slower_is_below_the_floor_as_a_speedup() -> None:
    assert decide("tpot_p50", ratio(1.04, 1.23), FLOOR).outcome == SLOWER
    assert decide("output_throughput", ratio(0.8, 0.9), FLOOR).outcome == SLOWER


def test_min_speedup_above_one_gives_short_or_inconclusive_clear_of_the_floor() -> None:
    bar = Bar(min_speedup=1.2)
    assert decide("tpot_p50", ratio(0.70, 0.80), FLOOR, bar).outcome == FASTER  # speedups [1.25, 1.43]
    assert decide("tpot_p50", ratio(0.88, 0.92), FLOOR, bar).outcome == SHORT  # [1.087, 1.136] < 1.2
    assert decide("tpot_p50", ratio(0.75, 0.90), FLOOR, bar).outcome == INCONCLUSIVE  # [1.11, 1.33]


def test_a_ci_overlapping_the_floor_below_a_bar_above_one_is_decided_short() -> None:
    # speedups [0.769, 1.111]: inside the noise of plain, and decidedly below the declared 1.2
    d = decide("tpot_p50", ratio(0.9, 1.3), FLOOR, Bar(min_speedup=1.2))
    assert d.outcome == SHORT and d.decided and not d.passes and "below min_speedup 1.2" in d.reason
    # the same CI with a bar it can reach (1.1 < 1.111) is not decided below it
    assert decide("tpot_p50", ratio(0.9, 1.3), FLOOR, Bar(min_speedup=1.1)).outcome != SHORT


def test_the_precision_decides_between_not_distinguishable_and_inconclusive() -> None:
    r = ratio(0.95, 1.06)  # log half-width 0.0547; no placebo: the band is 1
    assert decide("tpot_p50", r, None, Bar(precision=0.05)).outcome == INCONCLUSIVE
    assert decide("tpot_p50", r, None, Bar(precision=0.06)).outcome == NOT_DISTINGUISHABLE
    assert decide("tpot_p50", r, FLOOR, Bar(precision=0.05)).outcome == NOT_DISTINGUISHABLE  # inside the floor ±5%


def test_without_a_ci_or_a_value_it_is_inconclusive() -> None:
    assert decide("tpot_p50", Ratio(0.8), FLOOR).outcome == INCONCLUSIVE
    assert decide("tpot_p50", None, FLOOR).outcome == INCONCLUSIVE
    assert decide("tpot_p50", Ratio(None), None).reason == "tpot_p50 not measured"


def test_without_a_placebo_the_band_is_one() -> None:
    assert decide("tpot_p50", ratio(0.9, 0.99), None).outcome == FASTER
    assert decide("tpot_p50", ratio(0.97, 1.01), None).outcome == NOT_DISTINGUISHABLE


def test_point_judging_keeps_the_floor_rule() -> None:
    # use_confidence_interval = false judges min_speedup at the point, but the CI must still clear the floor
    bar = Bar(min_speedup=1.2, use_ci=False)
    assert decide("tpot_p50", ratio(0.75, 0.90, 0.80), FLOOR, bar).outcome == FASTER
    assert decide("tpot_p50", ratio(0.75, 1.02, 0.80), FLOOR, bar).outcome != FASTER


def test_the_bar_of_a_metric_comes_from_the_criteria() -> None:
    c = Criteria(primary=("tpot_p50",), min_speedup=1.1, ci_half_width=0.03)
    assert Bar.of(c, "tpot_p50") == Bar(1.1, 0.03, True)
    assert Bar.of(c, "ttft_p50") == Bar(1.0, 0.03, True)  # not primary: against the floor only
    assert Bar.of(None, "tpot_p50") == Bar()


def test_the_crossover_range_lies_between_the_last_level_ahead_and_the_first_slower_level() -> None:
    sides = [AHEAD, AHEAD, None, BEHIND]
    assert crossover_range([1, 4, 16, 64], sides) == [4.0, 64.0]  # 16 inside the floor: inside the range
    assert crossover_range([1, 4], [AHEAD, None]) is None  # never slower
    assert crossover_range([1, 4], [BEHIND, AHEAD]) is None  # never faster first
    assert crossover_range([1, 4, 8], [None, AHEAD, BEHIND]) == [4.0, 8.0]
    assert crossover_range([1, 4], [None, BEHIND]) is None


def test_a_short_level_is_ahead_only_when_its_ci_is_clear_of_the_floor_on_the_fast_side() -> None:
    bar = Bar(1.2, 0.05, True)
    clear = ratio(0.86, 0.90)  # speedup 1.136 [1.111, 1.163]: clear of the floor, below the bar
    noisy = ratio(1.114, 3.072, 1.85)  # speedup 0.54 [0.33, 0.90]: overlapping a wide floor, below the bar
    wide = Ratio(value=1.0, ci_low=0.5, ci_high=1.9)
    for r, floor, expected in ((clear, FLOOR, AHEAD), (noisy, wide, None)):
        decision = decide("tpot_p50", r, floor, bar)
        assert decision.outcome == SHORT
        assert side("tpot_p50", r.with_fields(effect=decision.outcome), floor) == expected
    slow = ratio(1.4, 1.6)
    assert side("tpot_p50", slow.with_fields(effect=decide("tpot_p50", slow, FLOOR).outcome), FLOOR) == BEHIND
    fast = ratio(0.45, 0.55)
    assert side("tpot_p50", fast.with_fields(effect=decide("tpot_p50", fast, FLOOR).outcome), FLOOR) == AHEAD
    assert side("tpot_p50", fast, FLOOR) is None  # no decided effect: neither side


def test_inside_a_floor_wider_than_the_precision_is_inconclusive_until_the_floor_is_known() -> None:
    """The H100 grounded c=64 cell: the candidate's speedup 1.224 [1.144, 1.308] (±0.067) against an A/A floor of
    1.107 [0.761, 1.610] (three blocks of a noisy plain server, ±0.375): inside the floor, but the floor is not
    yet the noise, so more blocks are owed; the same CI inside a floor known to ±0.05 is not distinguishable."""
    bar = Bar(1.05, 0.05, True)
    cell = Ratio(1 / 1.224, ci_low=1 / 1.308, ci_high=1 / 1.144)
    wide = Ratio(1.107, ci_low=0.761, ci_high=1.610)
    d = decide("tpot_p50", cell, wide, bar)
    assert d.outcome == INCONCLUSIVE and "itself wider than ±0.05" in d.reason
    known = Ratio(1.0, ci_low=0.80, ci_high=0.84)  # a floor of ±0.025 whose band [1, 1.25] holds the CI widened
    assert decide("tpot_p50", cell, known, Bar(1.0, 0.05, True)).outcome == NOT_DISTINGUISHABLE
    narrow = Ratio(1.0, ci_low=0.99, ci_high=1.01)  # a CI within the precision is decided whatever the floor
    assert decide("tpot_p50", narrow, wide, bar).outcome == SHORT  # overlaps the floor, below min_speedup 1.05
    assert decide("tpot_p50", narrow, wide, Bar(1.0, 0.05, True)).outcome == NOT_DISTINGUISHABLE
