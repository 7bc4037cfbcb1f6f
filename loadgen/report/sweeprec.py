"""The sweep card's recommendation (pure): per workload the best candidate at each level, the level above which
no candidate pays, one static configuration, and one **deployable** server configuration (rules and formulas:
measure/ranking.py; the per-cell decision: measure/decision.py).

Every part reads the same per-cell decision, so they cannot disagree: a candidate **pays** at a cell when its
decision there is *faster* (clear of the A/A noise floor and meeting ``min_speedup``) and, with declared
criteria, its pair card's cell passes them (regressions and lossless check included). Then:

- the **best** at a level is the paying candidate with the highest speedup after the tie rule (a tie goes to
  the cheaper); the plot's star marks what the deployable configuration runs at each level (``deployed``);
- the **static** choice is a candidate that pays at every level in the declared range (the best such by
  geometric-mean speedup); it **meets the criteria** (the sweep's exit 0) when it does so over every workload
  and its pair card's whole verdict (resources included) passes;
- the **deployable** configuration is one server configuration the engine version accepts: one method and
  draft (a *family*), with one K, or a per-batch-size K schedule within the family where the engine has one.
  It is the static choice's family when there is one, else the family that pays at the most levels (ties:
  the cheaper). With a schedule, its K at a level is its best paying K there (0, speculation off, only where
  none of the family pays), so it never turns off a win of its own; without one, the family's candidate that
  pays at the most levels. The levels where another family paid and it does not are listed as what it
  **gives up**, with their measured speedups. The sweep exits 0 only with criteria met by a static choice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from loadgen.measure.decision import INCONCLUSIVE, NOT_DISTINGUISHABLE
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
    return criteria is None or criteria.in_scope(cell.workload, int(cell.concurrency or 0))


def _cost(rows: Sequence[SweepCandidate]) -> dict[str, tuple[int, int, str]]:
    return {r.name: (int(r.draft_weights), r.k, r.name) for r in rows}


def _static(
    cells: Sequence[SweepCell], rows: Sequence[SweepCandidate], criteria: Criteria | None, overall: bool = False
) -> tuple[str | None, dict[str, tuple[bool, float | None]]]:
    """The static choice over ``cells`` in the declared range and each candidate's (qualifies, geometric-mean
    speedup). A candidate qualifies when it pays at every such cell; with criteria and ``overall``, when its
    pair card's whole verdict (resources included) passes too."""
    judged = [c for c in cells if _in_range(c, criteria)]
    scores = {}
    for row in rows:
        mine = [entry_of(e) for c in judged for e in c.entries if e.candidate == row.name]
        every = bool(mine) and len(mine) == len(judged) and all(e.pays(criteria is not None) for e in mine)
        ok = every and (row.verdict_passed is True if overall and criteria is not None else True)
        scores[row.name] = (ok, geomean([e.speedup for e in mine]) if mine else None)
    per_cell = [[entry_of(e) for e in c.entries] for c in judged]
    return static_choice(scores, _cost(rows), per_cell), scores


def family(row: SweepCandidate) -> str:
    """The candidate's method and draft: its speculative config without K (one server configuration)."""
    return json.dumps(
        {k: v for k, v in row.speculative_config.items() if k != "num_speculative_tokens"}, sort_keys=True
    )


def _choose_family(
    levels: Sequence[_Level], rows: Sequence[SweepCandidate], static: str | None, declared: bool
) -> str | None:
    """The deployable family: the static choice's, else the one paying at the most levels (ties: cheaper)."""
    row_of = {r.name: r for r in rows}
    if static is not None:
        return family(row_of[static])
    wins: dict[str, set[str]] = {}
    for lv in levels:
        for e in lv.entries:
            if e.pays(declared):
                wins.setdefault(family(row_of[e.candidate]), set()).add(lv.choice.level)
    if not wins:
        return None
    cost = _cost(rows)
    cheapest = {f: min(cost[n] for n in row_of if family(row_of[n]) == f) for f in wins}
    return max(wins, key=lambda f: (len(wins[f]), [-x for x in cheapest[f][:2]]))


def _most_paying(levels: Sequence[_Level], names: set[str], declared: bool) -> str:
    """Of ``names``, the candidate that pays at the most levels (ties: the higher geometric-mean speedup over
    them, then the name): the one configuration an engine without a K schedule can deploy."""

    def score(name: str) -> tuple[int, float, str]:
        mine = [e for lv in levels for e in lv.entries if e.candidate == name and e.pays(declared)]
        return len(mine), geomean([e.speedup for e in mine]) or 0.0, name

    return max(sorted(names), key=score)


def _schedule_supported(engine_version: str | None) -> bool:
    version = parse_version(engine_version) if engine_version else None
    return version is not None and SCHEDULE_FIELD in available(FIELD_RANGES, version)


@dataclass(frozen=True)
class _Deploy:
    """The deployable configuration of one workload (module docstring)."""

    schedule: KSchedule
    line: str | None = None
    gives_up: tuple[str, ...] = ()
    runs: Mapping[str, str] | None = None  # level -> the candidate it runs there (absent: plain)


def _deploy(
    levels: Sequence[_Level],
    rows: Sequence[SweepCandidate],
    static: str | None,
    engine_version: str | None,
    declared: bool,
) -> _Deploy:
    supported = _schedule_supported(engine_version)
    unsupported = (
        f"the installed engine (vLLM {engine_version or 'unknown'}) has no per-batch-size K schedule "
        f"({SCHEDULE_FIELD} needs vLLM 0.24+)"
    )
    fam = _choose_family(levels, rows, static, declared)
    if fam is None:
        return _Deploy(KSchedule(supported=supported, line="no K schedule: no candidate pays at any level"))
    row_of = {r.name: r for r in rows}
    picks = [
        (lv, best([e for e in lv.entries if family(row_of[e.candidate]) == fam and e.pays(declared)])[0])
        for lv in levels
    ]
    runs = {lv.choice.level: e.candidate for lv, e in picks if e is not None}
    off = [lv.choice.level for lv, e in picks if e is None]
    gives = tuple(
        f"{lv.choice.level}: {lv.choice.best} {lv.choice.speedup:.3f}x"
        for lv, e in picks
        if e is None and lv.choice.best and lv.choice.speedup is not None
    )
    one = len(set(runs.values())) == 1 and not off
    schedule = KSchedule(supported=False, line=unsupported)
    if supported:
        closed = [(int(lv.choice.concurrency or 0), e.k if e else 0) for lv, e in picks if lv.choice.concurrency]
        config = {
            **row_of[next(iter(runs.values()))].speculative_config,
            "num_speculative_tokens": max(e.k for _, e in picks if e is not None),
            SCHEDULE_FIELD: k_schedule(closed),
        }
        text = f"--speculative-config '{json.dumps(config)}'"
        schedule = KSchedule(
            supported=True, config=config, line=f"K schedule (batch sizes measured as closed-loop concurrency): {text}"
        )
    if supported and not one:
        line = f"{text} (K per level: " + ", ".join(f"{lv.choice.level} {e.k if e else 0}" for lv, e in picks) + ")"
    else:  # one candidate at every level it is run: its own config (the schedule above is the same server)
        name = static if static is not None else _most_paying(levels, set(runs.values()), declared)
        runs = {
            lv.choice.level: name for lv in levels if any(e.candidate == name and e.pays(declared) for e in lv.entries)
        }
        off = [lv.choice.level for lv in levels if lv.choice.level not in runs]
        line = f"{name}: --speculative-config '{json.dumps(dict(row_of[name].speculative_config))}'"
        if off:
            line += f" (it does not pay at {', '.join(off)}, and the engine cannot switch it off there)"
        gives = tuple(
            f"{lv.choice.level}: {lv.choice.best} {lv.choice.speedup:.3f}x"
            for lv in levels
            if lv.choice.level in off and lv.choice.best and lv.choice.speedup is not None
        )
    if gives:
        line += f"; gives up {'; '.join(gives)}"
    return _Deploy(schedule, line, gives, runs)


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
            undecided=sorted(e.candidate for e in entries if e.speedup is not None and e.effect == INCONCLUSIVE),
            unmeasured=sorted(e.candidate for e in entries if e.speedup is None),
        ),
        entries,
    )


def _open(lv: LevelChoice) -> str:
    """What keeps a level without a paying candidate from being called plain's ('' when every one is decided)."""
    parts = [f"{', '.join(lv.undecided)} inconclusive"] if lv.undecided else []
    parts += [f"{', '.join(lv.unmeasured)} not measured"] if lv.unmeasured else []
    return "; ".join(parts)


def _best_text(lv: LevelChoice) -> str:
    if not lv.best:
        return f"{lv.level}: undecided ({_open(lv)})" if _open(lv) else f"{lv.level}: plain"
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
    judged = [c for c in cells if _in_range(c, criteria)]
    levels = [_level(c, declared) for c in judged]
    # the levels some candidate was measured at, closed-loop: an unmeasured level is no "next level measured"
    closed = [
        lv
        for lv, c in zip(levels, judged, strict=True)
        if c.rate_rps is None and any(e.speedup is not None for e in lv.entries)
    ]
    above, sentence = off_above(
        [
            (int(lv.choice.concurrency or 0), next((e for e in lv.entries if e.candidate == lv.choice.best), None))
            for lv in closed
        ],
        undecided={int(lv.choice.concurrency or 0) for lv in closed if not lv.choice.best and lv.choice.undecided},
    )
    static, scores = _static(cells, rows, criteria)
    deploy = _deploy(levels, rows, static, engine_version, declared)
    paying = [lv.choice for lv in levels if lv.choice.best]
    why = None
    if static is None and paying:
        where = ", ".join(f"{lv.best} at {lv.level}" for lv in paying)
        rest = [lv.choice.level for lv in levels if not lv.choice.best]
        why = f"no single candidate pays at every level: {where}" + (
            f"; none pays at {', '.join(rest)}" if rest else "; the levels' winners differ"
        )
    return WorkloadChoice(
        workload=name,
        off_above_concurrency=above,
        off_sentence=sentence,
        static=static,
        static_speedup=scores[static][1] if static else None,
        schedule=deploy.schedule,
        why_no_static=why,
        levels=[lv.choice for lv in levels],
        deployable=deploy.line,
        gives_up=list(deploy.gives_up),
        deployed=dict(deploy.runs or {}),
    )


def _headline(static: str | None, declared: bool, workloads: Sequence[WorkloadChoice]) -> str:
    scope = "every declared level" if declared else "every level"
    if static is not None:
        return f"recommendation: {static} (pays at {scope} of every workload)"
    deploy = [w for w in workloads if w.deployable]
    if not deploy:
        undecided = [f"{w.workload} {lv.level}" for w in workloads for lv in w.levels if lv.undecided]
        unmeasured = [f"{w.workload} {lv.level}" for w in workloads for lv in w.levels if lv.unmeasured]
        owed = ([f"undecided at {', '.join(undecided)}: measure more blocks there"] if undecided else []) + (
            [f"not measured at {', '.join(unmeasured)}: resume the sweep (loadgen sweep --resume)"]
            if unmeasured
            else []
        )
        if owed:
            return (
                f"recommendation: do not speculate yet (no candidate is decided faster at any level; {'; '.join(owed)})"
            )
        return "recommendation: do not speculate (no candidate pays clear of the noise floor at any level)"
    return f"recommendation: no single candidate pays at {scope}; deploy " + "; ".join(
        f"{w.workload}: {w.deployable}" for w in deploy
    )


def recommend(
    cells: Sequence[SweepCell], rows: Sequence[SweepCandidate], criteria: Criteria | None, engine_version: str | None
) -> Recommendation:
    """The recommendation of a sweep card from its cells and candidates (records/sweep.py): ``workloads``
    (one per workload), the overall ``static`` candidate (None: no single configuration), ``meets_criteria``
    (a static candidate whose whole verdict passes: the sweep exits 0), the ``deployable`` line and the printed
    ``lines``. ``criteria``: the candidates' declared criteria (None: not declared)."""
    names = list(dict.fromkeys(c.workload for c in cells))
    workloads = [_workload(w, [c for c in cells if c.workload == w], rows, criteria, engine_version) for w in names]
    static, _ = _static(cells, rows, criteria, overall=True)
    meets = static is not None if criteria is not None else True
    lines = []
    for w in workloads:
        lines.append(
            f"{w.workload}: best per level {', '.join(_best_text(lv) for lv in w.levels)}; "
            f"{w.off_sentence}; static: {w.static or 'none'}"
            + (f" ({w.why_no_static})" if w.why_no_static else "")
            + f"; deployable: {w.deployable or 'plain (do not speculate)'}"
        )
        shy = sorted({n for lv in w.levels for n in lv.not_distinguishable})
        if shy:
            lines.append(f"{w.workload}: not distinguishable from the noise floor somewhere: {', '.join(shy)}")
    lines.append(_headline(static, criteria is not None, workloads))
    deploy = "; ".join(f"{w.workload}: {w.deployable}" for w in workloads if w.deployable) or None
    return Recommendation(workloads=workloads, static=static, meets_criteria=meets, deployable=deploy, lines=lines)
