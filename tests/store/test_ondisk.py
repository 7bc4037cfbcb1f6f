"""store/ondisk.py: what of a run is on disk, from a run folder written here with known contents (cells with
and without their cells.jsonl entry, a warmup request, a torn line)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from loadgen.records.request import RequestRecord
from loadgen.records.runparts import StatusFile
from loadgen.store.files import load_records, read_cell_lines
from loadgen.store.ondisk import failure_line, on_disk


def req(role: str, level: str, rep: int, phase: str = "measured") -> dict[str, object]:
    return RequestRecord(f"p{rep}", role, "w", 4, phase, 0.0, level=level, repetition=rep).to_json()


def on_disk_of(run: Path, status: StatusFile) -> dict[str, Any]:
    """``on_disk`` of the run folder ``run``, its files read as store/runfiles.py reads them."""
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
    got = on_disk_of(
        tmp_path / "run", StatusFile(complete=False, failure="interrupted (Ctrl-C)", requests_not_written=2)
    )
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
    assert on_disk_of(run, StatusFile(complete=False, failure=None)) == {"failure": None, "requests_on_disk": counts}
    assert failure_line("server died", {"partial": 0, "torn_lines": 0, "not_written": 0}) == "server died"
