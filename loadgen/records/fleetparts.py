"""The small parts of the fleet card (``fleet.json``, records/fleet.py): a cell's :class:`FleetRatio`, a node's
:class:`NodeHardware` with its :class:`NodeGpu`, a compare node's :class:`NodeVerdict`, a sweep node's
:class:`WorkloadChoice`, a sweep cell's :class:`CandidateSpeedup` and a disagreement :class:`Flag` with its two
:class:`FlagSide` (docs/fleet/README.md, "The fleet card" and "Disagreement flags").

Each is a frozen :class:`~loadgen.records.cardwire.Whole` record: built by fleet/fleetdata.py and
fleet/fleetflags.py, read by fleet/fleetmd.py by attribute, checked when a fleet.json is read back. Fields are
declared in the order the fleet card writes the keys, so a card built anew and one read back write the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from loadgen.records.cardwire import Whole
from loadgen.records.hints import kind_of


@dataclass(frozen=True)
class FleetRatio(Whole):
    """A ratio speculative / plain as a pair card holds it (measure/ratios.py): ``value``, its 95% CI
    (``ci_low``, ``ci_high``, both or neither) and the prompt ``pairs`` it was bootstrapped over."""

    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    pairs: int | None = None
    TITLE: ClassVar[str] = "ratio"


@dataclass(frozen=True)
class NodeGpu(Whole):
    """One GPU of a node's hardware: its index (as the card has it), name and memory in bytes."""

    index: Any = field(default=None, kw_only=True)
    name: str
    memory_bytes: float | None = None
    TITLE: ClassVar[str] = "GPU"


@dataclass(frozen=True)
class NodeHardware(Whole):
    """A node's hardware as its first card recorded it (report/card.schema.json ``hardware``): CPU model and
    cores, memory in bytes, the GPUs."""

    cpu_model: str | None = None
    cpu_cores: int | None = None
    memory_bytes: float | None = None
    gpus: list[NodeGpu] = field(default_factory=list)
    TITLE: ClassVar[str] = "hardware"


@dataclass(frozen=True)
class NodeVerdict(Whole):
    """A pair card's verdict as the fleet card shows it: criteria declared, passed (None: not judged), summary."""

    declared: bool | None = None
    passed: bool | None = None
    summary: str | None = None
    TITLE: ClassVar[str] = "verdict"


@dataclass(frozen=True)
class WorkloadChoice(Whole):
    """A sweep's recommendation for one workload: the static candidate (None: plain), its speedup, and the
    concurrency above which speculation is off (records/sweep.py)."""

    workload: str
    static: str | None = None
    static_speedup: float | None = None
    off_above_concurrency: int | None = None
    TITLE: ClassVar[str] = "workload recommendation"


@dataclass(frozen=True)
class CandidateSpeedup(Whole):
    """One candidate at one sweep cell: speedup plain / speculative of the primary metric with its 95% CI
    (both or neither), and the acceptance figures."""

    candidate: str
    speedup: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    TITLE: ClassVar[str] = "candidate speedup"


@dataclass(frozen=True)
class FlagSide(Whole):
    """One node of a flag: its value and 95% CI (None for a recommendation flag) and its candidate (a sweep's)."""

    node: str
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    candidate: str | None = None
    TITLE: ClassVar[str] = "flag side"


@dataclass(frozen=True)
class Flag(Whole):
    """Two nodes of one GPU type that disagree (fleet/fleetflags.py): ``kind`` ratio, speedup or
    recommendation; ``workload`` and ``level`` None for a recommendation; ``line`` the sentence shown."""

    kind: str
    pair: str
    gpu_type: str
    workload: str | None = field(default=None, kw_only=True)
    level: str | None = field(default=None, kw_only=True)
    metric: str
    nodes: list[FlagSide]
    line: str
    TITLE: ClassVar[str] = "disagreement flag"


#: A cell's ratios by metric, each a :class:`FleetRatio` or null (not measured).
RATIOS = replace(kind_of(Mapping[str, FleetRatio | None]), name="an object of ratios (each an object or null)")
