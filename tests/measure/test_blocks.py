"""Block-level ratios, the t quantiles behind their CIs, and the noise floor (measure/blocks.py).

Expected values are worked out by hand in the comments; the t quantiles are NIST/SEMATECH table 1.3.6.7.2.
"""

from __future__ import annotations

import itertools
import math

import pytest

from loadgen.measure.blocks import (
    aa_holds,
    block_ratio,
    half_width,
    noise_band,
    t975,
)

LN2 = math.log(2)


# --- t975 -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("df", "expected"), [(1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228), (20, 2.086), (29, 2.045), (30, 2.042)]
)
def test_t975_returns_the_tabulated_quantile_for_one_to_thirty_degrees_of_freedom(df: int, expected: float) -> None:
    assert t975(df) == expected


@pytest.mark.parametrize(("df", "expected"), [(40, 2.021), (60, 2.000), (120, 1.980)])
def test_t975_returns_the_tabulated_quantile_at_forty_sixty_and_one_hundred_twenty(df: int, expected: float) -> None:
    assert t975(df) == pytest.approx(expected, abs=1e-12)


def test_t975_interpolates_linearly_in_one_over_df_between_thirty_and_forty() -> None:
    # w = (1/30 - 1/35) / (1/30 - 1/40) = (1/210) / (1/120) = 4/7; t = 2.042 + 4/7 * (2.021 - 2.042) = 2.030
    assert t975(35) == pytest.approx(2.030, abs=1e-12)


def test_t975_interpolates_between_forty_and_sixty() -> None:
    # w = (1/40 - 1/50) / (1/40 - 1/60) = (1/200) / (1/120) = 0.6; t = 2.021 - 0.6 * 0.021 = 2.0084
    assert t975(50) == pytest.approx(2.0084, abs=1e-12)


def test_t975_interpolates_between_sixty_and_one_hundred_twenty() -> None:
    # w = (1/60 - 1/80) / (1/60 - 1/120) = (1/240) / (1/120) = 0.5; t = (2.000 + 1.980) / 2 = 1.990
    assert t975(80) == pytest.approx(1.990, abs=1e-12)


def test_t975_interpolates_towards_the_normal_quantile_beyond_one_hundred_twenty() -> None:
    # w = (1/120 - 1/240) / (1/120 - 0) = 0.5; t = (1.980 + 1.960) / 2 = 1.970
    assert t975(240) == pytest.approx(1.970, abs=1e-12)


def test_t975_approaches_the_normal_limit_for_huge_df() -> None:
    # w = 1 - 120/df, so t = 1.960 + 0.020 * 120 / df: 1.960 + 2.4e-6 at df = 10**6
    assert t975(10**6) == pytest.approx(1.960 + 2.4e-6, abs=1e-12)


def test_t975_decreases_with_df_across_every_segment() -> None:
    values = [t975(df) for df in range(1, 500)]
    assert all(a > b for a, b in itertools.pairwise(values))


@pytest.mark.parametrize("df", [0, -1, -30])
def test_t975_rejects_fewer_than_one_degree_of_freedom(df: int) -> None:
    with pytest.raises(ValueError, match="df >= 1"):
        t975(df)


# --- block_ratio ------------------------------------------------------------------------------------------


def test_identical_block_ratios_give_that_value_with_a_zero_width_interval() -> None:
    r = block_ratio([2.0, 2.0, 2.0])
    assert r.value == pytest.approx(2.0)
    assert r.ci_low == pytest.approx(2.0) and r.ci_high == pytest.approx(2.0)
    assert r.blocks == 3
    assert r.between_block_sd == pytest.approx(0.0, abs=1e-15)
    assert r.block_ratios == (2.0, 2.0, 2.0)


def test_two_blocks_give_the_geometric_mean_and_a_t_interval_with_one_degree_of_freedom() -> None:
    # logs 0 and 2 ln2: mean ln2 (value 2); sample SD sqrt(2 (ln2)^2 / 1) = sqrt(2) ln2;
    # half = 12.706 * sqrt(2) ln2 / sqrt(2) = 12.706 ln2, so the CI is 2^(1 -+ 12.706)
    r = block_ratio([1.0, 4.0])
    assert r.value == pytest.approx(2.0)
    assert r.blocks == 2
    assert r.between_block_sd == pytest.approx(math.sqrt(2) * LN2)
    assert r.ci_low == pytest.approx(2.0 ** (1 - 12.706))
    assert r.ci_high == pytest.approx(2.0 ** (1 + 12.706))


def test_three_blocks_use_t_with_two_degrees_of_freedom() -> None:
    # logs 0, ln2, 2 ln2: mean ln2 (value 2); SD sqrt((ln2^2 + 0 + ln2^2) / 2) = ln2;
    # half = 4.303 ln2 / sqrt(3), so the CI is 2^(1 -+ 4.303 / sqrt(3))
    r = block_ratio([1.0, 2.0, 4.0])
    assert r.value == pytest.approx(2.0)
    assert r.between_block_sd == pytest.approx(LN2)
    assert r.ci_low == pytest.approx(2.0 ** (1 - 4.303 / math.sqrt(3)))
    assert r.ci_high == pytest.approx(2.0 ** (1 + 4.303 / math.sqrt(3)))


def test_the_interval_of_the_inverse_ratios_is_the_inverse_interval() -> None:
    r, inv = block_ratio([0.8, 0.9, 1.1]), block_ratio([1 / 0.8, 1 / 0.9, 1 / 1.1])
    assert r.value is not None and r.ci_low is not None and r.ci_high is not None
    assert inv.value == pytest.approx(1 / r.value)
    assert inv.ci_low == pytest.approx(1 / r.ci_high)
    assert inv.ci_high == pytest.approx(1 / r.ci_low)


def test_missing_and_non_positive_block_ratios_are_left_out() -> None:
    # only 1 and 4 are kept: the same answer as block_ratio([1, 4])
    r = block_ratio([None, 1.0, 0.0, 4.0, -2.0])
    assert r.blocks == 2
    assert r.block_ratios == (1.0, 4.0)
    assert r.value == pytest.approx(2.0)
    assert r.ci_high == pytest.approx(2.0 ** (1 + 12.706))


def test_one_block_gives_its_ratio_without_an_interval() -> None:
    r = block_ratio([None, 0.75])
    assert r.value == pytest.approx(0.75)
    assert r.ci_low is None and r.ci_high is None
    assert r.blocks == 1
    assert r.between_block_sd is None
    assert r.block_ratios == (0.75,)


@pytest.mark.parametrize("ratios", [[], [None, None], [0.0, -1.0]])
def test_no_usable_block_gives_no_ratio(ratios: list[float | None]) -> None:
    r = block_ratio(ratios)
    assert r.value is None and r.ci_low is None and r.ci_high is None
    assert r.blocks == 0
    assert r.between_block_sd is None
    assert r.block_ratios == ()


def test_within_block_spread_is_the_root_mean_square_of_the_known_sds() -> None:
    # RMS of 0.3 and 0.4 (None ignored): sqrt((0.09 + 0.16) / 2) = sqrt(0.125)
    r = block_ratio([1.0, 1.0, 1.0], [0.3, None, 0.4])
    assert r.within_block_sd == pytest.approx(math.sqrt(0.125))


def test_within_block_spread_is_none_without_any_known_sd() -> None:
    assert block_ratio([1.0, 2.0]).within_block_sd is None
    assert block_ratio([1.0, 2.0], [None, None]).within_block_sd is None


def test_within_block_spread_is_reported_even_when_no_block_ratio_is_usable() -> None:
    r = block_ratio([None], [0.2])
    assert r.value is None
    assert r.within_block_sd == pytest.approx(0.2)


# --- half_width -------------------------------------------------------------------------------------------


def test_half_width_is_half_the_log_width_of_the_interval() -> None:
    # (ln 2 - ln 0.5) / 2 = ln 2
    assert half_width(0.5, 2.0) == pytest.approx(LN2)
    # (ln 1.21 - ln 1) / 2 = ln 1.1
    assert half_width(1.0, 1.21) == pytest.approx(math.log(1.1))
    assert half_width(1.5, 1.5) == 0.0


def test_half_width_is_the_same_for_a_ratio_and_its_inverse() -> None:
    assert half_width(0.8, 0.9) == pytest.approx(half_width(1 / 0.9, 1 / 0.8))


@pytest.mark.parametrize(("low", "high"), [(None, 1.0), (1.0, None), (None, None), (0.0, 1.0), (-1.0, 1.0), (0.5, 0.0)])
def test_half_width_is_none_without_a_positive_interval(low: float | None, high: float | None) -> None:
    assert half_width(low, high) is None


# --- noise_band, aa_holds ---------------------------------------------------------------


def test_noise_band_is_the_placebo_interval_when_it_covers_one() -> None:
    assert noise_band(0.9, 1.1) == (0.9, 1.1)


def test_noise_band_is_stretched_to_reach_one() -> None:
    assert noise_band(1.02, 1.1) == (1.0, 1.1)
    assert noise_band(0.8, 0.95) == (0.8, 1.0)


def test_noise_band_is_one_without_a_placebo_interval() -> None:
    assert noise_band(None, None) == (1.0, 1.0)
    assert noise_band(0.9, None) == (1.0, 1.0)
    assert noise_band(None, 1.1) == (1.0, 1.0)


def test_aa_holds_when_the_placebo_interval_covers_one_including_its_ends() -> None:
    assert aa_holds(0.9, 1.1) is True
    assert aa_holds(1.0, 1.2) is True
    assert aa_holds(0.8, 1.0) is True


def test_aa_does_not_hold_when_the_placebo_interval_excludes_one() -> None:
    assert aa_holds(1.01, 1.2) is False
    assert aa_holds(0.8, 0.99) is False


def test_aa_holds_is_unknown_without_an_interval() -> None:
    assert aa_holds(None, None) is None
    assert aa_holds(0.9, None) is None
    assert aa_holds(None, 1.1) is None
