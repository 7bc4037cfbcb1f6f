"""PNG figures of a sweep card (matplotlib's Agg canvas on private Figures, as report/plots.py):

- ``sweep_ratio_<workload>``: each candidate's speedup over plain (see the card's speedup_definition)
  against concurrency, with its CI as error bars (the title names the interval its entries carry:
  report/ratioplot.py ``methods_name``), the A/A noise floor's band (grey, behind them), the line
  speedup = 1 and, per level, a star on the candidate the deployable configuration runs there;
- ``sweep_acceptance_length``: mean acceptance length against K per method/draft (mean over the cells),
  with the perfect-draft line K + 1.

Closed-loop cells only; a figure with nothing to draw is not written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from loadgen.measure.decision import decide
from loadgen.records.cardcell import Ratio
from loadgen.records.sweep import SweepCard, SweepCell
from loadgen.report.ratioplot import methods_name


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=100)
    return path


def _floor_band(floor: Ratio | None, metric: str) -> tuple[float, float] | None:
    """The A/A noise floor's band as speedups (measure/decision.py), None without a placebo CI."""
    if floor is None or floor.ci_low is None:
        return None
    return decide(metric, Ratio(1.0), floor).band


def _interval(card: SweepCard, cells: Sequence[SweepCell]) -> str:
    """The interval the entries' speedups carry (their ratio's ``ci_method``, else the design's)."""
    said = [e.ratio.ci_method for c in cells for e in c.entries if e.speedup is not None and e.ratio is not None]
    methods = [m for m in said if isinstance(m, str)]
    return methods_name(methods or [card.design.ci_method if card.design else None])


def _ratio_plot(card: SweepCard, workload: str, out: Path) -> Path | None:
    cells = [c for c in card.cells if c.workload == workload and c.rate_rps is None]
    fig = Figure(figsize=(6.5, 4))
    ax = fig.add_subplot()
    drawn = False
    for cand in card.candidates:
        pts = sorted(
            (
                (c.concurrency or 0, e.speedup, e)
                for c in cells
                for e in c.entries
                if e.candidate == cand.name and e.speedup is not None
            ),
            key=lambda p: p[0],
        )
        if not pts:
            continue
        xs, ys = [p[0] for p in pts], [float(p[1] or 0.0) for p in pts]
        lows = [p[2].speedup_ci_low for p in pts]
        highs = [p[2].speedup_ci_high for p in pts]
        lo = [y - (low if low is not None else y) for y, low in zip(ys, lows, strict=True)]
        hi = [(high if high is not None else y) - y for y, high in zip(ys, highs, strict=True)]
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=cand.name)
        drawn = True
    rec = next((w for w in card.recommendation.workloads if w.workload == workload), None)
    deployed = rec.deployed if rec else {}
    for c in cells:
        e = next((e for e in c.entries if e.candidate == deployed.get(c.level)), None)
        if e is not None and e.speedup is not None:
            ax.plot([c.concurrency or 0], [e.speedup], marker="*", markersize=14, color="black", linestyle="")
    floors = sorted((c.concurrency or 0, b) for c in cells if (b := _floor_band(c.floor_ratio(), card.primary_metric)))
    if floors:
        at = [x for x, _ in floors]
        floor_lo, floor_hi = [b[0] for _, b in floors], [b[1] for _, b in floors]
        ax.fill_between(at, floor_lo, floor_hi, color="grey", alpha=0.25, zorder=0, label="A/A noise floor")
    if not drawn:
        return None
    ax.axhline(1.0, color="grey", linewidth=1, linestyle="--")
    ax.set(
        xlabel="concurrency",
        ylabel=f"speedup over plain ({card.primary_metric})",
        title=f"{workload}: speedup, {_interval(card, cells)} (star: deployed)",
    )
    ax.legend(fontsize="small")
    return _save(fig, out / f"sweep_ratio_{re.sub(r'[^A-Za-z0-9_.-]', '_', workload)}.png")


def _acceptance_plot(card: SweepCard, out: Path) -> Path | None:
    series: dict[str, dict[int, list[float]]] = {}
    for c in card.cells:
        for e in c.entries:
            if e.mean_acceptance_length is not None:
                family = e.candidate.rsplit("-k", 1)[0]
                series.setdefault(family, {}).setdefault(e.k, []).append(e.mean_acceptance_length)
    if not series:
        return None
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    ks = sorted({k for s in series.values() for k in s})
    ax.plot(ks, [k + 1 for k in ks], color="grey", linestyle="--", label="perfect draft (K + 1)")
    for family, by_k in series.items():
        xs = sorted(by_k)
        ax.plot(xs, [sum(by_k[k]) / len(by_k[k]) for k in xs], marker="o", label=family)
    ax.set(xlabel="K (num_speculative_tokens)", ylabel="mean acceptance length", title="acceptance length vs K")
    ax.legend(fontsize="small")
    return _save(fig, out / "sweep_acceptance_length.png")


def render_sweep_plots(card: SweepCard, out: Path) -> list[Path]:
    """Write the sweep figures of ``card`` (records/sweep.py) under ``out``; returns their paths."""
    paths = [_ratio_plot(card, w, out) for w in dict.fromkeys(c.workload for c in card.cells)]
    paths.append(_acceptance_plot(card, out))
    return [p for p in paths if p is not None]
