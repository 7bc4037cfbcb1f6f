"""Server-side histogram quantiles next to the client's own figures, without the top bucket's trap (pure).

A histogram cannot place an observation above its highest finite bucket bound: PromQL's
``histogram_quantile`` (Prometheus ``promql/quantile.go``, ``bucketQuantile``) returns that bound for a
rank in the ``+Inf`` bucket, so a 200 s request reads as 60 s with vLLM's E2E buckets. Such a quantile is
reported here as ``> bound`` and is never said to agree with the client's figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from loadgen.measure.metrics import agrees_within_buckets
from loadgen.prom.deltas import HistogramDelta, above_bound
from loadgen.records.cardcell import ServerVsClient
from loadgen.records.cellparts import ServerHistogram


def bounds_of(upper_bounds: Sequence[float | str | None] | None) -> tuple[float, ...]:
    """The bucket bounds of a saved histogram (its ``upper_bounds``) as floats: ``"+Inf"`` (as
    scrape.server_histograms writes the last bound in strict JSON) and null (older strict files) read as
    ``math.inf``."""
    return tuple(math.inf if b is None else float(b) for b in upper_bounds or ())


def json_bounds(bounds: Sequence[float]) -> tuple[float | str, ...]:
    """``bounds`` for strict JSON: the infinite last bound as ``"+Inf"`` (Prometheus' own spelling)."""
    return tuple(b if math.isfinite(b) else "+Inf" for b in bounds)


def _delta(entry: ServerHistogram) -> HistogramDelta:
    counts = tuple(float(c) for c in entry.cumulative_counts)
    return HistogramDelta(bounds_of(entry.upper_bounds), counts, float(entry.count), float(entry.sum))


def agreement(
    client_s: float | None, server_s: float | None, upper_bounds: Sequence[float], server_above: bool
) -> bool | None:
    """Whether client and server quantiles agree within the histogram's bucket resolution
    (``metrics.agrees_within_buckets``), except when the server's quantile is above the last finite
    bound: never True then; False when the client's figure is within the finite buckets (they
    disagree), None when it is above the bound too (nothing left to compare)."""
    if not server_above:
        return agrees_within_buckets(client_s, server_s, upper_bounds)
    finite = [b for b in upper_bounds if not math.isinf(b)]
    if client_s is None or not finite:
        return None
    return None if client_s > finite[-1] else False


def compare(client_p50_s: float | None, hist: ServerHistogram) -> ServerVsClient:
    """One row of the card's server-vs-client check from a cell entry's ``server_histograms`` item (the
    histogram delta as scrape.server_histograms saved it: ``metric``, ``p50``, ``upper_bounds``,
    ``cumulative_counts``, ...); every field written, None included. ``server_above_bound`` is recomputed
    from the stored buckets, so entries of older runs get it too."""
    bounds = list(bounds_of(hist.upper_bounds))
    above = hist.p50_above_bound or (bool(bounds) and above_bound(_delta(hist), 0.5))
    return ServerVsClient(
        client_p50=client_p50_s,
        server_p50=hist.p50,
        server_above_bound=above,
        metric=hist.metric,
        agrees=agreement(client_p50_s, hist.p50, bounds, above),
        bucket_bounds=json_bounds(bounds),
    ).in_full()
