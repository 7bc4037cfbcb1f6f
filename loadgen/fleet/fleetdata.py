"""The fleet card's data (``fleet.json``, schema ``loadgen.fleet/1``), purely: no I/O, no clock, so the
same fleet folder always gives the same card (docs/fleet/README.md, "The fleet card").

Inputs: the task list (``tasks.json``, records/fleettasks.py ``TaskList``), each compare task's pair card
(``card.json``, records/card.py ``PairCard``, checked when read) and each sweep task's sweep card (``sweep.json``,
records/sweep.py ``SweepCard``, checked when read) with its ``plain-before`` pair card (for the node's hardware and
engine version), by task id; None where the file is missing or unreadable, with the reason in ``unreadable``. A
task that finished (``done``) without its card is shown as failed with that reason. The card is returned as
records/fleet.py ``FleetCard`` (its small parts: records/fleetparts.py).

Shape (every key always present; None where not measured)::

    schema, name, ratio_definition, metrics, flag_rule,
    counts: {tasks, done, failed, pending},
    tasks: [{id, pair, kind, node, address, gpu_type, status, runner_status, reason, exit_code, run_dir,
             log, started, finished, wall_s}],
    nodes: [{name, id, address, hostname, gpu_type, gpu_type_source, resources, labels, hardware,
             engine_versions, tasks: {done, failed, pending}}],
    pairs: [{pair, kind: "compare", nodes: [{node, gpu_type, task, status, reason, exit_code, complete,
             failure, verdict: {declared, passed, summary} | None, engine_version, engine}],
             cells: [{workload, level, concurrency, rate_rps, nodes: [{node, gpu_type, status, complete,
             ratios: {metric: {value, ci_low, ci_high, pairs} | None}, acceptance_rate,
             mean_acceptance_length}]}]}],
    sweeps: [{pair, kind: "sweep", primary_metric, speedup_definition, nodes: [{node, gpu_type, task,
             status, reason, exit_code, measured, engine, recommendation, criteria_declared, meets_criteria, workloads:
             [{workload, static, static_speedup, off_above_concurrency}], lines}], cells: [{workload,
             level, concurrency, rate_rps, nodes: [{node, gpu_type, status, best, tied, speedup,
             speedup_ci_low, speedup_ci_high, entries: [{candidate, speedup, speedup_ci_low, speedup_ci_high,
             acceptance_rate, mean_acceptance_length}]}]}]}],
    flags: [fleet/fleetflags.py]

A pair card's ``hardware`` is its records/usage.py ``Hardware``, checked when the card was read (a card whose
hardware does not read is no card: its task is named failed, as a card of the wrong shape).

Ratios are copied from the cards unchanged: speculative / plain (docs/metrics.md, "Ratios and their
confidence intervals"); speedups from the sweep cards: plain / speculative of the primary metric.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from loadgen.fleet.fleetflags import FLAG_RULE, ratio_flags, sweep_flags
from loadgen.fleet.gputype import gpu_type_of
from loadgen.profile.cells import CellKey
from loadgen.records.card import EngineVersion, PairCard
from loadgen.records.cardcell import CardCell, Ratio
from loadgen.records.fleet import (
    CompareCell,
    CompareEntry,
    CompareNode,
    ComparePair,
    FleetCard,
    NodeRow,
    SweepNode,
    SweepNodeEntry,
    SweepPair,
    SweepPairCell,
    TaskRow,
)
from loadgen.records.fleetparts import CandidateSpeedup, FleetRatio, NodeGpu, NodeHardware, NodeVerdict, WorkloadChoice
from loadgen.records.fleettasks import STATUSES, FleetNode, Task, TaskList
from loadgen.records.sweep import LevelChoice, SweepCard, SweepCell, SweepEntry
from loadgen.records.usage import Hardware

#: The ratios the fleet card carries per cell (TTFT p95 beside p50 and p99).
RATIO_METRICS = ("tpot_p50", "ttft_p50", "e2e_p50", "ttft_p95", "ttft_p99")
RATIO_DEFINITION = (
    "speculative / plain of each metric (docs/metrics.md); a latency ratio below 1 means the "
    "speculative server is faster; 95% CI from the paired bootstrap over prompts"
)


def _num(x: object) -> float | None:
    """A finite number, else None (a card written by hand or cut short may hold anything)."""
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None


def _ratio(r: Ratio | None) -> FleetRatio | None:
    """A card's ratio as the fleet card holds it: None without a finite value; its CI only when both ends are."""
    value = None if r is None else _num(r.value)
    if r is None or value is None:
        return None
    low, high = _num(r.ci_low), _num(r.ci_high)
    both = low is not None and high is not None
    return FleetRatio(value, low if both else None, high if both else None, r.pairs)


def _hardware(hw: Hardware | None) -> NodeHardware | None:
    """A card's ``hardware`` (records/usage.py ``Hardware``, checked when the card was read) with the keys the
    fleet card shows; None when the card has none."""
    if hw is None:
        return None
    gpus = [NodeGpu(g.name, _num(g.memory_bytes), index=g.index) for g in hw.gpus]
    return NodeHardware(hw.cpu_model, hw.cpu_cores, _num(hw.memory_bytes), gpus)


def _engine(version: EngineVersion | None) -> str | None:
    """A pair card's engine version ``{plain, speculative}`` as one string (one value when equal)."""
    if version is None or version.plain == version.speculative:
        return None if version is None else version.plain
    return f"plain {version.plain or 'unknown'} / speculative {version.speculative or 'unknown'}"


def _task_row(
    t: Task, gpu_type: str | None, doc: PairCard | SweepCard | None, unreadable: Mapping[str, str]
) -> TaskRow:
    status, reason = t.status, t.reason
    if status == "done" and doc is None:
        name = "card.json" if t.kind == "compare" else "sweep.json"
        status = "failed"
        reason = unreadable.get(t.id) or (
            f"finished (exit {t.exit_code}) but no {name} came back in "
            f"{t.run_dir or 'runs/' + t.id}; see {t.log or 'its log'}"
        )
    return TaskRow(
        t.id,
        t.pair,
        t.kind,
        t.node.name,
        status,
        t.status,
        reason,
        t.exit_code,
        t.run_dir,
        t.log,
        t.started,
        t.finished,
        t.wall_s,
        address=t.node.address,
        gpu_type=gpu_type,
    )


@dataclass
class _Node:
    """What the tasks of one node say about it, gathered before its row is made."""

    node: FleetNode
    hardware: NodeHardware | None = None
    versions: set[str] = field(default_factory=set)
    gpu_type: tuple[str | None, str | None] = (None, None)

    def row(self, tasks: Mapping[str, int]) -> NodeRow:
        n = self.node
        return NodeRow(
            n.name,
            n.id,
            n.address,
            n.hostname,
            *self.gpu_type,
            dict(n.resources),
            dict(n.labels),
            self.hardware,
            sorted(self.versions),
            tasks,
        )


def _nodes(
    tasks: Sequence[Task], cards: Mapping[str, PairCard | None], sweeps: Mapping[str, SweepCard | None]
) -> dict[str, _Node]:
    """Per node name (sorted): the node's facts, its hardware (the first card that has it) and engine versions."""
    out: dict[str, _Node] = {}
    for t in sorted(tasks, key=lambda t: t.node.name):
        node = out.setdefault(t.node.name, _Node(t.node))
        card, sweep = cards.get(t.id), sweeps.get(t.id)
        if node.hardware is None and card is not None:
            node.hardware = _hardware(card.hardware)
        found = [card.engine_version.plain, card.engine_version.speculative] if card else []
        node.versions.update(v for v in [*found, sweep.engine_version if sweep else None] if isinstance(v, str))
    for t in tasks:
        node = out[t.node.name]
        if node.gpu_type[0] is None:
            node.gpu_type = gpu_type_of(t.node, node.hardware)
    return out


def _compare_node(row: TaskRow, card: PairCard | None) -> CompareNode:
    v = card.verdict if card else None
    return CompareNode(
        row.node,
        row.id,
        row.status,
        row.reason,
        row.exit_code,
        card.complete if card else None,
        card.failure if card else None,
        NodeVerdict(v.declared, v.passed, v.summary) if v else None,
        card.engine_version.to_json() if card else None,
        _engine(card.engine_version if card else None),
        gpu_type=row.gpu_type,
    )


def _compare_entry(row: TaskRow, cell: CardCell) -> CompareEntry:
    acc = cell.speculative.acceptance if cell.speculative else None
    return CompareEntry(
        row.node,
        row.status,
        cell.complete is not False,
        {m: _ratio(cell.ratios.get(m)) for m in RATIO_METRICS},
        _num(acc.acceptance_rate) if acc else None,
        _num(acc.mean_acceptance_length) if acc else None,
        gpu_type=row.gpu_type,
    )


def _compare_pair(pair: str, rows: Sequence[TaskRow], cards: Mapping[str, PairCard | None]) -> ComparePair:
    cells: dict[CellKey, CompareCell] = {}
    for row in rows:
        card = cards.get(row.id)
        for cell in card.cells if card else ():
            key = CellKey.named(cell.workload, cell.level, cell.concurrency)
            head = cells.setdefault(key, CompareCell(cell.workload, key.label, cell.concurrency, cell.rate_rps))
            head.nodes.append(_compare_entry(row, cell))
    return ComparePair(pair, "compare", [_compare_node(r, cards.get(r.id)) for r in rows], list(cells.values()))


def _f(x: float | None) -> float | None:
    """A sweep card's number as the fleet card writes it (a float)."""
    return None if x is None else float(x)


def _sweep_node(row: TaskRow, sweep: SweepCard | None) -> SweepNode:
    rec = sweep.recommendation if sweep else None
    workloads = [
        WorkloadChoice(w.workload, w.static, _f(w.static_speedup), w.off_above_concurrency)
        for w in (rec.workloads if rec else [])
    ]
    return SweepNode(
        row.node,
        row.id,
        row.status,
        row.reason,
        row.exit_code,
        sweep is not None,
        sweep.engine_version if sweep else None,
        rec.static if rec else None,
        sweep is not None and sweep.criteria_declared,
        rec.meets_criteria if rec else None,
        workloads,
        list(rec.lines) if rec else [],
        gpu_type=row.gpu_type,
    )


def _speedup(e: SweepEntry) -> CandidateSpeedup:
    both = e.speedup_ci_low is not None and e.speedup_ci_high is not None
    return CandidateSpeedup(
        e.candidate,
        _f(e.speedup),
        _f(e.speedup_ci_low) if both else None,
        _f(e.speedup_ci_high) if both else None,
        _f(e.acceptance_rate),
        _f(e.mean_acceptance_length),
    )


def _sweep_entry(row: TaskRow, cell: SweepCell, level: LevelChoice | None) -> SweepNodeEntry:
    entries = [_speedup(e) for e in cell.entries]
    best = level.best if level else None
    chosen = next((e for e in entries if best is not None and e.candidate == best), None)
    return SweepNodeEntry(
        row.node,
        row.status,
        best,
        list(level.tied) if level else [],
        chosen.speedup if chosen else None,
        chosen.speedup_ci_low if chosen else None,
        chosen.speedup_ci_high if chosen else None,
        entries,
        gpu_type=row.gpu_type,
    )


def _sweep_pair(pair: str, rows: Sequence[TaskRow], sweeps: Mapping[str, SweepCard | None]) -> SweepPair:
    cells: dict[CellKey, SweepPairCell] = {}
    metric, definition = None, None
    for row in rows:
        s = sweeps.get(row.id)
        if s is None:
            continue
        metric, definition = metric or s.primary_metric, definition or s.speedup_definition or None
        levels = {(w.workload, lv.level): lv for w in s.recommendation.workloads for lv in w.levels}
        for cell in s.cells:
            key = CellKey.named(cell.workload, cell.level, cell.concurrency)
            head = cells.setdefault(key, SweepPairCell(cell.workload, key.label, cell.concurrency, cell.rate_rps))
            head.nodes.append(_sweep_entry(row, cell, levels.get(key)))
    return SweepPair(
        pair, "sweep", metric, definition, [_sweep_node(r, sweeps.get(r.id)) for r in rows], list(cells.values())
    )


def build_fleet_card(
    fleet: TaskList,
    cards: Mapping[str, PairCard | None],
    sweeps: Mapping[str, SweepCard | None],
    unreadable: Mapping[str, str] | None = None,
) -> FleetCard:
    """The fleet card of a task list (records/fleettasks.py) and its cards by task id (shape: the module
    docstring)."""
    nodes = _nodes(fleet.tasks, cards, sweeps)
    docs = {t.id: cards.get(t.id) if t.kind == "compare" else sweeps.get(t.id) for t in fleet.tasks}
    rows = [_task_row(t, nodes[t.node.name].gpu_type[0], docs[t.id], unreadable or {}) for t in fleet.tasks]
    by_pair: dict[tuple[str, str], list[TaskRow]] = {}
    for row in rows:
        by_pair.setdefault((row.kind, row.pair), []).append(row)
    pairs = [
        _compare_pair(p, sorted(rs, key=lambda r: r.node), cards)
        for (kind, p), rs in by_pair.items()
        if kind == "compare"
    ]
    sweep_pairs = [
        _sweep_pair(p, sorted(rs, key=lambda r: r.node), sweeps) for (kind, p), rs in by_pair.items() if kind == "sweep"
    ]
    counts = {"tasks": len(rows), **{s: sum(r.status == s for r in rows) for s in STATUSES}}
    node_rows = [
        n.row({s: sum(r.node == name and r.status == s for r in rows) for s in STATUSES}) for name, n in nodes.items()
    ]
    return FleetCard(
        fleet.name,
        counts,
        rows,
        node_rows,
        pairs,
        sweep_pairs,
        ratio_definition=RATIO_DEFINITION,
        metrics=list(RATIO_METRICS),
        flag_rule=FLAG_RULE,
        flags=ratio_flags(pairs, RATIO_METRICS) + sweep_flags(sweep_pairs),
    )
