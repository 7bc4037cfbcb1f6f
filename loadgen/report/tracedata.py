"""The card's ``trace`` section: each trace workload's replay over time, SLO attainment, capacity on the trace
and the recommendation on it, from a run folder's records (pure; docs/metrics.md "Trace replay").

Shape: records/trace.py ``TraceSection`` (``card.trace``, None without a trace workload): per workload a
``TraceRow`` (its servers' attainment and send lag, each arm's speedup, windows and shares, and a sweep's K
schedule on the trace from report/traceschedule.py or None), per base workload each server's capacity on the
trace (speed or None) and the recommendation (``TraceChoice`` or None).

Times in seconds; speedups plain / arm of TPOT (above 1: the arm is faster); shares 0-1. ``behind`` is True when
the send lag against the trace's schedule has a p99 above measure/metrics.CLIENT_SEND_LAG_LIMIT_S: the client
fell behind the trace, and the replay was slower than recorded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from loadgen.measure.blocks import noise_band
from loadgen.measure.metrics import CLIENT_SEND_LAG_LIMIT_S, per_prompt
from loadgen.measure.traceslo import attainment, trace_capacity
from loadgen.measure.tracewindows import offsets, schedule_lag, shares, trace_windows, window_speedup
from loadgen.profile.cells import PLACEBO, PLAIN, PLAIN_ARMS
from loadgen.profile.pair import SLO
from loadgen.profile.trace import WINDOW_S
from loadgen.records.protocol import Protocol
from loadgen.records.protoparts import WorkloadRecord
from loadgen.records.request import RequestRecord
from loadgen.records.sweep import Recommendation, SweepCandidate
from loadgen.records.trace import ScheduleEstimate, TraceArm, TraceChoice, TraceRow, TraceSection, TraceServer
from loadgen.report.traceschedule import SweepSchedule, schedule_on_trace
from loadgen.store.files import load_records, read_protocol
from loadgen.store.runfiles import RunFiles

Blocks = list[list[RequestRecord]]
#: A sweep's K schedule judged on the trace (report/traceschedule.py), or None.
Schedule = SweepSchedule | None
#: The name the K schedule's estimate takes among the servers in the recommendation.
SCHEDULE_NAME = "K schedule (estimate)"


def _blocks(records: Sequence[RequestRecord], workload: str) -> dict[str, Blocks]:
    """``{server: [records of block 0, block 1, ...]}`` of one workload's measured records."""
    by: dict[str, dict[int, list[RequestRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.workload == workload and not r.warmup:
            by[r.role][r.repetition].append(r)
    return {role: [reps[b] for b in sorted(reps)] for role, reps in by.items()}


def _speedup_band(blocks: Mapping[str, Blocks]) -> tuple[float, float]:
    """The A/A placebo's noise band as a speedup (plain / placebo over the whole replay), [1, 1] without one."""
    if PLACEBO not in blocks or PLAIN not in blocks:
        return 1.0, 1.0
    ids = [set(offsets(b)) for b in blocks[PLAIN]]
    _, low, high, _ = window_speedup(blocks[PLAIN], blocks[PLACEBO], ids)
    return noise_band(low, high)


def _server(blocks: Blocks, slo: SLO) -> TraceServer:
    flat = [r for b in blocks for r in b]
    lag50, lag99 = schedule_lag(blocks)
    tpot = [v for b in blocks for v in per_prompt(b, "tpot_s").values()]  # per block: prompt ids recur
    return TraceServer(
        slo=attainment(flat, slo),
        lag_p50_s=lag50,
        lag_p99_s=lag99,
        behind=lag99 is not None and lag99 > CLIENT_SEND_LAG_LIMIT_S,
        tpot_p50_s=float(np.median(tpot)) if tpot else None,
    )


def trace_workload(
    workload: WorkloadRecord, records: Sequence[RequestRecord], slo: SLO, schedule: Schedule = None
) -> TraceRow | None:
    """One trace workload's row (records/trace.py ``TraceRow``) from its protocol entry (``name``, ``window_s``,
    ``time_scale``); None when it has no plain records. ``schedule``: a sweep's K schedule (the workload it came
    from, its config) and the arms' speculative configs, judged on the trace (report/traceschedule.py)."""
    name = workload.name
    blocks = _blocks(records, name)
    if PLAIN not in blocks:
        return None
    window = float(workload.window_s or WINDOW_S)
    band = _speedup_band(blocks)
    span = max((max(offsets(b).values(), default=0.0) for b in blocks[PLAIN]), default=0.0)
    ids = [set(offsets(b)) for b in blocks[PLAIN]]
    arms = {}
    for arm in sorted(a for a in blocks if a not in PLAIN_ARMS):
        windows = trace_windows(blocks[PLAIN], blocks[arm], window, arm, band)
        speedup, low, high, _ = window_speedup(blocks[PLAIN], blocks[arm], ids)
        arms[arm] = TraceArm(
            speedup=speedup, ci_low=low, ci_high=high, windows=tuple(windows), shares=shares(windows, span)
        )
    estimate = None
    if schedule is not None:
        estimate = schedule_on_trace(blocks, window, schedule, slo)
    return TraceRow(
        workload=name,
        base=name.split("@ts")[0],
        time_scale=workload.time_scale or 1.0,
        window_s=window,
        requests=len(ids[0]) if ids else 0,
        span_s=span,
        servers={role: _server(b, slo) for role, b in sorted(blocks.items())},
        arms=arms,
        schedule=estimate,
    )


def _capacity(rows: Sequence[TraceRow]) -> dict[str, dict[str, float | None]]:
    """``{base workload: {server: fastest speed holding the SLOs}}`` over its time-scale variants."""
    out: dict[str, dict[str, float | None]] = {}
    for base in dict.fromkeys(r.base for r in rows):
        mine = [r for r in rows if r.base == base]
        servers = dict.fromkeys(s for r in mine for s in r.servers)
        out[base] = {
            s: trace_capacity(
                [r.time_scale for r in mine if s in r.servers], [r.servers[s].slo.hold for r in mine if s in r.servers]
            )
            for s in servers
        }
    return out


def _recommend(rows: Sequence[TraceRow]) -> dict[str, TraceChoice | None]:
    """``{base: the server with the lowest TPOT p50 over the replay at its slowest time scale among those whose
    SLOs hold (or with no SLO declared), at time_scale 1 (else the slowest declared)}``; None when none holds."""
    out: dict[str, TraceChoice | None] = {}
    for base in dict.fromkeys(r.base for r in rows):
        row = max((r for r in rows if r.base == base), key=lambda r: (r.time_scale == 1.0, r.time_scale))
        judged: dict[str, TraceServer | ScheduleEstimate] = {**row.servers}
        if row.schedule:
            judged[SCHEDULE_NAME] = row.schedule
        ok = [
            (s.tpot_p50_s, name)
            for name, s in judged.items()
            if name != PLACEBO and s.tpot_p50_s is not None and s.slo.hold is not False
        ]
        best = min(ok, default=None)
        out[base] = None if best is None else TraceChoice(server=best[1], tpot_p50_s=best[0], time_scale=row.time_scale)
    return out


def trace_section(
    protocol: Protocol, records: Sequence[RequestRecord], schedule: Schedule = None
) -> TraceSection | None:
    """The ``trace`` section (module docstring) of a run's protocol.json and records; None without a trace."""
    traces = [w for w in protocol.workloads if w.kind == "trace"]
    if not traces:
        return None
    slo = SLO.of(protocol.slo)
    rows = [row for w in traces if (row := trace_workload(w, records, slo, schedule)) is not None]
    return TraceSection(workloads=tuple(rows), capacity=_capacity(rows), recommendation=_recommend(rows))


def trace_card(files: RunFiles) -> TraceSection | None:
    """The card's ``trace`` section of a run folder's contents."""
    return trace_section(files.protocol, files.records)


def sweep_trace(
    sweep_dir: Path, recommendation: Recommendation | None = None, candidates: Sequence[SweepCandidate] = ()
) -> TraceSection | None:
    """The sweep card's ``trace`` section: every arm of the sweep folder (plain, the placebo, each candidate)
    over the trace, the K schedule of the sweep's ``recommendation`` (the first workload's that has one, from
    its fixed-level cells; ``candidates``: the sweep card's rows, name and speculative_config) judged on it,
    and the recommendation among all of them; None without protocol.json, requests.jsonl or a trace workload."""
    if not (sweep_dir / "protocol.json").is_file() or not (sweep_dir / "requests.jsonl").is_file():
        return None
    protocol = read_protocol(sweep_dir / "protocol.json")
    if not any(w.kind == "trace" for w in protocol.workloads):
        return None
    found = next(
        (
            SweepSchedule(w.workload, w.schedule, candidates)
            for w in (recommendation.workloads if recommendation else [])
            if w.schedule is not None and w.schedule.config
        ),
        None,
    )
    return trace_section(protocol, load_records(sweep_dir), found)
