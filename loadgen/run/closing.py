"""The end of a run: ``status.json`` and the card, written with SIGINT and SIGTERM held off, and the one
line that says what is on disk and what is not.

A run writes an interim ``status.json`` (incomplete) before its first request, so a run folder that
the disk filled up, or that a kill stopped, can still be finished by ``loadgen report RUN_DIR``. At the
end, the first SIGINT/SIGTERM that arrives while the card is written is held off (writing it takes a
moment, plots included); another one stops the writing, and the final message then says that no card
was written and that ``loadgen report RUN_DIR`` writes it.

A full or read-only folder makes every later write fail too (the servers' teardown records, another
appender, status.json); the stop line and status.json name the write that failed first
(:func:`first_unwritable`, from the chain of errors Python keeps in ``__context__``), not the last one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

from loadgen.errors import LoadgenError, RunDirUnwritable, RunFailed
from loadgen.records.runparts import StatusFile
from loadgen.store.files import write_status
from loadgen.store.rundir import read_jsonl

Log = Callable[[str], None]
#: The failure an interim status.json gives until the run writes its own.
STOPPED = "the run stopped before it wrote its status (killed, or its folder could not be written)"


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped the run; ``str()`` is the one line that says what is on disk, whether the
    card was written and how to resume (a KeyboardInterrupt, so callers that stop on one still do)."""


def open_status(run_dir: Path) -> None:
    """Write the interim status.json (incomplete). Raises RunDirUnwritable before anything is sent."""
    write_status(run_dir, StatusFile(complete=False, failure=STOPPED))


@contextlib.contextmanager
def held_signals(note: Callable[[str], None]) -> Iterator[None]:
    """Hold off the first SIGINT/SIGTERM inside the block (``note`` says so); raise KeyboardInterrupt on
    the next. Main thread only; an ignored signal stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    hits = 0

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal hits
        hits += 1
        if hits > 1:
            raise KeyboardInterrupt
        note("loadgen: writing the card before stopping (a moment); interrupt again to stop without it")

    previous = {
        sig: signal.signal(sig, on_signal)
        for sig in (signal.SIGINT, signal.SIGTERM)
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def first_unwritable(error: BaseException | None) -> BaseException | None:
    """The earliest RunDirUnwritable in ``error``'s chain (``__context__`` / ``__cause__``: an error raised
    while an earlier one was being handled, e.g. a teardown record written in a ``finally``), else ``error``."""
    first, seen, link = error, set(), error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, RunDirUnwritable):
            first = link
        link = link.__context__ or link.__cause__
    return first


def _stderr(line: str) -> None:
    # straight to the descriptor: a signal handler may run while stdout or stderr is mid-write
    with contextlib.suppress(OSError):
        os.write(sys.stderr.fileno(), (line + "\n").encode())


def resume_command(run_dir: Path) -> str:
    """The command that finishes ``run_dir``: ``loadgen sweep --resume`` for a sweep folder (it holds the
    sweep.toml it ran), else ``loadgen compare --resume``."""
    return f"loadgen {'sweep' if (run_dir / 'sweep.toml').is_file() else 'compare'} --resume {run_dir}"


def close_run(
    run_dir: Path,
    status: StatusFile,
    write_card: Callable[[Path, Log], Any],
    log: Log,
    error: BaseException | None,
    not_written: int = 0,
) -> BaseException | None:
    """Write ``status`` and the card (``write_card(run_dir, log)``) with signals held off; return what the
    run ends with: None (done), ``error`` as it was, or an error whose one line adds where the data is
    and whether the card was written. ``not_written`` request records could not be written (status.json
    and the card say so). A RunDirUnwritable ``error`` is replaced by the first one in its chain
    (:func:`first_unwritable`), in the status's ``failure`` too."""
    if isinstance(error, RunDirUnwritable) and (first := first_unwritable(error)) is not error:
        error, status = first, replace(status, failure=str(first))
    if not_written:
        status = replace(status, requests_not_written=not_written)
    problem: str | None = None
    with held_signals(_stderr):
        try:
            write_status(run_dir, status)
            write_card(run_dir, log)
        except KeyboardInterrupt:
            problem = "interrupted again while it was written"
        except LoadgenError as exc:
            problem = str(exc)
        except Exception as exc:  # the card must never hide the run's own error
            problem = f"{type(exc).__name__}: {exc}"
    card = (
        f"card: {run_dir / 'card.md'}"
        if problem is None
        else f"no card was written ({problem}); `loadgen report {run_dir}` writes it"
    )
    if isinstance(error, KeyboardInterrupt):
        measured = sum(1 for r in read_jsonl(run_dir / "requests.jsonl") if r.get("phase", "measured") == "measured")
        return RunInterrupted(
            f"interrupted; the {measured} measured requests that finished are on disk in {run_dir} "
            f"(those of the cell cut short marked partial); {card}; `{resume_command(run_dir)}` runs the cells left"
        )
    if isinstance(error, RunDirUnwritable):
        lost = f"; {not_written} request records could not be written" if not_written else ""
        again = f"once there is room, `{resume_command(run_dir)}` runs the cells left"
        return RunDirUnwritable(f"{error}{lost}; {card}; {again}")
    if error is not None:
        if problem is not None:
            log(f"could not write the card ({problem}); run `loadgen report {run_dir}`")
        return error
    if problem is not None:
        return RunFailed(f"the run finished but {card}")
    return None
