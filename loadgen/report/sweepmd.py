"""The sweep card in Markdown (``sweep.md``) from its data (``sweep.json``: records/sweep.py ``SweepCard``, built by
report/sweepdata.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from loadgen.profile.overrides import described
from loadgen.records.runparts import SIZING_DECIDED
from loadgen.records.sweep import SweepCard, SweepCell, SweepDesign, SweepEntry
from loadgen.report.answermd import AnswerItem
from loadgen.report.tracemd import trace_rows


def _x(v: float | None, fmt: str = ".3f") -> str:
    return "-" if v is None else format(v, fmt)


def _ci(e: SweepEntry) -> str:
    """``[low, high]`` (an asymmetric interval printed as it is, never as ± a half-width)."""
    if e.speedup_ci_low is None or e.speedup_ci_high is None:
        return "-"
    return f"[{e.speedup_ci_low:.3f}, {e.speedup_ci_high:.3f}]"


#: The columns of the cells table (sweep.md, and the sweep's card.html: report/sweephtml.py).
CELL_HEADERS = (
    "workload",
    "level",
    "candidate",
    "speedup",
    "95% CI",
    "effect",
    "half-width",
    "A/A noise floor",
    "acceptance rate",
    "acceptance length",
    "per position",
    "tokens / decode chunk",
    "predicted",
    "upper bound",
    "TTFT spec/plain p50 / p95 / p99",
    "criteria",
)


def cell_values(cell: SweepCell) -> list[tuple[str, ...]]:
    """Per entry of ``cell``, its row of :data:`CELL_HEADERS` as text."""
    rows: list[tuple[str, ...]] = []
    for e in cell.entries:
        pos = ", ".join(f"{p:.2f}" for p in e.per_position or []) or "-"
        rows.append(
            (
                cell.workload,
                cell.level,
                e.candidate,
                _x(e.speedup),
                _ci(e),
                e.effect or "-",
                _x(e.half_width),
                _floor(cell),
                _x(e.acceptance_rate),
                _x(e.mean_acceptance_length),
                pos,
                _x(e.tokens_per_decode_chunk, ".2f"),
                _x(e.predicted_speedup),
                _x(e.upper_bound),
                _ttft(e),
                e.criteria_status or "-",
            )
        )
    return rows


def _cell_rows(cell: SweepCell) -> list[str]:
    return [_row(row) for row in cell_values(cell)]


def _ttft(e: SweepEntry) -> str:
    """The TTFT p50 / p95 / p99 ratios, speculative / plain (an older sweep.json has none: '-')."""
    return " / ".join(_x(e.ttft_ratios.get(p)) for p in ("p50", "p95", "p99"))


def _floor(cell: SweepCell) -> str:
    f = cell.floor_ratio()
    if f is None or f.value is None:
        return "-"
    return f"{f.value:.3f}" + (
        f" [{f.ci_low:.3f}, {f.ci_high:.3f}]" if f.ci_low is not None and f.ci_high is not None else ""
    )


def _bytes(v: float | None, same_budget: bool | None = None) -> str:
    if v is None:
        return "-"
    return f"{v / 2**20:,.0f} MiB" + (" (same budget: not the draft's cost)" if same_budget else "")


def _command_line(card: SweepCard) -> list[str]:
    """The values the command line gave instead of the sweep file (profile/overrides.py), when it gave any."""
    given = card.command_line.overrides() if card.command_line else None
    return [f"From the command line (not the sweep file): {described(given)}.", ""] if given else []


def answer_items(card: SweepCard) -> list[AnswerItem]:
    """The sweep card's answer: the recommendation's headline, the one configuration to deploy, where
    speculation stops paying per workload (its ``deployed`` levels), where SLO capacity is, and how sure."""
    rec, design, noise = card.recommendation, card.design, card.noise_floor
    where = []
    for w in rec.workloads:
        runs = ", ".join(f"{level}: {name}" for level, name in w.deployed.items())
        where.append(f"{w.workload}: {w.off_sentence}" + (f" (deployed {runs}; plain at the rest)" if runs else ""))
    sure = "; ".join(x.line for x in (design, noise) if x is not None) or "-"
    if design is not None and design.ci_half_width is not None:
        sure += f"; {len(design.stopped_short)} cell(s) still inconclusive at ±{design.ci_half_width:g}"
    return [
        AnswerItem(rec.lines[-1], "") if rec.lines else AnswerItem("recommendation", "none (no measured cell)"),
        AnswerItem("deploy", rec.deployable or "plain (do not speculate): no single configuration pays"),
        AnswerItem("where speculation stops paying", "; ".join(where) or "no workload measured"),
        AnswerItem(
            "capacity at SLO",
            'per candidate in its pair card (CANDIDATE/card.md, "Capacity at SLO"); the sweep ranks speedups',
        ),
        AnswerItem("how sure", sure),
    ]


def _sizing_end(end: str, inconclusive: bool) -> str:
    """Why sizing stopped, as the run logged it; a card re-rendered under a decision that leaves cells
    inconclusive where the run saw every cell decided says so (those cells were not grown)."""
    if end == SIZING_DECIDED and inconclusive:
        return f"{end} when measured; read again under the current decision, the cells above are inconclusive"
    return end


def _as_logged(end: str, inconclusive: bool) -> str:
    return end


def sizing_line(design: SweepDesign | None, cite: str = "", end: Callable[[str, bool], str] = _as_logged) -> str | None:
    """How sure the cells are: the precision they were sized to (``ci_half_width``, log half-width), the cells
    still inconclusive (or every cell decided) and why sizing stopped (``end(sizing_end, inconclusive)``);
    None for a design not sized to a precision. ``cite`` follows "decided" (the module that decides)."""
    if design is None or design.ci_half_width is None:
        return None
    short = design.stopped_short
    return (
        f"cells sized until decided{cite} at ±{design.ci_half_width:g} (log half-width): "
        + (f"still inconclusive at {'; '.join(short)}" if short else "every cell decided")
        + (f"; sizing stopped: {end(design.sizing_end, bool(short))}" if design.sizing_end else "")
    )


def _answer(card: SweepCard) -> list[str]:
    """The sweep card's first section (:func:`answer_items`)."""
    return ["## The answer", "", *(item.markdown() for item in answer_items(card)), ""]


#: The columns of the candidates table.
CANDIDATE_HEADERS = (
    "candidate",
    "K",
    "draft weights",
    "verdict",
    "KV capacity lost",
    "extra CPU RSS",
    "extra GPU memory",
    "time",
)


def candidate_values(card: SweepCard) -> list[tuple[str, ...]]:
    """Per candidate, its row of :data:`CANDIDATE_HEADERS` as text."""
    rows: list[tuple[str, ...]] = []
    for c in card.candidates:
        verdict = {True: "pass", False: "FAIL", None: "not judged"}[c.verdict_passed]
        verdict = c.verdict_status if c.verdict_status in ("inconclusive", "not distinguishable") else verdict
        loss = "-" if c.kv_capacity_loss is None else f"{100 * c.kv_capacity_loss:.1f}%"
        when = "-" if c.time_s is None else f"{c.time_s / 60:.1f} min"
        rows.append(
            (
                c.name,
                str(c.k),
                "yes" if c.draft_weights else "no",
                verdict if c.measured else "not measured",
                loss,
                _bytes(c.extra_cpu_rss_bytes),
                _bytes(c.extra_gpu_memory_bytes, c.same_memory_budget),
                when,
            )
        )
    return rows


def render_sweep_markdown(card: SweepCard) -> str:
    """``sweep.md``: the answer, recommendation, how sure (design, noise floor, precision), candidates, per-cell
    table, an older sweep's drift, time spent, plots."""
    out = [f"# Sweep card: {card.pair}", "", *_answer(card), *_command_line(card), "## Recommendation", ""]
    out += [f"- {line}" for line in card.recommendation.lines]
    design, noise = card.design, card.noise_floor
    out += ["", "## How sure", "", f"- design: {design.line if design else '-'}", f"- {noise.line if noise else '-'}"]
    if (sized := sizing_line(design, " (measure/decision.py)", _sizing_end)) is not None:
        out.append(f"- {sized}")
    out += ["", "## Candidates", "", *_head(CANDIDATE_HEADERS), *map(_row, candidate_values(card))]
    out += [
        "",
        "## Cells",
        "",
        f"Schema {card.schema}; engine vLLM {card.engine_version or 'unknown'}; primary metric "
        f"{card.primary_metric}. Speedup = {card.speedup_definition}. Upper bound = "
        f"{card.upper_bound_formula} (a perfect draft).",
        "",
        *_head(CELL_HEADERS),
    ]
    for cell in card.cells:
        out += _cell_rows(cell)
    return "\n".join(out + _drifts(card) + _tail(card)) + "\n"


def _row(values: Sequence[str]) -> str:
    """A Markdown table row of ``values`` (text, as they are)."""
    return "| " + " | ".join(values) + " |"


def _head(headers: Sequence[str]) -> list[str]:
    """A Markdown table's head: the ``headers`` row and its rule."""
    return [_row(headers), "|" + "---|" * len(headers)]


def _drifts(card: SweepCard) -> list[str]:
    """An older sweep's plain baseline drift per cell, and the card's warnings."""
    drifts = [(c, c.drift) for c in card.cells if c.drift]
    out = ["", "## Plain baseline drift (plain-after / plain-before)", ""] if drifts else []
    for cell, d in drifts:
        ci = "" if d.ci_low is None else f" [95% CI {d.ci_low:.3f}, {d.ci_high:.3f}]"
        out.append(f"- {cell.workload} {cell.level}: {d.timing} {_x(d.value)}{ci}, {d.pairs} prompts")
    return out + (["", *[f"- WARNING {w}" for w in card.drift_warnings]] if card.drift_warnings else [])


def _tail(card: SweepCard) -> list[str]:
    """The time spent per arm (min), the trace replay section and the plots."""
    times = ", ".join(f"{k} {v / 60:.1f} min" for k, v in card.times_s.items())
    return [
        "",
        "## Time spent",
        "",
        times or "-",
        "",
        *trace_rows(card.trace_section()),
        *(f"![{p}]({p})" for p in card.plots),
    ]
