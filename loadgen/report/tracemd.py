"""The card's "Trace replay" section in Markdown, from the card's ``trace`` (records/trace.py, built by
report/tracedata.py; docs/metrics.md "Trace replay"): per trace workload the send lag against the trace, each
arm's windows (requests in flight, TPOT and TTFT, speedup with its CI, outcome) and outcome shares, SLO
attainment per server, capacity on the trace and the recommendation."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.measure.tracewindows import EVEN, LOSES, PAYS, UNKNOWN
from loadgen.records.trace import ScheduleEstimate, Shares, TraceArm, TraceSection, TraceServer


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.1f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.0f}%"


def _speedup(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" + (f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else "")


def _window_rows(arm: str, entry: TraceArm) -> list[str]:
    out = [
        f"| window (s) | requests | in flight plain mean / max | in flight {arm} mean / max | TPOT p50 / p90 "
        f"plain (ms) | TPOT p50 / p90 {arm} (ms) | TTFT p50 / p90 plain (ms) | TTFT p50 / p90 {arm} (ms) | "
        "speedup [95% CI] | outcome |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for w in entry.windows:
        sides = (w.arms["plain"], w.arms[arm])
        cols = [f"{_ms(p50)} / {_ms(p90)}" for p50, p90 in ((s.tpot_p50_s, s.tpot_p90_s) for s in sides)]
        cols += [f"{_ms(p50)} / {_ms(p90)}" for p50, p90 in ((s.ttft_p50_s, s.ttft_p90_s) for s in sides)]
        flight = [f"{s.in_flight_mean:.1f} / {s.in_flight_max}" for s in sides]
        out.append(
            f"| {w.start_s:g}-{w.end_s:g} | {w.requests} | "
            + " | ".join([*flight, *cols])
            + f" | {_speedup(w.speedup, w.ci_low, w.ci_high)} | {w.outcome} |"
        )
    return out


def _shares_line(arm: str, shares: Shares) -> str:
    t, n = shares.time, shares.requests
    parts = [
        f"{o} during {_pct(t[o])} of the trace's time ({_pct(n[o])} of its requests)"
        for o in (PAYS, EVEN, LOSES, UNKNOWN)
        if t.get(o) or n.get(o)
    ]
    return f"- {arm}: speculation " + "; ".join(parts) + "."


def _slo_rows(servers: Mapping[str, TraceServer]) -> list[str]:
    keys = sorted({k for s in servers.values() for k in s.slo.shares})
    if not keys:
        return ["- SLO attainment: no [slo] declared."]
    out = [
        "| server | requests | " + " | ".join(f"met {k}" for k in keys) + " | met all | SLOs hold |",
        "|---|---|" + "---|" * (len(keys) + 2),
    ]
    for name, s in servers.items():
        a = s.slo
        out.append(
            f"| {name} | {a.requests} | "
            + " | ".join(_pct(a.shares.get(k)) for k in keys)
            + f" | {_pct(a.every)} | {'-' if a.hold is None else 'yes' if a.hold else 'no'} |"
        )
    return out


def _lag_line(servers: Mapping[str, TraceServer]) -> list[str]:
    lags = ", ".join(f"{n} p50 {_ms(s.lag_p50_s)} ms / p99 {_ms(s.lag_p99_s)} ms" for n, s in servers.items())
    out = [f"- send lag against the trace's schedule: {lags}"]
    behind = [n for n, s in servers.items() if s.behind]
    if behind:
        out.append(
            f"- the client fell behind the trace on {', '.join(behind)} (send lag p99 above 5 ms, or requests "
            "waiting for a slot under [run].max_concurrency): that replay ran slower than recorded; use a "
            "quieter client machine or raise max_concurrency"
        )
    return out


def _schedule_lines(sched: ScheduleEstimate | None) -> list[str]:
    if not sched:
        return []
    hold = sched.slo.hold
    ks = ", ".join(f"{w.start_s:g} s: batch {w.batch} -> K {w.k} ({w.arm})" for w in sched.windows)
    return [
        f"- the sweep's K schedule (from {sched.from_workload}'s fixed-level cells) on this trace, estimated "
        f"from the arms' own windows: TPOT p50 {_ms(sched.tpot_p50_s)} ms, met all SLOs "
        f"{_pct(sched.slo.every)}, SLOs hold {'-' if hold is None else 'yes' if hold else 'no'}; {ks}",
        "",
    ]


def trace_rows(trace: TraceSection | None) -> list[str]:
    """The "Trace replay" section's lines of a card's ``trace``; [] without one."""
    if not trace:
        return []
    out = ["## Trace replay", ""]
    for row in trace.workloads:
        out += [
            f"### {row.workload}: {row.requests} requests over {row.span_s:.1f} s, time_scale "
            f"{row.time_scale:g}, windows of {row.window_s:g} s",
            "",
            *_lag_line(row.servers),
            "",
        ]
        for arm, entry in row.arms.items():
            whole = _speedup(entry.speedup, entry.ci_low, entry.ci_high)
            out += [
                f"- {arm} over the whole trace: speedup {whole}",
                _shares_line(arm, entry.shares),
                "",
                *_window_rows(arm, entry),
                "",
            ]
        out += ["SLO attainment over the whole trace:", "", *_slo_rows(row.servers), ""]
        out += _schedule_lines(row.schedule)
    for base, caps in trace.capacity.items():
        said = ", ".join(
            f"{s} holds {v:g}x this trace" if v is not None else f"{s} holds none of the declared speeds"
            for s, v in caps.items()
        )
        out.append(f"- capacity on {base} (fastest declared time_scale meeting the SLOs): {said}")
    for base, rec in trace.recommendation.items():
        out.append(
            f"- recommendation on {base}: "
            + (
                "no server holds the SLOs"
                if rec is None
                else f"{rec.server} (lowest TPOT p50 {_ms(rec.tpot_p50_s)} ms at time_scale {rec.time_scale:g} "
                "while holding the SLOs)"
            )
        )
    return [*out, ""]
