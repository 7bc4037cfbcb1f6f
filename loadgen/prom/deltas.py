"""Reset-aware deltas between two Prometheus snapshots: counters, vLLM's spec-decode counters, histograms and
their quantiles (pure: no I/O, no clock).

Counters and histograms are summed over series (vLLM's ``engine`` label); a series that went down between
the snapshots was reset (a restarted server) and counts from zero. Spec-decode counters
(``vllm/v1/spec_decode/metrics.py``) exist only on a speculative server, one ``position`` child per draft
position 0..K-1. Snapshots come from exposition.py.

Per engine (:func:`engine_counter_delta`, :func:`spec_decode_held`): with data parallelism every engine
core has its own series, labelled ``engine="0"``, ``"1"``, ... (vLLM 0.11+, ``PrometheusStatLogger`` in
``vllm/v1/metrics/loggers.py`` makes one child per engine index). An engine whose series went down or
vanished is named and its delta left out; the engines whose counters held are summed. A counter family
absent from either snapshot is unavailable (None), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from loadgen.prom.exposition import (
    ACCEPTED_PER_POS,
    NUM_ACCEPTED,
    NUM_DRAFT_TOKENS,
    NUM_DRAFTS,
    SPEC_PREFIX,
    Snapshot,
    _key,
    _matches,
    _numeric_first,
    _series,
    _SeriesKey,
)


@dataclass(frozen=True)
class CounterDelta:
    """Increase of a counter between two snapshots, summed over series.

    Attributes:
        value: sum over series of ``after - before``; a series that went down (a restart) counts its
            ``after`` value, as Prometheus ``increase()`` does; a series only in ``after`` counts fully.
        reset: True if any series went down or vanished between the snapshots.
        series: number of matching series in ``after`` (0: the counter is absent).
    """

    value: float
    reset: bool
    series: int = 0


def counter_delta(before: Snapshot, after: Snapshot, name: str, **match: str) -> CounterDelta:
    """Reset-aware increase of counter ``name`` (exact sample name, e.g.
    ``vllm:spec_decode_num_drafts_total``), per label set, summed over the series (``engine`` ...)
    whose labels include ``match``.
    """
    prev, now = _series(before, name, match), _series(after, name, match)
    reset = any(k not in now for k in prev) or any(v < prev.get(k, 0.0) for k, v in now.items())
    parts = (v if v < prev.get(k, 0.0) else v - prev.get(k, 0.0) for k, v in now.items())
    return CounterDelta(value=math.fsum(parts), reset=reset, series=len(now))


@dataclass(frozen=True)
class SpecDecodeCounters:
    """Deltas of vLLM's spec-decode counters, summed over ``engine``.

    Units: drafts (request x verify steps with >= 1 draft token), draft tokens, accepted draft
    tokens (bonus token excluded); ``accepted_per_position[i]`` = drafts whose first i+1 tokens
    were accepted, positions 0..K-1. Acceptance rate = accepted / draft tokens; mean acceptance
    length = 1 + accepted / drafts (``SpecDecodingProm`` docstring, ``vllm/v1/spec_decode/metrics.py``).
    """

    num_drafts: float
    num_draft_tokens: float
    num_accepted_tokens: float
    accepted_per_position: tuple[float, ...]
    reset: bool
    engines: tuple[str, ...] = ()  # :func:`spec_decode_held` only: every engine label seen
    reset_engines: tuple[str, ...] = ()  # :func:`spec_decode_held` only: those left out (went down or vanished)


ENGINE = "engine"


def _engines(snap: Snapshot, names: tuple[str, ...], match: Mapping[str, str]) -> set[str]:
    return {s.labels.get(ENGINE, "") for n in names for s in snap.values(n, **match)}


def _engine_view(snap: Snapshot, engine: str) -> Snapshot:
    """The samples of one engine ("" = those without an ``engine`` label)."""
    return Snapshot(tuple(s for s in snap.samples if s.labels.get(ENGINE, "") == engine), snap.types)


@dataclass(frozen=True)
class EngineCounter:
    """A counter's increase read per ``engine`` label.

    Attributes:
        value: Δ summed over the engines whose series held (none went down or vanished); when no engine
            held, the Prometheus ``increase()`` sum over all of them (as :func:`counter_delta`). None when
            the family is absent from either snapshot (unavailable, not 0).
        engines: every engine label in either snapshot, numeric order ("" for series without one).
        reset_engines: the engines whose series went down or vanished (left out of ``value``).
    """

    value: float | None
    engines: tuple[str, ...] = ()
    reset_engines: tuple[str, ...] = ()


def engine_counter_delta(before: Snapshot, after: Snapshot, name: str, **match: str) -> EngineCounter:
    """Increase of counter ``name`` (exact sample name) per ``engine`` label, resets found per engine."""
    prev, now = _engines(before, (name,), match), _engines(after, (name,), match)
    if not prev or not now:
        return EngineCounter(None)
    engines = tuple(sorted(prev | now, key=_numeric_first))
    per = {e: counter_delta(_engine_view(before, e), _engine_view(after, e), name, **match) for e in engines}
    reset = tuple(e for e in engines if per[e].reset)
    held = [per[e].value for e in engines if not per[e].reset] or [d.value for d in per.values()]
    return EngineCounter(math.fsum(held), engines, reset)


def _positions(snap: Snapshot, match: Mapping[str, str]) -> list[str]:
    found = {s.labels.get("position", "") for s in snap.values(ACCEPTED_PER_POS, **match)} - {""}
    return sorted(found, key=_numeric_first)


def has_spec_decode(snap: Snapshot) -> bool:
    """Whether the snapshot has any ``vllm:spec_decode_*`` series (a speculative server)."""
    return snap.has_family_prefix(SPEC_PREFIX)


def spec_decode_positions(snap: Snapshot, **match: str) -> int:
    """Number of distinct ``position`` labels of ``vllm:spec_decode_num_accepted_tokens_per_pos_total``.

    vLLM creates one child per position ``0..num_speculative_tokens-1`` at start-up, so this is K;
    0 if the counter is absent.
    """
    return len(_positions(snap, match))


def spec_decode_delta(before: Snapshot, after: Snapshot, **match: str) -> SpecDecodeCounters | None:
    """Spec-decode counter deltas between two scrapes (reset-aware, see :func:`counter_delta`).

    ``match`` filters labels (e.g. ``model_name="target"``). Positions are those found in
    ``after``, ordered 0..K-1. Returns None when ``after`` has no ``vllm:spec_decode_*`` series.
    """
    if not has_spec_decode(after):
        return None
    drafts = counter_delta(before, after, NUM_DRAFTS, **match)
    tokens = counter_delta(before, after, NUM_DRAFT_TOKENS, **match)
    accepted = counter_delta(before, after, NUM_ACCEPTED, **match)
    per_pos = [
        counter_delta(before, after, ACCEPTED_PER_POS, **{**match, "position": p}) for p in _positions(after, match)
    ]
    reset = any(d.reset for d in (drafts, tokens, accepted, *per_pos))
    per_pos_values = tuple(d.value for d in per_pos)
    return SpecDecodeCounters(drafts.value, tokens.value, accepted.value, per_pos_values, reset)


def spec_decode_held(before: Snapshot, after: Snapshot, **match: str) -> SpecDecodeCounters | None:
    """Spec-decode deltas from the engines whose counters held (what a cell's acceptance is computed from).

    Per ``engine`` label, :func:`spec_decode_delta`; an engine with a reset (a series down or vanished)
    is left out and named in ``reset_engines``; the others are summed (positions padded with 0), with
    ``reset`` False. When no engine held (the whole server restarted, or its only engine): the
    ``increase()`` sum over all engines with ``reset`` True. None when ``after`` has no spec-decode series
    or drafts, draft tokens or accepted tokens are absent from either snapshot (unavailable, not 0).
    """
    names = (NUM_DRAFTS, NUM_DRAFT_TOKENS, NUM_ACCEPTED)
    whole = spec_decode_delta(before, after, **match)
    if whole is None or any(not snap.values(n, **match) for n in names for snap in (before, after)):
        return None
    engines = tuple(sorted(_engines(before, names, match) | _engines(after, names, match), key=_numeric_first))
    per = {e: spec_decode_delta(_engine_view(before, e), _engine_view(after, e), **match) for e in engines}
    reset = tuple(e for e in engines if (c := per[e]) is None or c.reset)
    held = [c for e in engines if e not in reset and (c := per[e]) is not None]
    if not held:
        return replace(whole, reset=True, engines=engines, reset_engines=reset)
    width = max(len(c.accepted_per_position) for c in held)
    per_pos = tuple(
        math.fsum(c.accepted_per_position[i] for c in held if i < len(c.accepted_per_position)) for i in range(width)
    )
    return SpecDecodeCounters(
        math.fsum(c.num_drafts for c in held),
        math.fsum(c.num_draft_tokens for c in held),
        math.fsum(c.num_accepted_tokens for c in held),
        per_pos,
        False,
        engines,
        reset,
    )


@dataclass(frozen=True)
class HistogramDelta:
    """Observations of a histogram between two scrapes, summed over series.

    Attributes:
        upper_bounds: bucket bounds ``le`` ascending; the last is ``math.inf``; () if absent.
        cumulative_counts: observations <= each bound (same length).
        count: number of observations (``_count`` delta).
        sum: sum of the observed values (``_sum`` delta, in the metric's unit).
        reset: True if any series went down, vanished, or changed its bucket bounds.
    """

    upper_bounds: tuple[float, ...]
    cumulative_counts: tuple[float, ...]
    count: float
    sum: float
    reset: bool = False

    def quantile(self, q: float) -> float | None:
        """The q-quantile (metric's unit) with PromQL ``histogram_quantile`` semantics (Prometheus
        ``promql/quantile.go``, ``bucketQuantile``): counts made monotonic, rank = q x the ``+Inf``
        count, linear interpolation inside the bucket holding the rank (the first bucket starts at
        0), a rank in the ``+Inf`` bucket gives the highest finite bound. q = 0 with an empty first
        bucket gives 0 (Prometheus: NaN). None with no observations or no finite bucket.
        Raises ValueError for q outside [0, 1].
        """
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile q must be in [0, 1], got {q}")
        bounds, counts = self.upper_bounds, list(self.cumulative_counts)
        if len(bounds) < 2 or not math.isinf(bounds[-1]):
            return None
        for i in range(1, len(counts)):
            counts[i] = max(counts[i], counts[i - 1])
        if counts[-1] <= 0:
            return None
        rank = q * counts[-1]
        b = next((i for i in range(len(bounds) - 1) if counts[i] >= rank), len(bounds) - 1)
        if b == len(bounds) - 1:
            return bounds[-2]
        if b == 0 and bounds[0] <= 0:
            return bounds[0]
        start, below = (bounds[b - 1], counts[b - 1]) if b > 0 else (0.0, 0.0)
        in_bucket = counts[b] - below
        return start + (bounds[b] - start) * ((rank - below) / in_bucket) if in_bucket > 0 else start


@dataclass
class _Hist:
    buckets: dict[float, float]
    count: float = 0.0
    sum: float = 0.0


def _hist_series(snap: Snapshot, name: str, match: Mapping[str, str]) -> dict[_SeriesKey, _Hist]:
    names = (f"{name}_bucket", f"{name}_count", f"{name}_sum")
    out: dict[_SeriesKey, _Hist] = {}
    for s in snap.samples:
        if s.name not in names or not _matches(s, match):
            continue
        hist = out.setdefault(_key(s.labels, drop="le"), _Hist(buckets={}))
        if s.name == names[0]:
            hist.buckets[float(s.labels.get("le", "nan"))] = s.value
        elif s.name == names[1]:
            hist.count = s.value
        else:
            hist.sum = s.value
    return out


def histogram_delta(before: Snapshot, after: Snapshot, name: str, **match: str) -> HistogramDelta:
    """Reset-aware delta of histogram family ``name`` (base name, e.g.
    ``vllm:time_to_first_token_seconds``), summed over the series (``engine`` ...) matching ``match``.

    Per series: bucket, ``_count`` and ``_sum`` deltas; a series whose count or any bucket went down,
    or whose bounds changed, counts its ``after`` values (reset). A family absent from ``after`` gives
    an empty delta (no buckets, count 0). Raises ValueError if the series in ``after`` have different
    bucket bounds (they cannot be summed).
    """
    prev_all, now_all = _hist_series(before, name, match), _hist_series(after, name, match)
    reset = any(k not in now_all for k in prev_all)
    bounds: tuple[float, ...] = ()
    sums: dict[float, float] = {}
    count = total = 0.0
    for key, now in now_all.items():
        these = tuple(sorted(now.buckets))
        if bounds and these != bounds:
            raise ValueError(f"{name}: series have different bucket bounds, cannot sum them")
        bounds = these
        prev = prev_all.get(key, _Hist(buckets={}))
        went_down = now.count < prev.count or any(now.buckets[le] < prev.buckets.get(le, 0.0) for le in these)
        if went_down or (prev.buckets and tuple(sorted(prev.buckets)) != these):
            reset, prev = True, _Hist(buckets={})
        for le in these:
            sums[le] = sums.get(le, 0.0) + now.buckets[le] - prev.buckets.get(le, 0.0)
        count += now.count - prev.count
        total += now.sum - prev.sum
    return HistogramDelta(bounds, tuple(sums[le] for le in bounds), count, total, reset)


def above_bound(h: HistogramDelta, q: float) -> bool:
    """Whether the q-quantile of ``h`` lies in the ``+Inf`` bucket (``h.quantile(q)`` is then the
    highest finite bound and the true value is above it). Same monotonic counts and rank as
    ``HistogramDelta.quantile``. False with no observations or no finite bucket; ValueError for q
    outside [0, 1]."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile q must be in [0, 1], got {q}")
    bounds, counts = h.upper_bounds, h.cumulative_counts
    if len(bounds) < 2 or not math.isinf(bounds[-1]) or max(counts) <= 0:
        return False
    return max(counts[:-1]) < q * max(counts)
