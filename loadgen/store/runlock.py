"""One process per run, sweep or fleet folder: an exclusive lock taken before anything in the folder is
written (README.md, "One process per folder").

The lock is ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``<folder>/loadgen.lock`` (flock(2): the kernel holds it
for the open file and drops it when the process ends, however it ends). The file names its holder
(:class:`Holder`: pid, host, start time, command) while it is held and is removed when released. So:

- flock refused: another process holds the folder; :class:`FolderBusy` (exit 2) names its pid and command.
- flock granted on a file that still names a holder: that process was killed before it let go (a stale
  lock); it is taken over, and the one note line says whose it was.

A folder inside a folder that another live process holds (a sweep's candidate folders, a fleet's run
folders) is refused too: the outer lock covers the folders within it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from loadgen.errors import BadInput
from loadgen.store.rundir import unwritable

#: The lock file's name inside a locked folder.
LOCK_NAME = "loadgen.lock"


class FolderBusy(BadInput):
    """Another live process holds the folder (exit 2); the message names its pid and command."""


@dataclass(frozen=True)
class Holder:
    """Who holds a folder: process id, host name, start time (ISO 8601 UTC, to the second) and command line."""

    pid: int
    host: str
    started_utc: str
    command: str

    @classmethod
    def me(cls) -> Holder:
        return cls(
            os.getpid(),
            socket.gethostname(),
            datetime.now(UTC).isoformat(timespec="seconds"),
            " ".join(["loadgen", *sys.argv[1:]]),
        )

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        """The holder a lock file names, None when it is empty or not a holder record."""
        try:
            d = json.loads(text)
            return cls(int(d["pid"]), str(d["host"]), str(d["started_utc"]), str(d["command"]))
        except (ValueError, TypeError, KeyError):
            return None

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, started {self.started_utc}: `{self.command}`"


def busy(folder: Path, holder: Holder | None) -> FolderBusy:
    """The error for a folder held by ``holder`` (None: a holder whose record is not written yet)."""
    who = holder.describe() if holder is not None else "another process"
    return FolderBusy(
        f"{folder} is in use by {who}; wait until it ends or stop it (kill "
        f"{holder.pid if holder else 'PID'}), then run again"
    )


def probe(folder: Path) -> tuple[bool, Holder | None]:
    """Whether ``folder``'s lock is held now (a shared flock tried on its lock file and let go at once: the
    kernel's answer, not the pid's), and the holder the file names (None: no file, or no record yet)."""
    try:
        fd = os.open(folder / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return False, None
    try:
        holder = Holder.parse(os.pread(fd, 4096, 0).decode(errors="replace"))
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True, holder
        return False, holder
    finally:
        os.close(fd)


def _outer_holder(folder: Path) -> tuple[Path, Holder | None] | None:
    """The nearest folder above ``folder`` that another process holds, with its holder."""
    for parent in folder.resolve().parents:
        held, holder = probe(parent)
        if held and (holder is None or holder.pid != os.getpid()):
            return parent, holder
    return None


def _try_flock(fd: int, tries: int = 3) -> bool:
    """Take the exclusive flock of ``fd`` without waiting on a holder: a few tries 50 ms apart, so that a
    :func:`probe` of another process, which holds a shared flock for an instant, is not taken for one."""
    for i in range(tries):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if i + 1 < tries:
                time.sleep(0.05)
    return False


def _open_locked(folder: Path) -> tuple[int, Holder | None]:
    """A descriptor of ``folder/loadgen.lock`` holding its flock, and the stale holder the file still names.
    A file unlinked by its releasing holder between our open and flock is opened again (the lock must be on
    the file the path names). Raises FolderBusy, RunDirUnwritable."""
    path = folder / LOCK_NAME
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise unwritable(path, exc) from None
        if not _try_flock(fd):
            text = os.pread(fd, 4096, 0).decode(errors="replace")
            os.close(fd)
            raise busy(folder, Holder.parse(text))
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd, Holder.parse(os.pread(fd, 4096, 0).decode(errors="replace"))
        os.close(fd)


@contextlib.contextmanager
def locked(folder: Path, note: Callable[[str], None]) -> Iterator[Holder]:
    """Hold ``folder``'s lock for the block (``folder`` must exist); yields this process's record; the lock
    file is removed on the way out. ``note`` gets one line when a stale lock is taken over. Raises
    FolderBusy (exit 2) at once when another process holds the folder or a folder around it;
    RunDirUnwritable (exit 1) when the lock file cannot be created."""
    if (outer := _outer_holder(folder)) is not None:
        raise busy(*outer)
    fd, stale = _open_locked(folder)
    try:
        if stale is not None:
            note(f"{folder}: took over the lock of {stale.describe()}, which ended without releasing it")
        me = Holder.me()
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(asdict(me)) + "\n").encode(), 0)
        yield me
    finally:
        with contextlib.suppress(OSError):
            (folder / LOCK_NAME).unlink()  # before the flock goes: a new holder locks a new file
        os.close(fd)  # closing the only descriptor drops the flock
