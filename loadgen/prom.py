"""Prometheus text exposition: parse, snapshot, reset-aware deltas, quantiles (pure: no I/O, no clock).

Parsing is ``prometheus_client.parser.text_string_to_metric_families``; fetching lives elsewhere.
vLLM facts (docs/vllm-notes.md, "/metrics": vLLM 0.10-0.33 wheels, names confirmed live
on 0.32.0 and 0.24.0): engine metrics carry labels ``model_name`` and ``engine`` (sum over ``engine``;
``vllm/v1/metrics/loggers.py``); counters are exposed as ``<name>_total`` plus a ``<name>_created``
timestamp gauge (dropped here); spec-decode counters (``vllm/v1/spec_decode/metrics.py``) exist only on a
speculative server, one ``position`` child per draft position 0..K-1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from prometheus_client.parser import text_string_to_metric_families

SPEC_PREFIX = "vllm:spec_decode_"
NUM_DRAFTS = "vllm:spec_decode_num_drafts_total"
NUM_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
NUM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
CACHE_CONFIG_INFO = "vllm:cache_config_info"

_SeriesKey = frozenset[tuple[str, str]]


class PromParseError(ValueError):
    """The text is not Prometheus text exposition (message: one short line)."""


@dataclass(frozen=True)
class Sample:
    """One sample: exact sample name (``vllm:..._total``, ``..._bucket``), labels, value."""

    name: str
    labels: Mapping[str, str]
    value: float


def _matches(sample: Sample, match: Mapping[str, str]) -> bool:
    return all(sample.labels.get(k) == v for k, v in match.items())


@dataclass(frozen=True)
class Snapshot:
    """A parsed ``/metrics`` page.

    Attributes:
        samples: every sample except ``*_created`` ones, in exposition order.
        types: family name -> "counter", "gauge", "histogram", "summary", "unknown", ... as
            prometheus_client names families (a counter family drops its ``_total`` suffix).
    """

    samples: tuple[Sample, ...]
    types: Mapping[str, str]

    def values(self, name: str, **match: str) -> list[Sample]:
        """Samples with exactly this sample name whose labels include ``match``."""
        return [s for s in self.samples if s.name == name and _matches(s, match)]

    def total(self, name: str, **match: str) -> float | None:
        """Sum of the matching samples' values (e.g. over ``engine``); None if none match."""
        found = self.values(name, **match)
        return math.fsum(s.value for s in found) if found else None

    def has_family_prefix(self, prefix: str) -> bool:
        """Whether any family or sample name starts with ``prefix``."""
        return any(n.startswith(prefix) for n in (*self.types, *(s.name for s in self.samples)))


_SUFFIXES = ("", "_total", "_created", "_bucket", "_count", "_sum")


def only_families(text: str, names: Iterable[str]) -> str:
    """The lines of exposition ``text`` that belong to the families ``names``: their ``# HELP``/``# TYPE``
    lines and samples (the family name, or it plus ``_total``, ``_bucket``, ``_count``, ``_sum``,
    ``_created``). Parsing just those is a small part of parsing all of vLLM's ``/metrics`` (60 KB: about
    9 ms on a 2-core machine), which matters inside the event loop. "" when none is there."""
    wanted = {name + suffix for name in names for suffix in _SUFFIXES}
    keep = []
    for line in text.splitlines():
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE") and parts[2] in wanted:
                keep.append(line)
        elif line.split("{", 1)[0].split(" ", 1)[0] in wanted:
            keep.append(line)
    return "\n".join(keep) + "\n" if keep else ""


def parse_metrics(text: str) -> Snapshot:
    """Parse Prometheus text exposition (vLLM's ``/metrics``); "" gives an empty snapshot.

    Raises PromParseError (a ValueError) if the text is not exposition (e.g. an HTML error page).
    """
    samples: list[Sample] = []
    types: dict[str, str] = {}
    try:
        for family in text_string_to_metric_families(text):
            kept = [s for s in family.samples if not s.name.endswith("_created")]
            if kept and types.get(family.name, "unknown") == "unknown":
                types[family.name] = family.type
            for s in kept:
                samples.append(Sample(s.name, MappingProxyType(dict(s.labels)), float(s.value)))
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        detail = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise PromParseError(f"not Prometheus text exposition: {detail}") from exc
    return Snapshot(samples=tuple(samples), types=MappingProxyType(types))


def _key(labels: Mapping[str, str], drop: str | None = None) -> _SeriesKey:
    return frozenset((k, v) for k, v in labels.items() if k != drop)


def _series(snap: Snapshot, name: str, match: Mapping[str, str]) -> dict[_SeriesKey, float]:
    return {_key(s.labels): s.value for s in snap.values(name, **match)}


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


def _numeric_first(value: str) -> tuple[int, int | str]:
    return (0, int(value)) if value.isdigit() else (1, value)


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


def cache_config_info(snap: Snapshot, **match: str) -> dict[str, str]:
    """Labels of ``vllm:cache_config_info`` (``num_gpu_blocks``, ``block_size``,
    ``gpu_memory_utilization``, ..., ``engine``; strings, from vLLM's ``CacheConfig.metrics_info()``).

    With several engines, the lowest ``engine`` unless ``match`` picks one; {} if absent.
    """
    found = snap.values(CACHE_CONFIG_INFO, **match)
    if not found:
        return {}
    return dict(min(found, key=lambda s: _numeric_first(s.labels.get("engine", ""))).labels)
