"""How every command ends on an error: :func:`_handles_errors` prints a
:class:`loadgen.errors.LoadgenError` as one ``loadgen: error: ...`` line and exits with its code (0 done, 1 run
failed, 2 bad input, 3 criteria failed), Ctrl-C as one line and exit 1, a full or read-only disk as the run
folder's unwritable line; never a traceback. :func:`_sigterm_as_interrupt` makes SIGTERM end a run as Ctrl-C
does (its data kept)."""

from __future__ import annotations

import errno
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import click

from loadgen.errors import LoadgenError

F = TypeVar("F", bound=Callable[..., Any])
#: Disk full, over quota, read-only file system: the run folder cannot be written.
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def _handles_errors(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except LoadgenError as exc:
            if str(exc):  # a failed verdict has said everything on stdout (cli/ending.py)
                click.echo(f"loadgen: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt as exc:  # a run's own line (closing.RunInterrupted) says where its data is
            click.echo(f"loadgen: {str(exc) or 'interrupted; everything measured so far is on disk'}", err=True)
            sys.exit(1)
        except OSError as exc:
            if exc.errno not in _DISK_ERRNOS or exc.filename is None:
                raise
            # a write outside the run's own guarded writes (run folder creation, --resume's rewrite)
            from loadgen.report.rundir import unwritable

            error = unwritable(Path(exc.filename), exc)
            click.echo(f"loadgen: error: {error}", err=True)
            sys.exit(error.exit_code)

    return wrapper  # type: ignore[return-value]


def _sigterm_as_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
