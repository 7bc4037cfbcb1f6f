"""Growing cells to a declared CI half-width: decided arms, wide intervals, the blocks each cell still needs and
the cells that stopped short (measure/sizing.py)."""

from __future__ import annotations

import math

import pytest

from loadgen.measure.sizing import decided, needed, stopped_short, wider
from loadgen.profile.cells import PLACEBO, PLAIN, CellKey
from loadgen.records.cardcell import Ratio

C1, C4, C16 = CellKey("w", "c1"), CellKey("w", "c4"), CellKey("w", "c16")
LN2 = math.log(2)


def ci(low: float | None, high: float | None) -> Ratio:
    """A primary ratio with the 95% CI [low, high]."""
    return Ratio(None if low is None or high is None else math.sqrt(low * high), ci_low=low, ci_high=high)


AA = {C1: ci(0.95, 1.05), C4: ci(0.97, 1.02), C16: None}


# --- decided ----------------------------------------------------------------------------------------------


def test_an_arm_faster_than_the_noise_floor_at_every_cell_is_decided() -> None:
    ratios = {C1: {"k1": ci(0.7, 0.8)}, C4: {"k1": ci(0.8, 0.9)}}
    assert decided(ratios, AA, "k1", lower_is_better=True) is True


def test_an_arm_slower_at_one_cell_and_faster_at_another_is_decided() -> None:
    ratios = {C1: {"k1": ci(0.7, 0.8)}, C4: {"k1": ci(1.1, 1.3)}}
    assert decided(ratios, AA, "k1", lower_is_better=True) is True


def test_an_arm_inside_the_noise_floor_at_one_cell_is_not_decided() -> None:
    # at c4 the CI [0.9, 0.98] reaches into the A/A band [0.97, 1.02]
    ratios = {C1: {"k1": ci(0.7, 0.8)}, C4: {"k1": ci(0.9, 0.98)}}
    assert decided(ratios, AA, "k1", lower_is_better=True) is False


def test_an_arm_without_an_interval_at_one_cell_is_not_decided() -> None:
    ratios = {C1: {"k1": ci(0.7, 0.8)}, C4: {"k1": ci(None, None)}}
    assert decided(ratios, AA, "k1", lower_is_better=True) is False


def test_without_a_placebo_the_band_is_one_itself() -> None:
    # no A/A at c16: the band is [1, 1], and [0.9, 0.99] is clear of it
    assert decided({C16: {"k1": ci(0.9, 0.99)}}, AA, "k1", lower_is_better=True) is True
    assert decided({C16: {"k1": ci(0.9, 1.0)}}, AA, "k1", lower_is_better=True) is False
    assert decided({C16: {"k1": ci(0.9, 0.99)}}, {}, "k1", lower_is_better=False) is True


def test_an_arm_measured_nowhere_is_not_decided() -> None:
    assert decided({C1: {"k1": ci(0.7, 0.8)}}, AA, "k2", lower_is_better=True) is False
    assert decided({}, AA, "k1", lower_is_better=True) is False


def test_decided_only_looks_at_the_cells_where_the_arm_was_measured() -> None:
    ratios = {C1: {"k1": ci(0.7, 0.8), "k2": ci(0.9, 1.1)}, C4: {"k2": ci(0.9, 1.1)}}
    assert decided(ratios, AA, "k1", lower_is_better=True) is True
    assert decided(ratios, AA, "k2", lower_is_better=True) is False


# --- wider ------------------------------------------------------------------------------------------------


def test_a_ratio_without_an_interval_is_wider_than_any_goal() -> None:
    assert wider(Ratio(None), 10.0) is True
    assert wider(ci(None, None), 10.0) is True
    assert wider(Ratio(0.9, ci_low=0.0, ci_high=1.0), 10.0) is True


def test_wider_compares_the_log_half_width_with_the_goal() -> None:
    # [0.5, 2]: half-width (ln 2 - ln 0.5) / 2 = ln 2 ~ 0.693
    r = ci(0.5, 2.0)
    assert wider(r, 0.69) is True
    assert wider(r, 0.70) is False


def test_a_half_width_equal_to_the_goal_has_reached_it() -> None:
    assert wider(ci(0.5, 2.0), LN2) is False


# --- needed -----------------------------------------------------------------------------------------------


def test_a_wide_undecided_arm_needs_a_block_with_plain_and_the_placebo() -> None:
    ratios = {C1: {"k1": ci(0.9, 1.2)}}
    assert needed(ratios, AA, ["k1"], 0.05, lower_is_better=True, placebo=True) == {C1: [PLAIN, PLACEBO, "k1"]}


def test_without_a_placebo_a_needed_block_measures_plain_and_the_arm() -> None:
    ratios = {C1: {"k1": ci(0.9, 1.2)}}
    assert needed(ratios, AA, ["k1"], 0.05, lower_is_better=True, placebo=False) == {C1: [PLAIN, "k1"]}


def test_a_decided_arm_gets_no_more_blocks_even_where_its_interval_is_wide() -> None:
    # k1 is faster than the noise at both cells but its CI at c1 has half-width ln(8/3)/2 ~ 0.49 > 0.05;
    # k2 is inside the noise at c1 (wide) and at c4 (half-width ln(1.02/0.98)/2 ~ 0.02 <= 0.05, narrow)
    ratios = {C1: {"k1": ci(0.3, 0.8), "k2": ci(0.9, 1.2)}, C4: {"k1": ci(0.5, 0.6), "k2": ci(0.98, 1.02)}}
    out = needed(ratios, AA, ["k1", "k2"], 0.05, lower_is_better=True, placebo=True)
    assert out == {C1: [PLAIN, PLACEBO, "k2"]}


def test_arms_come_in_the_speculative_order_not_the_ratios_order() -> None:
    ratios = {C4: {"k2": ci(0.9, 1.2), "k1": ci(0.8, 1.1)}}
    assert needed(ratios, AA, ["k1", "k2"], 0.05, True, False) == {C4: [PLAIN, "k1", "k2"]}
    assert needed(ratios, AA, ["k2", "k1"], 0.05, True, False) == {C4: [PLAIN, "k2", "k1"]}


def test_an_arm_not_listed_as_speculative_is_never_grown() -> None:
    ratios = {C4: {"k1": ci(0.9, 1.2), "other": ci(0.5, 2.0)}}
    assert needed(ratios, AA, ["k1"], 0.05, True, False) == {C4: [PLAIN, "k1"]}


def test_a_cell_with_every_arm_narrow_enough_needs_nothing() -> None:
    # half-width ln(1.02/0.98)/2 ~ 0.020 against a goal of 0.05
    ratios = {C4: {"k1": ci(0.98, 1.02)}}
    assert needed(ratios, AA, ["k1"], 0.05, True, True) == {}


def test_a_ratio_with_no_interval_yet_needs_a_block() -> None:
    assert needed({C16: {"k1": ci(None, None)}}, AA, ["k1"], 0.5, True, True) == {C16: [PLAIN, PLACEBO, "k1"]}


def test_no_ratios_need_no_blocks() -> None:
    assert needed({}, AA, ["k1"], 0.05, True, True) == {}


# --- stopped_short ----------------------------------------------------------------------------------------


def test_stopped_short_lists_each_undecided_arm_still_wider_than_the_goal_with_its_half_width() -> None:
    ratios = {
        C1: {"k2": ci(0.5, 1.5), "k1": ci(0.3, 0.8)},
        C4: {"k1": ci(0.5, 0.6), "k2": ci(0.98, 1.02)},
        C16: {"k2": ci(None, None)},
    }
    out = stopped_short(ratios, AA, 0.05, lower_is_better=True)
    # k1 is decided (faster everywhere); k2 at c1: (ln 1.5 - ln 0.5) / 2 = ln 3 / 2; c4 is narrow; c16 has no CI
    assert [(key, arm) for key, arm, _ in out] == [(C1, "k2"), (C16, "k2")]
    assert out[0][2] == pytest.approx(math.log(3) / 2)
    assert out[1][2] is None


def test_stopped_short_orders_arms_by_name_within_a_cell() -> None:
    ratios = {C4: {"zeta": ci(0.9, 1.2), "alpha": ci(0.9, 1.2)}}
    assert [arm for _, arm, _ in stopped_short(ratios, AA, 0.05, True)] == ["alpha", "zeta"]


def test_nothing_stopped_short_when_every_interval_reached_the_goal() -> None:
    ratios = {C1: {"k1": ci(0.98, 1.02)}, C4: {"k1": ci(0.99, 1.01)}}
    assert stopped_short(ratios, AA, 0.05, True) == []
    assert stopped_short({}, AA, 0.05, True) == []
