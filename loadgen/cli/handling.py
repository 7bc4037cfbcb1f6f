"""How every command ends on an error: :func:`_handles_errors` prints a
:class:`loadgen.errors.LoadgenError` as one ``loadgen: error: ...`` line and exits with its code (0 done, 1 run
failed, 2 bad input, 3 criteria failed), Ctrl-C as one line and exit 1, a full or read-only disk as the run
folder's unwritable line, a reader that went away (``loadgen runs | head``) quietly with exit 0, and any other
exception, a defect, as one line naming it and the file its traceback was written to (util/crashlog.py), exit 1;
never a traceback on the terminal. :func:`_sigterm_as_interrupt` makes SIGTERM end a run as Ctrl-C does (its data
kept)."""

from __future__ import annotations

import errno
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import click

from loadgen.errors import LoadgenError
from loadgen.util.crashlog import unexpected

F = TypeVar("F", bound=Callable[..., Any])
#: Disk full, over quota, read-only file system: the run folder cannot be written.
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
#: The parameters that name the folder a command works on, where an unexpected error's traceback is written.
_FOLDERS = ("run_dir", "resume_dir", "fleet_dir")


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
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # click's own: a usage error, an exit, an abort, which click ends as it does
        except BrokenPipeError:  # the reader went away (`loadgen runs | head`): end quietly, as a shell tool does
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)
        except Exception as exc:  # the last resort: one line, the traceback in a file (util/crashlog.py)
            error = _as_error(exc)
            click.echo(f"loadgen: error: {error}", err=True)
            sys.exit(error.exit_code)

    return wrapper  # type: ignore[return-value]


def _as_error(exc: Exception) -> LoadgenError:
    """The one-line error of an exception no command turned into a LoadgenError: a write the disk refused
    (full, over quota, read-only) outside the run's own guarded writes (run folder creation, --resume's
    rewrite), else an unexpected one, its traceback written to the folder the command works on (``RUN_DIR``,
    ``FLEET_DIR``, ``--resume``'s folder) or to loadgen's cache folder."""
    if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS and exc.filename is not None:
        from loadgen.store.rundir import unwritable

        return unwritable(Path(exc.filename), exc)
    ctx = click.get_current_context(silent=True)
    params = ctx.params if ctx is not None else {}
    folder = next((p for k in _FOLDERS if isinstance(p := params.get(k), Path) and p.is_dir()), None)
    return unexpected(exc, folder, f"{folder} keeps what it held" if folder else "")


def _sigterm_as_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
