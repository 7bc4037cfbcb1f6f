"""Capacity on a trace by bisection (``loadgen trace-capacity``): one ordinary compare per replay speed of a
trace workload, each server's SLOs read from its card (report/tracedata.py), the next speed chosen by
measure/traceslo.bisect_capacity. Speed = 1 / ``time_scale`` (2.0 replays the trace twice as fast)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from loadgen.errors import BadInput
from loadgen.measure.traceslo import Holds, bisect_capacity
from loadgen.profile.cells import PLACEBO
from loadgen.profile.domains import MAX_TIME_SCALE
from loadgen.profile.pair import Pair
from loadgen.run.flow import Log, run_compare
from loadgen.run.observe import ObserveOptions
from loadgen.store.files import read_card


@dataclass(frozen=True)
class CapacitySearch:
    """Each server's fastest speed holding its SLOs (None: none tested), every tested speed's result per server
    and its run folder."""

    capacity: Mapping[str, float | None]
    tested: Mapping[float, Holds]
    run_dirs: Mapping[float, Path]


def search_capacity(
    pair: Pair,
    workload: str,
    speeds: tuple[float, float],
    steps: int,
    runs_root: Path,
    log: Log = print,
    allow_unpinned: bool = False,
    observe: ObserveOptions | None = None,
) -> CapacitySearch:
    """Bisect the replay speed of the trace ``workload`` of ``pair`` within ``speeds`` (low, high), ``steps``
    midpoints after both ends; each replay is a compare of that workload alone. Raises BadInput (exit 2)
    without ``[slo]``, for a workload that is not one of the pair's traces, or speeds not 0.001 <= low <
    high < inf (time_scale's domain, profile/domains.py). ``observe``: each compare's sinks (its progress line)."""
    if not pair.slo.limits():
        raise BadInput(
            f"{pair.path}: a capacity search needs service-level objectives; declare [slo] (ttft_s, tpot_s or e2e_s)"
        )
    traces = {w.name.split("@ts")[0]: w for w in pair.workloads if w.kind == "trace"}
    if workload not in traces:
        raise BadInput(
            f"--workload {workload!r} is not a trace workload of {pair.path}; its traces: "
            f"{', '.join(traces) or '(none)'}"
        )
    low, high = speeds
    if not 1 / MAX_TIME_SCALE <= low < high < math.inf:  # a slower replay waits for ever, as time_scale's cap says
        raise BadInput(
            f"--speeds must be LOW:HIGH with {1 / MAX_TIME_SCALE:g} <= LOW < HIGH (a time_scale of at most "
            f"{MAX_TIME_SCALE:,}, as in a workload file), e.g. 0.5:2, got {low:g}:{high:g}"
        )
    dirs: dict[float, Path] = {}

    def measure(speed: float) -> Holds:
        w = replace(traces[workload], name=f"{workload}@ts{1 / speed:.4g}", time_scale=1 / speed)
        run_dir = dirs[speed] = run_compare(
            replace(pair, workloads=(w,)), runs_root, log=log, allow_unpinned=allow_unpinned, observe=observe
        )
        trace = read_card(run_dir / "card.json").trace
        rows = trace.workloads if trace else ()
        holds = {s: v.slo.hold for s, v in rows[0].servers.items() if s != PLACEBO} if rows else {}
        log(
            f"speed {speed:.4g}x (time_scale {1 / speed:.4g}): "
            + ", ".join(f"{s} {'holds' if h else 'fails'}" for s, h in holds.items())
        )
        return holds

    capacity, tested = bisect_capacity(measure, low, high, steps)
    return CapacitySearch(capacity, tested, dirs)
