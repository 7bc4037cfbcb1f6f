"""The cells of a ``trace`` workload (profile/trace.py): the trace replayed open loop at its recorded offsets.

Every block of a trace workload sends the whole trace (its requests in timestamp order, prompts of exact
length, hash blocks shared as the trace says), identical on every arm and sweep candidate; the arrival
schedule is the trace's own offsets times ``time_scale``, first = 0. The cell's level is open loop at the
trace's mean rate (requests / span, labelled ``r<rate>``) capped at ``[run].max_concurrency`` in flight;
the pair's other levels do not apply to it. No warmup: a warmup request would fill the prefix cache the
trace's first requests should find cold. ``[stop].duration_s``, when declared, cuts the replay there.
"""

from __future__ import annotations

from tokenizers import Tokenizer

from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level, Pair
from loadgen.profile.workload import Prompt, Workload
from loadgen.profile.workloadset import replay_trace


def trace_level(offsets_s: tuple[float, ...], max_concurrency: int) -> Level:
    """The open-loop level of a replay: its mean rate, requests / span of the offsets (s), to 3 decimals (the
    request count itself for a replay of one instant), capped at ``max_concurrency``."""
    span = offsets_s[-1] - offsets_s[0] if offsets_s else 0.0
    rate = len(offsets_s) / span if span > 0 else float(max(len(offsets_s), 1))
    return Level(max_concurrency, round(rate, 3))


def trace_cells(pair: Pair, workload: Workload, tokenizer: Tokenizer) -> list[CellSpec]:
    """``pair.planned_blocks`` cells of the trace ``workload``, each the whole replay (module docstring)."""
    requests, _ = replay_trace(workload, tokenizer)
    prompts = tuple(
        Prompt(
            f"{workload.name}-{i:05d}-line{r.line}",
            workload.name,
            workload.endpoint,
            r.text,
            r.messages,
            r.output_tokens,
        )
        for i, r in enumerate(requests)
    )
    arrivals = tuple(r.offset_s - requests[0].offset_s for r in requests)
    level = trace_level(arrivals, pair.load.max_concurrency)
    return [
        CellSpec(workload.name, workload.endpoint, level, rep, (), prompts, (), arrivals)
        for rep in range(pair.planned_blocks)
    ]
