"""What ``--resume`` keeps of an interrupted run or sweep folder: the slots that finished without failure; the
requests of the others move to ``requests.partial.jsonl`` (nothing is deleted) and their cell lines go, both files
rewritten atomically (a full disk leaves the old files whole)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loadgen.records.request import RequestRecord
from loadgen.store.files import read_cell_lines
from loadgen.store.rundir import JsonlAppender, numbered_jsonl, write_text
from loadgen.util import strictjson


def keep_finished(run_dir: Path) -> tuple[set[tuple[str, str, str, int]], int]:
    """The (arm, workload, level, block) slots of ``run_dir`` that finished without failure, and how many
    requests of the other slots moved to ``requests.partial.jsonl`` (nothing is deleted; their cell lines go)."""
    entries = read_cell_lines(run_dir / "cells.jsonl")
    done = {(e.role, e.workload, e.level, e.repetition) for e in entries if not e.failure}
    kept: list[dict[str, Any]] = []
    partial: list[dict[str, Any]] = []
    for where, r in numbered_jsonl(run_dir / "requests.jsonl"):  # one pass: a finished slot's requests stay
        rec = RequestRecord.from_json(r, source=where)  # checked; the line is kept as written
        finished = (rec.role, *rec.key, rec.repetition) in done
        (kept if finished else partial).append(r)
    moved = JsonlAppender(run_dir / "requests.partial.jsonl")
    try:
        for r in partial:
            moved.append(r)
    finally:
        moved.close()
    # atomic rewrites: a full disk leaves the old files whole
    write_text(run_dir / "requests.jsonl", "".join(strictjson.dumps_strict(r) + "\n" for r in kept))
    write_text(
        run_dir / "cells.jsonl",
        "".join(
            strictjson.dumps_strict(e.to_json()) + "\n"
            for e in entries
            if (e.role, e.workload, e.level, e.repetition) in done
        ),
    )
    return done, len(partial)
