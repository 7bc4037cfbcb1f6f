"""Step time per server that bursty delivery cannot fool, and the burst check itself (pure).

Under load a stream's chunks can reach the client back to back: several engine steps' SSE events read
in one socket read (the client's event loop, or its machine, was busy) or flushed together. The median
inter-chunk latency then falls to the client's own per-event cost (0.03-0.05 ms on the H200 example
cards, docs/examples/h200/README.md) and stops measuring anything about the engine. Bursts move time
between gaps but do not change their sum, so the estimates here use sums, not medians of gaps:

- **server** (used when present): the mean of vLLM's ``vllm:inter_token_latency_seconds`` over the cell
  (histogram sum / count). vLLM observes it once per engine output of a request, as the difference of the
  engine core's own timestamps of consecutive outputs (``IterationStats.update_from_output``,
  ``vllm/v1/metrics/stats.py``): one observation per step that emitted tokens (several tokens with
  speculation), untouched by the API server's or the client's delays.
- **client**: per request, decode time / decode chunks = (E2E latency - TTFT) / (token-bearing chunks - 1),
  the median over requests; from saved statistics alone (no requests.jsonl) the pooled form, the mean
  inter-chunk latency (sum of every request's decode time / number of gaps). With one chunk per engine
  step this is the step time; where the server merged steps into one chunk it is the time per chunk.

**Bursts**: the share of inter-chunk gaps under :data:`BURST_GAP_S` per cell and role. A p50 of the ITL or
inter-chunk latency under :data:`BURST_GAP_S` is a burst artefact (no engine step is that short): ratios
built on it are withheld with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from loadgen.measure.diagnosis import cost_decomposition
from loadgen.profile.cells import ROLES
from loadgen.records.cardcell import CardCell, Cost, Distribution, Ratio, RoleStats, StepTime
from loadgen.records.cell import CellEntry

#: Inter-chunk gaps shorter than this (s) are back-to-back delivery, not engine steps.
BURST_GAP_S = 1e-4
#: A cell and role with at least this share of its gaps under BURST_GAP_S gets a note.
BURST_NOTE_SHARE = 0.1
SERVER_STEP_METRIC = "icl_s"  # scrape.SERVER_HISTOGRAMS key of vllm:inter_token_latency_seconds


def decode_time_per_chunk(arrivals_s: Sequence[float]) -> float | None:
    """(last - first token-bearing chunk arrival) / (chunks - 1) of one request (s); None under 2 chunks."""
    if len(arrivals_s) < 2:
        return None
    return (arrivals_s[-1] - arrivals_s[0]) / (len(arrivals_s) - 1)


def client_step_s(requests: Sequence[Sequence[float]]) -> float | None:
    """Median over requests of :func:`decode_time_per_chunk` (s); None when no request has 2 chunks."""
    values = [v for a in requests if (v := decode_time_per_chunk(a)) is not None]
    return float(np.median(values)) if values else None


def burst_share(requests: Sequence[Sequence[float]]) -> float | None:
    """Share of all inter-chunk gaps (every request's consecutive arrivals, s) under BURST_GAP_S."""
    gaps = np.concatenate([np.diff(np.asarray(a, dtype=float)) for a in requests if len(a) > 1] or [np.empty(0)])
    return float((gaps < BURST_GAP_S).mean()) if gaps.size else None


def server_step_s(entry: CellEntry | None) -> float | None:
    """Mean of the server's per-step histogram in ``entry``'s ``server_histograms`` (sum / count, s), None
    without the entry or without observations."""
    h = None if entry is None else entry.server_histograms.get(SERVER_STEP_METRIC)
    return float(h.sum) / float(h.count) if h is not None and h.count else None


def role_steps(side: RoleStats, requests: Sequence[Sequence[float]] | None, entry: CellEntry | None) -> StepTime:
    """Step-time estimates and burst check of one role of a cell (``side``: its card statistics;
    ``requests``: each measured request's chunk arrivals, or None when only saved statistics exist: then
    a client step time and burst share that ``side.step_time`` holds from the requests are kept, else
    the pooled mean inter-chunk latency stands in; ``entry``: the cell's cells.jsonl line)."""
    icl, itl, saved = side.icl_s, side.itl_s, side.step_time
    if requests is not None:
        client, basis, share = client_step_s(requests), "median over requests", burst_share(requests)
    elif saved is not None and saved.client_basis == "median over requests":
        client, basis, share = saved.client_step_s, saved.client_basis, saved.burst_share
    else:
        client, basis, share = None if icl is None else icl.mean, "pooled (mean inter-chunk latency)", None
    server = server_step_s(entry)
    artefact = tuple(
        name
        for name, d in (("ITL", itl), ("inter-chunk latency", icl))
        if d is not None and d.p50 is not None and d.p50 < BURST_GAP_S
    )
    return StepTime(
        server_step_s=server,
        client_step_s=client,
        client_basis=basis,
        step_s=server if server else client,
        source="server" if server else "client",
        burst_share=share,
        icl_p50_s=None if icl is None else icl.p50,
        burst_artefacts=artefact,
    )


def _note(role: str, steps: StepTime, client_cores: float | None) -> str | None:
    share, artefacts = steps.burst_share, steps.burst_artefacts
    if not artefacts and (share is None or share < BURST_NOTE_SHARE):
        return None
    samples = "inter-chunk gaps" if "inter-chunk latency" in artefacts else "per-token ITL samples"
    what = (
        f"{100 * share:.0f}% of inter-chunk gaps under 0.1 ms"
        if share is not None
        else f"over half of the {samples} under 0.1 ms (the share itself needs requests.jsonl)"
    )
    p50 = steps.icl_p50_s
    tail = (
        f"; a p50 under 0.1 ms ({' and '.join(artefacts)}; inter-chunk p50 {p50 * 1e3:.2f} ms) is a burst "
        "artefact: ITL p50 ratio withheld"
        if artefacts and p50 is not None
        else ""
    )
    cpu = f"; loadgen's client used {client_cores:.2f} cores" if client_cores is not None else ""
    source = "the server histogram" if steps.source == "server" else "decode time per chunk"
    return (
        f"{role}: bursty delivery: {what} (chunks of several engine steps arrived back to back){cpu}{tail}; "
        f"step time from {source}" + (f": {steps.step_s * 1e3:.2f} ms" if steps.step_s else "")
    )


def apply(
    cell: CardCell, requests: Mapping[str, Sequence[Sequence[float]]] | None, entries: Mapping[str, CellEntry]
) -> CardCell:
    """``cell`` with ``step_time`` on each of its roles, its ``cost`` from those step times
    (diagnosis.cost_decomposition), the ITL p50 ratio withheld when either p50 is a burst artefact, and one
    note per bursty role appended. ``requests`` maps role -> chunk arrivals (s) per measured request
    (None: only saved statistics); ``entries`` role -> the cell's cells.jsonl line (``server_histograms``,
    ``client.cpu_cores``)."""
    steps: dict[str, StepTime] = {}
    sides: dict[str, RoleStats] = {}
    notes = list(cell.notes)
    for role in ROLES:
        if (side := cell.role(role)) is not None:
            entry = entries.get(role)
            steps[role] = role_steps(side, None if requests is None else requests.get(role, []), entry)
            sides[role] = replace(side, step_time=steps[role])
            cores = None if entry is None or entry.client is None else entry.client.cpu_cores
            if (note := _note(role, steps[role], cores)) is not None:
                notes.append(note)
    cell = replace(
        cell,
        plain=sides.get("plain", cell.plain),
        speculative=sides.get("speculative", cell.speculative),
        notes=tuple(notes),
    )
    if len(steps) < 2:
        return cell
    return _cost(cell, steps)


def _cost(cell: CardCell, steps: Mapping[str, StepTime]) -> CardCell:
    """``cell`` with its cost decomposition and, where a p50 is a burst artefact, its ITL p50 ratio withheld."""
    p, s = sides_of(cell)
    acc = None if s.acceptance is None else s.acceptance.mean_acceptance_length
    source = "server" if steps["plain"].source == steps["speculative"].source == "server" else "client"
    step = {role: getattr(steps[role], f"{source}_step_s") for role in ROLES}
    if any(v is not None and v < BURST_GAP_S for v in step.values()):
        return replace(cell, cost=Cost(unavailable="a step time under 0.1 ms is a burst artefact", step_source=source))
    decomposed = cost_decomposition(
        step["plain"], step["speculative"], acc, _p50(p.tpot_s), _p50(s.tpot_s), s.mean_tokens_per_decode_chunk
    )
    cell = replace(cell, cost=replace(decomposed, step_source=source, client_basis=steps["plain"].client_basis))
    artefacts = {role: steps[role].burst_artefacts for role in ROLES if steps[role].burst_artefacts}
    if not artefacts or "itl_p50" not in cell.ratios:
        return cell
    why = "; ".join(f"{role} {' and '.join(a)} p50 under 0.1 ms" for role, a in artefacts.items())
    withheld = Ratio(value=None, ci_low=None, ci_high=None, pairs=0, unavailable=f"burst artefact ({why})")
    withheld = withheld.keyed("value", "ci_low", "ci_high", "pairs", "unavailable")
    return replace(cell, ratios={**cell.ratios, "itl_p50": withheld})


def sides_of(cell: CardCell) -> tuple[RoleStats, RoleStats]:
    """The plain and speculative statistics of a cell both servers measured (ValueError otherwise)."""
    if cell.plain is None or cell.speculative is None:
        raise ValueError(f"cell {cell.workload} {cell.level} lacks a server's statistics")
    return cell.plain, cell.speculative


def _p50(d: Distribution | None) -> float | None:
    return None if d is None else d.p50
