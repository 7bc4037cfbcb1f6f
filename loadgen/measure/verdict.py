"""The verdict of a card's cells against the criteria declared before the run (pure; records/criteria.py has
the rules and the statuses' meaning: pass, fail, inconclusive, not measured, not judged)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from loadgen.measure.decision import STATUS_OF, Bar, decide
from loadgen.records import card
from loadgen.records.cardcell import CardCell, Ratio
from loadgen.records.criteria import (
    FAIL,
    INCONCLUSIVE,
    LATENCY_METRICS,
    NOT_DISTINGUISHABLE,
    NOT_JUDGED,
    NOT_MEASURED,
    PASS,
    Criteria,
)
from loadgen.util.numbers import bytes_and_gib


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
            f": {'; '.join(self.reasons)}" if self.reasons else ""
        )


@dataclass(frozen=True)
class Verdict:
    """The verdict: ``passed`` (False -> the CLI exits 3), a one-line ``summary`` (starting with PASS, FAIL or
    INCONCLUSIVE or NOT DISTINGUISHABLE: :attr:`status`), per-cell and resource results, and the criteria it applied."""

    passed: bool
    summary: str
    cells: tuple[CellVerdict, ...]
    resources: tuple[Check, ...]
    criteria: Criteria

    @property
    def status(self) -> str:
        """``pass``, ``fail``, ``inconclusive`` or ``not distinguishable`` (the summary's first words)."""
        return self.summary.split(":")[0].lower()

    def record(self) -> card.CardVerdict:
        """The card's verdict record: passed, status, summary, criteria, cells (with checks), resources."""
        cells = tuple(
            card.CellVerdict(
                workload=c.workload,
                concurrency=c.concurrency,
                status=c.status,
                checks=tuple(card.Check(**asdict(k)) for k in c.checks),
                reasons=c.reasons,
            ).in_full()
            for c in self.cells
        )
        return card.CardVerdict(
            passed=self.passed,
            status=self.status,
            summary=self.summary,
            declared=True,
            criteria=self.criteria.record(),
            cells=cells,
            resources=tuple(card.Check(**asdict(r)) for r in self.resources),
        ).keyed("passed", "status", "summary", "criteria", "cells", "resources")


@dataclass(frozen=True)
class JudgedResources:
    """What the verdict judges of the card's resources (judging.judged_resources): the draft's extra memory
    (bytes) and the KV-cache capacity lost (a fraction); None where not measured."""

    extra_memory_bytes: float | None = None
    kv_capacity_loss: float | None = None


def _primary(name: str, cell: CardCell, criteria: Criteria) -> Check:
    """A primary metric's check: measure/decision.py's outcome, read as a status (only faster passes)."""
    floor = (cell.noise_floor.ratios or {}).get(name) if cell.noise_floor else None
    bar = Bar.of(criteria, name)
    d = decide(name, cell.ratio(name), floor, bar)
    threshold = bar.min_speedup  # judged and threshold as speedups (measure/decision.py)
    if d.speedup is None:
        return Check(
            name, "primary", NOT_MEASURED, None, threshold, f"{name} not measured (min_speedup {bar.min_speedup:g})"
        )
    return Check(name, "primary", STATUS_OF[d.outcome], d.low if bar.use_ci else d.speedup, threshold, d.reason)


def _regression(name: str, ratio: Ratio | None, criteria: Criteria) -> Check:
    """A ``max_regression`` check, judged at the point value: latency ratio <= f, throughput ratio >= 1/f."""
    lower = name in LATENCY_METRICS
    factor = criteria.max_regression[name]
    threshold, rule = (factor if lower else 1.0 / factor), f"max_regression {factor:g}"
    value = None if ratio is None else ratio.value
    if value is None:
        return Check(name, "regression", NOT_MEASURED, None, threshold, f"{name} not measured ({rule})")
    ok = value <= threshold if lower else value >= threshold
    op = "<=" if lower else ">="
    word = "meets" if ok else "misses"
    return Check(
        name,
        "regression",
        PASS if ok else FAIL,
        float(value),
        threshold,
        f"{name} spec/plain {value:.3f} {word} {op} {threshold:.3f} ({rule})",
    )


def _cell(cell: CardCell, criteria: Criteria) -> CellVerdict:
    workload, level = cell.workload, cell.concurrency
    if not criteria.in_scope(workload, level):
        return CellVerdict(workload, level, NOT_JUDGED, (), ("outside the declared workloads/concurrency",))
    if not cell.complete:
        return CellVerdict(workload, level, NOT_MEASURED, (), ("incomplete: not run on both servers",))
    blocking = [n for n in cell.notes if n.startswith("BLOCKING:")]
    if blocking:  # e.g. a lookup method that proposed no draft in the whole cell: no speculative comparison
        return CellVerdict(workload, level, NOT_MEASURED, (), (blocking[0],))
    checks = tuple(
        [_primary(m, cell, criteria) for m in criteria.primary]
        + [_regression(m, cell.ratio(m), criteria) for m in criteria.max_regression]
        + _lossless(cell, criteria)
    )
    statuses = {c.status for c in checks}
    status = next((s for s in (FAIL, NOT_MEASURED, INCONCLUSIVE, NOT_DISTINGUISHABLE) if s in statuses), PASS)
    reasons = tuple(c.reason for c in checks if c.status == status or status == PASS)
    return CellVerdict(workload, level, status, checks, reasons)


def _lossless(cell: CardCell, criteria: Criteria) -> list[Check]:
    """The lossless check (diagnosis.py): share of greedy requests with identical tokens on both servers."""
    limit = criteria.min_lossless_match
    if limit is None:
        return []
    lossless = cell.lossless
    rate = None if lossless is None else lossless.match_rate
    if lossless is not None and lossless.lossy:  # check refuses this pairing; a re-rendered run may still hold it
        return [
            Check(
                "lossless_match",
                "lossless",
                NOT_JUDGED,
                rate,
                limit,
                f"lossless match not judged: {lossless.lossy_reason} is lossy by design",
            )
        ]
    if rate is None:
        return [
            Check(
                "lossless_match",
                "lossless",
                NOT_MEASURED,
                None,
                limit,
                f"lossless match not measured (needs greedy sampling; min_lossless_match {limit:g})",
            )
        ]
    ok = rate >= limit
    return [
        Check(
            "lossless_match",
            "lossless",
            PASS if ok else FAIL,
            rate,
            limit,
            f"lossless match {_percent(rate)} {'meets' if ok else 'misses'} >= {_percent(limit)}",
        )
    ]


def _bytes(x: float) -> str:
    return bytes_and_gib(x)


_percent = "{:.1%}".format


def _resources(criteria: Criteria, resources: JudgedResources | None) -> tuple[Check, ...]:
    out = []
    limits = (
        ("extra_memory_bytes", criteria.max_extra_memory_bytes),
        ("kv_capacity_loss", criteria.max_kv_capacity_loss),
    )
    for name, limit in limits:
        if limit is None:
            continue
        value = None if resources is None else getattr(resources, name)
        show = _bytes if name == "extra_memory_bytes" else _percent
        if value is None:
            out.append(
                Check(name, "resource", NOT_MEASURED, None, float(limit), f"{name} not measured (limit {show(limit)})")
            )
        else:
            ok = value <= limit
            out.append(
                Check(
                    name,
                    "resource",
                    PASS if ok else FAIL,
                    float(value),
                    float(limit),
                    f"{name} {show(value)} {'within' if ok else 'exceeds'} limit {show(limit)}",
                )
            )
    return tuple(out)


def judge(criteria: Criteria, cells: Sequence[CardCell], resources: JudgedResources | None) -> Verdict:
    """Judge the card's ``cells`` (their workload, concurrency, completeness, notes, ratios and lossless check)
    and ``resources`` (None = unknown) against ``criteria``. Fails when a judged cell or
    a resource fails, when nothing in the declared range was measured, and (``require_measured``) when
    something declared was not measured."""
    judged = tuple(_cell(c, criteria) for c in cells)
    res = _resources(criteria, resources)
    in_range = [c for c in judged if c.status != NOT_JUDGED]
    measured = [c for c in in_range if c.status in (PASS, FAIL, INCONCLUSIVE, NOT_DISTINGUISHABLE)]
    unsure = [c.line() for c in in_range if c.status == INCONCLUSIVE]
    noise = [c.line() for c in in_range if c.status == NOT_DISTINGUISHABLE]
    failed = [c.line() for c in in_range if c.status == FAIL] + [r.reason for r in res if r.status == FAIL]
    missing = [c.line() for c in in_range if c.status == NOT_MEASURED] + [
        r.reason for r in res if r.status == NOT_MEASURED
    ]
    outside = len(judged) - len(in_range)
    tail = f"; {outside} cells not judged" if outside else ""
    if not measured:
        passed, summary = False, f"FAIL: nothing measured in the declared range ({len(in_range)} cells in range{tail})"
    elif failed:
        passed, summary = False, f"FAIL: {len(failed)} failed check(s), first: {failed[0]}{tail}"
    elif missing and criteria.require_measured:
        passed, summary = False, f"FAIL: not measured (require_measured = true): {missing[0]}{tail}"
    elif unsure:
        passed, summary = (
            False,
            (f"INCONCLUSIVE: {len(unsure)} cell(s) not yet decided (measure more blocks), first: {unsure[0]}{tail}"),
        )
    elif noise:
        passed, summary = (
            False,
            f"NOT DISTINGUISHABLE: {len(noise)} cell(s) inside the A/A noise floor, first: {noise[0]}{tail}",
        )
    else:
        passed = True
        summary = (
            f"PASS: {len(measured)} of {len(in_range)} cells in range meet the criteria (primary "
            f"{', '.join(criteria.primary)}, min_speedup {criteria.min_speedup:g})"
            + (", resources within limits" if res else "")
            + (f"; {len(missing)} not measured" if missing else "")
            + tail
        )
    return Verdict(passed, summary, judged, res, criteria)
