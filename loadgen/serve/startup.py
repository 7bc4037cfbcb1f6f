"""Fatal start-up lines in a server's log, read as the log grows. Pure but for reading the file.

When vLLM's engine core fails while starting, the API server process can linger without ever serving
(it logs ``EngineCore failed to start`` after a worker error, then waits), so waiting for ``/health``
would last the whole start-up timeout. :class:`LogWatch` reads what was appended since its last call
and returns the first line that means the start-up failed:

- ``EngineCore failed to start`` (vllm/v1/engine/core.py) and ``Engine core initialization failed``
  (vllm/v1/engine/utils.py, the RuntimeError the API server raises then);
- ``No available memory for the cache blocks`` (vllm/v1/core/kv_cache_utils.py, ``gpu_memory_utilization``
  too low for the model);
- ``CUDA out of memory`` (torch's ``OutOfMemoryError`` message);
- a line that starts with ``ModuleNotFoundError`` or ``ImportError``: the last line of a Python traceback
  (an exception's name at the start of a line, after the ``(EngineCore_DP0 pid=N)`` prefix of a child's
  lines), not a warning that merely mentions one.
"""

from __future__ import annotations

import re
from pathlib import Path

FATAL_RE = re.compile(
    r"EngineCore failed to start|Engine core initialization failed"
    r"|No available memory for the cache blocks|CUDA out of memory"
    r"|^\s*(?:\([^)]*\)\s*)?(?:ModuleNotFoundError|ImportError)\b"
)


def fatal_line(lines: list[str]) -> str | None:
    """The first of ``lines`` that means the start-up failed (module docstring), stripped; None if none."""
    return next((line.strip() for line in lines if FATAL_RE.search(line)), None)


class LogWatch:
    """Reads ``path`` incrementally; :meth:`fatal` returns the first fatal start-up line appended since
    the last call (None: none yet, or the log does not exist yet). A line is judged once it is complete."""

    def __init__(self, path: Path) -> None:
        self.path, self._offset, self._rest = path, 0, b""

    def fatal(self) -> str | None:
        """The first fatal line among the complete lines appended since the last call."""
        try:
            with self.path.open("rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except OSError:
            return None
        self._offset += len(data)
        *lines, self._rest = (self._rest + data).split(b"\n")
        return fatal_line([line.decode("utf-8", "replace") for line in lines])
