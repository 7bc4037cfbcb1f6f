"""A sweep's per-batch-size K schedule (report/sweeprec.py, from the fixed-level cells) judged on a trace: an
estimate assembled from the arms' own replays of it (pure; docs/metrics.md "Trace replay").

Every arm of a sweep replays the same trace, so in each time window the schedule's choice was measured: the
window's batch is the plain server's mean number of requests in flight there (rounded, at least 1; the load the
trace offers), the schedule's K at that batch (profile/pair.k_at: 0 = speculation off) names the arm of that K
in the schedule's family (method and draft; K = 0: plain), and that arm's requests of the window stand for the
schedule's. Pooled over windows and blocks they give the schedule's TPOT p50 and SLO attainment on the trace.
It is an estimate: a server switching K as its batch moves was not itself measured (nor its switching cost).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from loadgen.measure.metrics import per_prompt
from loadgen.measure.traceslo import attainment
from loadgen.measure.tracewindows import in_flight, intervals, offsets
from loadgen.profile.cells import PLAIN
from loadgen.profile.pair import SLO, k_at
from loadgen.records.request import RequestRecord
from loadgen.records.schedule import DeployedSchedule
from loadgen.records.sweep import KSchedule, SweepCandidate
from loadgen.records.trace import ScheduleEstimate, ScheduleWindow

Blocks = Sequence[Sequence[RequestRecord]]


@dataclass(frozen=True)
class SweepSchedule:
    """A sweep's K schedule to judge on a trace: the workload whose fixed-level cells it came from, the schedule
    (records/sweep.py ``KSchedule``, its ``config`` in vLLM's syntax) and the sweep's candidates (the arms)."""

    workload: str
    schedule: KSchedule
    candidates: Sequence[SweepCandidate]


def arm_of_k(schedule: KSchedule, candidates: Sequence[SweepCandidate], k: int) -> str | None:
    """The arm that runs the schedule's family at ``k`` draft tokens (``plain`` for 0); None when none was measured."""
    if k == 0:
        return PLAIN
    family = DeployedSchedule.family_of(schedule.config or {})
    return next(
        (
            c.name
            for c in candidates
            if DeployedSchedule.family_of(c.speculative_config) == family
            and int(c.speculative_config.get("num_speculative_tokens") or 0) == k
        ),
        None,
    )


def schedule_on_trace(
    blocks: Mapping[str, Blocks], window_s: float, sweep: SweepSchedule, slo: SLO
) -> ScheduleEstimate | None:
    """The schedule's estimate on one trace workload (module docstring; records/trace.py ``ScheduleEstimate``);
    None without plain records or when a window needs a K no arm ran."""
    plain = blocks.get(PLAIN)
    config = sweep.schedule.speculative
    if not plain:
        return None
    due = [offsets(b) for b in plain]
    span = max((max(d.values(), default=0.0) for d in due), default=0.0)
    pooled: list[list[RequestRecord]] = [[] for _ in plain]  # per block: a prompt id recurs across blocks
    chosen = []
    for w in range(max(1, math.floor(span / window_s) + 1)):
        start, end = w * window_s, (w + 1) * window_s
        batch = max(1, round(float(np.mean([in_flight(intervals(b), start, end)[0] for b in plain]))))
        k = k_at(config, batch)
        arm = arm_of_k(sweep.schedule, sweep.candidates, k)
        if arm is None or arm not in blocks:
            return None
        for mine, block, ids in zip(pooled, blocks[arm], due, strict=False):
            mine += [r for r in block if start <= ids.get(r.prompt_id, -1.0) < end]
        chosen.append(ScheduleWindow(start_s=start, batch=batch, k=k, arm=arm))
    tpot = [v for mine in pooled for v in per_prompt(mine, "tpot_s").values()]
    return ScheduleEstimate(
        tpot_p50_s=float(np.median(tpot)) if tpot else None,
        slo=attainment([r for mine in pooled for r in mine], slo),
        windows=tuple(chosen),
        from_workload=sweep.workload,
        config=config.to_json(),
    )
