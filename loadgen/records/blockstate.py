"""The state beside every block (``cells.jsonl`` ``state``), as measure/blockstate.py condenses it: per GPU its
clocks, power, temperature and throttle reasons, the host's load and stolen CPU share, the engine's prefix-cache
hit share, preemptions, step time and queue, and the decode batch against the CUDA-graph capture ceiling
(docs/metrics.md "The state beside every block"). Units: MHz, W, °C, s, shares 0-1, tokens.

Read and written by records/cardwire.py's ``Wire`` rules; a record built in code writes every field (``in_full``),
null included, as the cells.jsonl lines of earlier code have them.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadgen.records.cardwire import Wire


@dataclass(frozen=True)
class GpuState(Wire):
    """One GPU over the block: the mean of its two samples (serve/hoststate.py) and the throttle reasons seen in
    either (``gpu_idle`` left out)."""

    index: int | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    throttle_reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostState(Wire):
    """The 1-minute load average at the block's end and the share of CPU time stolen during it."""

    loadavg_1m: float | None = None
    cpu_steal_share: float | None = None


@dataclass(frozen=True)
class EngineState(Wire):
    """The engine over the block: prefix-cache hit share of its queries (tokens), preemptions, mean step time
    (s, ``vllm:inter_token_latency_seconds``) and the most requests waiting (sampled gauge)."""

    prefix_cache_hit_share: float | None = None
    preemptions: float | None = None
    step_time_s: float | None = None
    waiting_max: float | None = None


@dataclass(frozen=True)
class Graphs(Wire):
    """The decode batch (tokens: concurrency x (1 + K)) against the CUDA-graph capture ceiling (None: unknown or
    eager); ``eager`` when the batch is above it."""

    batch_tokens: int = 0
    ceiling: int | None = None
    eager: bool = False


@dataclass(frozen=True)
class BlockState(Wire):
    """One block's state (module docstring); a line of older code may lack any part."""

    gpu: tuple[GpuState, ...] = ()
    host: HostState | None = None
    engine: EngineState | None = None
    graphs: Graphs | None = None
