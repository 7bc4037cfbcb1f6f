"""What the benchmark scripts share: the machine's description, the command line as run, and their
sections of ``docs/benchmarks.md`` (each script replaces its own section and keeps the others)."""

from __future__ import annotations

import contextlib
import os
import platform
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def machine() -> dict[str, str]:
    """nproc, CPU model, Python version and OS of this machine."""
    model = "unknown"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
    }


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, e.g. ``"0.52 0.61 0.70"``."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def describe_command(argv: Sequence[str] | None = None) -> str:
    """The command line as run (interpreter and script relative to the working directory); ``argv``
    defaults to this process's arguments."""
    exe, script = Path(sys.executable), Path(sys.argv[0]).resolve()
    with contextlib.suppress(ValueError):
        exe = exe.relative_to(Path.cwd())
    with contextlib.suppress(ValueError):
        script = script.relative_to(Path.cwd())
    return shlex.join([str(exe), str(script), *(sys.argv[1:] if argv is None else argv)])


def by_make() -> str:
    """`` (by `make bench`)`` when run from make, else ``""``."""
    return " (by `make bench`)" if os.environ.get("MAKELEVEL") else ""


def write_section(path: Path, section: str, title: str) -> None:
    """Replace (or append) the section headed ``title`` (a whole line) of ``path``, keeping the others."""
    text = path.read_text() if path.exists() else "# Benchmarks\n\nMeasured by `make bench`; numbers, not tests.\n"
    start = text.find("\n" + title + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + 1 + len(title))
        text = text[: start + 1] + section + ("" if end < 0 else "\n" + text[end + 1 :])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
