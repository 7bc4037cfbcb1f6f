"""How a run was measured, everything needed to repeat it: :class:`Protocol`, ``protocol.json``
(``loadgen.protocol/1``), with its cells (:class:`ProtocolCell`).

Written by run/plan.py (``protocol``) when a run or sweep folder is made, completed by run/flow.py and
run/sweep.py (``engine_version``, ``attach``, the design's arms and order, a sweep's ``candidates``),
rewritten by run/execute.py when blocks are added and cut per candidate by run/sweepsplit.py
(``sweep_candidate``); read back by ``loadgen compare --protocol`` / ``--resume`` (run/plan.py
``replay_protocol``), ``loadgen sweep --resume`` and ``loadgen report`` (store/runfiles.py, saveddata.py,
sweepdata.py, tracedata.py), always through store/rundir.py ``read_protocol``, which checks it here.

``target`` and ``draft`` are records/runparts.py :class:`~loadgen.records.runparts.ModelHashes` (check/hashes.py
``model_hashes``), ``client_host`` and ``hardware`` records/usage.py ``ClientHost`` and ``Hardware`` (run/plan.py
``probe_host``); ``design``, ``stop_rule``, ``load``, ``slo``, each of ``workloads``, ``engine``, ``sampling`` and
``fairness`` records/protoparts.py ``RunDesign`` (the pair file's ``[design]`` plus run/flow.py
``design_record``), ``StopRuleRecord``, ``LoadRecord``, ``Slo``, ``WorkloadRecord`` (profile/workload.py
``Workload`` as a dict), ``EngineRecord``, ``SamplingRecord`` and ``Fairness``; ``criteria`` records/criteria.py
``CriteriaRecord`` (``Criteria.to_json`` plus ``declared``); ``command_line`` records/overrides.py ``CommandLine``
(the values the command line gave); ``attach`` (serve/attached.py ``attach_record``) and ``metrics_urls`` (each
role's metrics URL, ``--metrics-<role>`` or ``[servers.<role>].metrics_url``, reused by ``--resume``) a
records/runparts.py ``RecordedUrl`` per role; a sweep's ``candidates`` a records/protoparts.py ``CandidateRecord``
per candidate; each written back as read.
``speculative_config`` (the pair file's ``[speculative]`` table) is a records/speculative.py
:class:`~loadgen.records.speculative.SpeculativeConfig`, written back as read.
A protocol of older code lacks some fields; ``keys`` keeps a file's own keys in their order, so it writes
back byte-identically. Its JSON Schema is generated from the fields' type hints (:meth:`Protocol.json_schema`,
committed as records/protocol.schema.json).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from loadgen.records.cardwire import Whole
from loadgen.records.criteria import CriteriaRecord
from loadgen.records.overrides import CommandLine
from loadgen.records.protoparts import (
    CandidateRecord,
    EngineRecord,
    Fairness,
    LoadRecord,
    RunDesign,
    SamplingRecord,
    Slo,
    StopRuleRecord,
    WorkloadRecord,
)
from loadgen.records.request import CellKeyed
from loadgen.records.runparts import ModelHashes, RecordedUrl
from loadgen.records.speculative import SpeculativeConfig
from loadgen.records.usage import ClientHost, Hardware

SCHEMA = "loadgen.protocol/1"
#: The fix a protocol.json that does not read gets.
FIX = "restore protocol.json from the run folder's copy, or measure the run again"


@dataclass(frozen=True)
class ProtocolCell(Whole, CellKeyed):
    """One planned block of one cell: its workload and level, the prompt ids of each phase, and the arrival
    offsets (s from the measured phase's start; None for a closed loop). Only ``workload`` is required: a card
    needs no more of a cell (its level label or concurrency names it)."""

    workload: str
    concurrency: int = 0
    level: str = ""
    rate_rps: float | None = None
    repetition: int = 0
    warmup: list[str] = field(default_factory=list)
    measured: list[str] = field(default_factory=list)
    cooldown: list[str] = field(default_factory=list)
    arrivals_s: list[float] | None = None
    FIX: ClassVar[str] = FIX
    TITLE: ClassVar[str] = "cell"


@dataclass(frozen=True)
class Protocol(Whole):
    """``protocol.json`` (module docstring). ``workloads`` and ``cells`` are required."""

    schema: str = field(default=SCHEMA, kw_only=True)
    loadgen_version: str | None = field(default=None, kw_only=True)
    pair: str = field(default="", kw_only=True)
    pair_file: str | None = field(default=None, kw_only=True)
    target: ModelHashes | None = field(default=None, kw_only=True)
    draft: ModelHashes | None = field(default=None, kw_only=True)
    speculative_config: SpeculativeConfig | None = field(default=None, kw_only=True)
    engine: EngineRecord | None = field(default=None, kw_only=True)
    sampling: SamplingRecord | None = field(default=None, kw_only=True)
    fairness: Fairness | None = field(default=None, kw_only=True)
    workloads: list[WorkloadRecord]
    concurrency: list[int] = field(default_factory=list, kw_only=True)
    load: LoadRecord | None = field(default=None, kw_only=True)
    stop_rule: StopRuleRecord | None = field(default=None, kw_only=True)
    prompts_file: str = field(default="prompts.jsonl", kw_only=True)
    prompts_sha256: str | None = field(default=None, kw_only=True)
    criteria: CriteriaRecord | None = field(default=None, kw_only=True)
    slo: Slo | None = field(default=None, kw_only=True)
    design: RunDesign | None = field(default=None, kw_only=True)
    cells: list[ProtocolCell]
    client_host: ClientHost | None = None
    hardware: Hardware | None = None
    command_line: CommandLine | None = None
    engine_version: str | None = None
    attach: Mapping[str, RecordedUrl] | None = None
    metrics_urls: Mapping[str, RecordedUrl] | None = None
    candidates: Mapping[str, CandidateRecord] | None = None
    sweep_candidate: str | None = None
    FIX: ClassVar[str] = FIX
    TITLE: ClassVar[str] = "loadgen protocol.json (loadgen.protocol/1)"

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """protocol.json's JSON Schema (draft 2020-12), generated from the fields' kinds."""
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **super().json_schema()}
