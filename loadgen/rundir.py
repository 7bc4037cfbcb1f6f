"""The run folder ``runs/<pair>/<UTC timestamp>/`` and its files (DESIGN.md, Output of a run).

Everything is written as soon as it is known: requests are appended to ``requests.jsonl`` when they
finish and cells to ``cells.jsonl`` when they end, so a run that fails midway keeps what it measured.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from loadgen import strictjson
from loadgen.client import RequestRecord


def new_run_dir(root: Path, pair_name: str, now: datetime | None = None) -> Path:
    """Create and return ``root/<pair>/<YYYYmmddTHHMMSSZ>`` (a suffix is added if it exists)."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    base = root / pair_name / stamp
    path, n = base, 1
    while path.exists():
        path, n = base.with_name(f"{stamp}-{n}"), n + 1
    for sub in ("servers", "metrics"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    return path


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented strict JSON, non-finite floats as null (atomically: temp file then rename)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(strictjson.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    tmp.replace(path)


def read_json(path: Path) -> Any:
    """Parse a JSON file."""
    return json.loads(path.read_text())


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the objects of a JSON-lines file, skipping a torn last line (a crash mid-write)."""
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            continue


class JsonlAppender:
    """Appends one strict JSON object per line (non-finite floats as null) and flushes each line to disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: TextIO = path.open("a", encoding="utf-8")

    def append(self, obj: dict[str, Any]) -> None:
        self._fh.write(strictjson.dumps(obj, default=str) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def append_records(appender: JsonlAppender, records: Iterable[RequestRecord]) -> None:
    """Append request records."""
    for r in records:
        appender.append(r.to_json())


def load_records(run_dir: Path) -> list[RequestRecord]:
    """All request records of a run (warmup included; filter on ``.warmup``)."""
    return [RequestRecord.from_json(d) for d in read_jsonl(run_dir / "requests.jsonl")]


def copy_pair_file(src: Path, run_dir: Path) -> Path:
    """Copy the pair file into the run folder (the protocol names it)."""
    dest = run_dir / "pair.toml"
    shutil.copyfile(src, dest)
    return dest
