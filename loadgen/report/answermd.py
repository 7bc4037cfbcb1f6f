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
from dataclasses import dataclass

from loadgen.measure.decision import AHEAD, BEHIND, side
from loadgen.records.card import CellVerdict, PairCard
from loadgen.records.cardcell import CardCell, Ratio
from loadgen.util.numbers import num

__all__ = ["ANSWER_TITLE", "AnswerItem", "answer_items", "answer_rows"]

ANSWER_TITLE = "## The answer"


@dataclass(frozen=True)
class AnswerItem:
    """One line of an answer (this module's, the sweep's: report/sweepmd.py, the fleet's): its ``label``, the
    ``qualifier`` after it (parenthesized, or empty), and its ``text``, plain, where ``{code}`` stands for
    ``code`` (a configuration shown as code), when set. card.md and card.html write the same items."""

    label: str
    text: str
    qualifier: str = ""
    code: str | None = None

    def parts(self) -> tuple[str, str | None, str]:
        """(the text before ``code``, ``code``, the text after it); ``(text, None, "")`` without code."""
        if self.code is None:
            return self.text, None, ""
        before, _, after = self.text.partition("{code}")
        return before, self.code, after

    def markdown(self) -> str:
        """``- **label** qualifier: text``, ``code`` in backticks (``- **label**`` alone without text)."""
        before, code, after = self.parts()
        text = before + (f"`{code}`" if code is not None else "") + after
        head = f"- **{self.label}**{' ' + self.qualifier if self.qualifier else ''}"
        return f"{head}: {text}" if text else head


def _ci(r: Ratio) -> str:
    return f" [{r.ci_low:.3f}, {r.ci_high:.3f}]" if r.ci_low is not None and r.ci_high is not None else ""


def _closed(cells: Sequence[CardCell], workload: str) -> list[CardCell]:
    return sorted((c for c in cells if c.workload == workload and c.rate_rps is None), key=lambda c: c.concurrency)


def _verdict_line(card: PairCard) -> AnswerItem:
    verdict = card.verdict
    if verdict.declared is False:
        return AnswerItem("verdict", f"{verdict.summary} (no [criteria] table in the pair file)")
    return AnswerItem("verdict", verdict.summary)


def _crossover_line(card: PairCard) -> AnswerItem:
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
        return AnswerItem("where speculation stops paying", "no closed-loop levels measured")
    return AnswerItem("where speculation stops paying", "; ".join(lines), "(TPOT p50, decided against the A/A floor)")


def _capacity_line(card: PairCard) -> AnswerItem:
    if not card.capacity:
        return AnswerItem("capacity at SLO", "no SLO declared ([slo] in the pair file)")
    slo = card.slo
    limits = ", ".join(f"{k.removesuffix('_s')} ≤ {v:g} s" for k, v in slo.to_json().items() if k != "percentile" and v)
    head = f"(p{99 if slo.percentile is None else slo.percentile:g}: {limits})"
    lines = []
    for workload, roles in card.capacity.items():
        parts = []
        for role, cap in roles.items():
            best = cap.capacity_concurrency
            parts.append(
                f"{role} c={best} ({num(cap.goodput_rps)} req/s goodput)" if best is not None else f"{role} none held"
            )
        lines.append(f"{workload}: {', '.join(parts)}")
    return AnswerItem("capacity at SLO", "; ".join(lines), head)


def _where(cells: Sequence[CellVerdict]) -> str:
    return ", ".join(f"{c.workload} c={c.concurrency}" for c in cells)


def _deploy_line(card: PairCard) -> AnswerItem:
    verdict = card.verdict
    given = card.speculative_config.to_json() if card.speculative_config else None
    code = json.dumps(given, sort_keys=True) if given else None
    config = "{code}" if code is not None else "speculative"
    if verdict.declared is False or verdict.passed is None:
        return AnswerItem("deploy", "not judged: declare [criteria] to decide which configuration to deploy")
    if verdict.passed:
        return AnswerItem("deploy", f"speculative, {config}: it passes every judged cell", code=code)
    paying = [c for c in verdict.cells if c.status == "pass"]
    if not paying:
        return AnswerItem("deploy", f"plain (do not speculate): {config} passes no judged cell", code=code)
    return AnswerItem(
        "deploy",
        f"plain as one configuration for every judged level; {config} passes at {_where(paying)} only (routing "
        "by load or a K schedule would be needed: loadgen sweep weighs it)",
        code=code,
    )


def _sure_line(card: PairCard) -> AnswerItem:
    design = card.design
    floor = card.noise_floor
    if design is None:
        return AnswerItem("how sure", "measured by older code: one time window per server, CIs within-run only")
    blocks = f"{design.blocks} blocks per arm and cell, {design.slots} slots"
    if floor is None or not floor.measured:
        return AnswerItem(
            "how sure", f"{blocks}; no A/A placebo: effects are read against 1, not a measured noise floor"
        )
    tpot = (floor.metrics or {}).get("tpot_p50")
    if tpot is None:
        return AnswerItem("how sure", f"{blocks}; A/A placebo over {floor.cells} cells")
    undecided = sum(1 for c in card.verdict.cells if c.status == "inconclusive")
    return AnswerItem(
        "how sure",
        f"{blocks}; A/A noise floor TPOT p50 {num(tpot.min, 3)}-{num(tpot.max, 3)} over "
        f"{floor.cells} cells (widest CI ±{num(tpot.widest_half_width, 3)} log half-width)"
        + (f"; {undecided} cell(s) still inconclusive" if undecided else ""),
    )


def answer_items(card: PairCard) -> list[AnswerItem]:
    """The answer's five lines (module docstring), in order."""
    return [_verdict_line(card), _crossover_line(card), _capacity_line(card), _deploy_line(card), _sure_line(card)]


def answer_rows(card: PairCard) -> list[str]:
    """The "The answer" section's Markdown lines (module docstring): its title, a blank, the five lines, a
    blank, and the workloads statement the answer holds for (quoted), ending with a blank line."""
    return [
        ANSWER_TITLE,
        "",
        *(item.markdown() for item in answer_items(card)),
        "",
        f"> {card.workloads_statement}",
        "",
    ]
