"""The pair card as a page (``card.html``, report/htmlpage.py) from the card's record (records/card.py
``PairCard``), the record card.md is rendered from (report/cardmd.py): the same answer first
(report/answermd.py ``answer_items``), then the evidence (the cells with their ratios against the A/A noise
floor, the verdict's checks, the crossover, capacity at SLO, the plots) and, folded, the provenance (models,
config, engine versions, sampling, prompts' hash). Pure: the plots come in as figures (htmlpage.embed).

Units as in card.md: latencies in ms (TPOT in ms per token), E2E latency in s; ratios speculative / plain with
their interval ``[low, high]`` and the effect the one decision gave (measure/decision.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from loadgen.records.card import PairCard
from loadgen.records.cardcell import CardCell, Ratio
from loadgen.report.answermd import answer_items
from loadgen.report.htmlpage import Figure, Page, Section, Table, render_page
from loadgen.util.numbers import MISSING, ms, num

#: What each plot shows, by its file name's prefix (report/plots.py, ratioplot.py, contextplot.py).
CAPTIONS = {
    "tpot_ratio": "speculative / plain TPOT p50 per level with its interval (named in the title); gray band: "
    "the A/A noise floor (placebo / plain) every effect is read against; shaded: the decided crossover range",
    "latency_": "TTFT, TPOT and E2E latency per level, p50 and p99, both servers",
    "throughput": "output tokens/s and requests/s per level, both servers",
    "acceptance": "the draft's acceptance per position, per level",
    "ttft_distribution": "TTFT distribution per level, both servers",
    "context": "the TPOT ratio and acceptance against the input length",
    "trace": "the trace replay over time windows",
}


def _ratio(r: Ratio | None) -> str:
    if r is None or r.value is None:
        return MISSING
    if r.unavailable:
        return "n/a (bursts)"
    return r.text(3) + (f" {r.effect}" if r.effect else "")


def _p50_ms(cell: CardCell, role: str, key: str) -> str:
    side = cell.role(role)
    dist = getattr(side, key, None) if side else None
    return ms(getattr(dist, "p50", None), 2)


def _acceptance(cell: CardCell) -> tuple[str, str]:
    acc = cell.speculative.acceptance if cell.speculative else None
    if acc is None:
        return MISSING, MISSING
    return num(acc.acceptance_rate, 3), num(acc.mean_acceptance_length, 2)


def _cells_table(card: PairCard) -> Table:
    status = {(v.workload, v.concurrency): v.status for v in card.verdict.cells}
    rows = []
    for c in card.cells:
        rate, length = _acceptance(c)
        aa = c.aa_ratio("tpot_p50")
        rows.append(
            (
                c.workload,
                c.level,
                _p50_ms(c, "plain", "tpot_s"),
                _p50_ms(c, "speculative", "tpot_s"),
                _ratio(c.ratio("tpot_p50")),
                MISSING if aa is None else aa.text(3),
                _ratio(c.ratio("ttft_p50")),
                _ratio(c.ratio("e2e_p50")),
                rate,
                length,
                status.get((c.workload, c.concurrency), MISSING) if c.rate_rps is None else MISSING,
                "yes" if c.complete else "cut short",
            )
        )
    headers = (
        "workload",
        "level",
        "plain TPOT p50 (ms/token)",
        "speculative TPOT p50 (ms/token)",
        "TPOT p50 ratio [interval] effect",
        "A/A floor TPOT p50 [interval]",
        "TTFT p50 ratio",
        "E2E p50 ratio",
        "acceptance rate",
        "acceptance length",
        "verdict",
        "complete",
    )
    return Table(headers, tuple(rows), "speculative / plain; below 1: speculative faster")


def _verdict_section(card: PairCard) -> Section:
    rows = tuple(
        (v.workload, f"c{v.concurrency}", ch.name, ch.status, num(ch.judged, 3), num(ch.threshold, 3), ch.reason)
        for v in card.verdict.cells
        for ch in v.checks
    )
    table = Table(("workload", "level", "check", "status", "judged", "threshold", "reason"), rows)
    lines = (card.verdict.summary, *(card.verdict.lines or ()))
    return Section("Verdict against the declared criteria", lines, (table,) if rows else ())


def _crossover_section(card: PairCard) -> Section:
    rows = []
    for workload, cross in card.crossover.items():
        span = cross.crossover_range
        decided = f"{span[0]:g}-{span[1]:g}" if span and span[0] is not None and span[1] is not None else MISSING
        ratios = ", ".join(f"c{lv}: {num(r, 3)}" for lv, r in zip(cross.levels, cross.ratios, strict=False))
        rows.append((workload, ratios, num(cross.crossover_concurrency, 2), decided))
    headers = ("workload", "TPOT p50 ratio per level", "ratio 1 at (interpolated)", "decided crossover range")
    return Section("Where speculation stops paying", tables=(Table(headers, tuple(rows)),) if rows else ())


def _capacity_section(card: PairCard) -> Section:
    rows = tuple(
        (
            workload,
            role,
            str(cap.capacity_concurrency) if cap.capacity_concurrency is not None else "none held",
            num(cap.goodput_rps),
        )
        for workload, roles in card.capacity.items()
        for role, cap in roles.items()
    )
    if not rows:
        return Section("Capacity at SLO", ("No SLO declared ([slo] in the pair file).",))
    headers = ("workload", "server", "highest concurrency holding every SLO", "goodput (req/s)")
    return Section("Capacity at SLO", tables=(Table(headers, rows),))


def _sure_section(card: PairCard) -> Section:
    design = card.design.to_json() if card.design else {}
    lines = [f"{k}: {json.dumps(v) if isinstance(v, dict | list) else v}" for k, v in design.items() if k != "arms"]
    floor = card.noise_floor
    for metric, m in ((floor.metrics if floor else None) or {}).items():
        lines.append(
            f"A/A noise floor {metric}: {num(m.min, 3)}-{num(m.max, 3)} over {floor.cells if floor else '?'} "
            f"cells, widest CI ±{num(m.widest_half_width, 3)} (log half-width)"
        )
    return Section("How sure: design and A/A noise floor", tuple(lines) or ("Measured by older code.",))


def _provenance(card: PairCard) -> Section:
    facts = {
        "generated_utc": card.generated_utc,
        "engine_version": card.engine_version.to_json(),
        "target": card.target.to_json() if card.target else None,
        "draft": card.draft.to_json() if card.draft else None,
        "speculative_config": card.speculative_config.to_json() if card.speculative_config else None,
        "sampling": card.sampling.to_json(),
        "stop_rule": card.stop_rule.to_json(),
        "prompts_sha256": card.prompts_sha256,
        "command_line": card.command_line.to_json() if card.command_line else None,
        "hardware": card.hardware.to_json() if card.hardware else None,
    }
    lines = (f"complete: {'yes' if card.complete else 'no'}" + (f"; {card.failure}" if card.failure else ""),)
    return Section("Provenance", lines, code=json.dumps(facts, indent=2, default=str), open=False)


def render_card_html(card: PairCard, figures: Sequence[Figure]) -> str:
    """``card.html`` of ``card`` with its plots (``figures``, htmlpage.embed of ``card.plots``)."""
    cells = Section("Cells", tables=(_cells_table(card),))
    plots = Section("Plots", figures=tuple(figures)) if figures else Section("Plots", ("No plots drawn.",))
    sections = (
        cells,
        plots,
        _verdict_section(card),
        _crossover_section(card),
        _capacity_section(card),
        _sure_section(card),
        _provenance(card),
    )
    page = Page(card.pair, "pair card", tuple(answer_items(card)), card.workloads_statement, sections)
    return render_page(page)
