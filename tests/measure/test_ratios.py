"""Paired ratios and their bootstrap confidence intervals."""

from __future__ import annotations

import pytest

from loadgen.measure.ratios import paired_median_ratio, simple_ratio


def test_exact_scaling_gives_a_degenerate_interval() -> None:
    plain = {f"p{i}": 0.01 * (i + 1) for i in range(20)}
    spec = {k: v * 0.5 for k, v in plain.items()}
    r = paired_median_ratio(plain, spec)
    assert r.value == pytest.approx(0.5)
    assert r.ci_low == pytest.approx(0.5) and r.ci_high == pytest.approx(0.5)
    assert r.pairs == 20


def test_interval_contains_value_and_is_seeded() -> None:
    plain = {f"p{i}": 1.0 + (i % 7) * 0.1 for i in range(30)}
    spec = {k: v * (0.8 + (int(k[1:]) % 5) * 0.1) for k, v in plain.items()}
    a, b = paired_median_ratio(plain, spec), paired_median_ratio(plain, spec)
    assert a == b
    assert a.ci_low is not None and a.ci_high is not None and a.value is not None
    assert a.ci_low <= a.value <= a.ci_high
    assert a.ci_low < a.ci_high


def test_only_shared_prompts_are_paired() -> None:
    r = paired_median_ratio({"a": 1.0, "b": 2.0, "c": 3.0}, {"b": 4.0, "c": 6.0, "d": 100.0})
    assert r.pairs == 2
    assert r.value == pytest.approx(5.0 / 2.5)


def test_degenerate_inputs() -> None:
    assert paired_median_ratio({}, {"a": 1.0}).value is None
    assert paired_median_ratio({"a": 2.0}, {"a": 1.0}).ci_low is None
    assert simple_ratio(4.0, 2.0).value == pytest.approx(0.5)
    assert simple_ratio(0.0, 2.0).value is None
    assert simple_ratio(None, 2.0).value is None


def test_crossover_interpolates_between_levels() -> None:
    from loadgen.measure.ratios import crossover

    # ratio 0.8 at c=1, 0.9 at c=2, 1.3 at c=4: crosses 1 a quarter of the way from 2 to 4
    assert crossover([1, 2, 4], [0.8, 0.9, 1.3]) == pytest.approx(2.5)
    assert crossover([1, 2, 4], [1.2, 1.1, 0.9]) == pytest.approx(3.0)
    assert crossover([1, 2, 4], [0.8, 1.0, 1.3]) == pytest.approx(2.0)
    assert crossover([1, 2, 4], [0.8, 0.9, 0.95]) is None
    assert crossover([1, 2, 4], [0.8, None, 1.2]) == pytest.approx(2.5)
    assert crossover([], []) is None
