"""The pair card (``card.json``, schema ``loadgen.card/1``) as a typed record: built by report/carddata.py (a run
folder's saved data) or saveddata.py (a card without requests.jsonl), rendered by report/cardmd.py (Markdown),
summary.py, plots.py, diffed by diffing.py. Times in s, throughputs per s, ratios speculative / plain
(docs/metrics.md). Its JSON Schema, report/card.schema.json, is generated from these types
(:func:`card_schema`; scripts/card_schema.py writes it). The protocol's models, hardware, speculative config,
design, stop rule, load, SLO, sampling, workloads and command line are its records (records/runparts.py
``ModelHashes``, usage.py, speculative.py, protoparts.py, overrides.py), each server's placement records/server.py
``Placement``, its saved files runparts.py ``ServerFiles`` (records/serverparts.py) and its usage in ``resources``
records/usage.py ``ServerUsage``, each read back as saved, byte for byte; everything loadgen computes is typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from loadgen.records.cardcell import CardCell
from loadgen.records.cardwire import Wire, json_schema
from loadgen.records.criteria import CriteriaRecord
from loadgen.records.overrides import CommandLine
from loadgen.records.protoparts import LoadRecord, RunDesign, SamplingRecord, Slo, StopRuleRecord, WorkloadRecord
from loadgen.records.runparts import ModelHashes, ServerFiles
from loadgen.records.server import Placement
from loadgen.records.speculative import SpeculativeConfig
from loadgen.records.trace import TraceSection
from loadgen.records.usage import Hardware, ServerUsage

CARD_SCHEMA = "loadgen.card/1"
#: The card file's ``$schema`` and title (report/card.schema.json's head).
SCHEMA_HEAD = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": f"loadgen pair card (card.json), schema {CARD_SCHEMA}",
    "description": "Generated from loadgen/records/card.py by scripts/card_schema.py; do not edit. Times in "
    "seconds, throughputs per second, ratios speculative / plain (docs/metrics.md).",
}


@dataclass(frozen=True)
class EngineVersion(Wire):
    """Each server's vLLM version as it reported it (None when it did not)."""

    plain: str | None
    speculative: str | None


@dataclass(frozen=True)
class Crossover(Wire):
    """Per workload: the closed-loop concurrency where the TPOT p50 ratio crosses 1 (measure/ratios.py
    crossover) and the range the CIs bracket (crossover_range; None when they do not)."""

    levels: tuple[int, ...]
    ratios: tuple[float | None, ...]
    crossover_concurrency: float | None
    metric: str = field(metadata={"doc": "the ratio crossing 1: tpot_p50"})
    ratio_cis: tuple[tuple[float | None, ...] | None, ...] | None = None
    crossover_range: tuple[float | None, ...] | None = None


@dataclass(frozen=True)
class RoleCapacity(Wire):
    """One server's closed-loop levels, whether each held every SLO, the highest that held and its goodput."""

    levels: tuple[int, ...] = ()
    holds: tuple[bool | None, ...] = ()
    capacity_concurrency: int | None = None
    goodput_rps: float | None = None


@dataclass(frozen=True)
class ResourceDifference(Wire):
    """speculative minus plain (serve/resources.py difference): bytes, tokens, and the KV capacity lost (0-1)."""

    extra_cpu_rss_bytes: int | None = None
    extra_gpu_memory_bytes: int | None = None
    kv_cache_tokens_lost: int | None = None
    kv_capacity_loss: float | None = None
    same_memory_budget: bool | None = field(
        default=None, metadata={"doc": "both servers ran under the same gpu_memory_utilization"}
    )


@dataclass(frozen=True)
class Resources(Wire):
    """Each server's usage after load, else when ready (records/usage.py ``ServerUsage``, its
    ``servers/<server>-resources.json`` entry as saved: processes, CPU RSS and GPU memory in bytes, KV-cache capacity
    in tokens from ``vllm:cache_config_info`` and the startup log; None without the file), their difference and its
    notes."""

    plain: ServerUsage | None = None
    speculative: ServerUsage | None = None
    difference: ResourceDifference | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ContextRow(Wire):
    """One input length of a workload expanded over several (``<workload>@<tokens>``) at one load level:
    the speculative server's acceptance rate and the TPOT p50 ratio with its CI (report/workloadmd.py)."""

    input_tokens: int
    level: str
    concurrency: int | None = None
    acceptance_rate: float | None
    tpot_ratio: float | None
    tpot_ratio_ci: tuple[float | None, ...]


@dataclass(frozen=True)
class NoiseMetric(Wire):
    """One metric's A/A noise floor over the cells (report/noisefloor.py): the placebo / plain ratios' range,
    the widest CI half-width (log scale) and the cells whose A/A CI excludes 1."""

    min: float
    max: float
    widest_half_width: float | None
    excluding_1: tuple[str, ...]


@dataclass(frozen=True)
class NoiseFloor(Wire):
    """The card's A/A noise floor over every cell with a placebo; ``measured`` False without a placebo."""

    measured: bool
    cells: int | None = None
    metrics: Mapping[str, NoiseMetric] | None = None


@dataclass(frozen=True)
class Check(Wire):
    """One judged number (measure/verdict.py Check): ``status`` pass, fail or not-measured."""

    name: str
    kind: str
    status: str
    judged: float | None
    threshold: float | None
    reason: str


@dataclass(frozen=True)
class CellVerdict(Wire):
    """A (workload, concurrency) cell's verdict: its status, checks and reasons (measure/verdict.py)."""

    workload: str
    concurrency: int
    status: str
    checks: tuple[Check, ...] = ()
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class CardVerdict(Wire):
    """The verdict against the declared criteria (measure/judging.py card_verdict): ``passed`` None when no
    criteria were declared; ``summary`` one line starting PASS, FAIL or INCONCLUSIVE."""

    passed: bool | None
    summary: str
    declared: bool = field(metadata={"doc": "whether the pair file had a [criteria] table"})
    status: str | None = None
    criteria: CriteriaRecord | None = field(
        default=None, metadata={"doc": "the criteria applied (records/criteria.py Criteria)"}
    )
    cells: tuple[CellVerdict, ...] = ()
    resources: tuple[Check, ...] = ()
    declared_keys: tuple[str, ...] | None = None
    lines: tuple[str, ...] | None = None


@dataclass(frozen=True)
class PairCard(Wire):
    """The pair card: what was compared, how, every cell and the verdict (module docstring)."""

    schema: Literal["loadgen.card/1"]
    pair: str
    generated_utc: str = field(metadata={"pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\+00:00$"})
    complete: bool = field(metadata={"doc": "the run measured every planned cell"})
    failure: str | None = field(metadata={"doc": "the run's failure, plus what is partial or lost; null when none"})
    target: ModelHashes | None = field(
        metadata={"doc": "the target model as the protocol recorded it; null where it recorded none"}
    )
    draft: ModelHashes | None = field(metadata={"doc": "the draft model, null without one"})
    speculative_config: SpeculativeConfig | None = field(
        metadata={"doc": "vLLM's --speculative-config as declared (the protocol's record)"}
    )
    sampling: SamplingRecord = field(metadata={"doc": "the sampling parameters sent"})
    engine_version: EngineVersion = field(metadata={"doc": "each server's vLLM version"})
    servers: Mapping[str, ServerFiles] = field(
        metadata={"doc": "per server: launch, effective config, resources, teardown"}
    )
    workloads: tuple[WorkloadRecord, ...] = field(metadata={"doc": "the protocol's workloads"})
    workloads_statement: str = field(metadata={"doc": "one sentence on what the workloads hold"})
    concurrency: tuple[int, ...] = field(metadata={"doc": "the closed-loop levels planned"})
    stop_rule: StopRuleRecord = field(metadata={"doc": "the protocol's stop rule"})
    prompts_sha256: str = field(metadata={"doc": "the prompts file's hash"})
    cells: tuple[CardCell, ...] = field(metadata={"doc": "one per workload x load level"})
    crossover: Mapping[str, Crossover] = field(metadata={"doc": "per workload"})
    slo: Slo = field(metadata={"doc": "the declared SLO"})
    capacity: Mapping[str, Mapping[str, RoleCapacity]] = field(
        metadata={"doc": "per workload and server; empty without an SLO"}
    )
    resources: Resources = field(metadata={"doc": "memory and KV capacity of both servers"})
    placement: Mapping[str, Placement] = field(
        metadata={"doc": "per server: attached, base URL, devices (serve/placement)"}
    )
    verdict: CardVerdict = field(metadata={"doc": "the verdict against the declared criteria"})
    requests_on_disk: Mapping[str, int] | None = field(
        default=None, metadata={"doc": "measured, partial, torn and unwritten request lines"}
    )
    context_axis: Mapping[str, tuple[ContextRow, ...]] | None = field(
        default=None, metadata={"doc": "per base workload: its lengths"}
    )
    load: LoadRecord | None = field(default=None, metadata={"doc": "the protocol's load section"})
    command_line: CommandLine | None = field(
        default=None, metadata={"doc": "only when the command line gave values (profile/overrides.py)"}
    )
    design: RunDesign | None = field(
        default=None, metadata={"doc": "the block design without its order (report/noisefloor.py)"}
    )
    noise_floor: NoiseFloor | None = field(
        default=None, metadata={"doc": "the A/A noise floor over the cells (report/noisefloor.py)"}
    )
    hardware: Hardware | None = field(default=None, metadata={"doc": "the machine as the protocol recorded it"})
    plots: tuple[str, ...] | None = field(default=None, metadata={"doc": "the plots' paths in the run folder"})
    statistics_from: Literal["card.json"] | None = field(
        default=None, metadata={"doc": "card.json when re-derived without requests.jsonl"}
    )
    trace: TraceSection | None = field(
        default=None, metadata={"doc": "trace workloads over time (report/tracedata.py); absent without one"}
    )

    def cell(self, workload: str, level: str) -> CardCell | None:
        """The cell of ``workload`` at ``level``, None when the card has none."""
        return next((c for c in self.cells if c.workload == workload and c.level == level), None)


def card_schema() -> dict[str, Any]:
    """The JSON Schema of ``card.json`` (draft 2020-12) from :class:`PairCard` (report/card.schema.json)."""
    return {**SCHEMA_HEAD, **json_schema(PairCard), "description": SCHEMA_HEAD["description"]}
