"""Speculative / plain ratios with paired-bootstrap confidence intervals (pure).

Both servers receive the identical prompt list, so request i on the plain server and request i on the
speculative server answer the same prompt. The ratio of a per-request metric is
``median(spec) / median(plain)``; its 95% confidence interval comes from a paired bootstrap that
resamples prompts (the same resampled prompt ids on both sides), seeded, percentile method
(Efron & Tibshirani, An Introduction to the Bootstrap, 1993, ch. 13). A ratio below 1 means the
speculative server is faster for latencies and slower for throughputs.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Ratio:
    """speculative / plain of a statistic, with a 95% CI (None when it cannot be computed)."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    pairs: int = 0


def paired_median_ratio(
    plain: Mapping[str, float],
    speculative: Mapping[str, float],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Ratio:
    """Ratio of medians over the prompt ids present on both sides, with a paired-bootstrap 95% CI.

    ``plain`` and ``speculative`` map prompt id -> per-request value (e.g. TPOT in s/token).
    """
    return paired_median_with_sd(plain, speculative, resamples, seed)[0]


def paired_median_with_sd(
    plain: Mapping[str, float],
    speculative: Mapping[str, float],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[Ratio, float | None]:
    """:func:`paired_median_ratio` and the bootstrap SD of the log ratio (the within-block spread of
    measure/blocks.py; None with fewer than 2 pairs)."""
    keys = sorted(set(plain) & set(speculative))
    if not keys:
        return Ratio(None), None
    p = np.array([plain[k] for k in keys], dtype=float)
    s = np.array([speculative[k] for k in keys], dtype=float)
    p_med = float(np.median(p))
    if p_med <= 0:
        return Ratio(None, pairs=len(keys)), None
    value = float(np.median(s)) / p_med
    if len(keys) < 2:
        return Ratio(value, pairs=len(keys)), None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(keys), size=(resamples, len(keys)))
    p_boot = np.median(p[idx], axis=1)
    s_boot = np.median(s[idx], axis=1)
    valid = (p_boot > 0) & (s_boot > 0)
    ratios = s_boot[valid] / p_boot[valid]
    low, high = np.percentile(s_boot[p_boot > 0] / p_boot[p_boot > 0], [2.5, 97.5])
    sd = float(np.std(np.log(ratios), ddof=1)) if len(ratios) > 1 else None
    return Ratio(value, float(low), float(high), len(keys)), sd


def simple_ratio(plain: float | None, speculative: float | None) -> Ratio:
    """speculative / plain of two cell-level numbers (no CI: one value per cell)."""
    if plain is None or speculative is None or plain == 0:
        return Ratio(None)
    return Ratio(speculative / plain)


def crossover(loads: Sequence[float], ratios: Sequence[float | None]) -> float | None:
    """The first load where ``ratios`` (speculative / plain, ordered by ``loads``: each level's concurrency or
    rate) crosses 1, by linear interpolation between the two tested loads around the crossing; a load whose ratio
    is exactly 1 is itself the crossover. None when the ratio stays on one side (or is unknown).
    """
    points = [(x, r) for x, r in zip(loads, ratios, strict=True) if r is not None]
    for (x0, r0), (x1, r1) in itertools.pairwise(points):
        if r0 == 1.0:
            return float(x0)
        if (r0 - 1.0) * (r1 - 1.0) < 0:
            return float(x0 + (1.0 - r0) * (x1 - x0) / (r1 - r0))
    if points and points[-1][1] == 1.0:
        return float(points[-1][0])
    return None
