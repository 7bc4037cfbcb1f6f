"""The sweep card's recommendation (pure): per workload the best candidate at each level, the level above which
no candidate pays, one static configuration, and, where some candidate pays at some levels only, where, with
what and a per-batch-size K schedule in the engine's own config syntax (rules and formulas: measure/ranking.py).

Every part reads the same per-level decision, so they cannot disagree: a candidate **pays** at a cell when it
beats plain clear of the noise floor and, with declared criteria, passes them there; the best at a level is
the paying candidate with the highest speedup after the tie rule (a tie goes to the cheaper, and sweep.md
says "tie"). The plot's star, the K schedule (one method and draft, K per level, 0 where plain wins), the
static choice and the headline are all built from those per-level bests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from loadgen.measure.blocks import NOT_DISTINGUISHABLE
from loadgen.measure.ranking import Entry, best, geomean, k_schedule, off_above, static_choice
from loadgen.profile.fields import FIELD_RANGES, available, parse_version
from loadgen.records.criteria import Criteria
from loadgen.records.sweep import (
    KSchedule,
    LevelChoice,
    Recommendation,
    SweepCandidate,
    SweepCell,
    SweepEntry,
    WorkloadChoice,
)

SCHEDULE_FIELD = "num_speculative_tokens_per_batch_size"


def entry_of(e: SweepEntry) -> Entry:
    """The ranking's view of a sweep-card cell entry (records/sweep.py)."""
    return Entry(
        e.candidate, e.k, e.draft_weights, e.speedup, e.speedup_ci_low, e.speedup_ci_high, e.effect, e.criteria_status
    )


@dataclass(frozen=True)
class _Level:
    """One level's choice and the ranking's view of its entries."""

    choice: LevelChoice
    entries: list[Entry]


def _in_range(cell: SweepCell, criteria: Criteria | None) -> bool:
    if criteria is None:
        return True
    lo_hi, workloads = criteria.concurrency, criteria.workloads
    conc = int(cell.concurrency or 0)
    return (not lo_hi or lo_hi[0] <= conc <= lo_hi[1]) and (not workloads or cell.workload in workloads)


def _cost(rows: Sequence[SweepCandidate]) -> dict[str, tuple[int, int, str]]:
    return {r.name: (int(r.draft_weights), r.k, r.name) for r in rows}


def _static(
    cells: Sequence[SweepCell], rows: Sequence[SweepCandidate], criteria: Criteria | None, overall: bool = False
) -> tuple[str | None, dict[str, tuple[bool, float | None]]]:
    """The static choice over ``cells`` in the declared range and each candidate's (qualifies, geometric-mean
    speedup). A candidate qualifies when it pays at every such cell; with criteria and ``overall``, when its
    pair card's whole verdict (resources included) passes."""
    judged = [c for c in cells if _in_range(c, criteria)]
    scores = {}
    for row in rows:
        mine = [entry_of(e) for c in judged for e in c.entries if e.candidate == row.name]
        every = bool(mine) and len(mine) == len(judged) and all(e.pays(criteria is not None) for e in mine)
        ok = every and (row.verdict_passed is True if overall and criteria is not None else True)
        scores[row.name] = (ok, geomean([e.speedup for e in mine]) if mine else None)
    per_cell = [[entry_of(e) for e in c.entries] for c in judged]
    return static_choice(scores, _cost(rows), per_cell), scores


def _family(row: SweepCandidate) -> str:
    """The candidate's method and draft: its speculative config without K."""
    return json.dumps(
        {k: v for k, v in row.speculative_config.items() if k != "num_speculative_tokens"}, sort_keys=True
    )


def _schedule(
    levels: Sequence[_Level],
    rows: Sequence[SweepCandidate],
    static: str | None,
    engine_version: str | None,
    declared: bool,
) -> KSchedule:
    """The per-batch-size schedule of the family (method and draft) that pays at the most closed-loop levels
    (the static choice's family when there is one): its best paying K per level, 0 where none pays."""
    version = parse_version(engine_version) if engine_version else None
    if version is None or SCHEDULE_FIELD not in available(FIELD_RANGES, version):
        return KSchedule(
            supported=False,
            config=None,
            line=f"the installed engine (vLLM {engine_version or 'unknown'}) has no per-batch-size K "
            f"schedule ({SCHEDULE_FIELD} needs vLLM 0.24+)",
        )
    row_of = {r.name: r for r in rows}
    wins: dict[str, int] = {}
    for lv in levels:
        for name in lv.choice.tied or ([lv.choice.best] if lv.choice.best else []):
            wins[_family(row_of[name])] = wins.get(_family(row_of[name]), 0) + 1
    if not wins:
        return KSchedule(supported=True, config=None, line="no K schedule: no candidate pays at any level")
    cost = _cost(rows)
    family = (
        _family(row_of[static])
        if static
        else max(
            wins, key=lambda f: (wins[f], [-x for x in min(cost[n] for n in row_of if _family(row_of[n]) == f)[:2]])
        )
    )
    per_level = []
    for lv in levels:
        mine = [e for e in lv.entries if _family(row_of[e.candidate]) == family and e.pays(declared)]
        winner, _ = best(mine)
        per_level.append((int(lv.choice.concurrency or 0), winner.k if winner else 0))
    sched = k_schedule(per_level)
    first = next(r for r in rows if _family(r) == family)
    config = {
        **first.speculative_config,
        "num_speculative_tokens": max([k for *_, k in sched] + [1]),
        SCHEDULE_FIELD: sched,
    }
    return KSchedule(
        supported=True,
        config=config,
        line=f"K schedule (batch sizes measured as closed-loop concurrency): --speculative-config "
        f"'{json.dumps(config)}'",
    )


def _level(cell: SweepCell, declared: bool) -> _Level:
    entries = [entry_of(e) for e in cell.entries]
    winner, tied = best([e for e in entries if e.pays(declared)])
    return _Level(
        LevelChoice(
            level=cell.level,
            concurrency=cell.concurrency,
            best=winner.candidate if winner else None,
            tied=tied if winner and len(tied) > 1 else [],
            speedup=winner.speedup if winner else None,
            not_distinguishable=sorted(e.candidate for e in entries if e.effect == NOT_DISTINGUISHABLE),
        ),
        entries,
    )


def _best_text(lv: LevelChoice) -> str:
    if not lv.best:
        return f"{lv.level}: plain"
    others = [n for n in lv.tied if n != lv.best]
    return f"{lv.level}: {lv.best}" + (f" (tie with {', '.join(others)})" if others else "")


def _workload(
    name: str,
    cells: Sequence[SweepCell],
    rows: Sequence[SweepCandidate],
    criteria: Criteria | None,
    engine_version: str | None,
) -> WorkloadChoice:
    declared = criteria is not None
    levels = [_level(c, declared) for c in cells]
    closed = [lv for lv, c in zip(levels, cells, strict=True) if c.rate_rps is None]
    above, sentence = off_above(
        [
            (int(lv.choice.concurrency or 0), next((e for e in lv.entries if e.candidate == lv.choice.best), None))
            for lv in closed
        ]
    )
    static, scores = _static(cells, rows, criteria)
    schedule = _schedule(closed, rows, static, engine_version, declared)
    paying = [lv.choice for lv in levels if lv.choice.best]
    why = None
    if static is None and paying:
        where = ", ".join(f"{lv.best} at {lv.level}" for lv in paying)
        rest = [lv.choice.level for lv in levels if not lv.choice.best]
        why = f"no single configuration pays at every level: {where} pay, plain wins at {', '.join(rest)}"
    return WorkloadChoice(
        workload=name,
        off_above_concurrency=above,
        off_sentence=sentence,
        static=static,
        static_speedup=scores[static][1] if static else None,
        schedule=schedule,
        why_no_static=why,
        levels=[lv.choice for lv in levels],
    )


def _headline(
    static: str | None, scores: Mapping[str, tuple[bool, float | None]], workloads: Sequence[WorkloadChoice]
) -> str:
    if static is not None:
        g = scores[static][1]
        return f"recommendation: {static}" + (f" (geometric-mean speedup {g:.3f} over the declared range)" if g else "")
    partial = [w for w in workloads if any(lv.best for lv in w.levels)]
    if not partial:
        return "recommendation: do not speculate (no candidate beats plain clear of the noise floor at any level)"
    parts = [
        f"{w.workload}: {', '.join(_best_text(lv) for lv in w.levels)}"
        + (f"; {w.schedule.line}" if w.schedule and w.schedule.config else "")
        for w in partial
    ]
    return "recommendation: speculate only where it pays: " + "; ".join(parts)


def recommend(
    cells: Sequence[SweepCell], rows: Sequence[SweepCandidate], criteria: Criteria | None, engine_version: str | None
) -> Recommendation:
    """The recommendation of a sweep card from its cells and candidates (records/sweep.py): ``workloads``
    (one per workload), the overall ``static`` candidate (None: no single configuration), ``meets_criteria``
    and the printed ``lines``. ``criteria``: the candidates' declared criteria (None: not declared)."""
    names = list(dict.fromkeys(c.workload for c in cells))
    workloads = [_workload(w, [c for c in cells if c.workload == w], rows, criteria, engine_version) for w in names]
    static, scores = _static(cells, rows, criteria, overall=True)
    meets = any(ok for ok, _ in scores.values()) if criteria is not None else True
    lines = []
    for w in workloads:
        lines.append(
            f"{w.workload}: best per level {', '.join(_best_text(lv) for lv in w.levels)}; "
            f"{w.off_sentence}; static: {w.static or 'none'}"
            + (f" ({w.why_no_static})" if w.why_no_static else "")
            + f"; {w.schedule.line if w.schedule else ''}"
        )
        shy = sorted({n for lv in w.levels for n in lv.not_distinguishable})
        if shy:
            lines.append(f"{w.workload}: not distinguishable from the noise floor somewhere: {', '.join(shy)}")
    lines.append(_headline(static, scores, workloads))
    return Recommendation(workloads=workloads, static=static, meets_criteria=meets, lines=lines)
