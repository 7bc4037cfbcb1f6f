"""The sweep card's recommendation (records/sweep.py's ``SweepCard.recommendation``): :class:`Recommendation`,
per workload :class:`WorkloadChoice` with its per-batch-size :class:`KSchedule`, per level :class:`LevelChoice`.
Built by report/sweeprec.py (the rules: measure/ranking.py); its JSON Schema is part of records/sweep.schema.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from loadgen.records.cardwire import Whole
from loadgen.records.speculative import SpeculativeConfig


@dataclass(frozen=True)
class LevelChoice(Whole):
    """The best paying candidate at one level (None: plain), its ties and speedup; the candidates whose cell there
    is still ``undecided`` (measure/decision.py inconclusive: more blocks owed) and those ``unmeasured`` there (a
    sweep that stopped before the level), so that "plain" is said only where every candidate was decided."""

    level: str
    concurrency: int | None = None
    best: str | None = None
    tied: list[str] = field(default_factory=list)
    speedup: float | None = None
    not_distinguishable: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)
    TITLE: ClassVar[str] = "level choice"


@dataclass(frozen=True)
class KSchedule(Whole):
    """A workload's per-batch-size K schedule: whether the engine supports one, the ``--speculative-config``
    holding it (vLLM's own syntax; None without one) and the printed line."""

    supported: bool = field(default=False, kw_only=True)
    config: Mapping[str, Any] | None = field(default=None, kw_only=True)
    line: str
    TITLE: ClassVar[str] = "K schedule"

    @property
    def speculative(self) -> SpeculativeConfig:
        """:attr:`config` as a typed record (an empty one without a schedule)."""
        return SpeculativeConfig.from_json(dict(self.config or {}), source="sweep.json schedule.config")


@dataclass(frozen=True)
class WorkloadChoice(Whole):
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
    TITLE: ClassVar[str] = "workload choice"


@dataclass(frozen=True)
class Recommendation(Whole):
    """The sweep's recommendation: per workload, the overall static candidate (None: no single
    configuration), whether it meets the declared criteria at every judged cell (the sweep's exit 0), the one
    configuration to deploy over every workload (its line), and the printed lines."""

    workloads: list[WorkloadChoice] = field(default_factory=list, kw_only=True)
    static: str | None = field(default=None, kw_only=True)
    meets_criteria: bool = field(default=True, kw_only=True)
    deployable: str | None = field(default=None, kw_only=True)
    lines: list[str]
    TITLE: ClassVar[str] = "recommendation"
