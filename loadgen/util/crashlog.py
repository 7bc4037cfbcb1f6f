"""The last resort for an exception loadgen did not expect (a defect, not bad input): its full traceback goes to a
file, never to the terminal, and the error becomes one line naming the exception, the file and where the run's
data is (README.md "Exit codes": exit 1).

The file is ``traceback.txt`` in the run folder when there is one and it can be written, else
``$XDG_CACHE_HOME/loadgen/traceback-<UTC time>-<pid>.txt`` (``~/.cache`` when XDG_CACHE_HOME is unset, the XDG Base
Directory Specification, https://specifications.freedesktop.org/basedir-spec/).
"""

from __future__ import annotations

import os
import traceback
from datetime import UTC, datetime
from pathlib import Path

from loadgen.errors import RunFailed

#: The file an unexpected exception's traceback is written to in a run folder.
TRACEBACK_NAME = "traceback.txt"


def cache_dir() -> Path:
    """loadgen's cache folder: ``$XDG_CACHE_HOME/loadgen``, else ``~/.cache/loadgen``."""
    root = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(root) if os.path.isabs(root) else Path.home() / ".cache") / "loadgen"


def _write(path: Path, text: str) -> bool:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError:
        return False
    return True


def write_traceback(error: BaseException, folder: Path | None) -> Path | None:
    """Append ``error``'s full traceback (its chained causes included), with the UTC time, to ``folder /``
    :data:`TRACEBACK_NAME`, else (no folder, or it cannot be written: a full disk) to a file of its own in
    :func:`cache_dir`. Returns the file written, None when neither could be. Never raises."""
    now = datetime.now(UTC)
    text = f"{now.isoformat(timespec='seconds')} pid {os.getpid()}\n" + "".join(traceback.format_exception(error))
    if folder is not None and folder.is_dir() and _write(folder / TRACEBACK_NAME, text):
        return folder / TRACEBACK_NAME
    own = cache_dir() / f"traceback-{now.strftime('%Y%m%dT%H%M%SZ')}-{os.getpid()}.txt"
    return own if _write(own, text) else None


def unexpected(error: BaseException, folder: Path | None, kept: str | None = None) -> RunFailed:
    """The one-line error (exit 1) of ``error``, an exception loadgen did not expect, its traceback written by
    :func:`write_traceback` into ``folder`` (the run folder; None: none). ``kept``: what the line says of the data
    (default: that everything measured is in ``folder``, or that no run folder holds any)."""
    path = write_traceback(error, folder)
    what = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    where = f"its traceback is in {path}" if path else "its traceback could not be written anywhere"
    if kept is None:
        kept = f"nothing measured is lost: it is in {folder}, marked failed" if folder is not None else ""
    line = f"unexpected error {' '.join(what.splitlines())} (a defect in loadgen; {where})"
    return RunFailed(line + (f"; {kept}" if kept else ""))
