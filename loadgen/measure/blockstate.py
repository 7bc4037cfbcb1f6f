"""The state beside every block, and the blocks whose state differs from their pair's (pure; docs/metrics.md
"The state beside every block").

:func:`block_state` condenses one slot's two host samples (serve/hoststate.py), its ``/metrics`` snapshots and
gauges into the ``state`` of its cells.jsonl line:

- ``gpu``: per GPU the SM and memory clocks, power and temperature (mean of the two samples) and the throttle
  reasons seen in either (``gpu_idle`` left out);
- ``host``: the 1-minute load average at the end and the share of CPU time stolen during the block;
- ``engine``: the prefix-cache hit share of the block's queries (Δ``vllm:prefix_cache_hits`` /
  Δ``vllm:prefix_cache_queries``, tokens), the preemptions (Δ``vllm:num_preemptions``), the engine's step time
  (the mean of Δ``vllm:inter_token_latency_seconds``: the seconds between a request's consecutive outputs,
  one engine step on a busy decode) and the most requests waiting in the queue (sampled gauge);
- ``graphs``: the decode batch in tokens, concurrency x (1 + K), against the engine's CUDA-graph capture
  ceiling (``max_cudagraph_capture_size`` in the startup log; 512 by default on H200, vLLM PR #54418): above
  it the step runs eager, which can fake a crossover.

:func:`pair_flags` lists the differences between the two blocks of a pair that could move a ratio on their
own: clocks more than :data:`CLOCK_GAP` apart, different throttle reasons, temperatures more than
:data:`TEMP_GAP_C` apart, load averages more than :data:`LOAD_GAP` apart, CPU steal above :data:`STEAL` on one
side only, prefix-cache hit shares more than :data:`HIT_GAP` apart, preemptions on one side only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from loadgen.profile.cells import speculates
from loadgen.prom.deltas import counter_delta
from loadgen.prom.exposition import Snapshot
from loadgen.records.blockstate import BlockState, EngineState, GpuState, Graphs, HostState
from loadgen.records.cell import CellEntry
from loadgen.records.usage import GpuState as GpuSample
from loadgen.records.usage import HostSample

CLOCK_GAP, TEMP_GAP_C, LOAD_GAP, STEAL, HIT_GAP = 0.05, 10.0, 1.0, 0.02, 0.05
_HITS, _QUERIES, _PREEMPT = (
    "vllm:prefix_cache_hits_total",
    "vllm:prefix_cache_queries_total",
    "vllm:num_preemptions_total",
)


def _mean(a: Any, b: Any) -> float | None:
    vals = [float(x) for x in (a, b) if isinstance(x, int | float)]
    return sum(vals) / len(vals) if vals else None


def _gpus(before: Sequence[GpuSample], after: Sequence[GpuSample]) -> tuple[GpuState, ...]:
    """Per GPU of the end sample (serve/hoststate.py: ``index``, clocks, power, temperature, throttle reasons),
    matched by index with the start sample."""
    out = []
    for a in after:
        b = next((g for g in before if g.index == a.index), None)
        reasons = sorted({*(a.throttle_reasons or ()), *((b.throttle_reasons if b else None) or ())} - {"gpu_idle"})
        out.append(
            GpuState(
                index=a.index,
                sm_clock_mhz=_mean(b.sm_clock_mhz if b else None, a.sm_clock_mhz),
                mem_clock_mhz=_mean(b.mem_clock_mhz if b else None, a.mem_clock_mhz),
                power_w=_mean(b.power_w if b else None, a.power_w),
                temperature_c=_mean(b.temperature_c if b else None, a.temperature_c),
                throttle_reasons=tuple(reasons),
            ).in_full()
        )
    return tuple(out)


def _engine(before: Snapshot | None, after: Snapshot | None, entry: CellEntry) -> EngineState:
    icl = entry.server_histograms.get("icl_s")
    step_s = icl.sum / icl.count if icl is not None and icl.count > 0 else None  # the histogram's mean: sum / count
    waiting = (entry.gauges or {}).get("vllm:num_requests_waiting")
    engine = EngineState(step_time_s=step_s, waiting_max=None if waiting is None else waiting.max).in_full()
    if before is None or after is None:
        return engine
    queries, hits = counter_delta(before, after, _QUERIES), counter_delta(before, after, _HITS)
    preempt = counter_delta(before, after, _PREEMPT)
    return replace(
        engine,
        prefix_cache_hit_share=hits.value / queries.value if queries.series and queries.value > 0 else None,
        preemptions=preempt.value if preempt.series else None,
    )


def block_state(
    host: tuple[HostSample | None, HostSample | None],
    snaps: tuple[Snapshot | None, Snapshot | None],
    entry: CellEntry,
    batch_tokens: int,
    ceiling: int | None,
    steal: float | None,
) -> BlockState:
    """One block's ``state`` (module docstring): ``host`` the samples at its start and end (serve/hoststate.py),
    ``snaps`` its ``/metrics`` before and after (None where unavailable), ``entry`` its cells.jsonl line (the
    summarized gauges and server histogram deltas), ``batch_tokens`` concurrency x (1 + K), ``ceiling`` the
    capture ceiling (None: unknown or eager), ``steal`` the stolen CPU share. Every field written, null
    included."""
    return BlockState(
        gpu=_gpus(host[0].gpus if host[0] else (), host[1].gpus if host[1] else ()),
        host=HostState(loadavg_1m=host[1].loadavg_1m if host[1] else None, cpu_steal_share=steal).in_full(),
        engine=_engine(*snaps, entry),
        graphs=Graphs(
            batch_tokens=batch_tokens, ceiling=ceiling, eager=ceiling is not None and batch_tokens > ceiling
        ).in_full(),
    ).in_full()


def _gap(a: float | None, b: float | None, rel: float) -> bool:
    return a is not None and b is not None and max(a, b) > 0 and abs(a - b) / max(a, b) > rel


def _gpu_flags(a: BlockState, b: BlockState, names: tuple[str, str]) -> list[str]:
    out = []
    for ga in a.gpu:
        gb = next((g for g in b.gpu if g.index == ga.index), None)
        if gb is None:
            continue
        for key, unit in (("sm_clock_mhz", "MHz SM clock"), ("mem_clock_mhz", "MHz memory clock")):
            va, vb = getattr(ga, key), getattr(gb, key)
            if _gap(va, vb, CLOCK_GAP):
                out.append(f"GPU {ga.index} {names[0]} {va:.0f} vs {names[1]} {vb:.0f} {unit}")
        if ga.throttle_reasons != gb.throttle_reasons:
            out.append(
                f"GPU {ga.index} throttle reasons {names[0]} {list(ga.throttle_reasons) or 'none'} vs "
                f"{names[1]} {list(gb.throttle_reasons) or 'none'}"
            )
        ta, tb = ga.temperature_c, gb.temperature_c
        if ta is not None and tb is not None and abs(ta - tb) > TEMP_GAP_C:
            out.append(f"GPU {ga.index} temperature {names[0]} {ta:.0f} vs {names[1]} {tb:.0f} C")
    return out


def pair_flags(a: BlockState | None, b: BlockState | None, names: tuple[str, str]) -> list[str]:
    """The differences between two blocks' states that could move their ratio (module docstring), as phrases
    naming both values; ``names`` labels the two sides. [] when either state is missing."""
    if a is None or b is None:
        return []
    out = _gpu_flags(a, b, names)
    ha, hb = a.host or HostState(), b.host or HostState()
    la, lb = ha.loadavg_1m, hb.loadavg_1m
    if la is not None and lb is not None and abs(la - lb) > LOAD_GAP:
        out.append(f"host load average {names[0]} {la:.2f} vs {names[1]} {lb:.2f}")
    sa, sb = ha.cpu_steal_share or 0.0, hb.cpu_steal_share or 0.0
    if (sa > STEAL) != (sb > STEAL):
        out.append(f"CPU steal {names[0]} {100 * sa:.1f}% vs {names[1]} {100 * sb:.1f}%")
    ea, eb = a.engine or EngineState(), b.engine or EngineState()
    pa, pb = ea.prefix_cache_hit_share, eb.prefix_cache_hit_share
    if pa is not None and pb is not None and abs(pa - pb) > HIT_GAP:
        out.append(f"prefix-cache hit share {names[0]} {100 * pa:.0f}% vs {names[1]} {100 * pb:.0f}%")
    if bool(ea.preemptions) != bool(eb.preemptions):
        na, nb = ea.preemptions or 0, eb.preemptions or 0
        out.append(f"preemptions {names[0]} {na:.0f} vs {names[1]} {nb:.0f}")
    return out


def _eager(state: BlockState | None) -> bool:
    return state is not None and state.graphs is not None and state.graphs.eager


def _queue_notes(role: str, lines: Sequence[CellEntry]) -> list[str]:
    """A note when requests waited in the engine's queue (the sampled ``vllm:num_requests_waiting`` gauge) in
    closed-loop blocks: the engine did not batch all ``concurrency`` requests at once (KV cache full,
    preemption, ``max_num_seqs`` or a token budget below it), so queueing, not decoding, is in their TTFT."""
    waits = [
        (e, w) for e in lines if (st := e.state) is not None and st.engine is not None and (w := st.engine.waiting_max)
    ]
    if not waits or any(e.rate_rps is not None for e, _ in waits):
        return []
    most = max(w for _, w in waits)
    return [
        f"{role}: up to {most:.0f} requests waited in the engine's queue (vllm:num_requests_waiting) in "
        f"{len(waits)} of {len(lines)} blocks at concurrency {waits[0][0].concurrency}: queueing, not "
        "decoding, is part of their TTFT"
    ]


def state_notes(entries: Mapping[str, Sequence[CellEntry]]) -> list[str]:
    """Card notes for one cell from its cells.jsonl lines by role: per block, the plain block against each
    other arm's block of the same index (:func:`pair_flags`), requests waiting in an arm's queue in a
    closed-loop cell, and the speculative arm whose decode batch runs above the CUDA-graph capture ceiling where
    plain's does not."""
    out: list[str] = []
    plain = {e.repetition: e.state for e in entries.get("plain") or []}
    for role, lines in entries.items():
        if role == "plain":
            out += _queue_notes(role, lines)
            continue
        for e in lines:
            b = e.repetition
            flags = pair_flags(plain.get(b), e.state, ("plain", role))
            if flags:
                out.append(f"block {b}: the state differs between plain and {role}: {'; '.join(flags)}")
        out += _queue_notes(role, lines)
        g = next(
            (
                st.graphs
                for e in lines
                if (st := e.state) is not None and st.graphs and st.graphs.eager and not _eager(plain.get(e.repetition))
            ),
            None,
        )
        if not speculates(role):
            g = None
        if g is not None:
            out.append(
                f"{role}: decode batch {g.batch_tokens} tokens (concurrency x (1 + K)) is above the "
                f"CUDA-graph capture ceiling {g.ceiling}: these steps run eager (that can fake a crossover)"
            )
    return out
