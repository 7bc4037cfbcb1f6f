"""The small parts of the fleet card (``fleet.json``, records/fleet.py): a cell's :class:`FleetRatio`, a node's
:class:`NodeHardware` with its :class:`NodeGpu`, a compare node's :class:`NodeVerdict`, a sweep node's
:class:`WorkloadChoice`, a sweep cell's :class:`CandidateSpeedup` and a disagreement :class:`Flag` with its two
:class:`FlagSide` (docs/fleet/README.md, "The fleet card" and "Disagreement flags").

Each is a frozen :class:`~loadgen.records.nested.Part`: built by fleet/fleetdata.py and fleet/fleetflags.py,
read by fleet/fleetmd.py by attribute, checked when a fleet.json is read back. ``KINDS`` is in the order the
fleet card writes the keys, so a card built anew and one read back write the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from loadgen.records.nested import Part, part_kind
from loadgen.records.wire import ANY, BOOL, INT, NUM, STR, Kind, list_of, map_of, maybe

_NUM, _STR, _INT, _BOOL = maybe(NUM), maybe(STR), maybe(INT), maybe(BOOL)


@dataclass(frozen=True)
class FleetRatio(Part):
    """A ratio speculative / plain as a pair card holds it (measure/ratios.py): ``value``, its 95% CI
    (``ci_low``, ``ci_high``, both or neither) and the prompt ``pairs`` it was bootstrapped over."""

    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    pairs: int | None = None
    KINDS: ClassVar[dict[str, Kind]] = {"value": NUM, "ci_low": _NUM, "ci_high": _NUM, "pairs": _INT}
    REQUIRED: ClassVar[tuple[str, ...]] = ("value",)
    TITLE: ClassVar[str] = "ratio"


@dataclass(frozen=True)
class NodeGpu(Part):
    """One GPU of a node's hardware: its index (as the card has it), name and memory in bytes."""

    name: str
    index: Any = None
    memory_bytes: float | None = None
    KINDS: ClassVar[dict[str, Kind]] = {"index": ANY, "name": STR, "memory_bytes": _NUM}
    REQUIRED: ClassVar[tuple[str, ...]] = ("name",)
    TITLE: ClassVar[str] = "GPU"


@dataclass(frozen=True)
class NodeHardware(Part):
    """A node's hardware as its first card recorded it (report/card.schema.json ``hardware``): CPU model and
    cores, memory in bytes, the GPUs."""

    cpu_model: str | None = None
    cpu_cores: int | None = None
    memory_bytes: float | None = None
    gpus: list[NodeGpu] = field(default_factory=list)
    KINDS: ClassVar[dict[str, Kind]] = {
        "cpu_model": _STR,
        "cpu_cores": _INT,
        "memory_bytes": _NUM,
        "gpus": list_of(part_kind(NodeGpu)),
    }
    NESTED: ClassVar[dict[str, type[Part]]] = {"gpus": NodeGpu}
    TITLE: ClassVar[str] = "hardware"


@dataclass(frozen=True)
class NodeVerdict(Part):
    """A pair card's verdict as the fleet card shows it: criteria declared, passed (None: not judged), summary."""

    declared: bool | None = None
    passed: bool | None = None
    summary: str | None = None
    KINDS: ClassVar[dict[str, Kind]] = {"declared": _BOOL, "passed": _BOOL, "summary": _STR}
    TITLE: ClassVar[str] = "verdict"


@dataclass(frozen=True)
class WorkloadChoice(Part):
    """A sweep's recommendation for one workload: the static candidate (None: plain), its speedup, and the
    concurrency above which speculation is off (records/sweep.py)."""

    workload: str
    static: str | None = None
    static_speedup: float | None = None
    off_above_concurrency: int | None = None
    KINDS: ClassVar[dict[str, Kind]] = {
        "workload": STR,
        "static": _STR,
        "static_speedup": _NUM,
        "off_above_concurrency": _INT,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("workload",)
    TITLE: ClassVar[str] = "workload recommendation"


@dataclass(frozen=True)
class CandidateSpeedup(Part):
    """One candidate at one sweep cell: speedup plain / speculative of the primary metric with its 95% CI
    (both or neither), and the acceptance figures."""

    candidate: str
    speedup: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    KINDS: ClassVar[dict[str, Kind]] = {
        "candidate": STR,
        "speedup": _NUM,
        "speedup_ci_low": _NUM,
        "speedup_ci_high": _NUM,
        "acceptance_rate": _NUM,
        "mean_acceptance_length": _NUM,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("candidate",)
    TITLE: ClassVar[str] = "candidate speedup"


@dataclass(frozen=True)
class FlagSide(Part):
    """One node of a flag: its value and 95% CI (None for a recommendation flag) and its candidate (a sweep's)."""

    node: str
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    candidate: str | None = None
    KINDS: ClassVar[dict[str, Kind]] = {"node": STR, "value": _NUM, "ci_low": _NUM, "ci_high": _NUM, "candidate": _STR}
    REQUIRED: ClassVar[tuple[str, ...]] = ("node",)
    TITLE: ClassVar[str] = "flag side"


@dataclass(frozen=True)
class Flag(Part):
    """Two nodes of one GPU type that disagree (fleet/fleetflags.py): ``kind`` ratio, speedup or
    recommendation; ``workload`` and ``level`` None for a recommendation; ``line`` the sentence shown."""

    kind: str
    pair: str
    gpu_type: str
    metric: str
    nodes: list[FlagSide]
    line: str
    workload: str | None = None
    level: str | None = None
    KINDS: ClassVar[dict[str, Kind]] = {
        "kind": STR,
        "pair": STR,
        "gpu_type": STR,
        "workload": _STR,
        "level": _STR,
        "metric": STR,
        "nodes": list_of(part_kind(FlagSide)),
        "line": STR,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("kind", "pair", "gpu_type", "metric", "nodes", "line")
    NESTED: ClassVar[dict[str, type[Part]]] = {"nodes": FlagSide}
    TITLE: ClassVar[str] = "disagreement flag"


#: A cell's ratios by metric, each a :class:`FleetRatio` or null (not measured).
RATIOS = replace(map_of(maybe(part_kind(FleetRatio))), name="an object of ratios (each an object or null)")
