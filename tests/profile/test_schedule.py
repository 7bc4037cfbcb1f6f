"""Open-loop arrival schedules: closed-form and seeded statistical properties."""

from __future__ import annotations

import numpy as np
import pytest

from loadgen.profile.schedule import arrival_offsets


def test_constant_is_evenly_spaced() -> None:
    assert arrival_offsets("constant", 4.0, 5, seed=0) == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])


def test_poisson_mean_rate_and_seed() -> None:
    a = arrival_offsets("poisson", 10.0, 20001, seed=3)
    assert a == arrival_offsets("poisson", 10.0, 20001, seed=3)
    assert a != arrival_offsets("poisson", 10.0, 20001, seed=4)
    gaps = np.diff(a)
    assert gaps.mean() == pytest.approx(0.1, rel=0.03)
    # exponential gaps: coefficient of variation 1
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
def test_gamma_keeps_the_rate_and_sets_the_burstiness(burstiness: float) -> None:
    gaps = np.diff(arrival_offsets("gamma", 5.0, 20001, seed=1, burstiness=burstiness))
    assert gaps.mean() == pytest.approx(0.2, rel=0.05)
    # gamma(shape=b): coefficient of variation 1/sqrt(b)
    assert gaps.std() / gaps.mean() == pytest.approx(1 / np.sqrt(burstiness), rel=0.06)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown arrival"):
        arrival_offsets("uniform", 1.0, 3, seed=0)
    with pytest.raises(ValueError):
        arrival_offsets("poisson", 0.0, 3, seed=0)
    assert arrival_offsets("poisson", 1.0, 0, seed=0) == []
