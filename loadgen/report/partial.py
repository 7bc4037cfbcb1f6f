"""A card cell's side of a run cut short: the statistics of one server marked partial when some of its
measured requests belong to a block with no ``cells.jsonl`` entry (Ctrl-C, SIGTERM, a full disk). What of the
run is on disk, and the failure line, is store/ondisk.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from loadgen.records.cardcell import RoleStats
from loadgen.records.cell import CellEntry
from loadgen.records.request import RequestRecord
from loadgen.records.runparts import StatusFile


def mark_partial(
    side: RoleStats, entries: Sequence[CellEntry], records: list[RequestRecord], status: StatusFile
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
