"""The wall time a sweep will take, estimated before it starts (``loadgen sweep`` prints it and refuses a
``--budget-min`` it cannot meet).

Estimate = servers started x start time + servers measured x the cells' time. The start time is the
median ``ready_s`` of the servers of earlier runs under the runs folder (``servers/*-effective.json``),
else :data:`DEFAULT_START_S`; a cell's time is its requests (warmup, measured, cooldown) over its
concurrency (closed loop) or rate (open loop) times one request's time, ``output_tokens`` x the median
plain TPOT p50 of earlier cards, else :data:`DEFAULT_TPOT_S`.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loadgen.profile.cells import CellSpec

DEFAULT_START_S = 60.0
DEFAULT_TPOT_S = 0.05


@dataclass(frozen=True)
class History:
    """What earlier runs on this machine measured: the start time and TPOT, and where they came from."""

    start_s: float
    tpot_s: float
    source: str


def history(runs_root: Path, limit: int = 200) -> History:
    """The median server start time and plain TPOT p50 of earlier runs under ``runs_root`` (defaults
    when there are none)."""
    starts: list[float] = []
    tpots: list[float] = []
    for path in sorted(runs_root.glob("**/servers/*-effective.json"))[-limit:]:
        try:
            ready = json.loads(path.read_text()).get("ready_s")
        except (OSError, ValueError):
            continue
        if isinstance(ready, (int, float)) and ready > 0:
            starts.append(float(ready))
    for path in sorted(runs_root.glob("**/card.json"))[-limit:]:
        try:
            cells = json.loads(path.read_text()).get("cells") or []
        except (OSError, ValueError):
            continue
        tpots += [c["plain"]["tpot_s"]["p50"] for c in cells
                  if isinstance(((c.get("plain") or {}).get("tpot_s") or {}).get("p50"), (int, float))]
    source = (f"{len(starts)} earlier server starts under {runs_root}" if starts
              else f"no earlier runs under {runs_root}: default {DEFAULT_START_S:.0f} s per start")
    return History(statistics.median(starts) if starts else DEFAULT_START_S,
                   statistics.median(tpots) if tpots else DEFAULT_TPOT_S, source)


def cells_s(cells: Sequence[CellSpec], tpot_s: float) -> float:
    """The estimated seconds to run ``cells`` once on one server."""
    total = 0.0
    for c in cells:
        n = len(c.warmup) + len(c.measured) + len(c.cooldown)
        one = max((p.output_tokens for p in (*c.warmup, *c.measured)), default=1) * tpot_s
        if c.level.rate_rps is not None:
            total += len(c.warmup) * one + max(len(c.measured) / c.level.rate_rps, one)
        else:
            total += math.ceil(n / c.level.concurrency) * one
    return total


def estimate_s(cells: Sequence[CellSpec], servers_to_start: int, servers_to_measure: int, hist: History) -> float:
    """The sweep's estimated wall time in seconds."""
    return servers_to_start * hist.start_s + servers_to_measure * cells_s(cells, hist.tpot_s)
