"""The sweep card's recommendation (records/sweep.py's ``SweepCard.recommendation``): :class:`Recommendation`,
per workload :class:`WorkloadChoice` with its per-batch-size :class:`KSchedule`, per level :class:`LevelChoice`.
Built by report/sweeprec.py (the rules: measure/ranking.py); its JSON Schema is part of records/sweep.schema.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from loadgen.records.nested import Part, part_kind
from loadgen.records.speculative import SpeculativeConfig
from loadgen.records.wire import BOOL, INT, NUM, OBJ, STR, Kind, list_of, map_of, maybe

_NUM, _STR, _INT, _OBJ = maybe(NUM), maybe(STR), maybe(INT), maybe(OBJ)


@dataclass(frozen=True)
class LevelChoice(Part):
    """The best paying candidate at one level (None: plain), its ties and speedup."""

    level: str
    concurrency: int | None = None
    best: str | None = None
    tied: list[str] = field(default_factory=list)
    speedup: float | None = None
    not_distinguishable: list[str] = field(default_factory=list)
    KINDS: ClassVar[dict[str, Kind]] = {
        "level": STR,
        "concurrency": _INT,
        "best": _STR,
        "tied": list_of(STR),
        "speedup": _NUM,
        "not_distinguishable": list_of(STR),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("level",)
    TITLE: ClassVar[str] = "level choice"


@dataclass(frozen=True)
class KSchedule(Part):
    """A workload's per-batch-size K schedule: whether the engine supports one, the ``--speculative-config``
    holding it (vLLM's own syntax; None without one) and the printed line."""

    line: str
    supported: bool = False
    config: Mapping[str, Any] | None = None
    KINDS: ClassVar[dict[str, Kind]] = {"supported": BOOL, "config": _OBJ, "line": STR}
    REQUIRED: ClassVar[tuple[str, ...]] = ("line",)
    TITLE: ClassVar[str] = "K schedule"

    @property
    def speculative(self) -> SpeculativeConfig:
        """:attr:`config` as a typed record (an empty one without a schedule)."""
        return SpeculativeConfig.from_json(dict(self.config or {}), source="sweep.json schedule.config")


@dataclass(frozen=True)
class WorkloadChoice(Part):
    """One workload's recommendation: the level above which none pays, the static choice, the K schedule
    (``supported``, ``config``, ``line``), each level's choice, the one server configuration to deploy
    (``deployable``: its line; None when nothing pays), the measured wins it gives up elsewhere, and the
    candidate it runs at each level (``deployed``, level -> name; a level it leaves to plain is absent)."""

    workload: str
    off_above_concurrency: int | None = None
    off_sentence: str = ""
    static: str | None = None
    static_speedup: float | None = None
    schedule: KSchedule | None = None
    why_no_static: str | None = None
    levels: list[LevelChoice] = field(default_factory=list)
    deployable: str | None = None
    gives_up: list[str] = field(default_factory=list)
    deployed: Mapping[str, str] = field(default_factory=dict)
    KINDS: ClassVar[dict[str, Kind]] = {
        "workload": STR,
        "off_above_concurrency": _INT,
        "off_sentence": STR,
        "static": _STR,
        "static_speedup": _NUM,
        "schedule": maybe(part_kind(KSchedule)),
        "why_no_static": _STR,
        "levels": list_of(part_kind(LevelChoice)),
        "deployable": _STR,
        "gives_up": list_of(STR),
        "deployed": map_of(STR),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("workload",)
    NESTED: ClassVar[dict[str, type[Part]]] = {"levels": LevelChoice, "schedule": KSchedule}
    TITLE: ClassVar[str] = "workload choice"


@dataclass(frozen=True)
class Recommendation(Part):
    """The sweep's recommendation: per workload, the overall static candidate (None: no single
    configuration), whether it meets the declared criteria at every judged cell (the sweep's exit 0), the one
    configuration to deploy over every workload (its line), and the printed lines."""

    lines: list[str]
    workloads: list[WorkloadChoice] = field(default_factory=list)
    static: str | None = None
    meets_criteria: bool = True
    deployable: str | None = None
    KINDS: ClassVar[dict[str, Kind]] = {
        "workloads": list_of(part_kind(WorkloadChoice)),
        "static": _STR,
        "meets_criteria": BOOL,
        "deployable": _STR,
        "lines": list_of(STR),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("lines",)
    NESTED: ClassVar[dict[str, type[Part]]] = {"workloads": WorkloadChoice}
    TITLE: ClassVar[str] = "recommendation"
