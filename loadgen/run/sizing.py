"""Growing cells until they are decided, during a run (rules: measure/sizing.py; order: run/design.py).

After a cell's initial blocks (co-resident servers: right after them, cell by cell, so the servers are warm at
that level and an interrupted run keeps its decided cells; one server at a time: after every cell's, in
rounds), each step reads the measured records back, computes every speculative arm's primary ratio per cell
with its block CI (measure/cellratios.py), asks measure/sizing.py which cells are undecided on which arms, and
measures one more block there, until every cell is decided, the planned blocks are used up, or ``deadline``
(a ``time.monotonic()`` value; the sweep's ``--budget-min``) cannot hold the next block plus the cells still
owed their initial blocks, estimated from the slots measured so far.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Collection, Sequence

from loadgen.measure.cellratios import blocked_ratios
from loadgen.measure.decision import Bar
from loadgen.measure.sizing import needed
from loadgen.profile.cells import PLACEBO, PLAIN, CellKey, CellSpec
from loadgen.records.cardcell import Ratio
from loadgen.records.request import RequestRecord
from loadgen.records.runparts import SIZING_DECIDED as DECIDED
from loadgen.run.design import Slot, next_blocks
from loadgen.run.execute import Session, append_order
from loadgen.store.files import load_records, read_cell_lines


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


def round_s(session: Session, slots: Sequence[Slot]) -> float:
    """The seconds ``slots`` should take: per slot the median duration of the slots of its cell and arm
    measured so far (cells.jsonl), else of any slot."""
    lines = read_cell_lines(session.run_dir / "cells.jsonl")
    seen: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for e in lines:
        seen[(e.role, e.workload, e.level)].append(e.duration_s)
    every = [d for ds in seen.values() for d in ds] or [0.0]
    return sum(statistics.median(seen.get((s.arm, s.cell.workload, s.cell.level.label)) or every) for s in slots)


def _blocks_done(records: Sequence[RequestRecord], keys: Sequence[CellKey]) -> dict[CellKey, int]:
    """Blocks the plain arm has measured per cell (the block count every arm's next block follows)."""
    seen: dict[CellKey, set[int]] = defaultdict(set)
    for r in records:
        if r.role == PLAIN and not r.warmup:
            seen[CellKey.named(r.workload, r.level, r.concurrency)].add(r.repetition)
    return {k: len(seen.get(k, ())) for k in keys}


def grow(
    session: Session,
    planned: Sequence[CellSpec],
    arm_order: Sequence[str],
    metric: str,
    bar: Bar,
    deadline: float | None,
    only: Collection[CellKey] | None = None,
    reserve_s: float = 0.0,
) -> str:
    """Add blocks until every cell (of ``only``, when given) is decided (module docstring); returns why it
    stopped (one line). ``reserve_s``: the seconds still owed to cells not yet measured, kept out of the
    time a new block may take before ``deadline``."""
    speculative = [a for a in arm_order if a not in (PLAIN, PLACEBO)]
    while True:
        records = load_records(session.run_dir)
        ratios, aa = _ratios(records, metric, speculative)
        if only is not None:
            ratios = {k: v for k, v in ratios.items() if k in only}
        wanted = needed(ratios, aa, speculative, metric, bar, PLACEBO in arm_order)
        if not wanted:
            return DECIDED
        slots = next_blocks(planned, _blocks_done(records, list(wanted)), wanted, arm_order, session.co_resident)
        if not slots:
            return "the undecided cells have used [design].max_blocks"
        if deadline is not None and time.monotonic() + round_s(session, slots) + reserve_s > deadline:
            return "the time left (--budget-min) cannot hold another block and the cells still to measure"
        session.log(
            f"sizing: {len(wanted)} cells undecided: one more block on "
            + ", ".join(f"{k.workload} {k.label} ({', '.join(a)})" for k, a in wanted.items())
        )
        append_order(session.run_dir, slots)
        session.run(slots)
