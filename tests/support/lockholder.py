"""A real process that holds a folder's lock (store/runlock.py): ``hold(folder)`` returns once it holds it;
``hold(folder, die=True)`` once it was SIGKILLed while holding it (its lock file left behind, stale)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.scripted_engine import REPO

HOLDER = """import os, signal, sys, time
from pathlib import Path
from loadgen.store.runlock import locked
with locked(Path(sys.argv[1]), print):
    print("held", flush=True)
    if sys.argv[2:] == ["die"]:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)
"""


def hold(folder: Path, die: bool = False) -> subprocess.Popen[str]:
    """Start the holder of ``folder``'s lock and wait until it holds it (``die``: until it is gone)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder), *(["die"] if die else [])],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ | {"PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    if die:
        proc.communicate(timeout=10)  # waits and closes its pipe
    return proc
