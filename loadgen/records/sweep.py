"""The sweep card's data: :class:`SweepCard`, ``sweep.json`` (``loadgen.sweep/2``), with its candidates
(:class:`SweepCandidate`), cells (:class:`SweepCell`, each candidate's :class:`SweepEntry` in it, an older
sweep's plain :class:`Drift`), design (:class:`SweepDesign`), A/A noise floor (:class:`NoiseFloor`) and
recommendation (:class:`Recommendation`, per workload :class:`WorkloadChoice` with its :class:`KSchedule`, per
level :class:`LevelChoice`; defined in records/sweepchoice.py, imported from here).

Built by report/sweepdata.py (``build_sweep_card``; the rules and formulas: report/sweeprec.py and
measure/ranking.py), written by run/sweep.py, rendered by report/sweepmd.py (sweep.md) and
report/sweepplots.py, read back by ``loadgen report SWEEP_DIR`` (the drift an older sweep kept), ``loadgen
sweep`` (the criteria's outcome), ``loadgen diff`` (the candidates' folders) and the fleet card
(fleet/fleetdata.py). Speedups are plain / speculative of the primary metric (> 1 faster, the card's
``speedup_definition``); the upper bound is (K + 1) / step_time_ratio (the card's ``upper_bound_formula``).

The parts copied from elsewhere keep their documented shapes: an entry's ``ratio`` and a cell's
``noise_floor`` (the pair card's ratio: ``value``, ``ci_low``, ``ci_high``, ``pairs``...), ``criteria``
(records/criteria.py ``Criteria.to_json``), ``command_line`` (records/overrides.py ``CommandLine``), ``trace``
(report/tracedata.py ``sweep_trace``) and a schedule's ``config`` (vLLM's ``--speculative-config``). Its JSON
Schema is generated from the fields' type hints (:meth:`SweepCard.json_schema`, committed as records/sweep.schema.json).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from loadgen.records.cardcell import Ratio
from loadgen.records.cardwire import IN_FILE, Whole
from loadgen.records.criteria import CriteriaRecord
from loadgen.records.overrides import CommandLine
from loadgen.records.sweepchoice import KSchedule, LevelChoice, Recommendation, WorkloadChoice
from loadgen.records.trace import TraceSection

__all__ = [
    "FIX",
    "SCHEMA",
    "Drift",
    "KSchedule",
    "LevelChoice",
    "NoiseFloor",
    "Recommendation",
    "SweepCandidate",
    "SweepCard",
    "SweepCell",
    "SweepDesign",
    "SweepEntry",
    "WorkloadChoice",
]

SCHEMA = "loadgen.sweep/2"
#: The fix a sweep.json that does not read gets.
FIX = "restore sweep.json from a copy, or remove it and run `loadgen report SWEEP_DIR` to write it again"


@dataclass(frozen=True)
class Drift(Whole):
    """An older sweep's plain-after / plain-before of one per-request ``timing`` (paired by prompt, bootstrap
    95% CI: measure/ratios.py)."""

    timing: str
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    pairs: int = 0
    TITLE: ClassVar[str] = "drift"


@dataclass(frozen=True)
class SweepEntry(Whole):
    """One candidate at one cell: its speedup with the 95% CI, acceptance, cost model and criteria status."""

    candidate: str
    k: int = 0
    method: str | None = None
    draft_weights: bool = False
    ratio: Ratio | None = None  # the pair card's ratio of the primary metric
    speedup: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    effect: str | None = None
    half_width: float | None = None
    blocks: int | None = None
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    per_position: list[float] | None = None
    tokens_per_decode_chunk: float | None = None
    predicted_speedup: float | None = None
    step_time_ratio: float | None = None
    upper_bound: float | None = None
    criteria_status: str | None = None
    ttft_ratios: Mapping[str, float | None] = field(default_factory=dict)  # an older sweep.json has none
    TITLE: ClassVar[str] = "cell entry"


@dataclass(frozen=True)
class SweepCell(Whole):
    """One cell (workload x level): the A/A noise floor of the primary metric, each candidate's entry, an
    older sweep's drift and its warning."""

    workload: str
    level: str = ""
    concurrency: int | None = None
    rate_rps: float | None = None
    noise_floor: Ratio | None = None  # the pair card's A/A ratio of the primary metric
    entries: list[SweepEntry] = field(default_factory=list, metadata=IN_FILE)
    drift: Drift | None = None
    drift_warning: str | None = None
    TITLE: ClassVar[str] = "cell"

    def floor_ratio(self) -> Ratio | None:
        """The A/A noise floor of the primary metric as the pair card's ratio record, None without one."""
        return self.noise_floor


@dataclass(frozen=True)
class SweepCandidate(Whole):
    """One candidate: its config, folder, pair card verdict, resource cost and time measured (s)."""

    name: str
    speculative_config: Mapping[str, Any] = field(default_factory=dict)
    k: int = 0
    draft_weights: bool = False
    folder: str | None = None
    measured: bool = False
    complete: bool = False
    verdict_passed: bool | None = None
    verdict_status: str | None = None
    verdict_summary: str | None = None
    kv_capacity_loss: float | None = None
    kv_cache_tokens_lost: float | None = None
    extra_cpu_rss_bytes: float | None = None
    extra_gpu_memory_bytes: float | None = None
    same_memory_budget: bool | None = None
    time_s: float | None = None
    TITLE: ClassVar[str] = "candidate"


@dataclass(frozen=True)
class SweepDesign(Whole):
    """How the sweep was measured: blocks per arm and cell (None: an older sweep, one window per server), the
    precision cells were sized to, the candidates' cells still inconclusive when sizing stopped
    (``stopped_short``) and why it stopped (``sizing_end``, status.json's)."""

    blocks: int | None = field(default=None, kw_only=True)
    ci_method: str = field(default="within-run", kw_only=True)
    co_resident: bool | None = field(default=None, kw_only=True)
    placebo: str | None = field(default=None, kw_only=True)  # "server", "blocks" or "off" (records/design.py)
    server_starts: int | None = field(default=None, kw_only=True)
    ci_half_width: float | None = field(default=None, kw_only=True)
    stopped_short: list[str] = field(default_factory=list, kw_only=True)
    sizing_end: str | None = field(default=None, kw_only=True)
    line: str
    TITLE: ClassVar[str] = "design"


@dataclass(frozen=True)
class NoiseFloor(Whole):
    """The A/A noise floor (placebo / plain) over the cells: how many, the widest 95% CI (log half-width) and
    the cells whose CI excludes 1."""

    measured: bool = field(default=False, kw_only=True)
    cells: int = field(default=0, kw_only=True)
    widest_half_width: float | None = field(default=None, kw_only=True)
    excluding_1: list[str] = field(default_factory=list, kw_only=True)
    line: str
    TITLE: ClassVar[str] = "noise floor"


@dataclass(frozen=True)
class SweepCard(Whole):
    """``sweep.json`` (module docstring). ``pair``, ``primary_metric``, ``candidates``, ``cells`` and
    ``recommendation`` are required; an older card lacks the rest in part."""

    schema: str = field(default=SCHEMA, kw_only=True)
    pair: str
    sweep_dir: str | None = field(default=None, kw_only=True)
    engine_version: str | None = field(default=None, kw_only=True)
    primary_metric: str
    speedup_definition: str = field(default="", kw_only=True)
    upper_bound_formula: str = field(default="", kw_only=True)
    criteria_declared: bool = field(default=False, kw_only=True)
    criteria: CriteriaRecord | None = field(default=None, kw_only=True)
    design: SweepDesign | None = field(default=None, kw_only=True)
    noise_floor: NoiseFloor | None = field(default=None, kw_only=True)
    times_s: Mapping[str, float] = field(default_factory=dict, kw_only=True)
    candidates: list[SweepCandidate]
    cells: list[SweepCell]
    drift_warnings: list[str] = field(default_factory=list, kw_only=True)
    recommendation: Recommendation
    trace: TraceSection | None = None
    plots: list[str] = field(default_factory=list)
    command_line: CommandLine | None = None
    FIX: ClassVar[str] = FIX
    TITLE: ClassVar[str] = f"loadgen sweep.json ({SCHEMA})"

    def trace_section(self) -> TraceSection | None:
        """The ``trace`` section (records/trace.py), None without one."""
        return self.trace

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """sweep.json's JSON Schema (draft 2020-12), generated from the fields' kinds."""
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **super().json_schema()}
