"""A trace replay over time (pure; docs/metrics.md "Trace replay"): per time window of the trace, each arm's
requests in flight, TPOT and TTFT, and the paired speedup with its CI; the share of the trace's time and of its
requests during which speculation pays, breaks even or loses; the send lag against the trace's schedule.

A request belongs to the window holding its offset in the trace (its due time ``arrival_s`` less the block's
first one, s), so a window holds the same prompts on every arm and block: the window ratio is paired.

- **Requests in flight** (per arm, averaged over blocks): the mean is the time integral of the number of
  requests between their send and their last byte over the window, divided by its length; the max is the
  largest count at any moment of the window (the max over blocks).
- **Speedup** = plain / arm of the window's median TPOT (above 1: the arm is faster). With two blocks or more
  it is the blocks design's (measure/blocks.py: geometric mean of the block ratios, Student's t interval on
  their logs; the blocks are the repetitions of the whole trace); with one block, the paired bootstrap CI over
  the window's prompts (measure/ratios.py), which cannot see drift.
- **Outcome**: the arm *pays* where the speedup's CI lies above the noise band (the A/A placebo's band,
  measure/blocks.noise_band, inverted to a speedup; [1, 1] without a placebo), *loses* where it lies below,
  *breaks even* where it overlaps; *unknown* without a CI (a window of fewer than 2 paired requests).
- **Shares**: each outcome's share of the trace's time (window lengths, the last cut at the last arrival) and
  of its requests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from loadgen.measure.blocks import block_ratio
from loadgen.measure.metrics import per_prompt
from loadgen.measure.ratios import paired_median_with_sd
from loadgen.records.request import RequestRecord
from loadgen.records.trace import ArmWindow, Shares, TraceWindow

PAYS, EVEN, LOSES, UNKNOWN = "pays", "breaks even", "loses", "unknown"
OUTCOMES = (PAYS, EVEN, LOSES, UNKNOWN)

Blocks = Sequence[Sequence[RequestRecord]]  # one arm's measured records, one sequence per block


def offsets(block: Sequence[RequestRecord]) -> dict[str, float]:
    """``{prompt_id: offset}`` (s after the block's first due time) of a block's records with a due time."""
    due = [r.arrival_s for r in block if r.arrival_s is not None]
    t0 = min(due) if due else 0.0
    return {r.prompt_id: r.arrival_s - t0 for r in block if r.arrival_s is not None}


def intervals(block: Sequence[RequestRecord]) -> np.ndarray:
    """(n, 2) send and end times of a block's requests on the trace's clock (s; end = last byte)."""
    due = [r.arrival_s for r in block if r.arrival_s is not None]
    t0 = min(due) if due else 0.0
    rows = [
        (r.send_s - t0, max(r.done_s or 0.0, r.chunk_arrivals_s[-1] if r.chunk_arrivals_s else 0.0, r.send_s) - t0)
        for r in block
    ]
    return np.asarray(rows, dtype=float).reshape(-1, 2)


def in_flight(intervals: np.ndarray, start: float, end: float) -> tuple[float, int]:
    """(time-mean, max) of the number of ``intervals`` (rows ``[from, to)``, s) open during ``[start, end)``."""
    if end <= start or intervals.size == 0:
        return 0.0, 0
    lo, hi = intervals[:, 0], intervals[:, 1]
    overlap = np.clip(np.minimum(hi, end) - np.maximum(lo, start), 0.0, None).sum()
    at_start = int(((lo <= start) & (hi > start)).sum())
    inside = lo[(lo > start) & (lo < end)]
    peak = at_start
    if inside.size:  # the count can only rise at a send: the max is at the start or right after a send
        peak = max(peak, int(max(((lo <= t) & (hi > t)).sum() for t in inside)))
    return float(overlap / (end - start)), peak


def _pct(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def arm_window(blocks: Blocks, ids: Sequence[set[str]], start: float, end: float) -> ArmWindow:
    """One arm's :class:`ArmWindow` over ``[start, end)``; ``ids[b]`` the prompt ids due in it in block b."""
    tpot: list[float] = []
    ttft: list[float] = []
    means, peaks, n = [], [], 0
    for block, want in zip(blocks, ids, strict=False):
        mine = [r for r in block if r.prompt_id in want]
        n += len(mine)
        tpot += per_prompt(mine, "tpot_s").values()
        ttft += per_prompt(mine, "ttft_s").values()
        mean, peak = in_flight(intervals(block), start, end)
        means.append(mean)
        peaks.append(peak)
    return ArmWindow(
        n,
        float(np.mean(means)) if means else 0.0,
        max(peaks, default=0),
        _pct(tpot, 50),
        _pct(tpot, 90),
        _pct(ttft, 50),
        _pct(ttft, 90),
    )


def window_speedup(
    plain: Blocks, arm: Blocks, ids: Sequence[set[str]]
) -> tuple[float | None, float | None, float | None, str]:
    """(speedup, CI low, CI high, ``blocks`` | ``bootstrap``): plain / arm of the median TPOT of the prompts
    ``ids[b]`` of each block b (module docstring)."""
    ratios, sds, single = [], [], None
    for p_block, a_block, want in zip(plain, arm, ids, strict=False):
        p = per_prompt([r for r in p_block if r.prompt_id in want], "tpot_s")
        a = per_prompt([r for r in a_block if r.prompt_id in want], "tpot_s")
        ratio, sd = paired_median_with_sd(p, a)
        ratios.append(ratio.value)
        sds.append(sd)
        single = ratio
    if len(ratios) == 1 and single is not None:
        inv = [1 / x if x else None for x in (single.value, single.ci_high, single.ci_low)]
        return inv[0], inv[1], inv[2], "bootstrap"
    br = block_ratio(ratios, sds)
    inv = [1 / x if x else None for x in (br.value, br.ci_high, br.ci_low)]
    return inv[0], inv[1], inv[2], "blocks"


def outcome(ci_low: float | None, ci_high: float | None, band: tuple[float, float] = (1.0, 1.0)) -> str:
    """:data:`PAYS`, :data:`EVEN`, :data:`LOSES` or :data:`UNKNOWN` of a speedup CI against the noise
    ``band`` (a speedup band: the placebo's ratio band inverted)."""
    if ci_low is None or ci_high is None:
        return UNKNOWN
    if ci_low > band[1]:
        return PAYS
    if ci_high < band[0]:
        return LOSES
    return EVEN


def trace_windows(
    plain: Blocks, arm: Blocks, window_s: float, arm_name: str = "speculative", band: tuple[float, float] = (1.0, 1.0)
) -> list[TraceWindow]:
    """The windows of ``window_s`` s over a replay measured on ``plain`` and ``arm`` (records per block, the
    same blocks in the same order; module docstring). Raises ValueError for a window <= 0."""
    if window_s <= 0:
        raise ValueError("window_s must be > 0")
    due = [offsets(b) for b in plain]
    span = max((max(d.values(), default=0.0) for d in due), default=0.0)
    count = max(1, math.floor(span / window_s) + 1)
    out = []
    for w in range(count):
        start, end = w * window_s, (w + 1) * window_s
        ids = [{pid for pid, t in d.items() if start <= t < end} for d in due]
        speedup, low, high, ci = window_speedup(plain, arm, ids)
        arms = {"plain": arm_window(plain, ids, start, end), arm_name: arm_window(arm, ids, start, end)}
        out.append(
            TraceWindow(start, end, len(ids[0]) if ids else 0, arms, speedup, low, high, ci, outcome(low, high, band))
        )
    return out


def shares(windows: Sequence[TraceWindow], last_s: float) -> Shares:
    """The outcomes' shares over ``windows``; the last window's time is cut at ``last_s`` (the last arrival,
    s; a replay of one instant counts each window once)."""
    lengths = [max(min(w.end_s, last_s) - w.start_s, 0.0) for w in windows]
    if sum(lengths) <= 0:
        lengths = [1.0] * len(windows)
    total_t, total_n = sum(lengths), sum(w.requests for w in windows)
    time = {o: sum(x for x, w in zip(lengths, windows, strict=True) if w.outcome == o) / total_t for o in OUTCOMES}
    reqs = {o: (sum(w.requests for w in windows if w.outcome == o) / total_n if total_n else 0.0) for o in OUTCOMES}
    return Shares(time, reqs)


def schedule_lag(blocks: Blocks) -> tuple[float | None, float | None]:
    """(p50, p99) in s of ``send_s - arrival_s`` over an arm's requests: how late each left against the trace's
    schedule, including any wait for a free slot under ``[run].max_concurrency`` (None without requests)."""
    lags = [r.send_s - r.arrival_s for b in blocks for r in b if r.arrival_s is not None]
    return (_pct(lags, 50), _pct(lags, 99)) if lags else (None, None)
