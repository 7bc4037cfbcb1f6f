"""The run folder ``runs/<pair>/<UTC timestamp>/``: made exclusively, and its files written atomically and read
back as JSON or JSON lines (README.md, "What a card holds"); each file's typed reader and writer is
store/files.py.

Everything is written as soon as it is known: requests are appended to ``requests.jsonl`` when they
finish and cells to ``cells.jsonl`` when they end, so a run that fails midway keeps what it measured.
Each line is written whole or not at all: a write the disk cuts short (full, over quota, read-only) is
truncated back to the last whole line and raises :class:`RunDirUnwritable`, one line naming the folder
and its free space; a line torn by a crash is ended on the next open, and readers skip and count it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loadgen.errors import BadInput, RunDirUnwritable
from loadgen.util import strictjson


def exclusive_dir(parent: Path, name: str) -> Path:
    """Create ``parent/name`` (parents too), or ``parent/name-1``, ``-2``, ... when it exists: exclusively, so
    two processes never get one folder. Returns the folder made; raises OSError as ``mkdir`` does."""
    parent.mkdir(parents=True, exist_ok=True)
    path, n = parent / name, 1
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:
            path, n = parent / f"{name}-{n}", n + 1


def new_run_dir(root: Path, pair_name: str, now: datetime | None = None) -> Path:
    """Create and return ``root/<pair>/<YYYYmmddTHHMMSSZ>`` (a suffix is added if it exists; created
    exclusively, so two runs started in the same second get two folders)."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    path = root / pair_name / stamp
    try:
        path = exclusive_dir(root / pair_name, stamp)
        for sub in ("servers", "metrics"):
            (path / sub).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
            raise unwritable(path, exc) from None
        raise BadInput(
            f"cannot create the run folder {path} ({exc.strerror or exc}); give --runs-dir a folder "
            "loadgen may create folders in"
        ) from None
    return path


def unwritable(path: Path, exc: OSError) -> RunDirUnwritable:
    """The one-line error for a failed write of ``path``: the reason, the folder and its free space."""
    try:
        free = f"{shutil.disk_usage(path.parent).free / 1024:,.0f} KiB free there"
    except OSError:
        free = "its free space unknown"
    return RunDirUnwritable(
        f"cannot write {path.name} in {path.parent} ({exc.strerror or exc}; {free}): free "
        "space or make the folder writable"
    )


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON (atomically: temp file then rename). Raises RunDirUnwritable."""
    write_text(path, strictjson.dumps_strict(data, indent=2, sort_keys=False, default=str) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write ``text`` atomically (temp file then rename); the temp file is removed when the write fails.

    Raises RunDirUnwritable (disk full, read-only folder, ...)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise unwritable(path, exc) from None


def read_json(path: Path) -> Any:
    """Parse a JSON file. Raises BadInput (exit 2) naming the file when it is not UTF-8 JSON."""
    try:
        return json.loads(path.read_text())
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadInput(
            f"{path} is not a readable JSON file ({type(exc).__name__}: {str(exc)[:80]}); restore it "
            "or pass another run folder"
        ) from None


def read_jsonl(path: Path, torn: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Yield the objects of a JSON-lines file, skipping torn lines (a write cut short by a crash); each
    skipped line is appended to ``torn`` when given, so the caller can say how many."""
    return (value for _, value in numbered_jsonl(path, torn))


def numbered_jsonl(path: Path, torn: list[str] | None = None) -> Iterator[tuple[str, Any]]:
    """As :func:`read_jsonl`, each value with its place for a one-line error: ``"<path> line <n>"``."""
    if not path.exists():
        return
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):  # undecodable bytes: torn
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            if torn is not None:
                torn.append(line)
            continue
        yield f"{path} line {n}", value


class JsonlAppender:
    """Appends one JSON object per line, each line in one unbuffered write (on disk when ``append``
    returns, as far as the process goes).

    A line is written whole or not at all: when a write fails (ENOSPC, EDQUOT, EROFS, ...) the file is
    truncated back to its last whole line and RunDirUnwritable is raised; every later ``append`` raises it
    again. ``lost`` counts the objects that could not be written. Opening a file whose last line was torn
    by a crash ends that line first, so the torn line stays on its own (readers skip and count it).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lost = 0
        self._failed: RunDirUnwritable | None = None
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            self._end = os.fstat(self._fd).st_size
            if self._end and os.pread(self._fd, 1, self._end - 1) != b"\n":
                self._write(b"\n")
        except OSError as exc:
            raise unwritable(path, exc) from None

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self._end += len(data)

    def append(self, obj: Mapping[str, Any]) -> None:
        """Write ``obj`` as one line. Raises RunDirUnwritable (nothing of the line stays on disk)."""
        line = (strictjson.dumps_strict(obj, default=str) + "\n").encode()
        if self._failed is None:
            try:
                self._write(line)
                return
            except OSError as exc:
                self._failed = unwritable(self.path, exc)
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._end)  # back to the last whole line
        self.lost += 1
        raise self._failed

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def copy_file(src: Path, dest: Path) -> Path:
    """Copy ``src`` byte for byte to ``dest`` in a run folder (a pair or sweep file as run) and return ``dest``."""
    shutil.copyfile(src, dest)
    return dest
