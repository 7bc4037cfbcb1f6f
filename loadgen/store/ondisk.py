"""What of a run is on disk: requests of cells cut short (no entry in ``cells.jsonl``: Ctrl-C, SIGTERM, a
full disk), torn lines, and request records that could not be written, so the card counts every finished
request on disk and says how many are not, and why. The card's side of it (a cell's statistics marked
partial) is report/partial.py.

Pure: the run folder's records and cell entries come read (store/runfiles.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from loadgen.records.cell import CellEntry
from loadgen.records.request import RequestRecord
from loadgen.records.runparts import StatusFile

#: What a folder without status.json reads as: incomplete, its failure unknown.
NO_STATUS = StatusFile(complete=False, failure="unknown")


@dataclass(frozen=True)
class OnDisk:
    """The card's ``failure`` (:func:`failure_line`) and ``requests_on_disk`` (:func:`on_disk`)."""

    failure: str | None
    requests_on_disk: Mapping[str, int]


def on_disk(
    records: Sequence[RequestRecord], entries: Sequence[CellEntry], torn: Sequence[str], status: StatusFile
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
        key = (r.role, *r.key, r.repetition)
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
