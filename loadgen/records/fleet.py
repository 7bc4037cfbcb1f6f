"""The fleet card's data: :class:`FleetCard`, ``DIR/fleet.json`` (``loadgen.fleet/1``, docs/fleet/README.md,
"The fleet card"), with one :class:`TaskRow` per task, one :class:`NodeRow` per node, per compare pair a
:class:`ComparePair` (each node's :class:`CompareNode`; per cell a :class:`CompareCell` of the nodes'
:class:`CompareEntry`) and per sweep pair a :class:`SweepPair` (each node's :class:`SweepNode`; per cell a
:class:`SweepPairCell` of the nodes' :class:`SweepNodeEntry`).

Built by fleet/fleetdata.py (``build_fleet_card``) from the task list (records/fleettasks.py), the pair cards and
the sweep cards (records/sweep.py), written by fleet/fleetwrite.py, rendered by fleet/fleetmd.py, read back by
``loadgen fleet run`` for its summary. Ratios are speculative / plain as the pair cards hold them (docs/metrics.md,
"Ratios and their confidence intervals"); speedups plain / speculative of the sweep's primary metric. The small
parts (a node's hardware, a compare node's verdict, a ratio, a sweep node's workloads and entries, the flags of
fleet/fleetflags.py) are records/fleetparts.py's; a compare node's ``engine_version`` is the pair card's as read
(``{plain, speculative}``). Its JSON Schema is generated from the kinds below (:meth:`FleetCard.json_schema`,
committed as records/fleet.schema.json).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from loadgen.records.fleetparts import (
    RATIOS,
    CandidateSpeedup,
    Flag,
    FleetRatio,
    NodeHardware,
    NodeVerdict,
    WorkloadChoice,
)
from loadgen.records.nested import Part, part_kind
from loadgen.records.wire import ANY, BOOL, INT, NUM, STR, Kind, list_of, map_of, maybe

SCHEMA = "loadgen.fleet/1"
#: The fix a fleet.json that does not read gets.
FIX = "write it again with `loadgen fleet report DIR`"
_NUM, _STR, _INT, _BOOL = maybe(NUM), maybe(STR), maybe(INT), maybe(BOOL)
_RUN: dict[str, Kind] = {"node": STR, "gpu_type": _STR, "task": STR, "status": STR, "reason": _STR, "exit_code": _INT}


@dataclass(frozen=True)
class TaskRow(Part):
    """One task as the card shows it: ``status`` what the card concludes (a done task without its card is
    failed), ``runner_status`` what tasks.json says."""

    id: str
    pair: str
    kind: str
    node: str
    status: str
    address: str = ""
    gpu_type: str | None = None
    runner_status: str = ""
    reason: str | None = None
    exit_code: int | None = None
    run_dir: str | None = None
    log: str | None = None
    started: str | None = None
    finished: str | None = None
    wall_s: float | None = None
    KINDS: ClassVar[dict[str, Kind]] = {
        "id": STR,
        "pair": STR,
        "kind": STR,
        "node": STR,
        "address": STR,
        "gpu_type": _STR,
        "status": STR,
        "runner_status": STR,
        "reason": _STR,
        "exit_code": _INT,
        "run_dir": _STR,
        "log": _STR,
        "started": _STR,
        "finished": _STR,
        "wall_s": _NUM,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("id", "pair", "kind", "node", "status")
    TITLE: ClassVar[str] = "task row"


@dataclass(frozen=True)
class NodeRow(Part):
    """One node: its Ray facts, GPU type (and where it came from), hardware, engine versions and task counts."""

    name: str
    id: str = ""
    address: str = ""
    hostname: str | None = None
    gpu_type: str | None = None
    gpu_type_source: str | None = None
    resources: Mapping[str, float] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    hardware: NodeHardware | None = None
    engine_versions: list[str] = field(default_factory=list)
    tasks: Mapping[str, int] = field(default_factory=dict)
    KINDS: ClassVar[dict[str, Kind]] = {
        "name": STR,
        "id": STR,
        "address": STR,
        "hostname": _STR,
        "gpu_type": _STR,
        "gpu_type_source": _STR,
        "resources": map_of(NUM),
        "labels": map_of(STR),
        "hardware": maybe(part_kind(NodeHardware)),
        "engine_versions": list_of(STR),
        "tasks": map_of(INT),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("name",)
    NESTED: ClassVar[dict[str, type[Part]]] = {"hardware": NodeHardware}
    TITLE: ClassVar[str] = "node row"


@dataclass(frozen=True)
class CompareNode(Part):
    """One node's run of a compare pair: its task's outcome, the card's verdict and engine version."""

    node: str
    task: str
    status: str
    gpu_type: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    complete: bool | None = None
    failure: str | None = None
    verdict: NodeVerdict | None = None
    engine_version: Mapping[str, str | None] | str | None = None
    engine: str | None = None
    KINDS: ClassVar[dict[str, Kind]] = {
        **_RUN,
        "complete": _BOOL,
        "failure": _STR,
        "verdict": maybe(part_kind(NodeVerdict)),
        "engine_version": ANY,
        "engine": _STR,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("node", "task", "status")
    NESTED: ClassVar[dict[str, type[Part]]] = {"verdict": NodeVerdict}
    TITLE: ClassVar[str] = "compare node"


@dataclass(frozen=True)
class CompareEntry(Part):
    """One node's values at one cell: the ratios (None where not measured) and the acceptance."""

    node: str
    status: str
    gpu_type: str | None = None
    complete: bool = True
    ratios: Mapping[str, FleetRatio | None] = field(default_factory=dict)
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    KINDS: ClassVar[dict[str, Kind]] = {
        "node": STR,
        "gpu_type": _STR,
        "status": STR,
        "complete": BOOL,
        "ratios": RATIOS,
        "acceptance_rate": _NUM,
        "mean_acceptance_length": _NUM,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("node", "status")
    MAPPED: ClassVar[dict[str, type[Part]]] = {"ratios": FleetRatio}
    TITLE: ClassVar[str] = "compare entry"


_CELL: dict[str, Kind] = {"workload": STR, "level": STR, "concurrency": _INT, "rate_rps": _NUM}


@dataclass(frozen=True)
class CompareCell(Part):
    """One cell of a compare pair across the nodes."""

    workload: str
    level: str
    concurrency: int | None = None
    rate_rps: float | None = None
    nodes: list[CompareEntry] = field(default_factory=list)
    KINDS: ClassVar[dict[str, Kind]] = {**_CELL, "nodes": list_of(part_kind(CompareEntry))}
    REQUIRED: ClassVar[tuple[str, ...]] = ("workload", "level", "nodes")
    NESTED: ClassVar[dict[str, type[Part]]] = {"nodes": CompareEntry}
    TITLE: ClassVar[str] = "compare cell"


@dataclass(frozen=True)
class ComparePair(Part):
    """One compare pair across the nodes it ran on."""

    pair: str
    kind: str = "compare"
    nodes: list[CompareNode] = field(default_factory=list)
    cells: list[CompareCell] = field(default_factory=list)
    KINDS: ClassVar[dict[str, Kind]] = {
        "pair": STR,
        "kind": STR,
        "nodes": list_of(part_kind(CompareNode)),
        "cells": list_of(part_kind(CompareCell)),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("pair", "nodes", "cells")
    NESTED: ClassVar[dict[str, type[Part]]] = {"nodes": CompareNode, "cells": CompareCell}
    TITLE: ClassVar[str] = "compare pair"


@dataclass(frozen=True)
class SweepNode(Part):
    """One node's sweep: its task's outcome, engine and recommendation (per workload and printed lines)."""

    node: str
    task: str
    status: str
    gpu_type: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    measured: bool = False
    engine: str | None = None
    recommendation: str | None = None
    criteria_declared: bool = False
    meets_criteria: bool | None = None
    workloads: list[WorkloadChoice] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    KINDS: ClassVar[dict[str, Kind]] = {
        **_RUN,
        "measured": BOOL,
        "engine": _STR,
        "recommendation": _STR,
        "criteria_declared": BOOL,
        "meets_criteria": _BOOL,
        "workloads": list_of(part_kind(WorkloadChoice)),
        "lines": list_of(STR),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("node", "task", "status")
    NESTED: ClassVar[dict[str, type[Part]]] = {"workloads": WorkloadChoice}
    TITLE: ClassVar[str] = "sweep node"


@dataclass(frozen=True)
class SweepNodeEntry(Part):
    """One node's best candidate at one sweep cell (None: plain), its speedup and every candidate's."""

    node: str
    status: str
    gpu_type: str | None = None
    best: str | None = None
    tied: list[str] = field(default_factory=list)
    speedup: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    entries: list[CandidateSpeedup] = field(default_factory=list)
    KINDS: ClassVar[dict[str, Kind]] = {
        "node": STR,
        "gpu_type": _STR,
        "status": STR,
        "best": _STR,
        "tied": list_of(STR),
        "speedup": _NUM,
        "speedup_ci_low": _NUM,
        "speedup_ci_high": _NUM,
        "entries": list_of(part_kind(CandidateSpeedup)),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("node", "status")
    NESTED: ClassVar[dict[str, type[Part]]] = {"entries": CandidateSpeedup}
    TITLE: ClassVar[str] = "sweep node entry"


@dataclass(frozen=True)
class SweepPairCell(Part):
    """One cell of a sweep pair across the nodes."""

    workload: str
    level: str
    concurrency: int | None = None
    rate_rps: float | None = None
    nodes: list[SweepNodeEntry] = field(default_factory=list)
    KINDS: ClassVar[dict[str, Kind]] = {**_CELL, "nodes": list_of(part_kind(SweepNodeEntry))}
    REQUIRED: ClassVar[tuple[str, ...]] = ("workload", "level", "nodes")
    NESTED: ClassVar[dict[str, type[Part]]] = {"nodes": SweepNodeEntry}
    TITLE: ClassVar[str] = "sweep cell"


@dataclass(frozen=True)
class SweepPair(Part):
    """One sweep pair across the nodes it ran on."""

    pair: str
    kind: str = "sweep"
    primary_metric: str | None = None
    speedup_definition: str | None = None
    nodes: list[SweepNode] = field(default_factory=list)
    cells: list[SweepPairCell] = field(default_factory=list)
    KINDS: ClassVar[dict[str, Kind]] = {
        "pair": STR,
        "kind": STR,
        "primary_metric": _STR,
        "speedup_definition": _STR,
        "nodes": list_of(part_kind(SweepNode)),
        "cells": list_of(part_kind(SweepPairCell)),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("pair", "nodes", "cells")
    NESTED: ClassVar[dict[str, type[Part]]] = {"nodes": SweepNode, "cells": SweepPairCell}
    TITLE: ClassVar[str] = "sweep pair"


@dataclass(frozen=True)
class FleetCard(Part):
    """``fleet.json`` (module docstring); every key is written, None where not measured."""

    name: str
    counts: Mapping[str, int]
    tasks: list[TaskRow]
    nodes: list[NodeRow]
    pairs: list[ComparePair]
    sweeps: list[SweepPair]
    schema: str = SCHEMA
    ratio_definition: str = ""
    metrics: list[str] = field(default_factory=list)
    flag_rule: str = ""
    flags: list[Flag] = field(default_factory=list)
    FIX: ClassVar[str] = FIX
    KINDS: ClassVar[dict[str, Kind]] = {
        "schema": STR,
        "name": STR,
        "ratio_definition": STR,
        "metrics": list_of(STR),
        "flag_rule": STR,
        "counts": map_of(INT),
        "tasks": list_of(part_kind(TaskRow)),
        "nodes": list_of(part_kind(NodeRow)),
        "pairs": list_of(part_kind(ComparePair)),
        "sweeps": list_of(part_kind(SweepPair)),
        "flags": list_of(part_kind(Flag)),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("name", "counts", "tasks", "nodes", "pairs", "sweeps")
    NESTED: ClassVar[dict[str, type[Part]]] = {
        "tasks": TaskRow,
        "nodes": NodeRow,
        "pairs": ComparePair,
        "sweeps": SweepPair,
        "flags": Flag,
    }
    TITLE: ClassVar[str] = f"loadgen fleet.json ({SCHEMA})"

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """fleet.json's JSON Schema (draft 2020-12), generated from the fields' kinds."""
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **super().json_schema()}
