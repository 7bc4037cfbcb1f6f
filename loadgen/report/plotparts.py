"""Shared pieces of the pair card's matplotlib figures (report/plots.py, report/ratioplot.py): colors, markers,
the private Agg figure, the level axis, and a card's cells per workload and load kind (pure, no I/O but
``save``)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from loadgen.records.card import PairCard
from loadgen.records.cardcell import CardCell

__all__ = [
    "COLORS",
    "DPI",
    "WORKLOAD_MARKERS",
    "cells_of",
    "finite",
    "level_axis",
    "new_figure",
    "ratio_of",
    "save",
    "slug",
    "stat",
    "workloads",
]

COLORS = {"plain": "#1f77b4", "speculative": "#d62728"}
WORKLOAD_MARKERS = ("o", "s", "^", "D", "v", "P")
DPI = 110


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "workload"


def finite(value: float | None) -> float:
    """A finite float, or NaN for None or a non-finite number (matplotlib breaks lines at NaN)."""
    return float(value) if value is not None and math.isfinite(value) else math.nan


def cells_of(card: PairCard, workload: str, kind: str) -> list[tuple[float, CardCell]]:
    """(x, cell) of one workload and load kind, sorted by x; x = concurrency or rate_rps."""
    return sorted(
        (
            (float(c.concurrency if c.rate_rps is None else c.rate_rps), c)
            for c in card.cells
            if c.workload == workload and (c.rate_rps is None) == (kind == "concurrency")
        ),
        key=lambda t: t[0],
    )


def workloads(card: PairCard) -> list[str]:
    return list(dict.fromkeys(c.workload for c in card.cells))


def stat(cell: CardCell, role: str, key: str, stat: str | None = None) -> float:
    value = getattr(cell.role(role), key, None)
    return finite(getattr(value, stat, None) if stat else value)


def ratio_of(cell: CardCell, name: str = "tpot_p50") -> tuple[float, float, float]:
    r = cell.ratio(name)
    return (math.nan,) * 3 if r is None else (finite(r.value), finite(r.ci_low), finite(r.ci_high))


def new_figure(ncols: int, nrows: int = 1, width: float = 5.2, height: float = 4.0) -> Figure:
    fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def level_axis(ax: Axes, xs: Sequence[float], xlabel: str) -> None:
    """Ticks at the tested levels; log2 scale when they span a factor of 8 or more."""
    finite = sorted({x for x in xs if x > 0})
    if len(finite) >= 2 and finite[-1] / finite[0] >= 8:
        ax.set_xscale("log", base=2)
    if finite:
        ax.set_xticks(finite, [f"{x:g}" for x in finite])
        ax.minorticks_off()
    ax.set_xlabel(xlabel)
    ax.grid(True, alpha=0.3)


def save(fig: Figure, path: Path, paths: list[Path]) -> None:
    fig.savefig(path, dpi=DPI)
    paths.append(path)
