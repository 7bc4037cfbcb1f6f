"""Each file of a run (or sweep) folder with its one typed reader and one writer, on store/rundir.py's atomic
writes and checked reads: ``protocol.json`` (records/protocol.py ``Protocol``), ``cells.jsonl`` (``CellEntry``
lines), ``requests.jsonl`` (``RequestRecord`` lines), ``status.json`` and ``progress.json`` (records/runparts.py
``StatusFile``, ``ProgressFile``), ``prompts.jsonl`` (one prompt's JSON a line, profile/workload.py ``Prompt``),
``checks.json`` (the pair check's findings, or per candidate for a sweep), ``sweep.json`` (records/sweep.py
``SweepCard``) and ``times.json`` (seconds per phase of an older sweep); ``card.json``'s reader (records/card.py
``PairCard``; report/cardwrite.py writes it). The servers' files are store/serverfiles.py.

A file that does not read as its record raises BadInput (exit 2), one line naming the file (and line), the
field and the fix; a missing file is the reader's None (or no lines), as each reader says.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from loadgen.errors import BadInput, RunDirUnwritable
from loadgen.records.card import PairCard
from loadgen.records.cell import CellEntry
from loadgen.records.protocol import Protocol
from loadgen.records.request import RequestRecord
from loadgen.records.runparts import ProgressFile, StatusFile
from loadgen.records.sweep import SweepCard
from loadgen.store.rundir import JsonlAppender, numbered_jsonl, read_json, unwritable, write_json, write_text
from loadgen.util import strictjson

#: A run folder's status file (how the run ended).
STATUS_NAME = "status.json"
#: The file a measuring run keeps its progress in, inside its run (or sweep) folder.
PROGRESS_NAME = "progress.json"
PROTOCOL_NAME, PROMPTS_NAME, CHECKS_NAME = "protocol.json", "prompts.jsonl", "checks.json"
SWEEP_NAME, TIMES_NAME = "sweep.json", "times.json"
#: A finding of the pair check as checks.json holds it (check/finding.py ``Finding``'s fields).
Finding = Mapping[str, object]


def read_protocol(path: Path) -> Protocol:
    """A run or sweep folder's ``protocol.json``, checked (records/protocol.py). Raises BadInput (exit 2) naming
    the file, and the field when one does not read; OSError when the file is missing."""
    return Protocol.from_json(read_json(path), source=str(path))


def write_protocol(folder: Path, protocol: Protocol) -> None:
    """Write ``folder``'s protocol.json. Raises RunDirUnwritable."""
    write_json(folder / PROTOCOL_NAME, protocol.to_json())


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


def read_progress(folder: Path) -> ProgressFile | None:
    """``folder``'s progress.json, None when it has none. Raises BadInput (exit 2) when it is no progress."""
    path = folder / PROGRESS_NAME
    return ProgressFile.from_json(read_json(path), source=str(path)) if path.is_file() else None


def write_progress(folder: Path, progress: ProgressFile) -> None:
    """Write ``folder``'s progress.json. Raises RunDirUnwritable."""
    write_json(folder / PROGRESS_NAME, progress.to_json())


def write_prompts(folder: Path, prompts: Iterable[Mapping[str, Any]]) -> None:
    """Write ``folder``'s prompts.jsonl: each prompt's JSON (``Prompt.to_json``) on its line, strict JSON.
    Raises RunDirUnwritable."""
    write_text(folder / PROMPTS_NAME, "".join(strictjson.dumps_strict(p) + "\n" for p in prompts))


def read_prompts(folder: Path) -> Iterator[dict[str, Any]]:
    """The prompts of ``folder``'s prompts.jsonl, each as its JSON object. Raises OSError when the file is
    missing and ValueError at a line that is no JSON."""
    return (json.loads(line) for line in (folder / PROMPTS_NAME).read_text().splitlines())


def write_checks(folder: Path, findings: Sequence[Finding] | Mapping[str, Sequence[Finding]]) -> None:
    """Write ``folder``'s checks.json: a run's findings, or a sweep's per candidate. Raises RunDirUnwritable."""
    write_json(folder / CHECKS_NAME, findings)


def read_sweep_checks(folder: Path) -> Mapping[str, Sequence[Finding]]:
    """A sweep folder's checks.json (findings per candidate); empty when it has none. Raises BadInput when it
    is not JSON."""
    path = folder / CHECKS_NAME
    data = read_json(path) if path.is_file() else {}
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise BadInput(f"{path} holds no findings per candidate; restore it from the sweep folder's copy")
    return data


def read_card(path: Path) -> PairCard:
    """The card at ``path`` (``loadgen.card/1``; an Infinity of older code read as null). Raises BadInput
    (exit 2) naming the file, and the field and the fix when it does not match the card's type."""
    return PairCard.from_json(strictjson.finite(read_json(path)), source=str(path))


def read_sweep(path: Path) -> SweepCard:
    """The sweep card in ``path`` (a sweep folder's sweep.json), checked: BadInput (exit 2), one line naming
    the file, the field and the fix, when it is not JSON or not a sweep card (records/sweep.py)."""
    return SweepCard.from_json(read_json(path), source=str(path))


def write_sweep(folder: Path, card: SweepCard) -> None:
    """Write ``folder``'s sweep.json. Raises RunDirUnwritable."""
    write_json(folder / SWEEP_NAME, card.to_json())


def read_times(folder: Path) -> Mapping[str, float]:
    """An older sweep folder's times.json (seconds per phase, as its code wrote it); empty when it has none.
    Raises BadInput when it is not JSON."""
    path = folder / TIMES_NAME
    data = read_json(path) if path.is_file() else {}
    if not isinstance(data, dict) or not all(isinstance(v, int | float) for v in data.values()):
        raise BadInput(f"{path} holds no seconds per phase; restore it or remove it")
    return data
