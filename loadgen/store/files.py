"""Each file of a run (or sweep) folder with its one typed reader and one writer, on store/rundir.py's atomic
writes and checked reads: ``protocol.json`` (records/protocol.py ``Protocol``), ``cells.jsonl`` (``CellEntry``
lines), ``requests.jsonl`` (``RequestRecord`` lines) and ``status.json`` (records/runparts.py ``StatusFile``).

A file that does not read as its record raises BadInput (exit 2), one line naming the file (and line), the
field and the fix; a missing file is the reader's None (or no lines), as each reader says.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from loadgen.errors import RunDirUnwritable
from loadgen.records.cell import CellEntry
from loadgen.records.protocol import Protocol
from loadgen.records.request import RequestRecord
from loadgen.records.runparts import StatusFile
from loadgen.store.rundir import JsonlAppender, numbered_jsonl, read_json, unwritable, write_json

#: A run folder's status file (how the run ended).
STATUS_NAME = "status.json"


def read_protocol(path: Path) -> Protocol:
    """A run or sweep folder's ``protocol.json``, checked (records/protocol.py). Raises BadInput (exit 2) naming
    the file, and the field when one does not read; OSError when the file is missing."""
    return Protocol.from_json(read_json(path), source=str(path))


def read_cell_lines(path: Path, torn: list[str] | None = None) -> list[CellEntry]:
    """The lines of a ``cells.jsonl`` (torn ones skipped, as :func:`read_jsonl`). Raises BadInput (exit 2)
    naming the line and the field when a line is no cell entry (records/cell.py)."""
    return [CellEntry.from_json(line, source=where) for where, line in numbered_jsonl(path, torn)]


def append_records(appender: JsonlAppender, records: Iterable[RequestRecord]) -> None:
    """Append request records."""
    for r in records:
        appender.append(r.to_json())


def load_records(run_dir: Path, torn: list[str] | None = None) -> list[RequestRecord]:
    """All request records of a run (warmup included; filter on ``.warmup``); torn lines are skipped (and
    appended to ``torn``, as :func:`read_jsonl`). Raises BadInput (exit 2) naming the line and the field when
    a line is no request record (records/request.py)."""
    return [RequestRecord.from_json(d, source=where) for where, d in numbered_jsonl(run_dir / "requests.jsonl", torn)]


def read_status(folder: Path) -> StatusFile | None:
    """``folder``'s status.json, None when it has none (a run killed before it wrote one). Raises BadInput (exit
    2) naming the file and the field when it is no status."""
    path = folder / STATUS_NAME
    return StatusFile.from_json(read_json(path), source=str(path)) if path.is_file() else None


def write_status(folder: Path, status: StatusFile) -> None:
    """Write ``folder``'s status.json; on a full disk, overwrite the one there in place (its block is already
    allocated, and a status is no bigger than a block). Raises RunDirUnwritable."""
    path = folder / STATUS_NAME
    try:
        write_json(path, status.to_json())
    except RunDirUnwritable:
        data = (json.dumps(status.to_json(), indent=2, default=str) + "\n").encode()
        if not path.is_file() or len(data) > 4096:
            raise
        try:
            with path.open("r+b") as fh:
                fh.write(data)
                fh.truncate()
        except OSError as exc:
            raise unwritable(path, exc) from None
