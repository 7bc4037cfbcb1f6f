"""The ``trace`` section of the pair card and the sweep card: each trace workload's replay over time, SLO
attainment, capacity on the trace and the recommendation on it (report/tracedata.py builds it, the windows,
shares and attainment come from measure/tracewindows.py and measure/traceslo.py; docs/metrics.md "Trace
replay"). Times in s, speedups plain / arm of TPOT (above 1: the arm is faster), shares 0-1.

Every field is required, so a record built in code writes all of them, null included; read and written by
records/cardwire.py's ``Wire`` rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loadgen.records.cardwire import Wire


@dataclass(frozen=True)
class Attainment(Wire):
    """One server over a replay: ``requests``, the share meeting each declared objective (``{"ttft_s": ...}``)
    and all of them (``every``), and whether the declared percentiles ``hold`` (None without SLOs)."""

    requests: int
    shares: Mapping[str, float]
    every: float | None
    hold: bool | None


@dataclass(frozen=True)
class ArmWindow(Wire):
    """One arm over one window: its ``requests`` (over all blocks), requests in flight (mean, max), and the
    p50 / p90 of TPOT and TTFT (s; None without a value)."""

    requests: int
    in_flight_mean: float
    in_flight_max: int
    tpot_p50_s: float | None
    tpot_p90_s: float | None
    ttft_p50_s: float | None
    ttft_p90_s: float | None


@dataclass(frozen=True)
class TraceWindow(Wire):
    """Window ``[start_s, end_s)`` of the trace: the requests due in it (per block), each arm's figures, the
    arm's ``speedup`` (plain / arm TPOT) with its 95% CI, ``ci`` (``blocks`` or ``bootstrap``) and ``outcome``."""

    start_s: float
    end_s: float
    requests: int
    arms: Mapping[str, ArmWindow]
    speedup: float | None
    ci_low: float | None
    ci_high: float | None
    ci: str
    outcome: str


@dataclass(frozen=True)
class Shares(Wire):
    """Each outcome's share (0-1) of the trace's time and of its requests."""

    time: Mapping[str, float]
    requests: Mapping[str, float]


@dataclass(frozen=True)
class TraceServer(Wire):
    """One server over a trace workload: its SLO attainment, its send lag against the trace's schedule (p50,
    p99, s), whether the client fell ``behind`` (p99 above measure/metrics.CLIENT_SEND_LAG_LIMIT_S) and its TPOT
    p50 (s)."""

    slo: Attainment
    lag_p50_s: float | None
    lag_p99_s: float | None
    behind: bool
    tpot_p50_s: float | None


@dataclass(frozen=True)
class TraceArm(Wire):
    """One speculative arm against plain over the whole trace (speedup with its 95% CI), per window, and the
    outcomes' shares."""

    speedup: float | None
    ci_low: float | None
    ci_high: float | None
    windows: tuple[TraceWindow, ...]
    shares: Shares


@dataclass(frozen=True)
class ScheduleWindow(Wire):
    """One window of a K schedule on the trace: its start (s), the batch (mean requests in flight), the K the
    schedule gives it and the arm that ran that K."""

    start_s: float
    batch: int
    k: int
    arm: str


@dataclass(frozen=True)
class ScheduleEstimate(Wire):
    """A sweep's K schedule on the trace (report/traceschedule.py), estimated from the arms' own windows: TPOT
    p50 (s), SLO attainment, the windows, the workload the schedule came from and its config (vLLM's
    ``--speculative-config``, as the sweep card gives it)."""

    tpot_p50_s: float | None
    slo: Attainment
    windows: tuple[ScheduleWindow, ...]
    from_workload: str
    config: Mapping[str, Any]


@dataclass(frozen=True)
class TraceRow(Wire):
    """One trace workload (a time-scale variant ``<base>@ts<scale>`` is one row): its replay's figures."""

    workload: str
    base: str
    time_scale: float
    window_s: float
    requests: int
    span_s: float
    servers: Mapping[str, TraceServer]
    arms: Mapping[str, TraceArm]
    schedule: ScheduleEstimate | None


@dataclass(frozen=True)
class TraceChoice(Wire):
    """The server with the lowest TPOT p50 (s) holding the SLOs on a base workload, at its time scale."""

    server: str
    tpot_p50_s: float
    time_scale: float


@dataclass(frozen=True)
class TraceSection(Wire):
    """The ``trace`` section: the rows, per base workload each server's capacity on the trace (the fastest
    declared speed holding the SLOs, None: none) and the recommendation (None: no server holds the SLOs)."""

    workloads: tuple[TraceRow, ...]
    capacity: Mapping[str, Mapping[str, float | None]]
    recommendation: Mapping[str, TraceChoice | None]
