"""How a finished ``compare`` and a finished ``sweep`` end, the same way: the card's path (``card: ...``,
``sweep card: ...``), then, when the criteria the pair file declared failed, one ``exit 3: ...`` line on
stdout and exit 3 (CriteriaFailed with no message, so no error line follows: a finished run is no crash).
The Makefile's ``compare`` and ``sweep`` targets turn that 3 into status 0 unless ``GATE=1``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import click

from loadgen.errors import CriteriaFailed

#: The last line of a compare whose verdict failed (or was inconclusive against) its declared criteria.
RUN_FAILED = "exit 3: the run finished and its verdict failed the criteria declared in the pair file"
#: The last line of a sweep none of whose candidates meets the declared criteria.
SWEEP_FAILED = "exit 3: the sweep finished and no candidate meets the criteria declared in the pair file"


def criteria_exit(line: str) -> NoReturn:
    """Print ``line`` and raise CriteriaFailed("") (exit 3, no error line)."""
    click.echo(line)
    raise CriteriaFailed("")


def end_sweep(run: Callable[[], Path]) -> Path:
    """Run a sweep (``run``: run/sweep.py ``run_sweep`` bound to its arguments; it logs ``sweep card: ...``
    last) and end it as a compare ends: its CriteriaFailed becomes :data:`SWEEP_FAILED` and exit 3 with no
    error line. Returns the sweep folder otherwise."""
    try:
        return run()
    except CriteriaFailed:
        criteria_exit(SWEEP_FAILED)
