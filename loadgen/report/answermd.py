"""The pair card's first section, "The answer" (pure): five lines read from the card record and nothing else, so
that they cannot say otherwise than the sections under them (docs/metrics.md "The decision").

1. **verdict**: the verdict's summary against the criteria declared before the run (measure/verdict.py);
2. **where speculation stops paying**: per workload, the TPOT p50 decision at each closed-loop level and the
   crossover range the decisions bracket (report/cardlevels.py ``crossovers``);
3. **capacity at SLO**: per workload, the highest tested concurrency holding every declared SLO on each server;
4. **deploy**: what the verdict's cells allow a single configuration to be: the speculative config where every
   judged cell passes, plain where none does, and the levels it pays at otherwise;
5. **how sure**: the A/A noise floor and the blocks it was read from.

Each line says why when its figure is absent (no criteria, no SLO, no placebo, no closed-loop levels).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from loadgen.measure.decision import AHEAD, BEHIND, side
from loadgen.records.card import CellVerdict, PairCard
from loadgen.records.cardcell import CardCell, Ratio
from loadgen.util.numbers import num

__all__ = ["ANSWER_TITLE", "answer_rows"]

ANSWER_TITLE = "## The answer"


def _ci(r: Ratio) -> str:
    return f" [{r.ci_low:.3f}, {r.ci_high:.3f}]" if r.ci_low is not None and r.ci_high is not None else ""


def _closed(cells: Sequence[CardCell], workload: str) -> list[CardCell]:
    return sorted((c for c in cells if c.workload == workload and c.rate_rps is None), key=lambda c: c.concurrency)


def _verdict_line(card: PairCard) -> str:
    verdict = card.verdict
    if verdict.declared is False:
        return f"- **verdict**: {verdict.summary} (no [criteria] table in the pair file)"
    return f"- **verdict**: {verdict.summary}"


def _crossover_line(card: PairCard) -> str:
    """Per workload: the crossover range, then each level's TPOT p50 decision, ratio and CI."""
    lines = []
    for workload, cross in card.crossover.items():
        levels: list[str] = []
        sides: set[str | None] = set()
        for cell in _closed(card.cells, workload):
            r = cell.ratio("tpot_p50")
            if r is None or r.value is None:
                levels.append(f"c={cell.concurrency}: not measured")
                sides.add(None)
                continue
            levels.append(f"c={cell.concurrency}: {r.effect or 'not decided'} ({r.value:.3f}{_ci(r)})")
            sides.add(side("tpot_p50", r, cell.aa_ratio("tpot_p50")))
        if not levels:
            continue
        span = cross.crossover_range
        if span and span[0] is not None and span[1] is not None:
            where = f"between c={span[0]:g} and c={span[1]:g}"
        elif sides == {BEHIND}:
            where = "slower at every tested level: it never pays"
        elif sides == {AHEAD}:
            where = "faster at every tested level: no crossover up to the highest"
        else:
            where = "no crossover decided within the tested levels"
        lines.append(f"{workload}: {where} (ratio speculative / plain {', '.join(levels)})")
    if not lines:
        return "- **where speculation stops paying**: no closed-loop levels measured"
    return f"- **where speculation stops paying** (TPOT p50, decided against the A/A floor): {'; '.join(lines)}"


def _capacity_line(card: PairCard) -> str:
    if not card.capacity:
        return "- **capacity at SLO**: no SLO declared ([slo] in the pair file)"
    slo = card.slo
    limits = ", ".join(f"{k.removesuffix('_s')} ≤ {v:g} s" for k, v in slo.to_json().items() if k != "percentile" and v)
    head = f"- **capacity at SLO** (p{99 if slo.percentile is None else slo.percentile:g}: {limits}): "
    lines = []
    for workload, roles in card.capacity.items():
        parts = []
        for role, cap in roles.items():
            best = cap.capacity_concurrency
            parts.append(
                f"{role} c={best} ({num(cap.goodput_rps)} req/s goodput)" if best is not None else f"{role} none held"
            )
        lines.append(f"{workload}: {', '.join(parts)}")
    return head + "; ".join(lines)


def _where(cells: Sequence[CellVerdict]) -> str:
    return ", ".join(f"{c.workload} c={c.concurrency}" for c in cells)


def _deploy_line(card: PairCard) -> str:
    verdict = card.verdict
    config = f"`{json.dumps(card.speculative_config, sort_keys=True)}`" if card.speculative_config else "speculative"
    if verdict.declared is False or verdict.passed is None:
        return "- **deploy**: not judged: declare [criteria] to decide which configuration to deploy"
    if verdict.passed:
        return f"- **deploy**: speculative, {config}: it passes every judged cell"
    paying = [c for c in verdict.cells if c.status == "pass"]
    if not paying:
        return f"- **deploy**: plain (do not speculate): {config} passes no judged cell"
    return (
        f"- **deploy**: plain as one configuration for every judged level; {config} passes at "
        f"{_where(paying)} only (routing by load or a K schedule would be needed: `loadgen sweep` weighs it)"
    )


def _sure_line(card: PairCard) -> str:
    design = card.design or {}
    floor = card.noise_floor
    if not design:
        return "- **how sure**: measured by older code: one time window per server, CIs within-run only"
    blocks = f"{design.get('blocks')} blocks per arm and cell, {design.get('slots')} slots"
    if floor is None or not floor.measured:
        return f"- **how sure**: {blocks}; no A/A placebo: effects are read against 1, not a measured noise floor"
    tpot = (floor.metrics or {}).get("tpot_p50")
    if tpot is None:
        return f"- **how sure**: {blocks}; A/A placebo over {floor.cells} cells"
    undecided = sum(1 for c in card.verdict.cells if c.status == "inconclusive")
    return (
        f"- **how sure**: {blocks}; A/A noise floor TPOT p50 {num(tpot.min, 3)}-{num(tpot.max, 3)} over "
        f"{floor.cells} cells (widest CI ±{num(tpot.widest_half_width, 3)} log half-width)"
        + (f"; {undecided} cell(s) still inconclusive" if undecided else "")
    )


def answer_rows(card: PairCard) -> list[str]:
    """The "The answer" section's Markdown lines (module docstring): its title, a blank, the five lines, a
    blank, and the workloads statement the answer holds for (quoted), ending with a blank line."""
    return [
        ANSWER_TITLE,
        "",
        _verdict_line(card),
        _crossover_line(card),
        _capacity_line(card),
        _deploy_line(card),
        _sure_line(card),
        "",
        f"> {card.workloads_statement}",
        "",
    ]
