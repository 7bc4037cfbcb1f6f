"""report/partial.py: what of a run is on disk, from a run folder written here with known contents (cells with
and without their cells.jsonl entry, a warmup request, a torn line) and from hand-built cell sides."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from loadgen.records.cardcell import RoleStats
from loadgen.records.cell import CellEntry
from loadgen.records.request import RequestRecord
from loadgen.report.partial import RunStatus, failure_line, mark_partial, on_disk
from loadgen.report.rundir import load_records, read_cell_lines


def req(role: str, level: str, rep: int, phase: str = "measured") -> dict[str, object]:
    return RequestRecord(f"p{rep}", role, "w", 4, phase, 0.0, level=level, repetition=rep).to_json()


def on_disk_of(run: Path, status: RunStatus) -> dict[str, Any]:
    """``on_disk`` of the run folder ``run``, its files read as report/runfiles.py reads them."""
    torn: list[str] = []
    records = load_records(run, torn)
    return asdict(on_disk(records, read_cell_lines(run / "cells.jsonl"), torn, status))


def write_run(run: Path) -> None:
    run.mkdir()
    cells = [
        {"role": "plain", "workload": "w", "level": "c4", "concurrency": 4, "repetition": 0},
        {"role": "speculative", "workload": "w", "level": "c4", "concurrency": 4, "repetition": 0},
        {"role": "plain", "workload": "w", "concurrency": 8},
    ]  # an older line without level or repetition
    (run / "cells.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cells))
    requests = [
        req("plain", "c4", 0),
        req("plain", "c4", 0),
        req("speculative", "c4", 0),
        req("plain", "c8", 0),
        req("plain", "c4", 0, "warmup"),
        req("speculative", "c4", 1),
        req("speculative", "c4", 1),
        req("speculative", "c8", 0),
    ]
    lines = [json.dumps(r) for r in requests]
    lines.insert(3, '{"prompt_id": "torn", "ro')
    (run / "requests.jsonl").write_text("\n".join(lines) + "\n")


def test_on_disk_counts_measured_partial_torn_and_not_written(tmp_path: Path) -> None:
    write_run(tmp_path / "run")
    got = on_disk_of(tmp_path / "run", RunStatus(failure="interrupted (Ctrl-C)", requests_not_written=2))
    # 7 measured: repetition 1 of speculative c4 (2) and speculative c8 (1) have no cells.jsonl entry
    assert got["requests_on_disk"] == {"measured": 7, "partial": 3, "torn_lines": 1, "not_written": 2}
    assert got["failure"] == (
        "interrupted (Ctrl-C); 3 of 7 measured requests on disk are from cells cut short, kept and marked partial; "
        "1 torn line(s) in requests.jsonl skipped (a write cut short); 2 request records could not be written "
        "(the run folder refused the write)"
    )


def test_a_complete_run_has_no_failure_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    cell = {"role": "plain", "workload": "w", "level": "c4", "concurrency": 4}
    (run / "cells.jsonl").write_text(json.dumps(cell) + "\n")
    (run / "requests.jsonl").write_text(json.dumps(req("plain", "c4", 0)) + "\n")
    counts = {"measured": 1, "partial": 0, "torn_lines": 0, "not_written": 0}
    assert on_disk_of(run, RunStatus(failure=None)) == {"failure": None, "requests_on_disk": counts}
    assert failure_line("server died", {"partial": 0, "torn_lines": 0, "not_written": 0}) == "server died"


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
    got = mark_partial(_side("earlier"), entries, records, RunStatus(failure="disk full"))
    assert (got.partial, got.partial_requests, got.failure) == (
        True,
        2,
        "earlier; partial: 2 measured requests finished before the cell was cut short (disk full); they "
        "are kept, without the cell's server counters",
    )
    assert list(got.to_json())[-3:] == ["failure", "partial", "partial_requests"]
    whole = _side(None)
    assert mark_partial(whole, [*entries, CellEntry("plain", "w", 4, repetition=2)], records, RunStatus()) is whole
    cut = mark_partial(_side(None), [], records[:1], RunStatus(failure=None))
    assert str(cut.failure).endswith("cut short (the run stopped); they are kept, without the cell's server counters")
