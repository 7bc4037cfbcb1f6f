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
from typing import Any

import numpy as np

from loadgen.measure.diagnosis import cost_decomposition
from loadgen.profile.cells import ROLES
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


def server_step_s(histograms: Mapping[str, Any] | None) -> float | None:
    """Mean of the server's per-step histogram (sum / count, s), None without observations."""
    h = (histograms or {}).get(SERVER_STEP_METRIC)
    return float(h["sum"]) / float(h["count"]) if h and h.get("count") else None


def role_steps(side: Mapping[str, Any], requests: Sequence[Sequence[float]] | None,
               histograms: Mapping[str, Any] | None) -> dict[str, Any]:
    """Step-time estimates and burst check of one role of a cell (``side``: its card statistics;
    ``requests``: each measured request's chunk arrivals, or None when only saved statistics exist: then
    a client step time and burst share that ``side["step_time"]`` holds from the requests are kept, else
    the pooled mean inter-chunk latency stands in)."""
    icl, itl = side.get("icl_s") or {}, side.get("itl_s") or {}
    saved = side.get("step_time") or {}
    if requests is not None:
        client, basis, share = client_step_s(requests), "median over requests", burst_share(requests)
    elif saved.get("client_basis") == "median over requests":
        client, basis, share = saved.get("client_step_s"), saved["client_basis"], saved.get("burst_share")
    else:
        client, basis, share = icl.get("mean"), "pooled (mean inter-chunk latency)", None
    server = server_step_s(histograms)
    artefact = [name for name, d in (("ITL", itl), ("inter-chunk latency", icl))
                if d.get("p50") is not None and d["p50"] < BURST_GAP_S]
    return {"server_step_s": server, "client_step_s": client, "client_basis": basis,
            "step_s": server if server else client, "source": "server" if server else "client",
            "burst_share": share, "icl_p50_s": icl.get("p50"), "burst_artefacts": artefact}


def _note(role: str, steps: Mapping[str, Any], client_cores: float | None) -> str | None:
    share, artefacts = steps.get("burst_share"), steps.get("burst_artefacts") or []
    if not artefacts and (share is None or share < BURST_NOTE_SHARE):
        return None
    samples = "inter-chunk gaps" if "inter-chunk latency" in artefacts else "per-token ITL samples"
    what = (f"{100 * share:.0f}% of inter-chunk gaps under 0.1 ms" if share is not None else
            f"over half of the {samples} under 0.1 ms (the share itself needs requests.jsonl)")
    p50 = steps.get("icl_p50_s")
    tail = (f"; a p50 under 0.1 ms ({' and '.join(artefacts)}; inter-chunk p50 {p50 * 1e3:.2f} ms) is a burst "
            "artefact: ITL p50 ratio withheld" if artefacts and p50 is not None else "")
    cpu = f"; loadgen's client used {client_cores:.2f} cores" if client_cores is not None else ""
    source = "the server histogram" if steps["source"] == "server" else "decode time per chunk"
    return (f"{role}: bursty delivery: {what} (chunks of several engine steps arrived back to back){cpu}{tail}; "
            f"step time from {source}" + (f": {steps['step_s'] * 1e3:.2f} ms" if steps.get("step_s") else ""))


def apply(cell: dict[str, Any], requests: Mapping[str, Sequence[Sequence[float]]] | None,
          entries: Mapping[str, CellEntry]) -> None:
    """Add ``step_time`` to each role of ``cell`` (a card cell dict), set its ``cost`` from those step
    times (diagnosis.cost_decomposition), withhold the ITL p50 ratio when either p50 is a burst artefact,
    and append one note per bursty role. ``requests`` maps role -> chunk arrivals (s) per measured request
    (None: only saved statistics); ``entries`` role -> the cell's cells.jsonl line (``server_histograms``,
    ``client.cpu_cores``)."""
    steps: dict[str, dict[str, Any]] = {}
    for role in ROLES:
        if cell.get(role):
            entry = entries.get(role)
            steps[role] = role_steps(cell[role], None if requests is None else requests.get(role, []),
                                     None if entry is None else entry.server_histograms)
            cell[role]["step_time"] = steps[role]
            cores = None if entry is None else entry.client.get("cpu_cores")
            if (note := _note(role, steps[role], cores)) is not None:
                cell.setdefault("notes", []).append(note)
    if len(steps) < 2:
        return
    p, s = cell["plain"], cell["speculative"]
    acc = (s.get("acceptance") or {}).get("mean_acceptance_length")
    source = "server" if steps["plain"]["source"] == steps["speculative"]["source"] == "server" else "client"
    step = {role: steps[role][f"{source}_step_s"] for role in ROLES}
    if any(v is not None and v < BURST_GAP_S for v in step.values()):
        cell["cost"] = {"unavailable": "a step time under 0.1 ms is a burst artefact", "step_source": source}
        return
    cell["cost"] = cost_decomposition(step["plain"], step["speculative"], acc, p["tpot_s"]["p50"],
                                      s["tpot_s"]["p50"], s.get("mean_tokens_per_decode_chunk")) | {
        "step_source": source, "client_basis": steps["plain"]["client_basis"]}
    artefacts = {role: steps[role]["burst_artefacts"] for role in ROLES if steps[role]["burst_artefacts"]}
    if artefacts and "itl_p50" in cell.get("ratios", {}):
        why = "; ".join(f"{role} {' and '.join(a)} p50 under 0.1 ms" for role, a in artefacts.items())
        cell["ratios"]["itl_p50"] = {"value": None, "ci_low": None, "ci_high": None, "pairs": 0,
                                     "unavailable": f"burst artefact ({why})"}
