"""The criteria declared in the pair file before the run (``[criteria]``): the :class:`Criteria` record, parsed from
the pair file (:func:`parse_criteria`) and read back from protocol.json or a card verdict (:func:`criteria_of`);
measure/verdict.py judges a card by them.

Metrics are the card's ratio keys, speculative / plain (measure/ratios.py): latencies ``ttft_p50``, ``tpot_p50``,
``e2e_p50``, ``itl_p50``, ``ttft_p99``, ``e2e_p99`` (lower is better) and throughputs
``output_throughput``, ``request_throughput`` (higher is better).

Without a ``[criteria]`` table nothing is judged (measure/judging.py). Its keys, all optional (unknown keys and
wrong types are errors, exit 2); ``declared`` records which ones the file set, the rest are defaults:

- ``primary`` (list of metric names, default ``["tpot_p50"]``): what the draft must improve.
- ``min_speedup`` (number > 0, default 1.0): for a primary latency the spec/plain ratio must be
  <= 1/min_speedup; for a primary throughput >= min_speedup. 1.0 = "not worse"; 1.2 = "20% better".
- ``use_confidence_interval`` (bool, default true): judge a primary metric at the pessimistic end of its
  95% CI (upper bound for latencies, lower for throughputs) when the ratio has one (paired-bootstrap
  ratios: the p50 latencies); otherwise at its point value.
- ``max_regression`` (table metric -> number >= 1, default none): how much worse a metric may get, judged
  at its point value: latency ratio <= f, throughput ratio >= 1/f. E.g. ``{ ttft_p99 = 1.5 }``.
- ``concurrency`` (``[low, high]``, inclusive, default all levels) and ``workloads`` (list of names,
  default all): the cells that matter; the others are listed as "not judged".
- ``require_measured`` (bool, default true): every judged cell must be complete with every primary and
  regression metric measured, and every declared resource limit measured; otherwise the verdict fails.
  false: judge only what was measured (still failing when nothing in range was).
- ``max_extra_memory_bytes`` (int >= 0): speculative minus plain server memory, bytes.
- ``max_kv_capacity_loss`` (number 0..1): fraction of the plain server's KV-cache tokens the speculative
  server may lose (e.g. 0.2).
- ``min_lossless_match`` (number 0..1): under greedy sampling, the least share of requests whose tokens
  are identical on both servers, per judged cell (diagnosis.py). ``loadgen check`` refuses it (exit 2) for a
  lossy rejection (``rejection_sample_method`` ``fly``/``synthetic``, a ``VLLM_*TOLERANCE`` variable;
  profile/fields.py ``LOSSY_REJECTION``), whose outputs differ from the target's by design.
- ``ci_half_width`` (number in (0, 1)): the precision to reach: blocks are added to a cell until the half-width
  of its primary ratio's 95% CI on the log scale (measure/blocks.py) is at most this (0.05: about ±5%), up to
  ``[design].max_blocks`` or the sweep's ``--budget-min``.

A primary metric judged with its CI is **inconclusive** when the CI spans the threshold (its pessimistic end
misses, its optimistic end meets): neither a pass nor a fail. A cell is inconclusive when nothing in it
failed and a check is inconclusive; the verdict is then INCONCLUSIVE (not passed: measure more blocks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from loadgen.errors import ProfileError
from loadgen.records.cardwire import Wire

LATENCY_METRICS = ("ttft_p50", "tpot_p50", "e2e_p50", "itl_p50", "ttft_p99", "e2e_p99")
THROUGHPUT_METRICS = ("output_throughput", "request_throughput")
METRICS = LATENCY_METRICS + THROUGHPUT_METRICS
KEYS = (
    "primary",
    "min_speedup",
    "use_confidence_interval",
    "max_regression",
    "concurrency",
    "workloads",
    "require_measured",
    "max_extra_memory_bytes",
    "max_kv_capacity_loss",
    "min_lossless_match",
    "ci_half_width",
)
#: Verdict statuses of a cell, a metric check or a resource check (a primary metric's status is its outcome's:
#: measure/decision.py ``STATUS_OF``).
PASS, FAIL, NOT_MEASURED, NOT_JUDGED, INCONCLUSIVE = "pass", "fail", "not-measured", "not-judged", "inconclusive"
NOT_DISTINGUISHABLE = "not distinguishable"


@dataclass(frozen=True)
class Criteria:
    """Parsed ``[criteria]`` (see the module docstring for each field)."""

    primary: tuple[str, ...] = ("tpot_p50",)
    min_speedup: float = 1.0
    use_confidence_interval: bool = True
    max_regression: Mapping[str, float] = field(default_factory=dict)
    concurrency: tuple[int, int] | None = None
    workloads: tuple[str, ...] | None = None
    require_measured: bool = True
    max_extra_memory_bytes: int | None = None
    max_kv_capacity_loss: float | None = None
    min_lossless_match: float | None = None
    ci_half_width: float | None = None
    declared: tuple[str, ...] = field(default=(), compare=False)  # the keys the pair file set

    def in_scope(self, workload: str, concurrency: int) -> bool:
        """True when the cell (workload, concurrency) is in the declared range (a context-length variant
        ``<workload>@<tokens>`` is in scope when its workload is)."""
        if self.workloads is not None and not {workload, workload.split("@")[0]} & set(self.workloads):
            return False
        return self.concurrency is None or self.concurrency[0] <= concurrency <= self.concurrency[1]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict of every field but ``declared`` (tuples become lists)."""
        out = {k: v for k, v in asdict(self).items() if k != "declared"}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    def record(self) -> CriteriaRecord:
        """The criteria as the card's verdict writes them: :meth:`to_json`'s keys, in its order."""
        return CriteriaRecord.from_json(self.to_json(), source="the criteria applied")


@dataclass(frozen=True)
class CriteriaRecord(Wire):
    """protocol.json's ``criteria``: :meth:`Criteria.to_json` (every field, None where not declared; the fields
    as the module docstring says) plus ``declared``, the keys the pair file set (absent in a protocol of older
    code: then every key counts as declared). Read back as :class:`Criteria` by :func:`criteria_of`."""

    primary: tuple[str, ...] | None = None
    min_speedup: float | None = None
    use_confidence_interval: bool | None = None
    max_regression: Mapping[str, float] | None = None
    concurrency: tuple[int, ...] | None = None
    workloads: tuple[str, ...] | None = None
    require_measured: bool | None = None
    max_extra_memory_bytes: int | None = None
    max_kv_capacity_loss: float | None = None
    min_lossless_match: float | None = None
    ci_half_width: float | None = None
    declared: tuple[str, ...] | None = None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_criteria(table: Mapping[str, Any], path: Path) -> Criteria:
    """Strictly parse the ``[criteria]`` table of the pair file ``path``. Raises ProfileError (one line
    naming file, key and fix) on an unknown key, a wrong type, an unknown metric or a bad range."""

    def fail(key: str, expected: str) -> ProfileError:
        return ProfileError(f"{path}: [criteria].{key} must be {expected}, got {table[key]!r} (see profiles/README.md)")

    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ProfileError(
            f"{path}: unknown key {unknown[0]!r} in [criteria]; known keys: {', '.join(KEYS)} (see profiles/README.md)"
        )
    names = f"a list of metric names ({', '.join(METRICS)})"
    kw: dict[str, Any] = {}
    if "primary" in table:
        v = table["primary"]
        if not isinstance(v, list) or not v or not all(m in METRICS for m in v) or len(set(v)) != len(v):
            raise fail("primary", "a non-empty " + names.replace("a list", "list") + " without repeats")
        kw["primary"] = tuple(v)
    if "min_speedup" in table:
        if not _number(table["min_speedup"]) or table["min_speedup"] <= 0:
            raise fail("min_speedup", "a number > 0 (1.0 = not slower, 1.2 = 20% better)")
        kw["min_speedup"] = float(table["min_speedup"])
    for key in ("use_confidence_interval", "require_measured"):
        if key in table:
            if not isinstance(table[key], bool):
                raise fail(key, "true or false")
            kw[key] = table[key]
    if "max_regression" in table:
        v = table["max_regression"]
        if not isinstance(v, dict) or not all(m in METRICS and _number(f) and f >= 1.0 for m, f in v.items()):
            raise fail(
                "max_regression",
                "a table metric -> number >= 1 (e.g. { ttft_p99 = 1.5 }); metrics: " + ", ".join(METRICS),
            )
        kw["max_regression"] = {m: float(f) for m, f in v.items()}
    if "concurrency" in table:
        v = table["concurrency"]
        if not (
            isinstance(v, list)
            and len(v) == 2
            and all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in v)
            and v[0] <= v[1]
        ):
            raise fail("concurrency", "[low, high], positive integers with low <= high (e.g. [1, 8])")
        kw["concurrency"] = (v[0], v[1])
    if "workloads" in table:
        v = table["workloads"]
        if not isinstance(v, list) or not v or not all(isinstance(w, str) for w in v):
            raise fail("workloads", "a non-empty list of workload names")
        kw["workloads"] = tuple(v)
    if "max_extra_memory_bytes" in table:
        v = table["max_extra_memory_bytes"]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise fail("max_extra_memory_bytes", "an integer number of bytes >= 0 (e.g. 2_000_000_000)")
        kw["max_extra_memory_bytes"] = v
    for key, what in (
        ("max_kv_capacity_loss", "a fraction between 0 and 1 (e.g. 0.2 for 20%)"),
        ("min_lossless_match", "a fraction between 0 and 1 of requests with identical tokens (e.g. 0.95)"),
        ("ci_half_width", "a number between 0 and 1, exclusive (e.g. 0.05 for a CI of about ±5%)"),
    ):
        if key in table:
            v = table[key]
            open_range = key == "ci_half_width"
            if not _number(v) or not (0 < v < 1 if open_range else 0 <= v <= 1):
                raise fail(key, what)
            kw[key] = float(v)
    return Criteria(**kw, declared=tuple(k for k in KEYS if k in table))


def criteria_of(given: CriteriaRecord | Mapping[str, Any], path: Path) -> Criteria:
    """The criteria of protocol.json's (a :class:`CriteriaRecord`) or a card verdict's ``criteria`` (an object:
    ``Criteria.to_json()`` plus ``declared``; its nulls are the defaults), checked as the pair file's table is.
    Raises ProfileError naming ``path`` when it does not parse."""
    raw = given.to_json() if isinstance(given, CriteriaRecord) else given
    fields = {k: v for k, v in raw.items() if v is not None and k != "declared"}
    return dataclasses.replace(parse_criteria(fields, path), declared=tuple(raw.get("declared", fields)))
