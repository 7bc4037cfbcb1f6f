"""The fleet card's data: :class:`FleetCard`, ``DIR/fleet.json`` (``loadgen.fleet/1``, docs/fleet/README.md,
"The fleet card"), with one :class:`TaskRow` per task, one :class:`NodeRow` per node, per compare pair a
:class:`ComparePair` (each node's :class:`CompareNode`; per cell a :class:`CompareCell` of the nodes'
:class:`CompareEntry`) and per sweep pair a :class:`SweepPair` (each node's :class:`SweepNode`; per cell a
:class:`SweepPairCell` of the nodes' :class:`SweepNodeEntry`; both cells one record bound to their entry).

Built by fleet/fleetdata.py (``build_fleet_card``) from the task list (records/fleettasks.py), the pair cards and
the sweep cards (records/sweep.py), written by fleet/fleetwrite.py, rendered by fleet/fleetmd.py, read back by
``loadgen fleet run`` for its summary. Ratios are speculative / plain as the pair cards hold them (docs/metrics.md,
"Ratios and their confidence intervals"); speedups plain / speculative of the sweep's primary metric. The small
parts (a node's hardware, a compare node's verdict, a ratio, a sweep node's workloads and entries, the flags of
fleet/fleetflags.py) are records/fleetparts.py's; a compare node's ``engine_version`` is the pair card's as read
(``{plain, speculative}``). Its JSON Schema is generated from the fields' type hints (:meth:`FleetCard.json_schema`,
committed as records/fleet.schema.json).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from loadgen.records.cardwire import IN_FILE, Whole
from loadgen.records.fleetparts import (
    RATIOS,
    CandidateSpeedup,
    Flag,
    FleetRatio,
    NodeHardware,
    NodeVerdict,
    WorkloadChoice,
)

SCHEMA = "loadgen.fleet/1"
#: The fix a fleet.json that does not read gets.
FIX = "write it again with `loadgen fleet report DIR`"


@dataclass(frozen=True)
class TaskRow(Whole):
    """One task as the card shows it: ``status`` what the card concludes (a done task without its card is
    failed), ``runner_status`` what tasks.json says."""

    id: str
    pair: str
    kind: str
    node: str
    address: str = field(default="", kw_only=True)
    gpu_type: str | None = field(default=None, kw_only=True)
    status: str
    runner_status: str = ""
    reason: str | None = None
    exit_code: int | None = None
    run_dir: str | None = None
    log: str | None = None
    started: str | None = None
    finished: str | None = None
    wall_s: float | None = None
    TITLE: ClassVar[str] = "task row"


@dataclass(frozen=True)
class NodeRow(Whole):
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
    TITLE: ClassVar[str] = "node row"


@dataclass(frozen=True)
class _OnNode(Whole):
    """The head of what a pair holds per node: the node and its GPU type (None where unknown)."""

    node: str
    gpu_type: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class _NodeRun(_OnNode):
    """The head of a pair's node: the node, its GPU type, the task and its outcome."""

    task: str
    status: str
    reason: str | None = None
    exit_code: int | None = None


@dataclass(frozen=True)
class CompareNode(_NodeRun):
    """One node's run of a compare pair: its task's outcome, the card's verdict and engine version."""

    complete: bool | None = None
    failure: str | None = None
    verdict: NodeVerdict | None = None
    engine_version: Mapping[str, str | None] | str | None = None
    engine: str | None = None
    TITLE: ClassVar[str] = "compare node"


@dataclass(frozen=True)
class SweepNode(_NodeRun):
    """One node's sweep: its task's outcome, engine and recommendation (per workload and printed lines)."""

    measured: bool = False
    engine: str | None = None
    recommendation: str | None = None
    criteria_declared: bool = False
    meets_criteria: bool | None = None
    workloads: list[WorkloadChoice] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    TITLE: ClassVar[str] = "sweep node"


@dataclass(frozen=True)
class _Entry(_OnNode):
    """The head of a node's entry at a cell: the node, its GPU type and its task's status."""

    status: str


@dataclass(frozen=True)
class CompareEntry(_Entry):
    """One node's values at one cell: the ratios (None where not measured) and the acceptance."""

    complete: bool = True
    ratios: Mapping[str, FleetRatio | None] = field(default_factory=dict, metadata={"kind": RATIOS})
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    TITLE: ClassVar[str] = "compare entry"


@dataclass(frozen=True)
class SweepNodeEntry(_Entry):
    """One node's best candidate at one sweep cell (None: plain), its speedup and every candidate's."""

    best: str | None = None
    tied: list[str] = field(default_factory=list)
    speedup: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    entries: list[CandidateSpeedup] = field(default_factory=list)
    TITLE: ClassVar[str] = "sweep node entry"


#: A node's entry at a cell: a :class:`CompareEntry` or a :class:`SweepNodeEntry`.
_E = TypeVar("_E", bound=_Entry)


@dataclass(frozen=True)
class _PairCell(Whole, Generic[_E]):
    """One cell of a pair across the nodes: its workload and level (concurrency or rate, None for the other),
    each node's entry ``_E``. A pair's kind binds ``_E`` and names the cell (:class:`CompareCell`,
    :class:`SweepPairCell`)."""

    workload: str
    level: str
    concurrency: int | None = None
    rate_rps: float | None = None
    nodes: list[_E] = field(default_factory=list, metadata=IN_FILE)


class CompareCell(_PairCell[CompareEntry]):
    """One cell of a compare pair across the nodes."""

    TITLE: ClassVar[str] = "compare cell"


class SweepPairCell(_PairCell[SweepNodeEntry]):
    """One cell of a sweep pair across the nodes."""

    TITLE: ClassVar[str] = "sweep cell"


@dataclass(frozen=True)
class ComparePair(Whole):
    """One compare pair across the nodes it ran on."""

    pair: str
    kind: str = "compare"
    nodes: list[CompareNode] = field(default_factory=list, metadata=IN_FILE)
    cells: list[CompareCell] = field(default_factory=list, metadata=IN_FILE)
    TITLE: ClassVar[str] = "compare pair"


@dataclass(frozen=True)
class SweepPair(Whole):
    """One sweep pair across the nodes it ran on."""

    pair: str
    kind: str = "sweep"
    primary_metric: str | None = None
    speedup_definition: str | None = None
    nodes: list[SweepNode] = field(default_factory=list, metadata=IN_FILE)
    cells: list[SweepPairCell] = field(default_factory=list, metadata=IN_FILE)
    TITLE: ClassVar[str] = "sweep pair"


@dataclass(frozen=True)
class FleetCard(Whole):
    """``fleet.json`` (module docstring); every key is written, None where not measured."""

    schema: str = field(default=SCHEMA, kw_only=True)
    name: str
    ratio_definition: str = field(default="", kw_only=True)
    metrics: list[str] = field(default_factory=list, kw_only=True)
    flag_rule: str = field(default="", kw_only=True)
    counts: Mapping[str, int]
    tasks: list[TaskRow]
    nodes: list[NodeRow]
    pairs: list[ComparePair]
    sweeps: list[SweepPair]
    flags: list[Flag] = field(default_factory=list)
    FIX: ClassVar[str] = FIX
    TITLE: ClassVar[str] = f"loadgen fleet.json ({SCHEMA})"

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """fleet.json's JSON Schema (draft 2020-12), generated from the fields' kinds."""
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **super().json_schema()}
