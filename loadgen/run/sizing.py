"""Growing cells to a declared precision during a run (rules: measure/sizing.py; order: run/design.py).

After the initial blocks, each round reads the measured records back, computes every speculative arm's
primary ratio per cell with its block CI (measure/cellratios.py), asks measure/sizing.py which cells need a
block on which arms, and measures one more block there, until nothing is needed, the planned blocks are used
up, or ``deadline`` (a ``time.monotonic()`` value; the sweep's ``--budget-min``) cannot hold the next round,
estimated from the slots measured so far.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Sequence

from loadgen.measure.cellratios import blocked_ratios
from loadgen.measure.sizing import needed
from loadgen.profile.cells import PLACEBO, PLAIN, CellKey, CellSpec
from loadgen.records.cardcell import Ratio
from loadgen.records.criteria import LATENCY_METRICS
from loadgen.records.request import RequestRecord
from loadgen.report.rundir import load_records, read_cell_lines
from loadgen.run.design import Slot, next_blocks
from loadgen.run.execute import Session, append_order


def _ratios(
    records: Sequence[RequestRecord], metric: str, arms: Sequence[str]
) -> tuple[dict[CellKey, dict[str, Ratio]], dict[CellKey, Ratio | None]]:
    by: dict[tuple[CellKey, str], list[RequestRecord]] = defaultdict(list)
    for r in records:
        if not r.warmup:
            by[(CellKey.named(r.workload, r.level, r.concurrency), r.role)].append(r)
    keys = {k for k, _ in by}
    ratios = {k: {a: blocked_ratios(by[(k, PLAIN)], by[(k, a)])[metric] for a in arms if by.get((k, a))} for k in keys}
    aa = {k: (blocked_ratios(by[(k, PLAIN)], by[(k, PLACEBO)])[metric] if by.get((k, PLACEBO)) else None) for k in keys}
    return ratios, aa


def _round_s(session: Session, slots: Sequence[Slot]) -> float:
    """The seconds ``slots`` should take: per slot the median duration of the slots of its cell and arm
    measured so far (cells.jsonl), else of any slot."""
    lines = read_cell_lines(session.run_dir / "cells.jsonl")
    seen: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for e in lines:
        seen[(e.role, e.workload, e.level)].append(e.duration_s)
    every = [d for ds in seen.values() for d in ds] or [0.0]
    return sum(statistics.median(seen.get((s.arm, s.cell.workload, s.cell.level.label)) or every) for s in slots)


def grow(
    session: Session,
    planned: Sequence[CellSpec],
    arm_order: Sequence[str],
    metric: str,
    goal: float,
    deadline: float | None,
) -> str:
    """Add blocks until the goal is met (module docstring); returns why it stopped (one line)."""
    speculative = [a for a in arm_order if a not in (PLAIN, PLACEBO)]
    while True:
        records = load_records(session.run_dir)
        ratios, aa = _ratios(records, metric, speculative)
        wanted = needed(ratios, aa, speculative, goal, metric in LATENCY_METRICS, PLACEBO in arm_order)
        if not wanted:
            return f"every cell reached ±{goal:g} or its candidates are decided"
        done = {
            k: len(
                {
                    r.repetition
                    for r in records
                    if r.role == PLAIN and not r.warmup and CellKey.named(r.workload, r.level, r.concurrency) == k
                }
            )
            for k in wanted
        }
        slots = next_blocks(planned, done, wanted, arm_order, session.co_resident)
        if not slots:
            return "the cells that need more blocks have used [design].max_blocks"
        if deadline is not None and time.monotonic() + _round_s(session, slots) > deadline:
            return "the time left (--budget-min) cannot hold another round of blocks"
        session.log(
            f"sizing: {len(wanted)} cells wider than ±{goal:g}: one more block on "
            + ", ".join(f"{k.workload} {k.label} ({', '.join(a)})" for k, a in wanted.items())
        )
        append_order(session.run_dir, slots)
        session.run(slots)
