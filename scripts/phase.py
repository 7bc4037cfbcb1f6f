"""Run one phase of ``make compare`` (an environment's install, the model build) and say what it does.

Usage (the system python, standard library only: it runs before any environment exists)::

    python3 scripts/phase.py NAME [--quiet-s S] -- COMMAND [ARG...]

Prints ``==> NAME: started`` when the phase starts, every line the command writes (stdout and stderr
merged) prefixed with the phase's name and its elapsed seconds (of a progress bar redrawn with carriage
returns, its last state), ``(no output for S s, still running)`` whenever the command is silent for
``--quiet-s`` seconds (30 by default), and one end line::

    ==> NAME: done in 73.2 s (longest silence 41.0 s, after: Collecting ray>=2.40)
    ==> NAME: FAILED (exit 1) after 12.0 s (longest silence ...)

The longest silence names the line the command printed before it: for ``pip install`` (run without
``-q``), a long wait after ``Collecting X`` or ``Downloading X`` is the package index or the download
being slow (README.md, "When the first run is slow"). The exit status is the command's (127 when it
cannot be started). The child runs with ``PYTHONUNBUFFERED=1`` so a Python command's lines come as
they are written.
"""

from __future__ import annotations

import argparse
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Silence:
    """The longest gap between two output lines (or the start/end) of a phase: seconds, and the line
    before it ("" when it came before the first line)."""

    seconds: float
    after: str


def end_line(name: str, status: int, elapsed_s: float, silence: Silence) -> str:
    """The phase's last line: done or FAILED (exit status), its elapsed seconds and its longest silence."""
    head = (
        f"==> {name}: done in {elapsed_s:.1f} s"
        if status == 0
        else f"==> {name}: FAILED (exit {status}) after {elapsed_s:.1f} s"
    )
    where = f", after: {silence.after}" if silence.after else " before its first line"
    return f"{head} (longest silence {silence.seconds:.1f} s{where})"


def _pump(stream: object, lines: queue.Queue[str | None]) -> None:
    for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
        # a progress bar redraws its line with carriage returns: its last state stands for the line
        parts = [part for part in raw.decode("utf-8", "replace").rstrip("\r\n").split("\r") if part.strip()]
        lines.put(parts[-1] if parts else "")
    lines.put(None)


def run_phase(name: str, command: list[str], quiet_s: float = 30.0) -> int:
    """Run ``command`` as the phase ``name`` (module docstring); returns its exit status."""
    t0 = time.monotonic()
    print(f"==> {name}: started", flush=True)
    try:
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    except OSError as exc:
        print(f"==> {name}: FAILED: cannot run {command[0]}: {exc.strerror or exc}", flush=True)
        return 127
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    last_t, last_line, longest = t0, "", Silence(0.0, "")
    while True:
        try:
            line = lines.get(timeout=quiet_s)
        except queue.Empty:
            quiet = time.monotonic() - last_t
            print(
                f"    {name} +{time.monotonic() - t0:6.1f}s | (no output for {quiet:.0f} s, still running)", flush=True
            )
            continue
        now = time.monotonic()
        if now - last_t > longest.seconds:
            longest = Silence(now - last_t, last_line)
        if line is None:
            break
        print(f"    {name} +{now - t0:6.1f}s | {line}", flush=True)
        last_t, last_line = now, line.strip()
    status = proc.wait()
    print(end_line(name, status, time.monotonic() - t0, longest), flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--" not in args:
        print("phase.py: usage: phase.py NAME [--quiet-s S] -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    cut = args.index("--")
    parser = argparse.ArgumentParser(prog="phase.py")
    parser.add_argument("name")
    parser.add_argument("--quiet-s", type=float, default=30.0, help="say so after this long without output")
    opts = parser.parse_args(args[:cut])
    if not args[cut + 1 :]:
        parser.error("no command after --")
    return run_phase(opts.name, args[cut + 1 :], opts.quiet_s)


if __name__ == "__main__":
    sys.exit(main())
