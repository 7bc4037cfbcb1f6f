"""The context-length figure (``context_length.png``): acceptance rate and TPOT p50 ratio (speculative /
plain) against the input length in tokens, one line per base workload and load level, from the card's
``context_axis`` (workloadmd.context_axis). Matplotlib's Agg canvas on a private Figure; nothing is
written when no workload lists several input lengths."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from loadgen.records.card import ContextRow


def _num(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def render_context_plot(pair: str, axis: Mapping[str, Sequence[ContextRow]] | None, out_dir: Path) -> list[Path]:
    """Write ``out_dir/context_length.png`` when the card of ``pair`` has a context-length axis (its
    ``context_axis``); return the paths."""
    if not axis:
        return []
    fig = Figure(figsize=(10.4, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    acc_ax, ratio_ax = fig.subplots(1, 2)
    for base, rows in axis.items():
        for level in dict.fromkeys(r.level for r in rows):
            pts = sorted((r for r in rows if r.level == level), key=lambda r: r.input_tokens)
            xs = [r.input_tokens for r in pts]
            acc_ax.plot(xs, [_num(r.acceptance_rate) for r in pts], marker="o", label=f"{base} {level}")
            ratio_ax.plot(xs, [_num(r.tpot_ratio) for r in pts], marker="o", label=f"{base} {level}")
    ratio_ax.axhline(1.0, color="black", linewidth=0.8)
    for ax, ylabel in ((acc_ax, "acceptance rate"), (ratio_ax, "TPOT p50 ratio (speculative / plain)")):
        ax.set(xlabel="input length (tokens)", ylabel=ylabel)
        ax.set_xscale("log", base=2)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(f"{pair}: acceptance and TPOT ratio against context length")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "context_length.png"
    fig.savefig(path, dpi=110)
    return [path]
