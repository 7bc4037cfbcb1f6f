"""Fetching vLLM's ``/metrics`` (the I/O half of exposition.py): one scrape, or gauges sampled during a cell.

Gauges sampled (vLLM V1, all versions 0.10-0.33, docs/vllm-notes.md):
``vllm:kv_cache_usage_perc`` (a fraction 0-1 despite its name), ``vllm:num_requests_running`` and
``vllm:num_requests_waiting``, each summed over ``engine``. A server from before a metric's rename is
read under the older name (metricnames.py), and the summary says which name was read.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Sequence

import httpx

from loadgen.errors import RunFailed
from loadgen.prom import deltas, metricnames
from loadgen.prom import exposition as prom
from loadgen.prom.deltas import above_bound
from loadgen.records.cellparts import GaugeSample, GaugeSummary, ServerHistogram
from loadgen.util.tls import tls_context

GAUGES = ("vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting")
_GAUGE_FAMILIES = metricnames.all_names(GAUGES)


def _status_hint(status: int) -> str:
    if status == 404:
        return "the server has no /metrics endpoint (not a vLLM server, or a proxy that hides it)"
    if status in (401, 403):
        return "the server refuses the scrape (an auth proxy?)"
    return "its metrics exporter failed" if status >= 500 else "not Prometheus text"


def scrape(base_url: str, timeout_s: float = 10.0, headers: dict[str, str] | None = None) -> tuple[str, prom.Snapshot]:
    """GET ``base_url``/metrics and parse it; returns (raw text, snapshot).

    Raises RunFailed (one line) when the server cannot be reached (asking whether it is alive), answers
    another status than 200 (naming it), or answers something other than Prometheus text.
    """
    url = base_url + "/metrics"
    try:
        response = httpx.get(url, timeout=timeout_s, headers=headers, verify=tls_context())
    except httpx.HTTPError as exc:
        detail = (str(exc).splitlines() or [""])[0]
        raise RunFailed(
            f"cannot reach {url} ({type(exc).__name__}{': ' + detail if detail else ''}); is the server alive?"
        ) from None
    if response.status_code != 200:
        raise RunFailed(
            f"{url} answered HTTP {response.status_code} {response.reason_phrase}: {_status_hint(response.status_code)}"
        )
    try:
        return response.text, prom.parse_metrics(response.text)
    except prom.PromParseError as exc:
        raise RunFailed(f"{url} is not Prometheus text ({exc})") from None


async def sample_gauges(
    client: httpx.AsyncClient,
    base_url: str,
    sink: Callable[[GaugeSample], None],
    clock: Callable[[], float],
    interval_s: float = 1.0,
) -> None:
    """Until cancelled: every ``interval_s`` scrape /metrics and hand the sample (``t_s`` = ``clock()``, each
    gauge's value) to ``sink``. A failed scrape is a sample with its ``error``, never raised."""
    while True:
        started = time.perf_counter()
        t_s = clock()
        try:
            response = await client.get(base_url + "/metrics", timeout=5.0)
            # the gauges' lines only: a whole parse blocked the cell's event loop for 9-20 ms a second
            # (send lag and chunk timestamps late by as much); all of it when they are missing, which
            # still says why (garbage raises PromParseError)
            snap = prom.parse_metrics(prom.only_families(response.text, _GAUGE_FAMILIES) or response.text)
            sample = GaugeSample(t_s, read_gauges(snap))
        except (httpx.HTTPError, prom.PromParseError) as exc:
            sample = GaugeSample(t_s, error=f"{type(exc).__name__}: {exc}"[:200])
        sink(sample)
        with contextlib.suppress(ValueError):
            await asyncio.sleep(max(0.0, interval_s - (time.perf_counter() - started)))


def read_gauges(snap: prom.Snapshot) -> dict[str, float | None]:
    """Each of :data:`GAUGES` summed over ``engine``, keyed by the name the server exposes it under
    (the current one, or an older one: metricnames.py); ``{name: None}`` when absent."""
    out: dict[str, float | None] = {}
    for name in GAUGES:
        used = metricnames.resolve(snap, name) or name
        out[used] = snap.total(used)
    return out


def summarize_gauges(samples: Sequence[GaugeSample]) -> dict[str, GaugeSummary]:
    """Per gauge (current name): mean and max over the samples that carry it (None when none do), the
    number of such samples, and ``metric``: the name read (an older one on an older server)."""
    out: dict[str, GaugeSummary] = {}
    for name in GAUGES:
        used = next((n for n in metricnames.candidates(name) if any(s.value(n) is not None for s in samples)), name)
        values = [v for s in samples if (v := s.value(used)) is not None]
        out[name] = GaugeSummary(
            sum(values) / len(values) if values else None, max(values) if values else None, float(len(values)), used
        )
    return out


#: Server-side histograms whose per-cell deltas go on the card next to the client's numbers.
SERVER_HISTOGRAMS = {
    "ttft_s": "vllm:time_to_first_token_seconds",
    "e2e_s": "vllm:e2e_request_latency_seconds",
    "tpot_s": "vllm:request_time_per_output_token_seconds",
    "icl_s": "vllm:inter_token_latency_seconds",
}


def server_histograms(before: prom.Snapshot, after: prom.Snapshot) -> dict[str, ServerHistogram]:
    """Per-cell deltas of :data:`SERVER_HISTOGRAMS` with their bucket bounds and p50/p90/p99 estimates
    (PromQL ``histogram_quantile`` semantics, deltas.py); families without observations are left out.

    ``metric`` is the name read: the current one, or an older one on an older server (metricnames.py).
    ``p50_above_bound`` (and p90, p99) is True when that quantile lies in the ``+Inf`` bucket: its value is
    then the highest finite bound, and the true quantile is above it (``> bound``)."""
    out: dict[str, ServerHistogram] = {}
    for key, current in SERVER_HISTOGRAMS.items():
        name = metricnames.resolve(after, current) or current
        try:
            h = deltas.histogram_delta(before, after, name)
        except ValueError:
            continue
        if h.count <= 0:
            continue
        bounds = [b if math.isfinite(b) else "+Inf" for b in h.upper_bounds]  # strict JSON: +Inf as a string
        p50, p90, p99 = (h.quantile(q) for q in (0.5, 0.9, 0.99))
        a50, a90, a99 = (above_bound(h, q) for q in (0.5, 0.9, 0.99))
        out[key] = ServerHistogram(
            name, h.count, h.sum, tuple(bounds), tuple(h.cumulative_counts), h.reset, p50, p90, p99, a50, a90, a99
        ).in_full()
    return out
