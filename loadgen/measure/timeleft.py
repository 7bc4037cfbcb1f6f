"""How long a run still has to measure, from the slots it has measured (pure; run/slotcount.py feeds it).

A slot is one (arm, cell block) of the design order (run/design.py). A slot left is estimated at the mean
duration of the slots measured so far of the same arm, workload and level (the same kind of server under the
same load), else at the mean of every slot measured so far; the time left is their sum. With one kind of slot
this is the mean slot time times the slots left; with several it weighs each slot left by what its own kind
took (a c16 block of a long workload takes longer than a c1 block of a short one). No slot measured: no
estimate (None). A slot's duration is the wall time between its start and end line, a server start of a
one-at-a-time phase included.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Hashable, Sequence


def time_left_s(measured: Sequence[tuple[Hashable, float]], left: Sequence[Hashable]) -> float | None:
    """Seconds the slots ``left`` should take (each a key: arm, workload, level), estimated from ``measured``
    (key, seconds) pairs as the module docstring says; None when nothing is measured yet, 0.0 when nothing is
    left."""
    if not left:
        return 0.0
    if not measured:
        return None
    by: dict[Hashable, list[float]] = defaultdict(list)
    for key, seconds in measured:
        by[key].append(seconds)
    every = statistics.fmean(s for _, s in measured)
    means = {key: statistics.fmean(values) for key, values in by.items()}
    return sum(means.get(key, every) for key in left)


def rate_left_s(done: int, total: int, elapsed_s: float) -> float | None:
    """Seconds the ``total - done`` units left should take at the rate so far (``elapsed_s`` for ``done``
    units): for units that run side by side (a fleet's tasks), where a mean per unit would count them one after
    the other. None before the first unit is done."""
    if done <= 0:
        return None
    return max(total - done, 0) * elapsed_s / done
