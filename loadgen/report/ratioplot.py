"""The pair card's ``tpot_ratio`` figure (matplotlib, Agg): speculative / plain TPOT p50 against the load level
per workload, with its CI band named by the interval it is (:func:`interval_name`), the A/A noise floor's band
behind it, the line ratio = 1, the decided crossover range (the card's ``crossover_range``, read from each
cell's decision: measure/decision.py) shaded, and the interpolated level where the ratio crosses 1
(:func:`crossover_points`, measure/ratios.crossover) marked as a guide."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from loadgen.measure.blocks import noise_band
from loadgen.measure.ratios import crossover
from loadgen.records.card import PairCard
from loadgen.records.cardcell import CardCell
from loadgen.report.plotparts import WORKLOAD_MARKERS, cells_of, level_axis, new_figure, ratio_of, save, workloads

__all__ = ["INTERVALS", "SHORT_INTERVALS", "crossover_points", "interval_name", "methods_name", "ratio_plot"]


def crossover_points(card: PairCard, kind: str = "concurrency") -> dict[str, float | None]:
    """Per workload: the load level (concurrency, or req/s with ``kind="rate"``) where the speculative /
    plain TPOT p50 ratio crosses 1, by :func:`crossover` (linear interpolation between the two tested
    levels around the first crossing); None when it never crosses or ratios are missing. Workloads with
    no cell of that kind are left out. Pure."""
    out: dict[str, float | None] = {}
    for workload in workloads(card):
        cells = cells_of(card, workload, kind)
        if cells:
            values = [ratio_of(c)[0] for _, c in cells]
            out[workload] = crossover([x for x, _ in cells], [None if math.isnan(v) else v for v in values])
    return out


#: How each ``ci_method`` (measure/cellratios.py) is named in a plot's title.
INTERVALS = {
    "blocks": "95% t interval over interleaved blocks",
    "within-run": "95% paired-bootstrap CI within one window",
}
#: The same, short, for a legend entry.
SHORT_INTERVALS = {"blocks": "95% block t interval", "within-run": "95% bootstrap CI"}


def methods_name(methods: Iterable[str | None], names: Mapping[str, str] = INTERVALS) -> str:
    """The interval ``methods`` (``ci_method`` values) name (``names``: :data:`INTERVALS` or
    :data:`SHORT_INTERVALS`; several joined when they differ, "95% CI" when none says). Pure."""
    return " / ".join(names.get(m, f"95% CI ({m})") for m in sorted({m for m in methods if m})) or "95% CI"


def _methods(cells: Sequence[CardCell]) -> list[str | None]:
    return [r.ci_method for c in cells if (r := c.ratio("tpot_p50")) is not None]


def interval_name(cells: Sequence[CardCell]) -> str:
    """The interval the TPOT p50 ratios of ``cells`` carry (:func:`methods_name` of their ``ci_method``). Pure."""
    return methods_name(_methods(cells))


def _aa_band(cells: Sequence[tuple[float, CardCell]]) -> tuple[list[float], list[float], list[float]]:
    """The A/A noise floor's band per level (the placebo / plain TPOT p50 CI widened to hold 1,
    measure/blocks.noise_band), over the levels that have one."""
    xs: list[float] = []
    lows: list[float] = []
    highs: list[float] = []
    for x, cell in cells:
        aa = ((cell.noise_floor.ratios if cell.noise_floor else None) or {}).get("tpot_p50")
        if aa is not None and aa.ci_low is not None and aa.ci_high is not None:
            lo, hi = noise_band(aa.ci_low, aa.ci_high)
            xs, lows, highs = [*xs, x], [*lows, lo], [*highs, hi]
    return xs, lows, highs


def ratio_plot(card: PairCard, kind: tuple[str, str, str], out: Path, paths: list[Path]) -> None:
    """Draw ``tpot_ratio<suffix>.png`` of ``card``'s cells of one load kind (``kind``: the kind, the x label,
    the file suffix) under ``out`` (module docstring) and append its path to ``paths``; nothing when no cell
    has a ratio. Layers: the A/A band (zorder 0) and the crossover range (0) behind each workload's CI band
    (1), its line and the crossing marker above."""
    fig = new_figure(1, width=7.5, height=4.6)
    ax, xs_all, drawn, band = fig.subplots(), [], False, False
    points = crossover_points(card, kind[0])
    palette = ("#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
    drawn_cells: list[CardCell] = []
    for w, workload in enumerate(workloads(card)):
        cells = cells_of(card, workload, kind[0])
        xs = [x for x, _ in cells]
        ratios = np.array([ratio_of(c) for _, c in cells], dtype=float).reshape(-1, 3)
        vals, lows, highs = ratios[:, 0], ratios[:, 1], ratios[:, 2]
        if np.isnan(vals).all():
            continue
        drawn, color = True, palette[w % len(palette)]
        xs_all += xs
        drawn_cells += [c for _, c in cells]
        aa_x, aa_lo, aa_hi = _aa_band(cells)
        if aa_x:  # behind the candidate's CI: every effect is read against it
            ax.fill_between(
                aa_x, aa_lo, aa_hi, color="gray", alpha=0.25, zorder=0, label=None if band else "A/A noise floor"
            )
            band = True
        ax.plot(xs, vals, "-", marker=WORKLOAD_MARKERS[w % len(WORKLOAD_MARKERS)], color=color, label=workload)
        if not np.isnan(np.concatenate([lows, highs])).all():
            short = methods_name(_methods([c for _, c in cells]), SHORT_INTERVALS)
            ax.fill_between(xs, lows, highs, color=color, alpha=0.18, zorder=1, label=f"{workload}: {short}")
        span = (
            card.crossover[workload].crossover_range
            if kind[0] == "concurrency" and workload in card.crossover
            else None
        )
        if span and span[0] is not None and span[1] is not None:  # decided: the levels the crossing lies between
            ax.axvspan(span[0], span[1], color=color, alpha=0.08, zorder=0)
            ax.annotate(
                f"{workload}: stops paying between {span[0]:g} and {span[1]:g}",
                (span[1], 1.0),
                textcoords="offset points",
                xytext=(-6, -14 - 13 * w),
                ha="right",
                color=color,
                fontsize="small",
            )
        x_cross = points.get(workload)
        if x_cross is not None:
            ax.axvline(x_cross, color=color, linestyle=":", linewidth=1.2)
            ax.plot([x_cross], [1.0], marker="X", markersize=11, color=color, markeredgecolor="black", zorder=5)
            left = x_cross > (min(xs) + max(xs)) / 2  # keep the label inside the axes
            ax.annotate(
                f"{workload}: ratio 1 at ≈ {x_cross:.3g} (interpolated)",
                (x_cross, 1.0),
                textcoords="offset points",
                xytext=(-6 if left else 6, 8 + 13 * w),
                ha="right" if left else "left",
                color=color,
                fontsize="small",
            )
    if not drawn:
        return
    ax.axhline(1.0, color="black", linewidth=1.0)
    ax.text(
        0.01, 0.02, "below 1: speculative faster per token", transform=ax.transAxes, fontsize="small", color="dimgray"
    )
    level_axis(ax, xs_all, kind[1])
    ax.set_ylabel("speculative / plain TPOT p50")
    ax.legend(fontsize="small")
    shown = f"band: {interval_name(drawn_cells)}" + ("; gray: A/A noise floor" if band else "; no A/A placebo")
    ax.set_title(f"{card.pair}: TPOT p50 ratio vs {kind[0]}\n({shown})", fontsize="medium")
    save(fig, out / f"tpot_ratio{kind[2]}.png", paths)
