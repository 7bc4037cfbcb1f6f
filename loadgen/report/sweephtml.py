"""The sweep card as a page (the sweep folder's ``card.html``, report/htmlpage.py) from its record
(records/sweep.py ``SweepCard``), the record sweep.md is rendered from (report/sweepmd.py, whose answer items
and table rows it shares): the answer first, then the recommendation, how sure, the candidates, every cell
(each candidate's speedup with its interval and its effect against the A/A noise floor), an older sweep's
drift, the time spent, the plots, and, folded, the provenance. Pure: the plots come in as figures."""

from __future__ import annotations

import json
from collections.abc import Sequence

from loadgen.records.sweep import SweepCard
from loadgen.report.htmlpage import Figure, Page, Section, Table, render_page
from loadgen.report.sweepmd import (
    CANDIDATE_HEADERS,
    CELL_HEADERS,
    answer_items,
    candidate_values,
    cell_values,
    sizing_line,
)

#: What each sweep plot shows, by its file name's prefix (report/sweepplots.py).
CAPTIONS = {
    "sweep_ratio": "each candidate's speedup over plain per level with its interval (named in the title); gray "
    "band: the A/A noise floor every effect is read against; star: what the deployable configuration runs there",
    "sweep_acceptance_length": "mean acceptance length against K per method or draft; dashed: a perfect draft, K + 1",
    "trace": "the trace replay over time windows",
}


def _sure(card: SweepCard) -> Section:
    design, noise = card.design, card.noise_floor
    lines = [f"design: {design.line if design else '-'}", noise.line if noise else "no A/A noise floor measured"]
    if (sized := sizing_line(design)) is not None:
        lines.append(sized)
    return Section("How sure", tuple(lines))


def _cells(card: SweepCard) -> Section:
    rows = tuple(row for cell in card.cells for row in cell_values(cell))
    caption = f"Speedup = {card.speedup_definition}. Upper bound = {card.upper_bound_formula} (a perfect draft)."
    return Section("Cells", tables=(Table(CELL_HEADERS, rows, caption),))


def _drift(card: SweepCard) -> Section | None:
    rows = tuple(
        (
            c.workload,
            c.level,
            d.timing,
            f"{d.value:.3f}" if d.value is not None else "-",
            str(d.pairs),
            f"[{d.ci_low:.3f}, {d.ci_high:.3f}]" if d.ci_low is not None and d.ci_high is not None else "-",
        )
        for c in card.cells
        if (d := c.drift)
    )
    if not rows and not card.drift_warnings:
        return None
    table = Table(("workload", "level", "timing", "plain-after / plain-before", "prompts", "95% CI"), rows)
    return Section("Plain baseline drift", tuple(f"WARNING {w}" for w in card.drift_warnings), (table,))


def _provenance(card: SweepCard) -> Section:
    facts = {
        "schema": card.schema,
        "engine_version": card.engine_version,
        "primary_metric": card.primary_metric,
        "speedup_definition": card.speedup_definition,
        "upper_bound_formula": card.upper_bound_formula,
        "command_line": card.command_line.to_json() if card.command_line else None,
    }
    return Section("Provenance", code=json.dumps(facts, indent=2, default=str), open=False)


def render_sweep_html(card: SweepCard, figures: Sequence[Figure]) -> str:
    """The sweep's ``card.html`` of ``card`` with its plots (``figures``, htmlpage.embed of ``card.plots``)."""
    times = ", ".join(f"{k} {v / 60:.1f} min" for k, v in card.times_s.items()) or "-"
    candidates = Table(CANDIDATE_HEADERS, tuple(candidate_values(card)))
    sections = [
        Section("Recommendation", tuple(card.recommendation.lines) or ("No measured cell.",)),
        _sure(card),
        Section("Candidates", tables=(candidates,)),
        _cells(card),
        *((drift,) if (drift := _drift(card)) is not None else ()),
        Section("Time spent", (times,)),
        Section("Plots", figures=tuple(figures)) if figures else Section("Plots", ("No plots drawn.",)),
        _provenance(card),
    ]
    return render_page(Page(card.pair, "sweep card", tuple(answer_items(card)), "", tuple(sections)))
