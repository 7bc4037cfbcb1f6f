"""The measured cause of a cell's result, from the server's configuration and the state beside its blocks (pure;
docs/metrics.md "Causes named on the card").

Inputs: each server's configuration facts (records/serverfacts.py, ``server_facts`` of its effective record), the
cell's ``cells.jsonl`` lines per role (one per block: spec-decode counters, gauges, ``state``), its ratios, and the
servers' KV-cache capacity (``kv_cache_tokens`` of their resources). Each note names the numbers it rests on:

- **level above max-num-seqs**: a closed-loop level above a server's ``max_num_seqs`` runs at most that many
  requests at once; the running batch (mean and max of the sampled ``vllm:num_requests_running``) is shown beside
  the nominal concurrency.
- **K schedule under data parallelism**: a declared ``num_speculative_tokens_per_batch_size`` on a speculative
  server with ``data_parallel_size`` above 1 did not apply; the measured verified tokens per step is shown.
- **preemptions after lost KV capacity**: the speculative server preempted more than the plain one while holding
  :data:`KV_LOSS` or more less KV cache (the draft's weights and cache come out of the same memory budget).
- **cache-hit asymmetry**: prefix-cache hit shares more than :data:`HIT_ASYMMETRY` apart: the TTFT ratio
  measures the cache, not speculation.
- **stream interval**: a server streaming several tokens a chunk (``stream_interval`` above 1) without
  speculation: its inter-chunk figures span several steps.
- **multiprocess metrics**: ``/metrics`` answered in every block without ``process_start_time_seconds``: the
  restart and replica checks by process start time were unavailable.
- **acceptance trend**: per-block acceptance that rises (a warming proposer: the pooled acceptance mixes warm-up
  with steady state, with the warm-up advice) or falls block by block, the last at least :data:`WARMING` times
  the first or the first that much above the last.
- **abnormal step**: measure/stepcause.py.

:func:`regression_causes` returns the notes and whether any names a cause of a regression (TPOT or TTFT ratio
above 1), so the card's generic hint ("check draft and verification cost") stays only where none does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise

from loadgen.profile.pair import k_at
from loadgen.records.cell import CellEntry
from loadgen.records.protocol import ProtocolCell
from loadgen.records.serverfacts import ServerFacts, ServerView
from loadgen.records.speculative import SpeculativeConfig

KV_LOSS, HIT_ASYMMETRY, WARMING = 0.10, 0.25, 1.5
#: The card's generic hint, kept only when no measured cause is named.
GENERIC_HINT = "acceptance good but latency worse: check draft and verification cost"
#: The schedule note's opening, and the words of counterchecks.depth_note it makes untrue (dropped beside it).
SCHEDULE_OFF, BY_DESIGN = "speculative: the K schedule", "fewer than K per step is by design"


def kv_loss_of(servers: Mapping[str, ServerView]) -> float | None:
    """The speculative server's KV-cache capacity lost, a share of the plain server's (as serve/resources.py
    ``difference`` computes it); None when either is unknown."""
    plain, spec = (servers.get(r, ServerView()).kv_cache_tokens for r in ("plain", "speculative"))
    return (plain - spec) / plain if plain and spec is not None else None


def _engine(entry: CellEntry, key: str) -> float | None:
    engine = entry.state.engine if entry.state is not None else None
    value = None if engine is None else getattr(engine, key)
    return None if value is None else float(value)


def _gauge(lines: Sequence[CellEntry], name: str, stat: str) -> float | None:
    vals = [
        float(v) for e in lines if (g := (e.gauges or {}).get(name)) is not None and (v := getattr(g, stat)) is not None
    ]
    if not vals:
        return None
    return max(vals) if stat == "max" else sum(vals) / len(vals)


def batch_notes(
    concurrency: int, closed: bool, facts: Mapping[str, ServerFacts], lines: Mapping[str, Sequence[CellEntry]]
) -> list[str]:
    """A note per server whose ``max_num_seqs`` is below the closed-loop ``concurrency``: the level, the limit and
    where it was read, and the running batch measured beside the nominal one."""
    out = []
    for role, f in facts.items():
        if not closed or f.max_num_seqs is None or concurrency <= f.max_num_seqs:
            continue
        mean, most = (_gauge(lines.get(role) or (), "vllm:num_requests_running", s) for s in ("mean", "max"))
        running = (
            f"running batch {mean:.1f} (max {most:.0f}, vllm:num_requests_running) beside the nominal {concurrency}"
            if mean is not None and most is not None
            else f"running batch not measured (no /metrics), at most {f.max_num_seqs} beside the nominal {concurrency}"
        )
        out.append(
            f"{role}: concurrency {concurrency} is above its max-num-seqs {f.max_num_seqs} "
            f"({f.source.get('max_num_seqs', 'server')}): at most {f.max_num_seqs} requests ran at once, the rest "
            f"queued; {running}; queueing above max-num-seqs, not decoding, is in the TTFT and E2E ratios"
        )
    return out


def schedule_note(
    spec_config: SpeculativeConfig, facts: ServerFacts, lines: Sequence[CellEntry], concurrency: int
) -> str | None:
    """The note that a declared K schedule did not apply under data parallelism (module docstring), with the
    K the schedule gives at ``concurrency`` and the verified tokens per step measured; None otherwise."""
    dp = facts.data_parallel_size
    if not spec_config.num_speculative_tokens_per_batch_size or dp is None or dp <= 1:
        return None
    drafts = sum(e.spec_decode.value("num_drafts") for e in lines if e.spec_decode)
    tokens = sum(e.spec_decode.value("num_draft_tokens") for e in lines if e.spec_decode)
    measured = f"; measured {tokens / drafts:.2f} draft tokens per verify step" if drafts > 0 else ""
    return (
        f"speculative: the K schedule (num_speculative_tokens_per_batch_size) did not apply: the server runs "
        f"data-parallel size {dp} ({facts.source.get('data_parallel_size', 'server')}), under which vLLM keeps "
        f"K = num_speculative_tokens = {spec_config.num_speculative_tokens} (the schedule gives K = "
        f"{k_at(spec_config, max(concurrency, 1))} at concurrency {concurrency}){measured}; measure the schedule "
        "with one data-parallel rank per server"
    )


def stream_notes(facts: Mapping[str, ServerFacts]) -> list[str]:
    """A note per server with a stream interval above 1: its chunks hold up to that many tokens without
    speculation, so its inter-chunk latency and client step time span several engine steps."""
    return [
        f"{role}: stream interval {f.stream_interval} ({f.source.get('stream_interval', 'server')}): a chunk holds up "
        f"to {f.stream_interval} tokens without speculation, so inter-chunk latency and the client's step time span "
        "several engine steps; TPOT and token counts are per token (token_ids) and stay comparable"
        for role, f in facts.items()
        if f.stream_interval is not None and f.stream_interval > 1
    ]


def multiprocess_notes(lines: Mapping[str, Sequence[CellEntry]]) -> list[str]:
    """A note per server whose ``/metrics`` answered in every block (gauges sampled, no metrics error) but never
    with ``process_start_time_seconds``: Prometheus multiprocess mode (vLLM with more than one API server,
    ``vllm/entrypoints/cli/serve.py``) drops the process collector, so the restart check and the replica check
    (measure/replicas.py) by process start time were unavailable there."""
    return [
        f"{role}: /metrics has no process_start_time_seconds (Prometheus multiprocess mode, as with "
        "--api-server-count above 1): unavailable were the restart check and the replica check by process start "
        "time; counter resets still count as restart evidence, and replicas are still told by counters that go "
        "back and forth and by the answers' system_fingerprint"
        for role, es in lines.items()
        if es and all(e.metrics_error is None and e.gauges and not any(e.process_start_time_s or ()) for e in es)
    ]


def acceptance_by_block(lines: Sequence[CellEntry]) -> list[float]:
    """Per block (``repetition`` order) the acceptance rate Δaccepted / Δdraft tokens of its spec-decode counters
    (blocks without draft tokens left out)."""
    out = []
    for e in sorted(lines, key=lambda x: x.repetition):
        sd = e.spec_decode
        if sd is not None and (tokens := sd.value("num_draft_tokens")) > 0:
            out.append(sd.value("num_accepted_tokens") / tokens)
    return out


def _trend(rates: Sequence[float]) -> str | None:
    """``rose`` or ``fell`` when ``rates`` (at least 3) move one way at every step and the last is at least
    :data:`WARMING` x the first (or the first that much above the last); None otherwise."""
    if len(rates) < 3 or rates[0] == rates[-1]:
        return None
    if all(b >= a for a, b in pairwise(rates)) and rates[-1] >= WARMING * rates[0]:
        return "rose"
    if all(b <= a for a, b in pairwise(rates)) and rates[0] >= WARMING * rates[-1]:
        return "fell"
    return None


def warming_note(lines: Sequence[CellEntry], method: str | None) -> str | None:
    """The per-block acceptance when it trends either way (:func:`_trend`: at least 3 blocks, one way at every
    block, the last at least :data:`WARMING` x the first or the first that much above the last), with what it
    means and the advice; None otherwise."""
    rates = acceptance_by_block(lines)
    way = _trend(rates)
    if way is None:
        return None
    shown = ", ".join(f"{r:.2f}" for r in rates)
    if way == "fell":
        return (
            f"speculative: acceptance fell block by block ({shown}): the blocks send other prompts of the same kind, "
            "so something changed on the server between them (look at the state beside each block: KV-cache use, "
            "preemptions, the host); the pooled acceptance and speedup mix the blocks, read them apart"
        )
    why = " (suffix decoding's cache fills with the outputs it has seen)" if method == "suffix" else ""
    return (
        f"speculative: acceptance rose block by block ({shown}): the proposer was warming{why}, so the pooled "
        "acceptance and speedup mix warm-up with steady state; run an unmeasured warm-up pass over the workload's "
        "prompts on every arm first ([design].warmup_pass = true), and reset an attached server's prefix cache "
        "(POST /reset_prefix_cache, served with VLLM_SERVER_DEV_MODE=1), then read the later blocks"
    )


def _preemption_note(lines: Mapping[str, Sequence[CellEntry]], kv_loss: float | None) -> str | None:
    plain = sum(_engine(e, "preemptions") or 0 for e in lines.get("plain") or ())
    spec = sum(_engine(e, "preemptions") or 0 for e in lines.get("speculative") or ())
    if spec <= plain or kv_loss is None or kv_loss < KV_LOSS:
        return None
    return (
        f"cause: the speculative server preempted {spec:.0f} times (plain {plain:.0f}) after losing "
        f"{100 * kv_loss:.0f}% of its KV-cache capacity to the draft: preempted requests are recomputed, and that, "
        "not the draft's step cost, is what regressed here; give the speculative server more KV cache "
        "(--gpu-memory-utilization, --kv-cache-memory-bytes) or measure below this level"
    )


def _cache_note(lines: Mapping[str, Sequence[CellEntry]], ttft_ratio: float | None) -> str | None:
    shares = {}
    for role in ("plain", "speculative"):
        vals = [v for e in lines.get(role) or () if (v := _engine(e, "prefix_cache_hit_share")) is not None]
        if vals:
            shares[role] = sum(vals) / len(vals)
    if len(shares) < 2 or abs(shares["plain"] - shares["speculative"]) <= HIT_ASYMMETRY:
        return None
    ratio = f"the TTFT ratio {ttft_ratio:.2f} measures" if ttft_ratio is not None else "TTFT measures"
    return (
        f"cause: prefix-cache hit share plain {100 * shares['plain']:.0f}% vs speculative "
        f"{100 * shares['speculative']:.0f}%: {ratio} the cache, not speculation (one server had seen these prompts "
        "before); reset both caches before measuring (POST /reset_prefix_cache, served with VLLM_SERVER_DEV_MODE=1) "
        "or give each cell its own cache_salt, as launched runs do"
    )


def regression_causes(
    lines: Mapping[str, Sequence[CellEntry]],
    facts: Mapping[str, ServerFacts],
    ratios: Mapping[str, float | None],
    kv_loss: float | None,
    where: tuple[int, bool],
    spec_config: SpeculativeConfig,
) -> tuple[list[str], bool]:
    """The cell's cause notes (module docstring) and whether one names the cause of a regression. ``lines``:
    role -> its cells.jsonl lines of the cell; ``facts``: role -> its configuration facts; ``ratios``: ``tpot_p50``
    and ``ttft_p50`` speculative / plain (None: not measured); ``kv_loss``: the speculative server's KV-cache
    capacity lost, a share of the plain one's; ``where``: (concurrency, closed loop)."""
    concurrency, closed = where
    regressed = any((r or 0) > 1.0 for r in ratios.values())
    batch = batch_notes(concurrency, closed, facts, lines)
    causes = [
        n
        for n in (_preemption_note(lines, kv_loss), _cache_note(lines, ratios.get("ttft_p50")))
        if n is not None and regressed
    ]
    spec_lines = lines.get("speculative") or ()
    context = [
        n
        for n in (
            schedule_note(spec_config, facts.get("speculative") or ServerFacts(), spec_lines, concurrency),
            warming_note(spec_lines, spec_config.method),
        )
        if n is not None
    ]
    warming = any("warming" in n for n in context)
    named = regressed and bool(causes or batch or warming)
    return [*batch, *causes, *context, *stream_notes(facts), *multiprocess_notes(lines)], named


def cause_notes(
    notes: Sequence[str],
    servers: Mapping[str, ServerView],
    lines: Mapping[str, Sequence[CellEntry]],
    ratios: Mapping[str, object],
    planned: ProtocolCell,
    spec_config: SpeculativeConfig,
) -> list[str]:
    """A card cell's ``notes`` with :func:`regression_causes` appended and :data:`GENERIC_HINT` removed where a
    cause is named, and counterchecks' "fewer than K per step is by design" where the K schedule did not apply:
    ``servers`` the card's servers (effective records, resources), ``lines`` role -> the cell's
    cells.jsonl lines, ``ratios`` the cell's ``Ratio`` records by statistic, ``planned`` its protocol cell,
    ``spec_config`` the run's speculative config."""
    values = {k: getattr(ratios.get(k), "value", None) for k in ("tpot_p50", "ttft_p50")}
    found, named = regression_causes(
        lines,
        {r: servers.get(r, ServerView()).facts for r in ("plain", "speculative")},
        values,
        kv_loss_of(servers),
        (planned.concurrency, planned.rate_rps is None),
        spec_config,
    )
    unscheduled = any(n.startswith(SCHEDULE_OFF) for n in found)  # then K did not vary by design
    return [n for n in notes if not (named and n == GENERIC_HINT) and not (unscheduled and BY_DESIGN in n)] + found
