"""Criteria declared in the pair file before the run (``[criteria]``), and the verdict against them (pure).

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
  are identical on both servers, per judged cell (diagnosis.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from loadgen.errors import ProfileError
from loadgen.util.numbers import bytes_and_gib

LATENCY_METRICS = ("ttft_p50", "tpot_p50", "e2e_p50", "itl_p50", "ttft_p99", "e2e_p99")
THROUGHPUT_METRICS = ("output_throughput", "request_throughput")
METRICS = LATENCY_METRICS + THROUGHPUT_METRICS
KEYS = ("primary", "min_speedup", "use_confidence_interval", "max_regression", "concurrency", "workloads",
        "require_measured", "max_extra_memory_bytes", "max_kv_capacity_loss", "min_lossless_match")
#: Verdict statuses of a cell, a metric check or a resource check.
PASS, FAIL, NOT_MEASURED, NOT_JUDGED = "pass", "fail", "not-measured", "not-judged"


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


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_criteria(table: Mapping[str, Any], path: Path) -> Criteria:
    """Strictly parse the ``[criteria]`` table of the pair file ``path``. Raises ProfileError (one line
    naming file, key and fix) on an unknown key, a wrong type, an unknown metric or a bad range."""

    def fail(key: str, expected: str) -> ProfileError:
        return ProfileError(f"{path}: [criteria].{key} must be {expected}, got {table[key]!r} (see profiles/README.md)")

    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ProfileError(f"{path}: unknown key {unknown[0]!r} in [criteria]; known keys: {', '.join(KEYS)} "
                           "(see profiles/README.md)")
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
            raise fail("max_regression", "a table metric -> number >= 1 (e.g. { ttft_p99 = 1.5 }); metrics: "
                       + ", ".join(METRICS))
        kw["max_regression"] = {m: float(f) for m, f in v.items()}
    if "concurrency" in table:
        v = table["concurrency"]
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(c, int) and not isinstance(c, bool)
                                                              and c >= 1 for c in v) and v[0] <= v[1]):
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
    if "max_kv_capacity_loss" in table:
        v = table["max_kv_capacity_loss"]
        if not _number(v) or not 0 <= v <= 1:
            raise fail("max_kv_capacity_loss", "a fraction between 0 and 1 (e.g. 0.2 for 20%)")
        kw["max_kv_capacity_loss"] = float(v)
    if "min_lossless_match" in table:
        v = table["min_lossless_match"]
        if not _number(v) or not 0 <= v <= 1:
            raise fail("min_lossless_match", "a fraction between 0 and 1 of requests with identical tokens (e.g. 0.95)")
        kw["min_lossless_match"] = float(v)
    return Criteria(**kw, declared=tuple(k for k in KEYS if k in table))


@dataclass(frozen=True)
class Check:
    """One judged number: ``status`` pass/fail/not-measured; ``judged`` is the number compared (the CI
    bound or the point ratio; bytes or fraction for resources); ``reason`` is one line."""

    name: str
    kind: str  # "primary" | "regression" | "resource"
    status: str
    judged: float | None
    threshold: float
    reason: str


@dataclass(frozen=True)
class CellVerdict:
    """A (workload, concurrency) cell: status pass/fail/not-measured/not-judged, its checks and reasons."""

    workload: str
    concurrency: int
    status: str
    checks: tuple[Check, ...]
    reasons: tuple[str, ...]

    def line(self) -> str:
        """``<workload> c=<n>: <status>: <reasons>``."""
        return f"{self.workload} c={self.concurrency}: {self.status}" + (
            f": {'; '.join(self.reasons)}" if self.reasons else "")


@dataclass(frozen=True)
class Verdict:
    """The verdict: ``passed`` (False -> the CLI exits 3), a one-line ``summary``, per-cell and resource
    results, and the criteria it applied."""

    passed: bool
    summary: str
    cells: tuple[CellVerdict, ...]
    resources: tuple[Check, ...]
    criteria: Criteria

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict: passed, summary, criteria, cells (with checks), resources."""
        return {"passed": self.passed, "summary": self.summary, "criteria": self.criteria.to_json(),
                "cells": [asdict(c) for c in self.cells], "resources": [asdict(r) for r in self.resources]}


def _metric(name: str, kind: str, ratio: Mapping[str, Any] | None, criteria: Criteria) -> Check:
    lower = name in LATENCY_METRICS
    if kind == "primary":
        threshold = 1.0 / criteria.min_speedup if lower else criteria.min_speedup
        rule = f"min_speedup {criteria.min_speedup:g}"
    else:
        factor = criteria.max_regression[name]
        threshold, rule = (factor if lower else 1.0 / factor), f"max_regression {factor:g}"
    value = None if ratio is None else ratio.get("value")
    if value is None:
        return Check(name, kind, NOT_MEASURED, None, threshold, f"{name} not measured ({rule})")
    bound = ratio.get("ci_high" if lower else "ci_low") if ratio and kind == "primary" else None
    use_ci = criteria.use_confidence_interval and bound is not None
    judged = float(bound if use_ci and bound is not None else value)
    ok = judged <= threshold if lower else judged >= threshold
    ci = (f" (95% CI {ratio.get('ci_low'):.3f}-{ratio.get('ci_high'):.3f}, judged at {judged:.3f})"
          if use_ci and ratio else "")
    op = "<=" if lower else ">="
    return Check(name, kind, PASS if ok else FAIL, judged, threshold,
                 f"{name} spec/plain {value:.3f}{ci} {'meets' if ok else 'misses'} {op} {threshold:.3f} ({rule})")


def _cell(cell: Mapping[str, Any], criteria: Criteria) -> CellVerdict:
    workload, level = str(cell["workload"]), int(cell["concurrency"])
    if not criteria.in_scope(workload, level):
        return CellVerdict(workload, level, NOT_JUDGED, (), ("outside the declared workloads/concurrency",))
    if not cell.get("complete"):
        return CellVerdict(workload, level, NOT_MEASURED, (), ("incomplete: not run on both servers",))
    ratios = cell.get("ratios") or {}
    checks = tuple([_metric(m, "primary", ratios.get(m), criteria) for m in criteria.primary]
                   + [_metric(m, "regression", ratios.get(m), criteria) for m in criteria.max_regression]
                   + _lossless(cell, criteria))
    statuses = {c.status for c in checks}
    status = FAIL if FAIL in statuses else NOT_MEASURED if NOT_MEASURED in statuses else PASS
    reasons = tuple(c.reason for c in checks if c.status == status or status == PASS)
    return CellVerdict(workload, level, status, checks, reasons)


def _lossless(cell: Mapping[str, Any], criteria: Criteria) -> list[Check]:
    """The lossless check (diagnosis.py): share of greedy requests with identical tokens on both servers."""
    limit = criteria.min_lossless_match
    if limit is None:
        return []
    rate = (cell.get("lossless") or {}).get("match_rate")
    if rate is None:
        return [Check("lossless_match", "lossless", NOT_MEASURED, None, limit,
                      f"lossless match not measured (needs greedy sampling; min_lossless_match {limit:g})")]
    ok = rate >= limit
    return [Check("lossless_match", "lossless", PASS if ok else FAIL, rate, limit,
                  f"lossless match {_percent(rate)} {'meets' if ok else 'misses'} >= {_percent(limit)}")]


def _bytes(x: float) -> str:
    return bytes_and_gib(x)


_percent = "{:.1%}".format


def _resources(criteria: Criteria, resources: Mapping[str, Any] | None) -> tuple[Check, ...]:
    out = []
    limits = (("extra_memory_bytes", criteria.max_extra_memory_bytes), ("kv_capacity_loss",
                                                                         criteria.max_kv_capacity_loss))
    for name, limit in limits:
        if limit is None:
            continue
        value = (resources or {}).get(name)
        show = _bytes if name == "extra_memory_bytes" else _percent
        if value is None:
            out.append(Check(name, "resource", NOT_MEASURED, None, float(limit), f"{name} not measured "
                             f"(limit {show(limit)})"))
        else:
            ok = value <= limit
            out.append(Check(name, "resource", PASS if ok else FAIL, float(value), float(limit),
                             f"{name} {show(value)} {'within' if ok else 'exceeds'} limit {show(limit)}"))
    return tuple(out)


def judge(criteria: Criteria, cells: Sequence[Mapping[str, Any]], resources: Mapping[str, Any] | None) -> Verdict:
    """Judge the card's ``cells`` (each ``{"workload", "concurrency", "complete", "ratios": {metric:
    {"value", "ci_low", "ci_high", "pairs"}}}``) and ``resources`` (``{"extra_memory_bytes": int|None,
    "kv_capacity_loss": float|None}``, None = unknown) against ``criteria``. Fails when a judged cell or
    a resource fails, when nothing in the declared range was measured, and (``require_measured``) when
    something declared was not measured."""
    judged = tuple(_cell(c, criteria) for c in cells)
    res = _resources(criteria, resources)
    in_range = [c for c in judged if c.status != NOT_JUDGED]
    measured = [c for c in in_range if c.status in (PASS, FAIL)]
    failed = [c.line() for c in in_range if c.status == FAIL] + [r.reason for r in res if r.status == FAIL]
    missing = [c.line() for c in in_range if c.status == NOT_MEASURED] + [
        r.reason for r in res if r.status == NOT_MEASURED]
    outside = len(judged) - len(in_range)
    tail = f"; {outside} cells not judged" if outside else ""
    if not measured:
        passed, summary = False, f"FAIL: nothing measured in the declared range ({len(in_range)} cells in range{tail})"
    elif failed:
        passed, summary = False, f"FAIL: {len(failed)} failed check(s), first: {failed[0]}{tail}"
    elif missing and criteria.require_measured:
        passed, summary = False, f"FAIL: not measured (require_measured = true): {missing[0]}{tail}"
    else:
        passed = True
        summary = (f"PASS: {len(measured)} of {len(in_range)} cells in range meet the criteria (primary "
                   f"{', '.join(criteria.primary)}, min_speedup {criteria.min_speedup:g})"
                   + (", resources within limits" if res else "")
                   + (f"; {len(missing)} not measured" if missing else "") + tail)
    return Verdict(passed, summary, judged, res, criteria)
