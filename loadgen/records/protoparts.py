"""The parts of protocol.json a run declares and the card copies: :class:`RunDesign` (``design``, and the pair card's
``design``: the same record without its order, with the slots it ran), :class:`StopRuleRecord` (``stop_rule``),
:class:`LoadRecord` (``load``) and :class:`Slo` (``slo``), each profile/pair.py's parsed table as
``dataclasses.asdict`` writes it, :class:`WorkloadRecord` (an item of ``workloads``: profile/workload.py's
``Workload``, this record with its kind, endpoint and output tokens required), :class:`EngineRecord` (``engine``),
:class:`SamplingRecord` (``sampling``, and the card's) and :class:`Fairness` (``fairness``), each as run/plan.py
``protocol`` writes it, and a sweep's :class:`CandidateRecord` (one of ``candidates``, run/sweepsetup.py).

Each is a :class:`~loadgen.records.cardwire.Wire` record read at its field's path in protocol.json or card.json
(records/protocol.py, records/card.py), every field optional (a protocol of older code lacks some) and written
back with the keys it was read with, in their order, so protocol.json and card.json stay byte for byte the same;
keys of newer code are kept verbatim (``extra``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from loadgen.records.cardwire import Wire, wire_fields
from loadgen.records.runparts import ArmRecord, DesignRecord, ModelHashes
from loadgen.records.speculative import SpeculativeConfig


@dataclass(frozen=True)
class RunDesign(Wire):
    """protocol.json's ``design``: the pair file's ``[design]`` (records/design.py ``Design.to_json``: blocks
    per arm and cell, placebo, co-residency asked, ``max_blocks``, ``min_block_requests``, ``warmup_pass``), the
    planned blocks and the design's statements (run/plan.py), then what the run adds (records/runparts.py
    ``DesignRecord``: arms, co-residency as run (a bool; the pair file's ``"auto"``, ``"yes"`` or ``"no"``
    before the run adds it) and its reason, the placebo as run, the server starts and the order, ``[arm,
    workload, level, block]`` per slot). On the card (report/noisefloor.py ``design_summary``) the order is left
    out and ``slots`` (its length) added. Every field is None where a file of older code lacks it."""

    blocks: int | None = None
    placebo: str | None = None
    co_resident: bool | str | None = field(default=None, metadata={"doc": "as run (bool), or as declared (str)"})
    max_blocks: int | None = None
    min_block_requests: int | None = None
    warmup_pass: bool | None = None
    planned_blocks: int | None = None
    pairing: str | None = None
    decision: str | None = None
    warmup: str | None = None
    outlier_blocks: str | None = None
    arms: tuple[ArmRecord, ...] | None = None
    co_resident_reason: str | None = None
    placebo_effective: str | None = field(default=None, metadata={"doc": "server, blocks or off"})
    server_starts: int | None = None
    order: tuple[tuple[str | int, ...], ...] | None = field(
        default=None, metadata={"doc": "[arm, workload, level, block] per slot, in the order measured"}
    )
    slots: int | None = field(default=None, metadata={"doc": "the card's: how many slots the order holds"})

    def with_run(self, run: DesignRecord) -> RunDesign:
        """This design with what the run adds (run/flow.py ``design_record``): its fields set, each new key
        after this design's own, as merging the run's object into the file's design would."""
        return self.with_fields(**{name: getattr(run, name) for name in wire_fields(DesignRecord)})

    def summary(self) -> RunDesign:
        """The card's design: this one without its order, with ``slots``, the order's length."""
        own = self.keys if self.keys is not None else tuple(self.to_json())
        cut = dataclasses.replace(self, order=None, keys=tuple(k for k in own if k != "order"))
        return cut.with_fields(slots=len(self.order or ()))


@dataclass(frozen=True)
class StopRuleRecord(Wire):
    """protocol.json's and the card's ``stop_rule``: the pair file's ``[stop]`` as run (profile/pair.py
    ``StopRule``): measured requests per closed-loop cell ``max(min_requests, rounds * c)`` (``min_requests`` open
    loop), ``warmup_requests`` excluded before them, or by duration (``duration_s``, s, at most ``max_requests``),
    whether the free slots keep sending filler until the last measured request ends (``cooldown``), the failed
    share a cell may have (``max_error_rate``, 0-1) and what exceeding it does (``on_error_budget``: ``stop`` or
    ``continue``), and the longest silence in a stream (``read_timeout_s``, s; None: derived). A file of older
    code lacks the last three."""

    min_requests: int | None = None
    rounds: int | None = None
    warmup_requests: int | None = None
    duration_s: float | None = None
    max_requests: int | None = None
    cooldown: bool | None = None
    max_error_rate: float | None = None
    on_error_budget: str | None = None
    read_timeout_s: float | None = None


@dataclass(frozen=True)
class LoadRecord(Wire):
    """protocol.json's and the card's ``load``: the pair file's ``[load]`` (profile/pair.py ``Load``): the
    closed-loop concurrency levels, the open-loop rates (requests/s), their ``arrival`` process (``poisson``,
    ``gamma`` or ``constant``) and ``burstiness``, the concurrency cap of an open-loop cell and the repetitions
    per cell."""

    concurrency: tuple[int, ...] | None = None
    rates_rps: tuple[float, ...] | None = None
    arrival: str | None = None
    burstiness: float | None = None
    max_concurrency: int | None = None
    repetitions: int | None = None


@dataclass(frozen=True)
class Slo(Wire):
    """The declared SLO limits (s; None = not declared) at ``percentile`` (profile/pair.py SLO): protocol.json's
    ``slo`` (empty in a file of older code) and the card's."""

    percentile: float | None = None
    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None


@dataclass(frozen=True)
class WorkloadRecord(Wire):
    """One item of protocol.json's and the card's ``workloads``: profile/workload.py ``Workload`` (this record with
    ``kind``, ``endpoint`` and ``output_tokens`` required) with every field written (run/plan.py ``protocol``; the
    grammar fields only when set), so run/plan.py ``replay_protocol`` rebuilds the ``Workload`` from them. ``kind`` (one
    of ``short-homogeneous``, ``long-diverse``, ``grounded``, ``file``, ``trace``), ``endpoint`` (``completions`` or
    ``chat``), the tokens asked (``input_tokens``: None for natural lengths; ``output_tokens``) and the generator's
    ``seed``; a ``file`` or ``trace`` workload's source (``path``, ``source_sha256``, ``source_lines``, ``skipped``:
    ``line N: reason`` each), the serving context in tokens (``context_tokens``); a trace's replay (``time_scale``,
    ``block_tokens`` tokens per hash id, card windows of ``window_s`` s, ``trace_format`` as declared and
    ``trace_format_read``, ``zero_output``: ``refuse``, ``skip`` or a floor of output tokens, and ``floored``); a
    grammar-constrained workload's ``constraint`` (canonical JSON) and ``constrained`` (the card's words). Only ``name``
    is required here: ``kind``, ``endpoint`` and ``output_tokens`` are None where a file lacks them (a test's or older
    code's protocol), the rest take ``Workload``'s defaults."""

    TITLE: ClassVar[str] = "workload"

    name: str
    kind: str | None = None
    endpoint: str | None = None
    output_tokens: int | None = None
    input_tokens: int | None = None
    seed: int = 0
    description: str = ""
    path: str | None = None
    source_sha256: str | None = None
    source_lines: int | None = None
    skipped: tuple[str, ...] = ()
    context_tokens: int | None = None
    time_scale: float | None = None
    block_tokens: int | None = None
    window_s: float | None = field(default=None, metadata={"doc": "the card's trace windows, s"})
    trace_format: str | None = None
    zero_output: str | int | None = None
    trace_format_read: str | None = None
    floored: tuple[str, ...] = ()
    constraint: str | None = None
    constrained: str | None = None


@dataclass(frozen=True)
class Fairness(Wire):
    """protocol.json's ``fairness``: what makes both servers' requests the same work (run/plan.py ``protocol``):
    whether every request ignores EOS and sets ``min_tokens`` equal to ``max_tokens`` (both the pair file's
    ``[sampling].ignore_eos``: outputs of exactly the tokens asked) and asks for the token ids back (always)."""

    TITLE: ClassVar[str] = "fairness"

    ignore_eos: bool | None = None
    min_tokens_equals_max_tokens: bool | None = None
    return_token_ids: bool | None = None


@dataclass(frozen=True)
class CandidateRecord(Wire):
    """One of a sweep's protocol.json ``candidates``, by name (run/sweepsetup.py): the candidate's pair name and
    pair file (``candidates/<name>.toml``), its speculative config and its draft (None without one), what
    run/sweepsplit.py ``candidate_protocol`` puts in the candidate's own protocol."""

    TITLE: ClassVar[str] = "candidate"

    pair: str
    pair_file: str
    speculative_config: SpeculativeConfig
    draft: ModelHashes | None


@dataclass(frozen=True)
class EngineRecord(Wire):
    """protocol.json's ``engine``: the pair file's ``[engine]`` as both servers were launched (profile/pair.py
    ``Engine``): the launch ``command`` and the engine ``args`` (util/redact.py ``redact_argv``: credentials
    cut), its environment (``env``, redacted) and ``seed``, and the speculative server's own environment
    (``speculative_env``; absent in a protocol of older code)."""

    TITLE: ClassVar[str] = "engine"

    command: tuple[str, ...] | None = None
    args: tuple[str, ...] | None = None
    env: Mapping[str, str] | None = None
    seed: int | None = None
    speculative_env: Mapping[str, str] | None = None


@dataclass(frozen=True)
class SamplingRecord(Wire):
    """protocol.json's and the card's ``sampling``: the pair file's ``[sampling]`` sent identically to both
    servers (profile/pair.py ``Sampling``): ``temperature`` (0: greedy), ``top_p``, ``seed``, ``ignore_eos`` and
    the neutral ``top_k`` (-1: off), ``min_p``, ``repetition_penalty``, ``presence_penalty`` and
    ``frequency_penalty`` (absent in a protocol of older code)."""

    TITLE: ClassVar[str] = "sampling"

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    ignore_eos: bool | None = None
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
