"""loadgen's own Prometheus metrics: a live ``/metrics`` endpoint and Pushgateway pushes.

Every series carries the labels ``pair``, ``role`` (``plain`` | ``speculative``), ``workload``,
``concurrency`` (decimal string: the closed-loop level, or an open-loop level's in-flight cap) and
``level`` (the cell's load level label: ``c4`` closed loop at 4, ``r2.5`` open loop at 2.5 req/s; open-loop
levels share one ``concurrency``, so ``level`` is what tells them apart). Names follow Prometheus
conventions (https://prometheus.io/docs/practices/naming/): base units (seconds, tokens), ``_total`` on
counters.

Per request (warmup and cooldown requests are not observed, as the card leaves them out), definitions
from docs/metrics.md computed by :func:`loadgen.metrics.request_timings`:

- ``loadgen_ttft_seconds``, ``loadgen_tpot_seconds`` (s/token), ``loadgen_e2e_latency_seconds``: histograms,
  one observation per successful request (TPOT only when it has >= 2 output tokens);
- ``loadgen_itl_seconds`` (one observation per token), ``loadgen_inter_chunk_latency_seconds`` (one per
  gap between token-bearing chunks): histograms;
- ``loadgen_send_lag_seconds``: histogram, actual - scheduled send, every measured request;
- ``loadgen_requests_total{outcome="ok|error"}``, ``loadgen_output_tokens_total``,
  ``loadgen_token_chunks_total``: counters (tokens / chunks of successful requests).

Per finished cell (gauges from :class:`loadgen.metrics.CellStats`, the card's numbers): acceptance rate,
mean acceptance length, per-position acceptance, spec-decode counter deltas, output and request
throughput, window, requests, errors, latency percentiles, tokens per chunk, finish time, and
``loadgen_cell_info`` (= 1, with ``loadgen_version``).
"""

from __future__ import annotations

import time
import urllib.error
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, push_to_gateway, start_http_server
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from loadgen import __version__
from loadgen.measure.metrics import CellStats, Distribution, request_timings
from loadgen.profile.cells import CellKey
from loadgen.records.request import RequestRecord

CELL_LABELS = ("pair", "role", "workload", "concurrency", "level")
PUSH_JOB = "loadgen"
#: 1 ms .. 60 s, six steps per decade (1, 1.5, 2, 3, 5, 7.5): TTFT, TPOT, ITL, ICL and E2E latency.
LATENCY_BUCKETS_S = (
    *(round(m * 10.0**e, 6) for e in range(-3, 2) for m in (1.0, 1.5, 2.0, 3.0, 5.0, 7.5) if m * 10.0**e <= 60.0),
    60.0,
)
#: 10 µs .. 10 s: the client's delay behind its schedule is normally tens of microseconds.
SEND_LAG_BUCKETS_S = (
    1e-5,
    2.5e-5,
    5e-5,
    1e-4,
    2.5e-4,
    5e-4,
    1e-3,
    2.5e-3,
    5e-3,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
_DISTRIBUTIONS = ("ttft_s", "tpot_s", "itl_s", "icl_s", "e2e_s", "send_lag_s")


class PushError(Exception):
    """A push to the Pushgateway failed; ``str(err)`` is one line naming the gateway and the cause.

    A failed push must not stop a run: the caller logs it and carries on.
    """


@dataclass(frozen=True)
class _CellView(Collector):
    """The samples of ``source`` whose labels include ``match`` (one cell's series, for a push)."""

    source: CollectorRegistry
    match: tuple[tuple[str, str], ...]

    def collect(self) -> Iterable[Metric]:
        for family in self.source.collect():
            kept = [s for s in family.samples if all(s.labels.get(k) == v for k, v in self.match)]
            if kept:
                out = Metric(family.name, family.documentation, family.type)
                out.samples = kept
                yield out


class Exporter:
    """loadgen's metrics for one pair, in a registry of their own (never the global one).

    Args:
        pair: the pair name, the ``pair`` label of every series.

    Thread-safe (prometheus_client metrics are); observing never raises for a request's content.
    """

    def __init__(self, pair: str) -> None:
        self.pair = pair
        self.registry = CollectorRegistry(auto_describe=True)
        self._server: Any = None
        reg, cell = self.registry, CELL_LABELS

        def hist(name: str, doc: str, buckets: tuple[float, ...] = LATENCY_BUCKETS_S) -> Histogram:
            return Histogram(name, doc, cell, buckets=buckets, registry=reg)

        def gauge(name: str, doc: str, extra: tuple[str, ...] = ()) -> Gauge:
            return Gauge(name, doc, (*cell, *extra), registry=reg)

        self.ttft = hist("loadgen_ttft_seconds", "Time to first token-bearing chunk after send (s).")
        self.tpot = hist("loadgen_tpot_seconds", "(E2E - TTFT) / (output tokens - 1) per request (s/token).")
        self.itl = hist(
            "loadgen_itl_seconds", "Per-token inter-token latency: a k-token chunk gives k samples of gap/k (s)."
        )
        self.icl = hist("loadgen_inter_chunk_latency_seconds", "Gaps between consecutive token-bearing chunks (s).")
        self.e2e = hist("loadgen_e2e_latency_seconds", "Last token-bearing chunk arrival - send (s).")
        self.send_lag = hist("loadgen_send_lag_seconds", "Actual send - scheduled send (s).", SEND_LAG_BUCKETS_S)
        self.requests = Counter(
            "loadgen_requests",
            "Measured requests by outcome (ok: streamed >= 1 token without error).",
            (*cell, "outcome"),
            registry=reg,
        )
        self.output_tokens = Counter(
            "loadgen_output_tokens",
            "Output tokens of successful measured requests (from token_ids).",
            cell,
            registry=reg,
        )
        self.chunks = Counter(
            "loadgen_token_chunks", "Token-bearing SSE chunks of successful measured requests.", cell, registry=reg
        )
        self.acceptance_rate = gauge("loadgen_acceptance_rate", "Cell's accepted / draft tokens (vLLM counter deltas).")
        self.acceptance_length = gauge(
            "loadgen_mean_acceptance_length", "Cell's 1 + accepted tokens / drafts (tokens per verify step)."
        )
        self.per_position = gauge(
            "loadgen_per_position_acceptance_rate", "Cell's accepted_per_pos[i] / drafts.", ("position",)
        )
        self.spec_counts = gauge(
            "loadgen_cell_spec_decode_count",
            "Cell's vLLM spec-decode counter deltas summed over engines.",
            ("counter",),
        )
        self.out_tps = gauge("loadgen_output_throughput_tokens_per_second", "Cell's output tokens / window.")
        self.req_rps = gauge("loadgen_request_throughput_requests_per_second", "Cell's ok requests / window.")
        self.window = gauge("loadgen_cell_window_seconds", "First measured send to last measured token (s).")
        self.cell_requests = gauge("loadgen_cell_requests", "Cell's measured requests.")
        self.cell_errors = gauge("loadgen_cell_errors", "Cell's failed measured requests.")
        self.tokens_per_chunk = gauge("loadgen_mean_tokens_per_chunk", "Cell's output tokens / token-bearing chunks.")
        self.cell_latency = gauge(
            "loadgen_cell_latency_seconds",
            "Cell's exact client-side statistics of a latency (s, s/token for tpot and itl).",
            ("metric", "stat"),
        )
        self.finished_at = gauge("loadgen_cell_finished_timestamp_seconds", "Unix time the cell finished.")
        self.info = gauge("loadgen_cell_info", "A finished cell (value 1).", ("loadgen_version",))

    def _labels(self, role: str, workload: str, concurrency: int, level_label: str | None) -> dict[str, str]:
        return {
            "pair": self.pair,
            "role": role,
            "workload": workload,
            "concurrency": str(int(concurrency)),
            "level": CellKey.named(workload, level_label, concurrency).label,
        }

    def observe_request(self, record: RequestRecord) -> bool:
        """Observe one finished request (a ``requests.jsonl`` record); returns False for a warmup or
        cooldown one (``record.warmup``; not observed). Timings are seconds on the record's cell clock
        (docs/metrics.md definitions); ``level`` is ``record.level`` (``c<concurrency>`` when empty).
        """
        if record.warmup:
            return False
        labels = self._labels(record.role, record.workload, record.concurrency, record.level)
        self.send_lag.labels(**labels).observe(record.send_s - record.scheduled_s)
        timings = request_timings(record.send_s, record.chunk_arrivals_s, record.chunk_tokens) if record.ok else None
        self.requests.labels(**labels, outcome="ok" if timings is not None else "error").inc()
        if timings is None:
            return True
        self.ttft.labels(**labels).observe(timings.ttft_s)
        self.e2e.labels(**labels).observe(timings.e2e_s)
        if timings.tpot_s is not None:
            self.tpot.labels(**labels).observe(timings.tpot_s)
        for hist, samples in ((self.icl, timings.icl_s), (self.itl, timings.itl_s)):
            child = hist.labels(**labels)
            for value in samples:
                child.observe(value)
        self.output_tokens.labels(**labels).inc(timings.output_tokens)
        self.chunks.labels(**labels).inc(timings.chunks)
        return True

    def cell_finished(
        self, role: str, workload: str, concurrency: int, stats: CellStats, level_label: str | None = None
    ) -> None:
        """Set the cell gauges from its statistics (the card's numbers: metrics.cell_stats, as report/carddata.py
        computes them). ``level_label`` is the cell's level label (default ``c<concurrency>``). Called again
        for the same cell (a repetition), the gauges take the new values.

        Acceptance gauges are set only when ``stats.acceptance`` holds values (a speculative cell with
        drafts); percentiles only when the distribution is not empty.
        """
        labels = self._labels(role, workload, concurrency, level_label)
        self.out_tps.labels(**labels).set(stats.output_throughput_tps)
        self.req_rps.labels(**labels).set(stats.request_throughput_rps)
        self.window.labels(**labels).set(stats.window_s)
        self.cell_requests.labels(**labels).set(stats.requests)
        self.cell_errors.labels(**labels).set(stats.errors)
        if stats.mean_tokens_per_chunk is not None:
            self.tokens_per_chunk.labels(**labels).set(stats.mean_tokens_per_chunk)
        for name in _DISTRIBUTIONS:
            dist: Distribution = getattr(stats, name)
            for stat in ("mean", "p50", "p90", "p95", "p99"):
                value = getattr(dist, stat)
                if value is not None:
                    self.cell_latency.labels(**labels, metric=name.removesuffix("_s"), stat=stat).set(value)
        acc = stats.acceptance
        if acc is not None:
            if acc.acceptance_rate is not None:
                self.acceptance_rate.labels(**labels).set(acc.acceptance_rate)
            if acc.mean_acceptance_length is not None:
                self.acceptance_length.labels(**labels).set(acc.mean_acceptance_length)
            for pos, rate in enumerate(acc.per_position):
                self.per_position.labels(**labels, position=str(pos)).set(rate)
            for counter, value in (
                ("drafts", acc.num_drafts),
                ("draft_tokens", acc.num_draft_tokens),
                ("accepted_tokens", acc.num_accepted_tokens),
            ):
                self.spec_counts.labels(**labels, counter=counter).set(value)
        self.finished_at.labels(**labels).set(time.time())
        self.info.labels(**labels, loadgen_version=__version__).set(1)

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        """Serve this registry at ``http://addr:port/metrics`` from a daemon thread (prometheus_client
        ``start_http_server``). Loopback only unless ``addr`` says otherwise; port 0 picks a free port
        (see :attr:`url`). Raises OSError when the address cannot be bound, RuntimeError if already serving.
        """
        if self._server is not None:
            raise RuntimeError(f"the exporter already serves {self.url}")
        self._server, _thread = start_http_server(port, addr=addr, registry=self.registry)

    @property
    def url(self) -> str | None:
        """``http://host:port`` of the live endpoint (append ``/metrics``); None when not serving."""
        if self._server is None:
            return None
        host, port = self._server.server_address[:2]
        return f"http://{f'[{host}]' if ':' in host else host}:{port}"

    def close(self) -> None:
        """Stop the live endpoint (no-op when not serving)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def push(
        self,
        gateway_url: str,
        role: str,
        workload: str,
        concurrency: int,
        level_label: str | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        """Push one cell's series to a Pushgateway (``PUT``: replaces that group's previous push).

        Group: ``job="loadgen"``, grouping key ``{pair, role, workload, concurrency, level}`` (``level``:
        ``level_label``, default ``c<concurrency>``), i.e. URL
        ``<gateway_url>/metrics/job/loadgen/concurrency/<c>/level/<l>/pair/<pair>/role/<role>/workload/<w>``
        (Pushgateway README, "URL"); values with ``/`` or spaces
        are base64-encoded by prometheus_client. Only the
        series whose labels match that cell are sent, so each cell is its own group and pushes of
        different cells never overwrite each other. Scrape the gateway with ``honor_labels: true``.

        ``gateway_url``: ``http://host:port`` (or ``host:port``). Raises PushError (one line) on any
        failure (unreachable, timeout, non-2xx); the caller logs it and the run goes on.
        """
        labels = self._labels(role, workload, concurrency, level_label)
        view = _CellView(self.registry, tuple(sorted(labels.items())))
        try:
            push_to_gateway(gateway_url, job=PUSH_JOB, registry=view, grouping_key=labels, timeout=timeout_s)
        except urllib.error.HTTPError as exc:
            raise PushError(f"push to {gateway_url} failed: HTTP {exc.code} {exc.reason}") from None
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise PushError(f"push to {gateway_url} failed: {str(reason).splitlines()[0][:200]}") from None
