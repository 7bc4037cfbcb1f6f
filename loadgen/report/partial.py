"""What of a run is on disk: requests of cells cut short (no entry in ``cells.jsonl``: Ctrl-C, SIGTERM, a
full disk), torn lines, and request records that could not be written, so the card counts every finished
request on disk and says how many are not, and why.

Pure: the run folder's records and cell entries come read (report/runfiles.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from loadgen.profile.cells import CellKey
from loadgen.records.cardcell import RoleStats
from loadgen.records.cell import CellEntry
from loadgen.records.request import RequestRecord


@dataclass(frozen=True)
class RunStatus:
    """What the card reads of ``status.json``: whether the run measured every planned cell, its failure and
    how many request records could not be written. A folder without status.json: incomplete, failure
    ``unknown``."""

    complete: bool = False
    failure: str | None = "unknown"
    requests_not_written: int = 0


@dataclass(frozen=True)
class OnDisk:
    """The card's ``failure`` (:func:`failure_line`) and ``requests_on_disk`` (:func:`on_disk`)."""

    failure: str | None
    requests_on_disk: Mapping[str, int]


def mark_partial(
    side: RoleStats, entries: Sequence[CellEntry], records: list[RequestRecord], status: RunStatus
) -> RoleStats:
    """``side`` (one role's statistics of a card cell) with ``partial`` and ``partial_requests`` set and a
    failure line added, when some of ``records`` (measured) belong to a repetition with no entry in
    ``entries`` (its cell was cut short); otherwise ``side`` unchanged."""
    reps = {e.repetition for e in entries}
    orphans = sum(1 for r in records if r.repetition not in reps)
    if not orphans:
        return side
    why = status.failure or "the run stopped"
    line = (
        f"partial: {orphans} measured requests finished before the cell was cut short ({why}); they are kept, "
        "without the cell's server counters"
    )
    return side.with_fields(
        partial=True, partial_requests=orphans, failure="; ".join(x for x in (side.failure, line) if x)
    )


def on_disk(
    records: Sequence[RequestRecord], entries: Sequence[CellEntry], torn: Sequence[str], status: RunStatus
) -> OnDisk:
    """The card's ``failure`` (:func:`failure_line`) and ``requests_on_disk``: counts of the run's request
    records (requests.jsonl), ``measured`` on disk, ``partial`` of them in cells with no entry in ``entries``
    (cells.jsonl), ``torn_lines`` skipped in requests.jsonl, ``not_written`` (from status.json)."""
    done = {(e.role, *e.key, e.repetition) for e in entries}
    measured = partial = 0
    for r in records:
        if r.phase != "measured":
            continue
        measured += 1
        key = (r.role, *CellKey.named(r.workload, r.level, r.concurrency), r.repetition)
        partial += key not in done
    counts = {
        "measured": measured,
        "partial": partial,
        "torn_lines": len(torn),
        "not_written": status.requests_not_written,
    }
    return OnDisk(failure_line(status.failure, counts), counts)


def failure_line(failure: str | None, counts: dict[str, int]) -> str | None:
    """The card's failure line: the run's own ``failure`` plus what is partial, torn or not written."""
    parts = [failure] if failure else []
    if counts["partial"]:
        parts.append(
            f"{counts['partial']} of {counts['measured']} measured requests on disk are from cells cut "
            "short, kept and marked partial"
        )
    if counts["torn_lines"]:
        parts.append(f"{counts['torn_lines']} torn line(s) in requests.jsonl skipped (a write cut short)")
    if counts["not_written"]:
        parts.append(f"{counts['not_written']} request records could not be written (the run folder refused the write)")
    return "; ".join(parts) or None
