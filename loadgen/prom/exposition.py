"""Prometheus text exposition: parse and snapshot (pure: no I/O, no clock); deltas live in deltas.py.

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


def _numeric_first(value: str) -> tuple[int, int | str]:
    return (0, int(value)) if value.isdigit() else (1, value)


def cache_config_info(snap: Snapshot, **match: str) -> dict[str, str]:
    """Labels of ``vllm:cache_config_info`` (``num_gpu_blocks``, ``block_size``,
    ``gpu_memory_utilization``, ..., ``engine``; strings, from vLLM's ``CacheConfig.metrics_info()``).

    With several engines, the lowest ``engine`` unless ``match`` picks one; {} if absent.
    """
    found = snap.values(CACHE_CONFIG_INFO, **match)
    if not found:
        return {}
    return dict(min(found, key=lambda s: _numeric_first(s.labels.get("engine", ""))).labels)
