"""Read vLLM's spec-decode counters from an existing Prometheus server (HTTP API ``/api/v1/query``,
https://prometheus.io/docs/prometheus/latest/querying/api/; tested against Prometheus 2.42).

The direct path (flow.py) scrapes the server's ``/metrics`` right before and after a cell; this module
gets the same deltas from a Prometheus server that scrapes vLLM on its own (the pattern of
inference-perf, github.com/kubernetes-sigs/inference-perf), so a staging node's monitoring can be checked.

Two ways, both summed over ``engine`` (vLLM >= 0.11 exports one series per engine;
docs/vllm-notes.md, "/metrics"):

- :meth:`PromQLReader.spec_decode_delta`: ``sum(increase(m{sel}[Nms]))`` evaluated at ``end`` with
  N = end - start, per position ``sum by (position) (...)``. Prometheus' ``increase()`` extrapolates
  the first and last samples inside the range to the range's edges (``extrapolatedRate``,
  promql/functions.go), so it returns non-integer estimates unless the window's edges are scrape
  timestamps: then (Prometheus 2.x, ranges closed at both ends) nothing is extrapolated and the
  result is the exact difference of those two scrapes. Prometheus 3.x ranges are left-open, so the
  first sample falls out: use the next method there.
- :meth:`PromQLReader.spec_decode_delta_at_instants`: the raw counters at the ``start`` and ``end``
  instants (the latest sample at or before each, per series) diffed per series with
  :func:`loadgen.prom.spec_decode_delta`, the arithmetic of the direct path (reset-aware). Exact.

Both equal the direct before/after scrape when Prometheus scraped the server in the quiet moments
after the cell's warmup and after its last request (counters do not move then). Recipe for the caller:
``t0 = reader.wait_for_scrape(time.time(), sel)`` once warmup is done (before the measured requests);
``t1 = reader.wait_for_scrape(time.time(), sel)`` once the cell's requests are done (before the next
traffic), i.e. right after each direct scrape; then
``cross_check(direct, reader.spec_decode_delta_at_instants(t0, t1, sel))``. Each wait lasts up to one
scrape interval. ``sel`` must pick the speculative server's series (``job=...`` or ``instance="host:port"``,
plus ``model_name`` if the job has several). Times are unix seconds; Prometheus stamps samples with its
own clock, so a remote Prometheus needs synchronized clocks.
"""

from __future__ import annotations

import math
import time
from types import MappingProxyType, TracebackType
from typing import Any

import httpx

from loadgen.prom import deltas
from loadgen.prom import exposition as prom
from loadgen.prom.deltas import SpecDecodeCounters
from loadgen.prom.exposition import ACCEPTED_PER_POS, NUM_ACCEPTED, NUM_DRAFT_TOKENS, NUM_DRAFTS
from loadgen.util.tls import tls_context

#: Matches the four spec-decode counters (not their ``_created`` gauges).
SPEC_COUNTERS_RE = "vllm:spec_decode_num_.*_total"

Series = tuple[dict[str, str], float]


class PromQLError(Exception):
    """A Prometheus query failed: unreachable server, HTTP error, bad expression, or a window with too few
    samples. ``str(err)`` is one line."""


def normalize_selector(selector: str) -> str:
    """Label matchers without braces, e.g. ``job="vllm",model_name="m"``; braces and spaces around are
    dropped, "" means no filter."""
    return selector.strip().removeprefix("{").removesuffix("}").strip().strip(",")


def _vector(metric: str, selector: str) -> str:
    sel = normalize_selector(selector)
    return f"{metric}{{{sel}}}" if sel else metric


class PromQLReader:
    """A client of one Prometheus server's query API.

    Args:
        base_url: e.g. ``http://127.0.0.1:9090`` (a path prefix such as ``/prometheus`` is kept).
        timeout_s: per HTTP request (s).
    """

    def __init__(self, base_url: str, timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = httpx.Client(timeout=timeout_s, verify=tls_context())

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> PromQLReader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def query(self, expr: str, at: float) -> list[Series]:
        """Evaluate PromQL ``expr`` at unix time ``at`` (s): one ``(labels, value)`` per series of the
        instant vector (``__name__`` included when the result keeps it), or ``[({}, v)]`` for a scalar.
        Values may be NaN or +-Inf. Raises PromQLError (one line) for any failure.
        """
        url = f"{self.base_url}/api/v1/query"
        try:
            response = self._client.get(url, params={"query": expr, "time": f"{at:.3f}"})
        except httpx.HTTPError as exc:
            raise PromQLError(f"cannot query {url}: {type(exc).__name__}: {exc}"[:300]) from None
        try:
            body: dict[str, Any] = response.json()
        except ValueError:
            raise PromQLError(
                f"{url} answered HTTP {response.status_code} without JSON: {response.text[:120]!r}"
            ) from None
        if body.get("status") != "success":
            raise PromQLError(
                f"query {expr!r} failed (HTTP {response.status_code}, {body.get('errorType')}): "
                f"{str(body.get('error', '')).splitlines()[0][:200] if body.get('error') else ''}"
            )
        data = body["data"]
        if data["resultType"] in ("scalar", "string"):
            return [({}, float(data["result"][1]))]
        if data["resultType"] != "vector":
            raise PromQLError(f"query {expr!r} returned a {data['resultType']}, not an instant vector")
        return [(dict(item["metric"]), float(item["value"][1])) for item in data["result"]]

    def total(self, expr: str, at: float) -> float | None:
        """Sum of the values of ``expr`` at ``at``; None when the result is empty."""
        found = self.query(expr, at)
        return math.fsum(v for _, v in found) if found else None

    def latest_scrape(self, selector: str = "", metric: str = NUM_DRAFTS, at: float | None = None) -> float | None:
        """Unix time (s, ms resolution) of the newest sample of ``metric{selector}`` at or before ``at``
        (default now), i.e. the last scrape that saw it; None when Prometheus has no such series."""
        return self.total(f"max(timestamp({_vector(metric, selector)}))", time.time() if at is None else at)

    def wait_for_scrape(
        self, after: float, selector: str = "", metric: str = NUM_DRAFTS, timeout_s: float = 60.0, poll_s: float = 0.2
    ) -> float:
        """Block until Prometheus holds a sample of ``metric{selector}`` scraped at or after ``after``
        (unix s); returns that sample's time. Takes up to one scrape interval. Raises PromQLError after
        ``timeout_s`` (e.g. the target is not scraped, or the selector matches nothing).
        """
        deadline = time.monotonic() + timeout_s
        while True:
            latest = self.latest_scrape(selector, metric)
            if latest is not None and latest >= after:
                return latest
            if time.monotonic() > deadline:
                seen = "no sample" if latest is None else f"the newest sample is from {latest:.3f}"
                raise PromQLError(
                    f"Prometheus at {self.base_url} did not scrape {_vector(metric, selector)} "
                    f"after {after:.3f} within {timeout_s:g} s ({seen}); check its targets"
                )
            time.sleep(poll_s)

    def snapshot_at(self, at: float, selector: str = "") -> prom.Snapshot:
        """The four spec-decode counters as Prometheus held them at ``at`` (latest sample of each series
        within the lookback, 5 min by default), as a :class:`loadgen.prom.Snapshot`; labels include the
        scrape's ``job`` and ``instance``."""
        sel = normalize_selector(selector)
        matchers = f'__name__=~"{SPEC_COUNTERS_RE}"' + (f",{sel}" if sel else "")
        samples = []
        for labels, value in self.query(f"{{{matchers}}}", at):
            name = labels.pop("__name__", "")
            samples.append(prom.Sample(name, MappingProxyType(labels), value))
        return prom.Snapshot(samples=tuple(samples), types=MappingProxyType({}))

    def spec_decode_delta_at_instants(self, start: float, end: float, selector: str = "") -> SpecDecodeCounters | None:
        """Exact counter deltas between the samples Prometheus held at ``start`` and at ``end`` (unix s),
        per series, summed over series (engines), reset-aware like the direct path
        (:func:`loadgen.prom.spec_decode_delta`). None when there is no spec-decode series at ``end``.
        """
        return deltas.spec_decode_delta(self.snapshot_at(start, selector), self.snapshot_at(end, selector))

    def spec_decode_delta(self, start: float, end: float, selector: str = "") -> SpecDecodeCounters | None:
        """Counter increases over the window [start, end] (unix s) with PromQL ``increase()`` at ``end``.

        ``sum(increase(<counter>{selector}[Nms]))`` with N = end - start in ms; per position
        ``sum by (position) (...)``, ordered 0..K-1; ``reset`` from ``resets()`` over the same range.
        Extrapolated (see the module docstring): exact only when ``start`` and ``end`` are scrape times
        (e.g. from :meth:`wait_for_scrape`) on Prometheus 2.x. None when no spec-decode series exists at
        ``end``; raises PromQLError when the window holds fewer than two samples (shorter than a scrape
        interval) or a query fails.
        """
        if end <= start:
            raise ValueError(f"window end {end} must be after its start {start}")
        window = f"[{max(1, round((end - start) * 1000))}ms]"

        def increase(metric: str, by: str = "") -> list[Series]:
            return self.query(f"sum{by}(increase({_vector(metric, selector)}{window}))", end)

        drafts = increase(NUM_DRAFTS)
        if not drafts:
            if self.total(f"count({_vector(NUM_DRAFTS, selector)})", end) is None:
                return None
            raise PromQLError(
                f"fewer than two samples of {_vector(NUM_DRAFTS, selector)} in the {end - start:.3f} "
                "s window: make the window span at least one scrape interval"
            )
        tokens, accepted = increase(NUM_DRAFT_TOKENS), increase(NUM_ACCEPTED)
        per_pos = sorted(increase(ACCEPTED_PER_POS, " by (position) "), key=lambda s: int(s[0].get("position", -1)))
        resets = [
            self.total(f"sum(resets({_vector(m, selector)}{window}))", end)
            for m in (NUM_DRAFTS, NUM_DRAFT_TOKENS, NUM_ACCEPTED, ACCEPTED_PER_POS)
        ]
        return SpecDecodeCounters(
            num_drafts=drafts[0][1],
            num_draft_tokens=tokens[0][1] if tokens else 0.0,
            num_accepted_tokens=accepted[0][1] if accepted else 0.0,
            accepted_per_position=tuple(v for _, v in per_pos),
            reset=any(resets),
        )


def cross_check(
    direct: SpecDecodeCounters | None,
    via_promql: SpecDecodeCounters | None,
    tolerance: float = 0.0,
    abs_tol: float = 1e-6,
) -> list[str]:
    """Disagreements between the direct scrape's deltas and Prometheus' (one line each; [] = agree).

    ``tolerance`` is relative (0.02 = 2%; 0 = exact up to ``abs_tol``, for float summation), applied to
    drafts, draft tokens, accepted tokens and each position; a different number of positions, or one
    side missing, is always a disagreement. The ``reset`` flags are not compared (``resets()`` also sees
    resets between the edges, a direct diff only at them).
    """
    if direct is None or via_promql is None:
        if direct is None and via_promql is None:
            return []
        missing = "the direct scrape" if direct is None else "Prometheus"
        return [f"{missing} has no spec-decode counters while the other side has"]
    problems = []
    pairs = [
        ("num_drafts", direct.num_drafts, via_promql.num_drafts),
        ("num_draft_tokens", direct.num_draft_tokens, via_promql.num_draft_tokens),
        ("num_accepted_tokens", direct.num_accepted_tokens, via_promql.num_accepted_tokens),
    ]
    if len(direct.accepted_per_position) != len(via_promql.accepted_per_position):
        problems.append(
            f"positions: direct has {len(direct.accepted_per_position)}, Prometheus "
            f"{len(via_promql.accepted_per_position)}"
        )
    else:
        pairs += [
            (f"accepted_per_position[{i}]", a, b)
            for i, (a, b) in enumerate(zip(direct.accepted_per_position, via_promql.accepted_per_position, strict=True))
        ]
    for name, a, b in pairs:
        if not math.isclose(a, b, rel_tol=tolerance, abs_tol=abs_tol):
            rel = abs(a - b) / max(abs(a), abs(b))
            problems.append(f"{name}: direct {a:g}, Prometheus {b:g} (differ by {rel:.2%}, tolerance {tolerance:.2%})")
    return problems
