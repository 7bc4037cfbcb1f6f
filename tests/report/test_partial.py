"""report/partial.py: a card cell's statistics marked partial, from hand-built cell sides and request records
(blocks with and without their cells.jsonl entry)."""

from __future__ import annotations

from loadgen.records.cardcell import RoleStats
from loadgen.records.cell import CellEntry
from loadgen.records.request import RequestRecord
from loadgen.records.runparts import StatusFile
from loadgen.report.partial import mark_partial
from loadgen.store.ondisk import NO_STATUS


def _side(failure: str | None) -> RoleStats:
    return RoleStats(
        requests=5,
        errors=0,
        output_throughput_tps=None,
        request_throughput_rps=None,
        ttft_s=None,
        tpot_s=None,
        itl_s=None,
        e2e_s=None,
        failure=failure,
    )


def test_mark_partial_adds_the_count_and_the_line() -> None:
    records = [
        RequestRecord(f"p{i}", "plain", "w", 4, "measured", 0.0, repetition=rep)
        for i, rep in enumerate((0, 0, 1, 2, 2))
    ]
    entries = [CellEntry("plain", "w", 4, repetition=0), CellEntry("plain", "w", 4, repetition=1)]
    got = mark_partial(_side("earlier"), entries, records, StatusFile(complete=False, failure="disk full"))
    assert (got.partial, got.partial_requests, got.failure) == (
        True,
        2,
        "earlier; partial: 2 measured requests finished before the cell was cut short (disk full); they "
        "are kept, without the cell's server counters",
    )
    assert list(got.to_json())[-3:] == ["failure", "partial", "partial_requests"]
    whole = _side(None)
    assert mark_partial(whole, [*entries, CellEntry("plain", "w", 4, repetition=2)], records, NO_STATUS) is whole
    cut = mark_partial(_side(None), [], records[:1], StatusFile(complete=False, failure=None))
    assert str(cut.failure).endswith("cut short (the run stopped); they are kept, without the cell's server counters")
