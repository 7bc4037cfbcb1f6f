"""Per-request and per-cell statistics (pure: numpy only, no I/O, no clock).

Definitions are docs/metrics.md's, named exactly so:

- TTFT = first token-bearing chunk arrival - request send (s)
- E2E latency = last token-bearing chunk arrival - request send (s)
- TPOT = (E2E - TTFT) / (output tokens - 1) (s/token); undefined (None) for 1-token outputs
- inter-chunk latency (ICL): gaps between consecutive token-bearing chunks (s)
- ITL (per token): a chunk of k tokens arriving d after the previous one contributes k samples of d/k
- output throughput = output tokens of measured requests / window (tokens/s); request throughput
  likewise (req/s); window = first measured send to last measured completion (last token-bearing chunk)
- peak output throughput: the most output tokens in one 1-second bucket of the window (throughput.py)
- acceptance rate = d accepted / d draft tokens; mean acceptance length = 1 + d accepted / d drafts;
  per-position acceptance = d accepted_per_pos[i] / d drafts (docs/vllm-notes.md, "/metrics")
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from loadgen.measure.throughput import peak_output
from loadgen.prom.deltas import SpecDecodeCounters
from loadgen.records.cardcell import RoleStats

if TYPE_CHECKING:
    from loadgen.records.request import RequestRecord

PERCENTILES = (50, 90, 95, 99)


@dataclass(frozen=True)
class RequestTimings:
    """Timings of one request in seconds; ``icl_s`` and ``itl_s`` are sample lists."""

    ttft_s: float
    e2e_s: float
    tpot_s: float | None
    icl_s: tuple[float, ...]
    itl_s: tuple[float, ...]
    output_tokens: int
    chunks: int


def request_timings(send_s: float, arrivals_s: Sequence[float], tokens: Sequence[int]) -> RequestTimings | None:
    """Timings of one request from its token-bearing chunks.

    ``arrivals_s[i]`` is the arrival of chunk i (same clock as ``send_s``) and ``tokens[i]`` (>= 1)
    its token count. Returns None when there is no token-bearing chunk.
    """
    if len(arrivals_s) != len(tokens):
        raise ValueError("arrivals_s and tokens must have the same length")
    if not arrivals_s:
        return None
    times = np.asarray(arrivals_s, dtype=float)
    counts = np.asarray(tokens, dtype=int)
    ttft = float(times[0] - send_s)
    e2e = float(times[-1] - send_s)
    n_out = int(counts.sum())
    tpot = (e2e - ttft) / (n_out - 1) if n_out > 1 else None
    gaps = np.diff(times)
    itl = np.repeat(gaps / counts[1:], counts[1:]) if gaps.size else np.empty(0)
    return RequestTimings(ttft, e2e, tpot, tuple(gaps.tolist()), tuple(itl.tolist()), n_out, len(tokens))


@dataclass(frozen=True)
class Distribution:
    """Summary of a sample: count, mean and the docs/metrics.md percentiles (p50/p90/p95/p99), in the sample's
    unit."""

    count: int
    mean: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> Distribution:
        """Summarize ``values`` (numpy linear-interpolated percentiles); all None when empty."""
        if len(values) == 0:
            return cls(0, None, None, None, None, None)
        arr = np.asarray(values, dtype=float)
        p = np.percentile(arr, PERCENTILES)
        return cls(int(arr.size), float(arr.mean()), *(float(x) for x in p))


@dataclass(frozen=True)
class Acceptance:
    """Speculative-decoding acceptance of one cell, from counter deltas."""

    acceptance_rate: float | None
    mean_acceptance_length: float | None
    per_position: tuple[float, ...]
    num_drafts: float
    num_draft_tokens: float
    num_accepted_tokens: float

    @classmethod
    def of(cls, c: SpecDecodeCounters) -> Acceptance:
        """Acceptance from counter deltas; rates are None when nothing was drafted."""
        rate = c.num_accepted_tokens / c.num_draft_tokens if c.num_draft_tokens else None
        length = 1.0 + c.num_accepted_tokens / c.num_drafts if c.num_drafts else None
        per_pos = tuple(a / c.num_drafts for a in c.accepted_per_position) if c.num_drafts else ()
        return cls(rate, length, per_pos, c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens)


@dataclass(frozen=True)
class CellStats:
    """Statistics of one (server, workload, concurrency) cell over its measured requests."""

    requests: int
    errors: int
    output_tokens: int
    window_s: float
    output_throughput_tps: float
    peak_output_throughput_tps: float | None
    request_throughput_rps: float
    ttft_s: Distribution
    tpot_s: Distribution
    itl_s: Distribution
    icl_s: Distribution
    e2e_s: Distribution
    send_lag_s: Distribution
    mean_tokens_per_chunk: float | None
    mean_tokens_per_decode_chunk: float | None
    acceptance: Acceptance | None
    #: why there is no peak (a window under two whole 1-second buckets: throughput.py), else None
    peak_output_note: str | None = None

    def record(self, failure: str | None = None) -> RoleStats:
        """The card's record of these statistics (records/cardcell.py) with the server's ``failure``, written
        with this class's fields first in their order (``failure`` where it is set again, else after them)."""
        values = asdict(self)
        stats = RoleStats.from_json(values | {"failure": failure}, source="the cell statistics being built")
        return stats.keyed(*values)


def tokens_per_decode_chunk(tokens: Sequence[int]) -> float | None:
    """Mean tokens per token-bearing chunk after the first one (the first comes from prefill, the others
    from decode steps): with speculation and one chunk per engine step, this is the client-side view of
    the mean acceptance length (1 + accepted / drafts). None with fewer than two chunks."""
    if len(tokens) < 2:
        return None
    return (sum(tokens) - tokens[0]) / (len(tokens) - 1)


def _per_decode_chunk(requests: Sequence[MeasuredRequest]) -> float | None:
    after_first = sum(sum(r.tokens) - r.tokens[0] for r in requests if not r.failed and len(r.tokens) > 1)
    chunks = sum(len(r.tokens) - 1 for r in requests if not r.failed and len(r.tokens) > 1)
    return after_first / chunks if chunks else None


@dataclass(frozen=True)
class MeasuredRequest:
    """The inputs cell_stats needs from one measured request (seconds on one cell clock)."""

    scheduled_s: float
    send_s: float
    arrivals_s: Sequence[float]
    tokens: Sequence[int]
    failed: bool


def cell_stats(requests: Sequence[MeasuredRequest], counters: SpecDecodeCounters | None) -> CellStats:
    """Aggregate one cell. Failed requests count as errors and are left out of the distributions."""
    timings = [request_timings(r.send_s, r.arrivals_s, r.tokens) for r in requests if not r.failed]
    good = [t for t in timings if t is not None]
    ok_requests = [r for r in requests if not r.failed and r.arrivals_s]
    if ok_requests:
        start = min(r.send_s for r in ok_requests)
        end = max(r.arrivals_s[-1] for r in ok_requests)
        window = end - start
    else:
        start = end = window = 0.0
    out_tokens = sum(t.output_tokens for t in good)
    chunks = sum(t.chunks for t in good)
    peak = peak_output(start, end, [r.arrivals_s for r in ok_requests], [r.tokens for r in ok_requests])
    return CellStats(
        requests=len(requests),
        errors=len(requests) - len(good),
        output_tokens=out_tokens,
        window_s=window,
        output_throughput_tps=out_tokens / window if window > 0 else 0.0,
        peak_output_throughput_tps=peak.tps,
        peak_output_note=peak.reason,
        request_throughput_rps=len(good) / window if window > 0 else 0.0,
        ttft_s=Distribution.of([t.ttft_s for t in good]),
        tpot_s=Distribution.of([t.tpot_s for t in good if t.tpot_s is not None]),
        itl_s=Distribution.of([x for t in good for x in t.itl_s]),
        icl_s=Distribution.of([x for t in good for x in t.icl_s]),
        e2e_s=Distribution.of([t.e2e_s for t in good]),
        send_lag_s=Distribution.of([r.send_s - r.scheduled_s for r in requests]),
        mean_tokens_per_chunk=out_tokens / chunks if chunks else None,
        mean_tokens_per_decode_chunk=_per_decode_chunk(requests),
        acceptance=Acceptance.of(counters) if counters is not None else None,
    )


def bucket_index(value: float, upper_bounds: Sequence[float]) -> int:
    """Index of the histogram bucket (ascending upper bounds ``le``) that holds ``value``."""
    return next((i for i, le in enumerate(upper_bounds) if value <= le), len(upper_bounds) - 1)


def agrees_within_buckets(client_s: float | None, server_s: float | None, upper_bounds: Sequence[float]) -> bool | None:
    """Whether a client-side quantile and the server histogram's estimate of it lie in the same or
    neighbouring buckets: the histogram cannot resolve anything finer (its buckets cap what can be
    seen). None when either value is unknown."""
    if client_s is None or server_s is None or not upper_bounds:
        return None
    return abs(bucket_index(client_s, upper_bounds) - bucket_index(server_s, upper_bounds)) <= 1


#: loadgen's event loop runs on one core: above this share of it during a cell, or with a send lag p99
#: above ``CLIENT_SEND_LAG_LIMIT_S``, the client may have shaped the load (docs/benchmarks.md measures
#: where its timing and throughput hold).
CLIENT_BUSY_CORES = 0.8
CLIENT_SEND_LAG_LIMIT_S = 0.005


@dataclass(frozen=True)
class ClientUse:
    """loadgen's own load during one cell: CPU (seconds of this process, all threads, and cores = CPU
    seconds / wall seconds) and the send lag (s) of the measured requests."""

    cpu_s: float
    cores: float
    send_lag: Distribution

    @classmethod
    def of(cls, cpu_s: float, wall_s: float, send_lags_s: Sequence[float]) -> ClientUse:
        """From the process CPU time and wall time of the cell and every measured request's send lag."""
        return cls(cpu_s, cpu_s / wall_s if wall_s > 0 else 0.0, Distribution.of(send_lags_s))

    def saturation_note(self) -> str | None:
        """A warning for the card when the client was near saturation, else None."""
        lag = self.send_lag.p99
        busy, lagging = self.cores >= CLIENT_BUSY_CORES, lag is not None and lag > CLIENT_SEND_LAG_LIMIT_S
        if not (busy or lagging):
            return None
        state = "near saturation" if busy else "held up (its event loop was late while not busy)"
        return (
            f"loadgen's client was {state} in this cell ({self.cores:.2f} of its one event-loop core"
            + (f", send lag p99 {lag * 1e3:.1f} ms" if lag is not None else "")
            + "): its own delays may be in "
            "the numbers; use fewer concurrent streams per loadgen process or a faster or quieter machine for "
            "the client"
        )


def per_prompt(records: Iterable[RequestRecord], field: str) -> dict[str, float]:
    """``{prompt_id: value}`` of one :class:`RequestTimings` field (e.g. ``"tpot_s"``, seconds) over the
    successful records; requests without that value (a 1-token output's TPOT) are left out. The input of
    the paired ratios (ratios.paired_median_ratio)."""
    out: dict[str, float] = {}
    for r in records:
        if r.error is not None:
            continue
        t = request_timings(r.send_s, r.chunk_arrivals_s, r.chunk_tokens)
        value = None if t is None else getattr(t, field)
        if value is not None:
            out[r.prompt_id] = float(value)
    return out
