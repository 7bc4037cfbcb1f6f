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
from typing import Any

from loadgen.profile.cells import speculates
from loadgen.prom.deltas import counter_delta
from loadgen.prom.exposition import Snapshot
from loadgen.records.cell import CellEntry

CLOCK_GAP, TEMP_GAP_C, LOAD_GAP, STEAL, HIT_GAP = 0.05, 10.0, 1.0, 0.02, 0.05
_HITS, _QUERIES, _PREEMPT = "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", \
    "vllm:num_preemptions_total"


def _mean(a: Any, b: Any) -> float | None:
    vals = [float(x) for x in (a, b) if isinstance(x, int | float)]
    return sum(vals) / len(vals) if vals else None


def _gpus(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for a in after:
        b = next((g for g in before if g.get("index") == a.get("index")), {})
        reasons = sorted({*(a.get("throttle_reasons") or []), *(b.get("throttle_reasons") or [])} - {"gpu_idle"})
        out.append({"index": a.get("index"), **{k: _mean(b.get(k), a.get(k)) for k in
                                                ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c")},
                    "throttle_reasons": reasons})
    return out


def _engine(before: Snapshot | None, after: Snapshot | None, gauges: Mapping[str, Any],
            histograms: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"prefix_cache_hit_share": None, "preemptions": None,
                           "step_time_s": (histograms.get("icl_s") or {}).get("mean"),
                           "waiting_max": (gauges.get("vllm:num_requests_waiting") or {}).get("max")}
    if before is None or after is None:
        return out
    queries, hits = counter_delta(before, after, _QUERIES), counter_delta(before, after, _HITS)
    if queries.series and queries.value > 0:
        out["prefix_cache_hit_share"] = hits.value / queries.value
    preempt = counter_delta(before, after, _PREEMPT)
    out["preemptions"] = preempt.value if preempt.series else None
    return out


def block_state(host: tuple[Mapping[str, Any], Mapping[str, Any]], snaps: tuple[Snapshot | None, Snapshot | None],
                gauges: Mapping[str, Any], histograms: Mapping[str, Any], batch_tokens: int,
                ceiling: int | None, steal: float | None) -> dict[str, Any]:
    """One block's ``state`` (module docstring): ``host`` the samples at its start and end, ``snaps`` its
    ``/metrics`` before and after (None where unavailable), ``gauges`` the summarized gauges, ``histograms``
    its server histogram deltas, ``batch_tokens`` concurrency x (1 + K), ``ceiling`` the capture ceiling (None:
    unknown or eager), ``steal`` the stolen CPU share."""
    return {"gpu": _gpus(host[0].get("gpus") or [], host[1].get("gpus") or []),
            "host": {"loadavg_1m": host[1].get("loadavg_1m"), "cpu_steal_share": steal},
            "engine": _engine(*snaps, gauges, histograms),
            "graphs": {"batch_tokens": batch_tokens, "ceiling": ceiling,
                       "eager": ceiling is not None and batch_tokens > ceiling}}


def _gap(a: float | None, b: float | None, rel: float) -> bool:
    return a is not None and b is not None and max(a, b) > 0 and abs(a - b) / max(a, b) > rel


def pair_flags(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, names: tuple[str, str]) -> list[str]:
    """The differences between two blocks' states that could move their ratio (module docstring), as phrases
    naming both values; ``names`` labels the two sides. [] when either state is missing."""
    if not a or not b:
        return []
    out = []
    for ga in a.get("gpu") or []:
        gb = next((g for g in b.get("gpu") or [] if g.get("index") == ga.get("index")), None)
        if gb is None:
            continue
        for key, unit in (("sm_clock_mhz", "MHz SM clock"), ("mem_clock_mhz", "MHz memory clock")):
            if _gap(ga.get(key), gb.get(key), CLOCK_GAP):
                out.append(f"GPU {ga['index']} {names[0]} {ga[key]:.0f} vs {names[1]} {gb[key]:.0f} {unit}")
        if ga.get("throttle_reasons") != gb.get("throttle_reasons"):
            out.append(f"GPU {ga['index']} throttle reasons {names[0]} {ga.get('throttle_reasons') or 'none'} vs "
                       f"{names[1]} {gb.get('throttle_reasons') or 'none'}")
        ta, tb = ga.get("temperature_c"), gb.get("temperature_c")
        if ta is not None and tb is not None and abs(ta - tb) > TEMP_GAP_C:
            out.append(f"GPU {ga['index']} temperature {names[0]} {ta:.0f} vs {names[1]} {tb:.0f} C")
    ha, hb = a.get("host") or {}, b.get("host") or {}
    la, lb = ha.get("loadavg_1m"), hb.get("loadavg_1m")
    if la is not None and lb is not None and abs(la - lb) > LOAD_GAP:
        out.append(f"host load average {names[0]} {la:.2f} vs {names[1]} {lb:.2f}")
    sa, sb = ha.get("cpu_steal_share") or 0.0, hb.get("cpu_steal_share") or 0.0
    if (sa > STEAL) != (sb > STEAL):
        out.append(f"CPU steal {names[0]} {100 * sa:.1f}% vs {names[1]} {100 * sb:.1f}%")
    ea, eb = a.get("engine") or {}, b.get("engine") or {}
    pa, pb = ea.get("prefix_cache_hit_share"), eb.get("prefix_cache_hit_share")
    if pa is not None and pb is not None and abs(pa - pb) > HIT_GAP:
        out.append(f"prefix-cache hit share {names[0]} {100 * pa:.0f}% vs {names[1]} {100 * pb:.0f}%")
    if bool(ea.get("preemptions")) != bool(eb.get("preemptions")):
        na, nb = ea.get("preemptions") or 0, eb.get("preemptions") or 0
        out.append(f"preemptions {names[0]} {na:.0f} vs {names[1]} {nb:.0f}")
    return out


def _queue_notes(role: str, lines: Sequence[CellEntry]) -> list[str]:
    """A note when requests waited in the engine's queue (the sampled ``vllm:num_requests_waiting`` gauge) in
    closed-loop blocks: the engine did not batch all ``concurrency`` requests at once (KV cache full,
    preemption, ``max_num_seqs`` or a token budget below it), so queueing, not decoding, is in their TTFT."""
    waits = [(e, w) for e in lines if (w := ((e.state or {}).get("engine") or {}).get("waiting_max"))]
    if not waits or any(e.rate_rps is not None for e, _ in waits):
        return []
    most = max(w for _, w in waits)
    return [f"{role}: up to {most:.0f} requests waited in the engine's queue (vllm:num_requests_waiting) in "
            f"{len(waits)} of {len(lines)} blocks at concurrency {waits[0][0].concurrency}: queueing, not "
            "decoding, is part of their TTFT"]


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
        g = next((e.state["graphs"] for e in lines if e.state and e.state.get("graphs", {}).get("eager")
                  and not ((plain.get(e.repetition) or {}).get("graphs") or {}).get("eager")), None)
        if not speculates(role):
            g = None
        if g is not None:
            out.append(f"{role}: decode batch {g['batch_tokens']} tokens (concurrency x (1 + K)) is above the "
                       f"CUDA-graph capture ceiling {g['ceiling']}: these steps run eager (that can fake a crossover)")
    return out
