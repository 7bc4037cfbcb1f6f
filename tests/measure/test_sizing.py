"""Growing cells until they are decided: decided arms, the blocks each undecided cell still needs
(measure/sizing.py, over measure/decision.py's rule)."""

from __future__ import annotations

import math

from loadgen.measure.decision import Bar
from loadgen.measure.sizing import decided, needed
from loadgen.profile.cells import PLACEBO, PLAIN, CellKey
from loadgen.records.cardcell import Ratio

C1, C4, C16 = CellKey("w", "c1"), CellKey("w", "c4"), CellKey("w", "c16")
BAR = Bar(min_speedup=1.0, precision=0.05)
M = "tpot_p50"


def ci(low: float | None, high: float | None) -> Ratio:
    """A primary ratio (speculative / plain TPOT) with the 95% CI [low, high]."""
    return Ratio(None if low is None or high is None else math.sqrt(low * high), ci_low=low, ci_high=high)


AA = {C1: ci(0.99, 1.01), C4: ci(0.98, 1.02), C16: None}


def test_an_arm_faster_than_the_noise_floor_at_every_cell_is_decided() -> None:
    ratios = {C1: {"k1": ci(0.7, 0.8)}, C4: {"k1": ci(0.8, 0.9)}}
    assert decided(ratios, AA, "k1", M, BAR) is True


def test_an_arm_slower_at_one_cell_and_faster_at_another_is_decided() -> None:
    ratios = {C1: {"k1": ci(0.7, 0.8)}, C4: {"k1": ci(1.1, 1.3)}}
    assert decided(ratios, AA, "k1", M, BAR) is True


def test_a_narrow_interval_inside_the_floor_is_decided_not_distinguishable() -> None:
    # [0.99, 1.03]: log half-width 0.0198 <= 0.05, overlapping the band [0.98, 1.02]
    assert decided({C4: {"k1": ci(0.99, 1.03)}}, AA, "k1", M, BAR) is True


def test_a_wide_interval_across_the_floor_is_undecided() -> None:
    ratios = {C1: {"k1": ci(0.7, 0.8)}, C4: {"k1": ci(0.7, 1.3)}}
    assert decided(ratios, AA, "k1", M, BAR) is False


def test_an_arm_without_an_interval_at_one_cell_is_not_decided() -> None:
    ratios = {C1: {"k1": ci(0.7, 0.8)}, C4: {"k1": ci(None, None)}}
    assert decided(ratios, AA, "k1", M, BAR) is False


def test_an_arm_measured_nowhere_is_not_decided() -> None:
    assert decided({C1: {"k1": ci(0.7, 0.8)}}, AA, "k2", M, BAR) is False
    assert decided({}, AA, "k1", M, BAR) is False


def test_only_the_undecided_arms_of_a_cell_get_a_block_with_plain_and_the_placebo() -> None:
    ratios = {
        C1: {"fast": ci(0.7, 0.8), "open": ci(0.6, 1.4)},
        C4: {"fast": ci(0.8, 0.9), "open": ci(0.8, 0.85)},
    }
    assert needed(ratios, AA, ["fast", "open"], M, BAR, placebo=True) == {C1: [PLAIN, PLACEBO, "open"]}
    assert needed(ratios, AA, ["fast", "open"], M, BAR, placebo=False) == {C1: [PLAIN, "open"]}


def test_a_cell_that_cannot_meet_min_speedup_is_decided_however_wide() -> None:
    # speedup CI [1/1.3, 1/0.95] = [0.77, 1.05] overlaps the floor; its top is below min_speedup 1.2
    bar = Bar(min_speedup=1.2, precision=0.05)
    assert needed({C4: {"k": ci(0.95, 1.3)}}, AA, ["k"], M, bar, placebo=True) == {}


def test_a_clear_win_spanning_min_speedup_still_needs_blocks() -> None:
    # speedup CI [1.11, 1.33]: clear of the floor, spans 1.2
    bar = Bar(min_speedup=1.2, precision=0.05)
    assert needed({C4: {"k": ci(0.75, 0.9)}}, AA, ["k"], M, bar, placebo=False) == {C4: [PLAIN, "k"]}


def test_nothing_is_needed_when_every_arm_is_decided() -> None:
    ratios = {C1: {"k1": ci(0.7, 0.8)}, C16: {"k1": ci(1.2, 1.3)}}
    assert needed(ratios, AA, ["k1"], M, BAR, placebo=True) == {}
