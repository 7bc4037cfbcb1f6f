"""The trace figures (``trace_<workload>_<arm>.png``): each arm's speedup over the trace's time (plain / arm of
the window's TPOT p50, its 95% CI shaded) above the requests in flight on each server (window means), from the
card's ``trace`` section (report/tracedata.py). Matplotlib's Agg canvas on a private Figure, as report/plots.py
draws; nothing is written without a trace."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from loadgen.records.trace import TraceSection, TraceWindow


def _num(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def _figure(workload: str, arm: str, windows: Sequence[TraceWindow], path: Path) -> None:
    fig = Figure(figsize=(9.0, 5.6), layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    mid = [(w.start_s + w.end_s) / 2 for w in windows]
    top.plot(mid, [_num(w.speedup) for w in windows], marker="o", label=f"speedup plain / {arm} (TPOT p50)")
    top.fill_between(
        mid, [_num(w.ci_low) for w in windows], [_num(w.ci_high) for w in windows], alpha=0.25, label="95% CI"
    )
    top.axhline(1.0, color="black", linewidth=0.8)
    top.set(ylabel="speedup (x)", title=f"{workload}: {arm} against plain over the trace")
    for server in ("plain", arm):
        bottom.step(mid, [_num(w.arms[server].in_flight_mean) for w in windows], where="mid", label=server)
    bottom.set(xlabel="trace time (s)", ylabel="requests in flight (mean)")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.savefig(path, dpi=110)


def render_trace_plots(trace: TraceSection | None, out_dir: Path) -> list[Path]:
    """Write one figure per trace workload and arm of the card's ``trace`` under ``out_dir``; return the paths
    (none without a trace)."""
    paths: list[Path] = []
    for row in trace.workloads if trace else ():
        for arm, entry in row.arms.items():
            out_dir.mkdir(parents=True, exist_ok=True)
            path = out_dir / re.sub(r"[^A-Za-z0-9_.-]", "_", f"trace_{row.workload}_{arm}.png")
            _figure(row.workload, arm, entry.windows, path)
            paths.append(path)
    return paths
