"""The one decision of a cell (pure; docs/metrics.md "The decision"): every surface (the card's effect column and
verdict, the exit code, the sweep's best per level, static choice, K schedule, deployable line and plot star,
``loadgen diff`` and ``loadgen runs``) reads :func:`decide` and nothing else.

Inputs, for one metric of one cell: the speculative / plain ratio with its 95% block CI (measure/blocks.py), the
A/A placebo's ratio with its CI (the noise floor), whether lower is better, and the declared :class:`Bar`
(``[criteria].min_speedup`` and ``ci_half_width``, records/criteria.py). Everything is read as a **speedup**
``s`` (plain / speculative for a latency, the ratio itself for a throughput; > 1 is better), its CI
``[lo, hi]``, the floor's band ``[b_lo, b_hi]`` (the placebo's CI widened to hold 1, measure/blocks.py
``noise_band``) and the bar ``m``. The first rule that matches decides:

1. no CI (one block, or not measured): **inconclusive** (measure more blocks);
2. ``hi < b_lo``: **slower** (clear of the floor, on the slow side);
3. ``lo > b_hi`` (clear of the floor, on the fast side): **faster** when the judged end (``lo``; the point value
   with ``use_confidence_interval = false``) meets ``m``; **short** when ``hi < m`` (faster than plain, and
   clearly short of the declared ``min_speedup``: only possible with ``min_speedup > 1``); otherwise
   **inconclusive** (the CI spans ``m``);
4. the CI overlaps the floor: **short** when ``hi < m`` and ``m > 1`` (whether it is faster than plain at all is
   within the noise, but it decidedly cannot meet the declared bar); **not distinguishable** when ``hi < m``
   (``m <= 1``), when it is as
   narrow as the declared precision (log half-width <= ``h``), or when it lies inside the band widened by the
   precision (``[b_lo e^-h, b_hi e^h]``: whatever the truth, it is within the noise) and the floor itself is
   known to that precision (the placebo's log half-width <= ``h``: a floor from a few noisy blocks is not yet
   the noise); otherwise **inconclusive** (too wide to tell an effect from the noise, or the noise not yet
   measured well enough: measure more blocks).

Only **faster** passes. A cell inside the noise floor never passes, whatever its point value. Every outcome but
inconclusive is **decided**: sizing (measure/sizing.py) adds blocks to a cell only while it is inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from loadgen.measure.blocks import half_width, noise_band
from loadgen.records.cardcell import Ratio
from loadgen.records.criteria import FAIL, INCONCLUSIVE, LATENCY_METRICS, NOT_DISTINGUISHABLE, PASS, Criteria

__all__ = [
    "AHEAD",
    "BEHIND",
    "DEFAULT_PRECISION",
    "FASTER",
    "INCONCLUSIVE",
    "NOT_DISTINGUISHABLE",
    "OUTCOMES",
    "SHORT",
    "SLOWER",
    "STATUS_OF",
    "Bar",
    "Decision",
    "as_speedup",
    "crossover_range",
    "decide",
    "side",
]

FASTER, SLOWER, SHORT = "faster", "slower", "short"
OUTCOMES = (FASTER, SHORT, SLOWER, NOT_DISTINGUISHABLE, INCONCLUSIVE)
#: The verdict status of each outcome (records/criteria.py): only faster passes.
STATUS_OF = {
    FASTER: PASS,
    SHORT: FAIL,
    SLOWER: FAIL,
    NOT_DISTINGUISHABLE: NOT_DISTINGUISHABLE,
    INCONCLUSIVE: INCONCLUSIVE,
}
#: The precision a "not distinguishable" needs when ``[criteria].ci_half_width`` is not declared (±5%).
DEFAULT_PRECISION = 0.05


@dataclass(frozen=True)
class Bar:
    """What a speedup must clear: ``min_speedup`` (> 0; 1.0: not slower), the ``precision`` (log half-width) a
    "not distinguishable" needs, and whether the bar is judged at the CI's pessimistic end."""

    min_speedup: float = 1.0
    precision: float = DEFAULT_PRECISION
    use_ci: bool = True

    @classmethod
    def of(cls, criteria: Criteria | None, metric: str) -> Bar:
        """The bar of ``metric`` under ``criteria``: its ``min_speedup`` for a primary metric, 1.0 for the others
        (an effect against the floor only); its ``ci_half_width`` or :data:`DEFAULT_PRECISION`."""
        if criteria is None:
            return cls()
        precision = criteria.ci_half_width or DEFAULT_PRECISION
        primary = metric in criteria.primary
        return cls(criteria.min_speedup if primary else 1.0, precision, criteria.use_confidence_interval)


@dataclass(frozen=True)
class Decision:
    """The outcome of one metric of one cell (:data:`OUTCOMES`), the speedup and its CI it was read from, the
    floor's band (as speedups), the CI's log half-width, and one line saying why."""

    outcome: str
    speedup: float | None
    low: float | None
    high: float | None
    band: tuple[float, float]
    half_width: float | None
    reason: str

    @property
    def passes(self) -> bool:
        """Only **faster** passes."""
        return self.outcome == FASTER

    @property
    def decided(self) -> bool:
        """Every outcome but inconclusive."""
        return self.outcome != INCONCLUSIVE


def as_speedup(ratio: Ratio | None, lower_is_better: bool) -> tuple[float | None, float | None, float | None]:
    """(speedup, CI low, CI high) of a speculative / plain ``ratio``: inverted for a latency (module docstring)."""
    value = None if ratio is None else ratio.value
    if ratio is None or not value or value <= 0:
        return None, None, None
    low, high = ratio.ci_low, ratio.ci_high
    if not lower_is_better:
        return value, low, high
    return 1 / value, (1 / high if high else None), (1 / low if low else None)


def _band(floor: Ratio | None, lower_is_better: bool) -> tuple[float, float, float | None]:
    """The floor's band as speedups and the floor's half-width (None without a placebo CI)."""
    if floor is None or floor.ci_low is None or floor.ci_high is None or floor.ci_low <= 0:
        return 1.0, 1.0, None
    lo, hi = noise_band(floor.ci_low, floor.ci_high)
    width = half_width(floor.ci_low, floor.ci_high)
    return ((1 / hi, 1 / lo) if lower_is_better else (lo, hi)) + (width,)


def _f(x: float) -> str:
    return f"{x:.3f}"


def decide(metric: str, ratio: Ratio | None, floor: Ratio | None, bar: Bar = Bar()) -> Decision:
    """The decision of ``metric``'s speculative / plain ``ratio`` against the placebo's ``floor`` ratio (None:
    no placebo, the band is 1) and ``bar`` (module docstring). Never raises; a ratio without a value or CI is
    inconclusive."""
    lower = metric in LATENCY_METRICS
    s, lo, hi = as_speedup(ratio, lower)
    b_lo, b_hi, floor_width = _band(floor, lower)
    band = (b_lo, b_hi)
    m = bar.min_speedup
    shown = f"{metric} speedup {_f(s)}" if s is not None else f"{metric}"
    ci = f" [95% CI {_f(lo)}, {_f(hi)}]" if lo is not None and hi is not None else ""
    floor_text = f"the A/A noise floor [{_f(b_lo)}, {_f(b_hi)}]" if floor_width is not None else "1 (no placebo)"

    def out(outcome: str, why: str) -> Decision:
        return Decision(outcome, s, lo, hi, band, half_width(lo, hi), f"{shown}{ci} {why}")

    if s is None:
        return out(INCONCLUSIVE, "not measured")
    if lo is None or hi is None:
        return out(INCONCLUSIVE, "has no CI (one block): measure more blocks")
    if hi < b_lo:
        return out(SLOWER, f"is below {floor_text}: slower")
    judged = lo if bar.use_ci else s
    if lo > b_hi:
        if judged >= m:
            return out(FASTER, f"is clear of {floor_text} and meets min_speedup {m:g}: faster")
        if hi < m:
            return out(SHORT, f"is clear of {floor_text} but below min_speedup {m:g}: short")
        return out(INCONCLUSIVE, f"is clear of {floor_text} but spans min_speedup {m:g}: measure more blocks")
    if hi < m:
        if m > 1:
            return out(SHORT, f"overlaps {floor_text} and is below min_speedup {m:g}: short of the bar")
        return out(NOT_DISTINGUISHABLE, f"overlaps {floor_text} and is below min_speedup {m:g}")
    width = half_width(lo, hi)
    grow = math.exp(bar.precision)
    narrow = width is not None and width <= bar.precision
    known = floor_width is None or floor_width <= bar.precision  # the floor itself measured to the precision
    if narrow or (known and lo >= b_lo / grow and hi <= b_hi * grow):
        return out(NOT_DISTINGUISHABLE, f"overlaps {floor_text} at ±{bar.precision:g}: not distinguishable")
    if not known and lo >= b_lo / grow and hi <= b_hi * grow:
        return out(
            INCONCLUSIVE,
            f"overlaps {floor_text}, itself wider than ±{bar.precision:g}: measure more blocks",
        )
    return out(
        INCONCLUSIVE,
        f"overlaps {floor_text} and is wider than ±{bar.precision:g}: measure more blocks",
    )


#: A level's side of the floor, for the crossover: faster than plain clear of the floor (whatever the bar), slower
#: than plain clear of it, or neither (inside the noise, undecided or not measured).
AHEAD, BEHIND = "ahead", "behind"


def side(metric: str, ratio: Ratio | None, floor: Ratio | None) -> str | None:
    """:data:`AHEAD` when ``ratio``'s decided ``effect`` is faster, or short with its CI clear of ``floor``'s band
    on the fast side (short is also the outcome of a CI overlapping the floor but below a bar above 1: not
    ahead); :data:`BEHIND` when it is slower; None otherwise. The effect is :func:`decide`'s outcome, stored on
    the ratio (report/noisefloor.py); the band is the one :func:`decide` read."""
    if ratio is None or ratio.effect is None:
        return None
    if ratio.effect == SLOWER:
        return BEHIND
    if ratio.effect == FASTER:
        return AHEAD
    if ratio.effect != SHORT:
        return None
    _, lo, _ = as_speedup(ratio, metric in LATENCY_METRICS)
    _, b_hi, _ = _band(floor, metric in LATENCY_METRICS)
    return AHEAD if lo is not None and lo > b_hi else None


def crossover_range(loads: Sequence[float], sides: Sequence[str | None]) -> list[float] | None:
    """The loads where speculation stops being faster than plain, from each level's :func:`side` (ordered by
    ``loads``: each level's concurrency or rate): ``[a, b]`` with ``b`` the first load that is :data:`BEHIND`
    (decided slower) and ``a`` the last load before it that is :data:`AHEAD` (clear of the floor on the fast
    side); loads in between are inside the noise or undecided. None when no load ahead comes before one
    behind."""
    ahead: float | None = None
    for load, where in zip(loads, sides, strict=True):
        if where == AHEAD:
            ahead = float(load)
        elif where == BEHIND:
            return None if ahead is None else [ahead, float(load)]
    return None
