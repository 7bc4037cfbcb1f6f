"""vLLM's renamed ``/metrics`` names: read a figure under its current name, or under the older name a
server from before the rename exposes (pure).

Renames (vLLM ``vllm/v1/metrics/loggers.py``; deprecation policy in vLLM's docs/usage/metrics.md: a
metric deprecated in X.Y is hidden in X.Y+1 and removed in X.Y+2):

- ``vllm:gpu_cache_usage_perc`` -> ``vllm:kv_cache_usage_perc``, ``vllm:gpu_prefix_cache_queries`` ->
  ``vllm:prefix_cache_queries``, ``vllm:gpu_prefix_cache_hits`` -> ``vllm:prefix_cache_hits``
  (https://github.com/vllm-project/vllm/pull/18354, deprecated in 0.9.2, hidden in 0.11, removed in 0.12).
- ``vllm:time_per_output_token_seconds`` -> ``vllm:inter_token_latency_seconds``, the same per-engine-step
  observation (https://github.com/vllm-project/vllm/pull/24110, deprecated in 0.11; removed by
  https://github.com/vllm-project/vllm/pull/32661). ``vllm:request_time_per_output_token_seconds``
  (per request, decode time / (generated tokens - 1), vLLM 0.11+) is new: it has no older name.

Names here are family names (counters without ``_total``); :func:`resolve` adds the suffix back.
"""

from __future__ import annotations

from loadgen.prom.exposition import Snapshot

#: current family name -> older names, newest first
OLDER_NAMES: dict[str, tuple[str, ...]] = {
    "vllm:kv_cache_usage_perc": ("vllm:gpu_cache_usage_perc",),
    "vllm:prefix_cache_queries": ("vllm:gpu_prefix_cache_queries",),
    "vllm:prefix_cache_hits": ("vllm:gpu_prefix_cache_hits",),
    "vllm:inter_token_latency_seconds": ("vllm:time_per_output_token_seconds",),
}

_SAMPLE_SUFFIXES = ("", "_total", "_count", "_bucket")


def candidates(name: str) -> tuple[str, ...]:
    """``name`` (a family name, ``_total`` allowed for counters) followed by its older names."""
    base = name.removesuffix("_total")
    suffix = name[len(base) :]
    return (name, *(old + suffix for old in OLDER_NAMES.get(base, ())))


def present(snap: Snapshot, name: str) -> bool:
    """Whether ``snap`` has a sample of family ``name`` (exact sample name, or it plus ``_total``,
    ``_count`` or ``_bucket``)."""
    wanted = {name + s for s in _SAMPLE_SUFFIXES}
    return any(s.name in wanted for s in snap.samples)


def resolve(snap: Snapshot, name: str) -> str | None:
    """The first of :func:`candidates` that ``snap`` exposes (the current name wins when a server shows
    both during the deprecation period); None when none is there."""
    return next((n for n in candidates(name) if present(snap, n)), None)


def all_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` and every older name of each (e.g. to keep their lines with ``prom.only_families``)."""
    return tuple(n for name in names for n in candidates(name))
