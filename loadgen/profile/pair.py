"""Pair profiles: the frozen dataclasses a pair file becomes (pairfile.py reads and checks the file).

A pair file (``profiles/pairs/<name>.toml``) declares the target, the speculative config, how to start
the engine, the sampling, the workloads and concurrency levels, and the stop rule. Every key is
documented in ``profiles/README.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from loadgen.errors import ProfileError
from loadgen.profile.domains import MAX_CELL_REQUESTS
from loadgen.profile.workload import Workload
from loadgen.records.criteria import Criteria
from loadgen.records.design import Design
from loadgen.records.overrides import Overrides
from loadgen.records.protoparts import Slo
from loadgen.records.speculative import SCHEDULE_KEY, SpeculativeConfig

#: Draft-free lookup methods that propose only where the text repeats itself, so a cell may see no draft at
#: all (vLLM's n-gram and suffix proposers: vllm/v1/spec_decode/ngram_proposer.py, suffix_decoding.py).
LOOKUP_METHODS = frozenset({"ngram", "ngram_gpu", "suffix"})


def k_at(speculative: SpeculativeConfig, batch: int) -> int:
    """K (draft tokens per step) the declared speculative config gives at ``batch`` running requests (>= 1).

    0 when ``disable_by_batch_size`` (vLLM 0.10-0.16: speculation off once the running requests reach it) is
    at most ``batch``, or when the ``num_speculative_tokens_per_batch_size`` range holding ``batch`` (a list
    of ``[low, high, K]``, bounds inclusive, K = 0 off; vLLM 0.24+, measure/ranking.k_schedule writes it)
    says 0; else that range's K, else ``num_speculative_tokens``. A batch no range holds keeps the declared
    K (nothing in the config switches it off). Malformed entries are skipped (check/ reports them)."""
    if _disabled_at(speculative, batch):
        return 0
    row = _schedule_row(speculative, batch)
    return int(row[2]) if row is not None else (speculative.num_speculative_tokens or 0)


def _disabled_at(speculative: SpeculativeConfig, batch: int) -> int | None:
    """``disable_by_batch_size`` when it switches speculation off at ``batch`` running requests, else None."""
    limit = speculative.disable_by_batch_size
    return limit if limit is not None and batch >= limit else None


def _schedule_row(speculative: SpeculativeConfig, batch: int) -> tuple[int, int, int] | None:
    """The well-formed ``[low, high, K]`` range of the per-batch-size schedule holding ``batch``, else None."""
    for row in speculative.num_speculative_tokens_per_batch_size or ():
        if (
            isinstance(row, (list, tuple))
            and len(row) == 3
            and all(isinstance(x, int) for x in row)
            and row[0] <= batch <= row[1]
        ):
            return int(row[0]), int(row[1]), int(row[2])
    return None


def speculation_on_at(speculative: SpeculativeConfig, concurrency: int, open_loop: bool = False) -> bool:
    """Whether the declared config speculates at a level: a closed-loop level at ``concurrency`` (its batch
    is that many running requests) when :func:`k_at` is above 0 there; an open-loop level capped at
    ``concurrency`` when it is above 0 at any batch from 1 to the cap (the batch varies)."""
    if not open_loop:
        return k_at(speculative, max(1, concurrency)) > 0
    return any(k_at(speculative, b) > 0 for b in range(1, max(1, concurrency) + 1))


def off_reason(speculative: SpeculativeConfig, concurrency: int) -> str:
    """Which declared key switches speculation off at ``concurrency`` running requests, with its numbers
    (one phrase, for a card note)."""
    if (limit := _disabled_at(speculative, concurrency)) is not None:
        return f"disable_by_batch_size = {limit} <= {concurrency} running requests"
    row = _schedule_row(speculative, concurrency)
    return (
        f"{SCHEDULE_KEY} gives K = 0 for batch sizes {row[0]}-{row[1]}"
        if row is not None
        else "num_speculative_tokens = 0"
    )


@dataclass(frozen=True)
class SLO:
    """Declared service-level objectives (``[slo]``): limits in seconds, judged at ``percentile``."""

    percentile: float = 99.0
    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None

    @classmethod
    def of(cls, record: Slo | None) -> SLO:
        """The SLO protocol.json's ``slo`` declares (records/protoparts.py; a limit it lacks is not declared, a
        percentile it lacks the default 99)."""
        r = record or Slo()
        return cls(cls().percentile if r.percentile is None else r.percentile, r.ttft_s, r.tpot_s, r.e2e_s)

    def limits(self) -> dict[str, float]:
        """``{"ttft_s": limit, ...}`` for the declared objectives only."""
        return {
            k: v for k, v in (("ttft_s", self.ttft_s), ("tpot_s", self.tpot_s), ("e2e_s", self.e2e_s)) if v is not None
        }


@dataclass(frozen=True)
class ModelRef:
    """A model as the engine loads it: a local directory or a hub id, with an optional revision."""

    model: str
    revision: str | None = None


@dataclass(frozen=True)
class Engine:
    """How to start a vLLM OpenAI server. ``command`` is argv up to (not including) ``--model``."""

    command: tuple[str, ...]
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8300
    startup_timeout_s: float = 600.0
    seed: int = 0


@dataclass(frozen=True)
class RoleServer:
    """Per-role settings (``[servers.plain]``, ``[servers.speculative]``): extra args and env on top of
    ``[engine]`` (placement: ``CUDA_VISIBLE_DEVICES``, ``--gpu-memory-utilization``, ...), a port, or the
    URL of an already running server to attach to instead of launching one, with ``log`` the path of that
    server's startup log (read for its configuration facts, engine path and speculative config, as a launched
    server's own log is; docs/vllm-notes.md "What loadgen reads of a server's configuration"), and
    ``metrics_url`` where its ``/metrics`` is read when not at its API URL (a proxy in front of prefill and
    decode instances, one replica of several; docs/vllm-notes.md "Topology")."""

    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    port: int | None = None
    url: str | None = None
    log: str | None = None
    metrics_url: str | None = None


@dataclass(frozen=True)
class Sampling:
    """Sampling sent identically to both servers (temperature 0 = greedy), every field of vLLM's
    ``SamplingParams`` that changes the output sent explicitly: vLLM applies the model's
    ``generation_config.json`` defaults (``repetition_penalty``, ``top_k``, ``top_p``, ``temperature``,
    ``min_p``) to every field a request leaves out (``--generation-config auto``, the default;
    vLLM docs "OpenAI-Compatible Server", Extra Parameters), so the neutral values here (top_k -1 = off,
    min_p 0, penalties 1 / 0 / 0) keep those defaults from applying unseen."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0
    ignore_eos: bool = True
    top_k: int = -1
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0


@dataclass(frozen=True)
class StopRule:
    """Per-cell stop rule, identical on both servers.

    By count (default): a closed-loop cell sends ``max(min_requests, rounds * concurrency)`` measured
    requests, an open-loop cell ``min_requests``. By duration (``duration_s`` set): measured requests are
    sent until ``duration_s`` seconds after the first one, at most ``max_requests``. Before them,
    ``warmup_requests`` requests run and finish (excluded); with ``cooldown`` the free closed-loop slots
    keep sending filler requests (excluded) until the last measured request has finished, so the load
    stays level to the end. A cell whose failed share exceeds ``max_error_rate`` stops the run
    (``on_error_budget = "stop"``, exit 1) or is marked failed while the run goes on (``"continue"``).
    """

    min_requests: int = 8
    rounds: int = 2
    warmup_requests: int = 1
    duration_s: float | None = None
    max_requests: int = 1000
    cooldown: bool = True
    max_error_rate: float = 0.0
    on_error_budget: str = "stop"
    read_timeout_s: float | None = None  # the longest silence in a stream; None: profile/timeouts.py derives it

    def measured_requests(self, concurrency: int) -> int:
        """Prompts to prepare for the measured phase of a closed-loop cell at ``concurrency`` (>= 1)."""
        if self.duration_s is not None:
            return self.max_requests
        return max(self.min_requests, self.rounds * concurrency)

    def cooldown_requests(self, concurrency: int) -> int:
        """Filler prompts to prepare (enough for every other slot to turn over a few times)."""
        return 4 * (concurrency - 1) if self.cooldown else 0


@dataclass(frozen=True)
class Level:
    """One load level: closed loop at ``concurrency``, or open loop at ``rate_rps`` (capped at
    ``concurrency`` requests in flight)."""

    concurrency: int
    rate_rps: float | None = None

    @property
    def label(self) -> str:
        """``c4`` (closed loop) or ``r2.5`` (open loop)."""
        return f"c{self.concurrency}" if self.rate_rps is None else f"r{self.rate_rps:g}"


@dataclass(frozen=True)
class Load:
    """The load schedule of every cell: closed-loop concurrency levels and/or open-loop rates."""

    concurrency: tuple[int, ...] = ()
    rates_rps: tuple[float, ...] = ()
    arrival: str = "poisson"
    burstiness: float = 1.0
    max_concurrency: int = 256
    repetitions: int = 1

    def levels(self) -> tuple[Level, ...]:
        """Closed-loop levels first, then open-loop rates (each capped at ``max_concurrency``)."""
        return (*(Level(c) for c in self.concurrency), *(Level(self.max_concurrency, r) for r in self.rates_rps))


@dataclass(frozen=True)
class Pair:
    """A draft/target pair to verify, with everything needed to measure it."""

    name: str
    path: Path
    target: ModelRef
    speculative: SpeculativeConfig
    engine: Engine
    sampling: Sampling
    workloads: tuple[Workload, ...]
    load: Load
    stop: StopRule
    description: str = ""
    criteria: Criteria | None = None  # None: no [criteria] table, nothing is judged
    slo: SLO = field(default_factory=SLO)
    servers: Mapping[str, RoleServer] = field(default_factory=dict)
    design: Design = field(default_factory=Design)
    allow_skipped_lines: bool = False  # [run].allow_skipped_lines: prompt-file lines may be skipped
    overrides: Overrides | None = None  # values given on the command line (profile/overrides.py), in the fields

    @property
    def planned_blocks(self) -> int:
        """Blocks to plan per cell: ``[design].max_blocks`` when ``[criteria].ci_half_width`` asks for a
        precision (the run may grow a cell that far), else ``[design].blocks``."""
        sizing = self.criteria is not None and self.criteria.ci_half_width is not None
        return self.design.max_blocks if sizing else self.design.blocks

    @property
    def concurrency(self) -> tuple[int, ...]:
        """The closed-loop concurrency levels."""
        return self.load.concurrency

    @property
    def num_speculative_tokens(self) -> int:
        """K, the declared number of speculative tokens per step."""
        return int(self.speculative.num_speculative_tokens or 0)

    @property
    def method(self) -> str:
        """The declared speculative method (``draft_model``, ``ngram``, ...)."""
        return str(self.speculative.method)

    def speculates_at(self, level: Level) -> bool:
        """Whether the declared speculative config has speculation on at ``level`` (:func:`speculation_on_at`)."""
        return speculation_on_at(self.speculative, level.concurrency, level.rate_rps is not None)

    def with_metrics_urls(self, urls: Mapping[str, str]) -> Pair:
        """This pair with ``[servers.<role>].metrics_url`` set for each role of ``urls`` (the command line's
        ``--metrics-<role>``, which wins over the file's)."""
        given = {r: replace(self.servers.get(r) or RoleServer(), metrics_url=u) for r, u in urls.items()}
        return replace(self, servers={**self.servers, **given}) if given else self

    @property
    def draft(self) -> ModelRef | None:
        """The draft model, or None for methods without one (ngram, suffix)."""
        model = self.speculative.model
        if model is None:
            return None
        return ModelRef(model, self.speculative.revision)


def check_run_size(path: Path, load: Load, stop: StopRule, port: int, speculative: RoleServer | None) -> None:
    """Cross-key limits: each cell's prompts (warmup + measured + cooldown) <= profile/domains.py
    :data:`~loadgen.profile.domains.MAX_CELL_REQUESTS`, and, unless ``[servers.speculative]`` sets its port or
    URL, the speculative server's default port ``[engine].port + 1`` <= 65535. Raises ProfileError."""
    for level in load.levels():
        if level.rate_rps is None:
            n = stop.measured_requests(level.concurrency) + stop.cooldown_requests(level.concurrency)
        else:
            n = stop.max_requests if stop.duration_s is not None else stop.min_requests
        if stop.warmup_requests + n > MAX_CELL_REQUESTS:
            raise ProfileError(
                f"{path}: cell {level.label} would send {stop.warmup_requests + n:,} requests; a cell "
                f"holds at most {MAX_CELL_REQUESTS:,}: lower [stop] rounds/min_requests or the "
                "concurrency"
            )
    if (speculative is None or (speculative.port is None and speculative.url is None)) and port + 1 > 65535:
        raise ProfileError(
            f"{path}: [engine].port = {port} leaves no port for the speculative server (port + 1); "
            "use a port <= 65534 or set [servers.speculative].port"
        )
