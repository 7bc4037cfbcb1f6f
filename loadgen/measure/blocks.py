"""Intervals that include the server's own movement: block-level paired ratios, the A/A noise floor and the
sizing rule (pure; docs/metrics.md "Blocks").

Block ``b`` of a cell sends the same prompts on every arm, and the arms measure it back to back in a balanced
order (run/design.py). Its **block ratio** is arm / plain of a statistic over that block's requests (the
median TPOT of the block's prompts on each server, say). Over B blocks:

- the ratio is the geometric mean of the block ratios, ``exp(mean(log r_b))``;
- its 95% CI is Student's t interval on the log block ratios, ``exp(mean ± t(0.975, B - 1) · sd / sqrt(B))``
  (the paired t interval on logs: Box, Hunter & Hunter, Statistics for Experimenters, 2nd ed., 2005,
  ch. 3; t quantiles from the NIST/SEMATECH e-Handbook of Statistical Methods, table 1.3.6.7.2). A server
  that drifts between blocks spreads the block ratios, so the interval widens with the drift instead of
  hiding it; a single block gives no interval (one window is one sample);
- **between-block spread** = the sample SD of the log block ratios; **within-block spread** = the root mean
  square over blocks of the paired bootstrap SD of each block's log ratio (measure/ratios.py). A between-block
  spread well above the within-block one is the signature of drift that one window's CI cannot show.

The **noise floor** is the placebo's ratio (plain measured again through the same path) with its interval:
its band is ``[min(low, 1), max(high, 1)]``; measure/decision.py decides a ratio against it (a ratio whose CI is
not clear of that band never passes). An A/A CI that excludes 1 means the design did not hold on that machine.
The **half-width** of a ratio is half the width of its CI on the log scale, ``(ln high - ln low) / 2``
(the same for a ratio and its inverse; about the relative half-width for small values); a cell has reached a
declared ``ci_half_width`` when it is no larger.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

#: t(0.975, df) for df = 1..30 (NIST/SEMATECH e-Handbook of Statistical Methods, table 1.3.6.7.2).
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
_T975_TAIL = ((40, 2.021), (60, 2.000), (120, 1.980))
Z975 = 1.960


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` >= 1 degrees of freedom (table above; linear in 1/df
    between the tabulated 30, 40, 60 and 120, the normal 1.960 beyond). Raises ValueError for df < 1."""
    if df < 1:
        raise ValueError("t975 needs df >= 1")
    if df <= len(_T975):
        return _T975[df - 1]
    points = [(30, _T975[-1]), *_T975_TAIL, (math.inf, Z975)]
    for (d0, t0), (d1, t1) in itertools.pairwise(points):
        if df <= d1:
            w = (1 / d0 - 1 / df) / (1 / d0 - (0 if math.isinf(d1) else 1 / d1))
            return t0 + w * (t1 - t0)
    return Z975  # pragma: no cover (the last point is infinite)


@dataclass(frozen=True)
class BlockRatio:
    """arm / plain of one statistic over a cell's blocks: the geometric-mean ``value``, its 95% CI (None with
    fewer than 2 blocks), the number of ``blocks``, the between- and within-block spreads (SD of the log
    ratio; None where unknown) and each block's ratio in block order."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    blocks: int
    between_block_sd: float | None
    within_block_sd: float | None
    block_ratios: tuple[float, ...]


def block_ratio(ratios: Sequence[float | None], within_sds: Sequence[float | None] = ()) -> BlockRatio:
    """The block-level ratio (module docstring) of the block ratios ``ratios`` (None or <= 0: that block is
    left out); ``within_sds``: each block's bootstrap SD of its log ratio, where known."""
    logs = [math.log(r) for r in ratios if r is not None and r > 0]
    kept = tuple(r for r in ratios if r is not None and r > 0)
    within = [s for s in within_sds if s is not None]
    w_sd = math.sqrt(sum(s * s for s in within) / len(within)) if within else None
    n = len(logs)
    if n == 0:
        return BlockRatio(None, None, None, 0, None, w_sd, ())
    mean = sum(logs) / n
    if n == 1:
        return BlockRatio(math.exp(mean), None, None, 1, None, w_sd, kept)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return BlockRatio(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n, sd, w_sd, kept)


def half_width(ci_low: float | None, ci_high: float | None) -> float | None:
    """``(ln high - ln low) / 2``; None without a positive CI."""
    if ci_low is None or ci_high is None or ci_low <= 0 or ci_high <= 0:
        return None
    return (math.log(ci_high) - math.log(ci_low)) / 2


def noise_band(aa_low: float | None, aa_high: float | None) -> tuple[float, float]:
    """The noise floor's band ``[min(low, 1), max(high, 1)]`` of the placebo's CI; ``(1, 1)`` without one."""
    if aa_low is None or aa_high is None:
        return 1.0, 1.0
    return min(aa_low, 1.0), max(aa_high, 1.0)


def aa_holds(aa_low: float | None, aa_high: float | None) -> bool | None:
    """True when the placebo's CI covers 1 (the design held), False when it excludes 1, None without one."""
    if aa_low is None or aa_high is None:
        return None
    return aa_low <= 1.0 <= aa_high


#: The least distance (log scale, about 10%) at which a block counts as far off its cell's others.
FAR_FLOOR = math.log(1.10)


def far_blocks(ratios: Sequence[float]) -> list[int]:
    """Indices of the block ratios far off the others (at least 3 blocks): ``|ln r_i - median(ln r_j, j != i)|``
    above ``max(3 * range(ln r_j, j != i), FAR_FLOOR)``. A rule of thumb for naming a block on the card (a slow
    first block of a level not yet warmed, say); nothing is excluded by it unless the protocol declares so."""
    logs = [math.log(r) for r in ratios if r > 0]
    if len(logs) < 3 or len(logs) != len(ratios):
        return []
    out = []
    for i, x in enumerate(logs):
        others = sorted(logs[:i] + logs[i + 1 :])
        mid = len(others) // 2
        median = others[mid] if len(others) % 2 else (others[mid - 1] + others[mid]) / 2
        if abs(x - median) > max(3 * (others[-1] - others[0]), FAR_FLOOR):
            out.append(i)
    return out
