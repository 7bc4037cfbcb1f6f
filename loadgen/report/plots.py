"""PNG figures of a pair card (matplotlib's Agg canvas on private Figures: no pyplot, no global state).

Inputs: the pair card (records/card.py ``PairCard``, schema ``loadgen.card/1``) and the run's request records (only
measured, successful ones are drawn). Figures, one file each (``<kind>[_<workload>][_rate].png``):

- ``latency_<workload>``: TTFT (ms), TPOT (ms/token), E2E latency (s) p50 (solid) and p99 (dashed),
  plain vs speculative, against the load level;
- ``throughput``: output throughput (tokens/s) and request throughput (req/s), every workload;
- ``tpot_ratio``: speculative / plain TPOT p50 (the primary metric) with its CI band (named in the title by
  its ``ci_method``: :func:`interval_name`), the A/A noise floor's band behind it (gray), the line ratio = 1,
  the decided crossover range shaded (the card's ``crossover_range``: measure/decision.py) and the interpolated
  level where the ratio crosses 1 marked as a guide (:func:`crossover`);
- ``acceptance``: per-position acceptance (accepted_per_pos[i] / drafts) per workload and level;
- ``ttft_distribution``: empirical CDF of per-request TTFT (ms), plain vs speculative, per workload.

Closed-loop cells (``rate_rps`` None) are drawn against concurrency; open-loop cells, if any, in separate
``_rate`` figures against the offered rate (req/s). Anything the card lacks (a role, a ratio, a percentile,
acceptance) is skipped, never an error: a figure with nothing to draw is not written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from loadgen.measure.metrics import request_timings
from loadgen.measure.ratios import crossover
from loadgen.profile.cells import ROLES, CellKey
from loadgen.records.card import PairCard
from loadgen.records.cardcell import Acceptance, CardCell
from loadgen.records.request import RequestRecord
from loadgen.report.contextplot import render_context_plot
from loadgen.report.plotparts import (
    COLORS,
    WORKLOAD_MARKERS,
    cells_of,
    finite,
    level_axis,
    new_figure,
    save,
    slug,
    stat,
    workloads,
)
from loadgen.report.ratioplot import crossover_points, ratio_plot
from loadgen.report.traceplot import render_trace_plots

__all__ = ["crossover", "crossover_points", "render_plots"]

_KINDS = (
    ("concurrency", "concurrency (closed-loop requests in flight)", ""),
    ("rate", "offered load (requests/s, open loop)", "_rate"),
)


def _latency(card: PairCard, workload: str, kind: tuple[str, str, str], out: Path, paths: list[Path]) -> None:
    cells = cells_of(card, workload, kind[0])
    panels = (("TTFT", "ttft_s", 1e3, "ms"), ("TPOT", "tpot_s", 1e3, "ms/token"), ("E2E latency", "e2e_s", 1.0, "s"))
    xs = [x for x, _ in cells]
    drawn, fig = False, new_figure(3)
    for ax, (label, key, scale, unit) in zip(fig.subplots(1, 3), panels, strict=True):
        seen: list[float] = []
        for role in ROLES:
            for pct, style in (("p50", "-"), ("p99", "--")):
                ys = [stat(c, role, key, pct) * scale for _, c in cells]
                if any(not math.isnan(y) for y in ys):
                    ax.plot(xs, ys, style, marker="o", color=COLORS[role], label=f"{role} {pct}")
                    seen += ys
        drawn |= bool(seen)
        finite = [v for v in seen if v > 0 and math.isfinite(v)]
        if finite and max(finite) / min(finite) >= 30:  # log y when the values span 30x or more
            ax.set_yscale("log")
        level_axis(ax, xs, kind[1])
        ax.set(ylabel=f"{label} ({unit})", title=f"{label} p50 (solid) / p99 (dashed)")
        if seen:
            ax.legend(fontsize="small")
    if drawn:
        fig.suptitle(f"{card.pair} · {workload}: latency vs {kind[0]}")
        save(fig, out / f"latency_{slug(workload)}{kind[2]}.png", paths)


def _throughput(card: PairCard, kind: tuple[str, str, str], out: Path, paths: list[Path]) -> None:
    fig = new_figure(2)
    axes, xs_all, drawn = fig.subplots(1, 2), [], False
    for w, workload in enumerate(workloads(card)):
        cells = cells_of(card, workload, kind[0])
        xs = [x for x, _ in cells]
        xs_all += xs
        for ax, key in zip(axes, ("output_throughput_tps", "request_throughput_rps"), strict=True):
            for role in ROLES:
                ys = [stat(c, role, key) for _, c in cells]
                if any(not math.isnan(y) for y in ys):
                    drawn = True
                    ax.plot(
                        xs,
                        ys,
                        "-",
                        marker=WORKLOAD_MARKERS[w % len(WORKLOAD_MARKERS)],
                        color=COLORS[role],
                        alpha=1.0 if role == "speculative" else 0.85,
                        label=f"{workload} · {role}",
                    )
    if not drawn:
        return
    for ax, ylabel, title in zip(
        axes,
        ("output throughput (tokens/s)", "request throughput (requests/s)"),
        ("output tokens / measurement window", "successful requests / measurement window"),
        strict=True,
    ):
        level_axis(ax, xs_all, kind[1])
        ax.set(ylabel=ylabel, title=title, ylim=(0, None))
        ax.legend(fontsize="small")
    fig.suptitle(f"{card.pair}: throughput vs {kind[0]} (color: role, marker: workload)")
    save(fig, out / f"throughput{kind[2]}.png", paths)


def _acceptance(card: PairCard, out: Path, paths: list[Path]) -> None:
    rows = []
    for workload in workloads(card):
        cells = [(x, c) for kind, *_ in _KINDS for x, c in cells_of(card, workload, kind)]
        found: list[tuple[CardCell, Acceptance]] = [
            (c, acc) for _, c in cells if c.speculative and (acc := c.speculative.acceptance) and acc.per_position
        ]
        if found:
            rows.append((workload, found))
    if not rows:
        return
    fig = new_figure(len(rows), width=5.6)
    axes = fig.subplots(1, len(rows), squeeze=False)[0]
    for ax, (workload, found) in zip(axes, rows, strict=True):
        k = max(len(acc.per_position) for _, acc in found)
        width = 0.8 / len(found)
        for i, (cell, acc) in enumerate(found):
            pos = np.arange(len(acc.per_position))
            label = (
                f"{cell.level}: rate {finite(acc.acceptance_rate):.2f}, length {finite(acc.mean_acceptance_length):.2f}"
            )
            ax.bar(pos - 0.4 + width * (i + 0.5), [finite(v) for v in acc.per_position], width, label=label)
        ax.set_xticks(range(k), [str(i) for i in range(k)])
        ax.set(
            xlabel="draft position i (0-based)", ylabel="accepted_per_pos[i] / drafts", ylim=(0, 1.05), title=workload
        )
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(
            fontsize="small",
            title="level: acceptance rate, mean acceptance length",
            title_fontsize="small",
            loc="upper center",
            bbox_to_anchor=(0.5, -0.25),
            ncol=2,
        )
    fig.suptitle(f"{card.pair}: per-position acceptance (vLLM counter deltas per cell)")
    save(fig, out / "acceptance.png", paths)


def _ttft_samples(records: Iterable[RequestRecord]) -> dict[tuple[str, str, str], list[float]]:
    out: dict[tuple[str, str, str], list[float]] = {}
    for r in records:
        if r.warmup or not r.ok:
            continue
        t = request_timings(r.send_s, r.chunk_arrivals_s, r.chunk_tokens)
        if t is not None:
            out.setdefault((*CellKey.named(r.workload, r.level, r.concurrency), r.role), []).append(t.ttft_s * 1e3)
    return out


def _ttft_distribution(card: PairCard, records: Sequence[RequestRecord], out: Path, paths: list[Path]) -> None:
    samples = _ttft_samples(records)
    names = [w for w in dict.fromkeys([*workloads(card), *(k[0] for k in samples)]) if any(k[0] == w for k in samples)]
    if not names:
        return
    fig = new_figure(len(names), width=5.6)
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    for ax, workload in zip(axes, names, strict=True):
        levels = sorted(
            {k[1] for k in samples if k[0] == workload},
            key=lambda s: (s[:1], float(s[1:]) if s[1:].replace(".", "", 1).isdigit() else math.inf),
        )
        values: list[float] = []
        for j, level in enumerate(levels):
            shade = 0.45 + 0.55 * (j + 1) / len(levels)
            for role in ROLES:
                data = np.sort(np.asarray(samples.get((workload, level, role), []), dtype=float))
                if data.size:
                    values += data.tolist()
                    ax.step(
                        np.concatenate([data[:1], data]),
                        np.arange(data.size + 1) / data.size,
                        where="post",
                        color=COLORS[role],
                        alpha=shade,
                        linestyle="-" if role == "speculative" else "--",
                        label=f"{role} {level} (n={data.size})",
                    )
        if values and max(values) / max(min(values), 1e-9) >= 30:
            ax.set_xscale("log")
        ax.set(xlabel="TTFT (ms)", ylabel="fraction of requests ≤ x", ylim=(0, 1.02), title=workload)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.suptitle(f"{card.pair}: TTFT distribution (ECDF of measured requests)")
    save(fig, out / "ttft_distribution.png", paths)


def render_plots(card: PairCard, records: Sequence[RequestRecord], out_dir: Path) -> list[Path]:
    """Write the figures of ``card`` and ``records`` (requests.jsonl; warmup,
    cooldown and failed requests are ignored) as PNG files under ``out_dir`` (created if needed).

    Returns the paths written, in a stable order (latency per workload, throughput, TPOT ratio,
    acceptance, TTFT distribution; closed-loop figures before their ``_rate`` counterparts). Parts the
    card lacks are skipped; an empty card gives []. Raises OSError only when ``out_dir`` is not writable.
    """
    paths: list[Path] = []
    out_dir.mkdir(parents=True, exist_ok=True)
    for kind in _KINDS:
        for workload in workloads(card):
            _latency(card, workload, kind, out_dir, paths)
        _throughput(card, kind, out_dir, paths)
        ratio_plot(card, kind, out_dir, paths)
    _acceptance(card, out_dir, paths)
    _ttft_distribution(card, records, out_dir, paths)
    return paths + render_context_plot(card.pair, card.context_axis, out_dir) + render_trace_plots(card.trace, out_dir)
