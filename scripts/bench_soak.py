"""Benchmark: a long soak of loadgen's streaming client; its memory (RSS) and event-loop lag over time.

It starts ``scripts/sse_server.py`` on loopback (its own process, pinned to one core when there are two)
and runs loadgen's runner in this process (``run_cell_async``, closed loop, ``/v1/completions``) the way
``loadgen compare`` runs a pair: cell after cell, each of ``--cell-s`` seconds at ``--concurrency``, for
``--duration-s`` in all (30 minutes by default). Every finished request is written as a JSON line to the
cell's file as it finishes (as ``requests.jsonl`` is), and a cell's records and file are dropped when the
cell ends, so anything that grows from cell to cell is the client's own.

Measured, every ``--report-s`` seconds (one table row each):

* RSS of this process (psutil) and its CPU use (cores);
* event-loop lag: a task in the same event loop sleeps ``LAG_PERIOD_S`` at a time; lag = how much later
  than asked it wakes (p50, p99, max per row; the loop's timers round to whole milliseconds, so up to
  1 ms either way is the timer's, not the load's), split into inside cells and around their boundaries;
* token-bearing chunks and requests finished per second, failed requests, send lag p99 (docs/metrics.md).

Reported: the table, the RSS at every cell end and its least-squares slope (MB per minute) over the cell
ends after the first ``SETTLE_CELLS`` (the allocator's warm-up), and the loop and send lag over the whole
run (constant-memory histograms: the soak keeps nothing per request). The exit status is 1 when the RSS slope exceeds
``RSS_SLOPE_LIMIT_MB_PER_MIN`` or a request failed. Results go to stdout and ``docs/benchmarks.md``
(section "Soak: memory and event-loop lag over time"). Run: ``make bench`` (``SOAK_S`` sets the duration).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import numpy as np
import psutil
from benchdoc import DOC, by_make, describe_command, load_average, machine, write_section
from sse_server import spawn

from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level, Sampling
from loadgen.profile.workload import Prompt
from loadgen.records.request import RequestRecord
from loadgen.stream.loadloop import run_cell_async, run_in_cell_loop

SECTION = "## Soak: memory and event-loop lag over time"
MODEL = "scripted"
LAG_PERIOD_S = 0.05
SETTLE_CELLS = 2
BOUNDARY_S = 2.0  # the first seconds of a cell: its loop lag counts as around the cell boundary
RSS_SLOPE_LIMIT_MB_PER_MIN = 0.5
PROMPTS_PER_CELL = 1_000_000  # references to one prompt; the cell's duration stops it long before


class Hist:
    """Counts of values (ms) in fixed buckets 1% wide from 1 us to 100 s (values <= 0 in the first), so a
    whole soak's percentiles take constant memory; a percentile is its bucket's upper edge."""

    EDGES_MS = np.concatenate(([0.0], np.logspace(-3, 5, 1852)))

    def __init__(self) -> None:
        self.counts = np.zeros(len(self.EDGES_MS) + 1, dtype=np.int64)
        self.n, self.max = 0, float("nan")

    def add(self, values_ms: Sequence[float]) -> None:
        if len(values_ms):
            np.add.at(self.counts, np.searchsorted(self.EDGES_MS, values_ms, side="left"), 1)
            self.n += len(values_ms)
            self.max = max(values_ms) if self.max != self.max else max(self.max, max(values_ms))

    def pct(self, q: float) -> float:
        if not self.n:
            return float("nan")
        k = int(np.searchsorted(np.cumsum(self.counts), q / 100 * self.n, side="left"))
        return min(float(self.EDGES_MS[min(k, len(self.EDGES_MS) - 1)]), self.max)


@dataclass
class Sample:
    """One table row: ``--report-s`` seconds of the soak, summarized."""

    t_s: float  # end of the interval, seconds since the soak started
    rss_mb: float
    cpu_cores: float
    chunks_per_s: float
    requests_per_s: float
    errors: int
    lag_p50_ms: float
    lag_p99_ms: float
    lag_max_ms: float
    send_lag_p99_ms: float


@dataclass
class Soak:
    """Counters of the interval in progress, what was sampled so far, and whole-run histograms. Nothing in
    it grows with the number of requests (the soak measures the client's memory, not its own)."""

    start: float
    proc: psutil.Process
    samples: list[Sample] = field(default_factory=list)
    cell_ends: list[tuple[float, float]] = field(default_factory=list)  # (minutes, RSS MB)
    steady_from: float | None = None  # perf_counter() from which the current cell's loop lag counts as inside
    chunks: int = 0
    requests: int = 0
    errors: int = 0
    total_requests: int = 0
    total_errors: int = 0
    error_lines: list[str] = field(default_factory=list)
    lag_ms: list[float] = field(default_factory=list)
    send_lag_ms: list[float] = field(default_factory=list)
    lag_all: Hist = field(default_factory=Hist)
    lag_inside: Hist = field(default_factory=Hist)
    lag_around: Hist = field(default_factory=Hist)
    send_all: Hist = field(default_factory=Hist)

    def record(self, r: RequestRecord) -> None:
        self.chunks += len(r.chunk_tokens)
        self.requests += 1
        self.total_requests += 1
        if r.phase == "measured":  # a cell's warmup opens its connections: their connect time is send lag
            self.send_lag_ms.append((r.send_s - r.scheduled_s) * 1e3)
        if r.error is not None or r.output_tokens != r.requested_output_tokens:
            self.errors += 1
            self.total_errors += 1
            if len(self.error_lines) < 5:
                self.error_lines.append(r.error or f"{r.output_tokens} of {r.requested_output_tokens} tokens")

    def lag(self, now: float, lag_ms: float) -> None:
        self.lag_ms.append(lag_ms)
        inside = self.steady_from is not None and now >= self.steady_from
        (self.lag_inside if inside else self.lag_around).add([lag_ms])

    def rss_mb(self) -> float:
        return float(self.proc.memory_info().rss) / 2**20

    def take(self, wall_s: float, cpu_s: float) -> None:
        lag, send = self.lag_ms, self.send_lag_ms
        self.samples.append(
            Sample(
                time.perf_counter() - self.start,
                self.rss_mb(),
                cpu_s / wall_s,
                self.chunks / wall_s,
                self.requests / wall_s,
                self.errors,
                pct(lag, 50),
                pct(lag, 99),
                max(lag, default=float("nan")),
                pct(send, 99),
            )
        )
        self.lag_all.add(lag)
        self.send_all.add(send)
        self.chunks = self.requests = self.errors = 0
        self.lag_ms, self.send_lag_ms = [], []


def _keep(fh: TextIO, soak: Soak, r: RequestRecord) -> None:
    fh.write(json.dumps(r.to_json()) + "\n")
    soak.record(r)


async def loop_lag(soak: Soak) -> None:
    """Sleep ``LAG_PERIOD_S`` at a time and note how late each wake-up is (ms)."""
    while True:
        due = time.perf_counter() + LAG_PERIOD_S
        await asyncio.sleep(LAG_PERIOD_S)
        now = time.perf_counter()
        soak.lag(now, (now - due) * 1e3)


async def sampler(soak: Soak, every_s: float) -> None:
    """Close a sample every ``every_s`` seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    while True:
        await asyncio.sleep(every_s)
        now, now_cpu = time.perf_counter(), time.process_time()
        soak.take(now - wall, now_cpu - cpu)
        wall, cpu = now, now_cpu


async def run_soak(url: str, args: argparse.Namespace, workdir: Path) -> Soak:
    """Cells back to back until ``args.duration_s`` is spent (module docstring)."""
    soak = Soak(time.perf_counter(), psutil.Process())
    prompt = Prompt(
        "soak", "soak", "completions", "Write a long story about a lighthouse keeper.", None, args.output_tokens
    )
    side = [asyncio.create_task(loop_lag(soak)), asyncio.create_task(sampler(soak, args.report_s))]
    try:
        cell = 0
        while (left := args.duration_s - (time.perf_counter() - soak.start)) > 1.0:
            plan = CellSpec(
                role="plain",
                workload="soak",
                endpoint="completions",
                level=Level(args.concurrency),
                warmup=(prompt,) * args.concurrency,
                measured=(prompt,) * PROMPTS_PER_CELL,
                duration_s=min(args.cell_s, left),
                repetition=cell,
            )
            path, soak.steady_from = workdir / f"cell-{cell}.jsonl", time.perf_counter() + BOUNDARY_S
            with open(path, "w") as fh:
                records, _ = await run_cell_async(url, MODEL, Sampling(), plan, functools.partial(_keep, fh, soak))
            soak.steady_from = None
            del records
            path.unlink()
            soak.cell_ends.append(((time.perf_counter() - soak.start) / 60, soak.rss_mb()))
            cell += 1
    finally:
        for task in side:
            task.cancel()
        await asyncio.gather(*side, return_exceptions=True)
    return soak


@contextlib.contextmanager
def scripted_server(args: argparse.Namespace) -> Iterator[str]:
    """sse_server.py (timetable from ``args``) on the last core when there are two, this process on the others."""
    cpus = sorted(os.sched_getaffinity(0))
    options = [
        "--ttft-ms",
        str(args.ttft_ms),
        "--chunk-ms",
        str(args.chunk_ms),
        "--pattern",
        args.pattern,
        "--model",
        MODEL,
    ]
    with spawn(options, cpus[-1] if len(cpus) >= 2 else None) as (url, _):
        if len(cpus) >= 2:
            os.sched_setaffinity(0, set(cpus[:-1]))
        yield url


def pct(values: Sequence[float], q: float) -> float:
    """Percentile q (0-100) of ``values``; nan when empty."""
    return float(np.percentile(values, q)) if len(values) else float("nan")


def rss_slope(cell_ends: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope (MB per minute) of the RSS at the cell ends after the first ``SETTLE_CELLS``;
    None with fewer than 3 such points."""
    points = cell_ends[SETTLE_CELLS:]
    if len(points) < 3:
        return None
    minutes, rss = zip(*points, strict=True)
    return float(np.polyfit(minutes, rss, 1)[0])


def rows(samples: Sequence[Sample]) -> list[str]:
    """Markdown rows, one per sample."""
    return [
        f"| {s.t_s / 60:.1f} | {s.rss_mb:.1f} | {s.cpu_cores:.2f} | {s.chunks_per_s:,.0f} "
        f"| {s.requests_per_s:,.1f} | {s.errors} | {s.lag_p50_ms:.2f} | {s.lag_p99_ms:.2f} | {s.lag_max_ms:.2f} "
        f"| {s.send_lag_p99_ms:.3f} |"
        for s in samples
    ]


def render(soak: Soak, args: argparse.Namespace, load_start: str, slope: float | None, ok: bool) -> str:
    m = machine()
    lag, send, inside, around = soak.lag_all, soak.send_all, soak.lag_inside, soak.lag_around
    errors, requests = soak.total_errors, soak.total_requests
    first, last = soak.cell_ends[0] if soak.cell_ends else (0, 0), soak.cell_ends[-1] if soak.cell_ends else (0, 0)
    lines = [
        SECTION,
        "",
        f"Run {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}: `{describe_command()}`{by_make()}",
        "",
        f"Machine: {m['nproc']} cores ({m['cpu']}), Python {m['python']}, {m['os']}; client (loadgen's runner, this "
        f"process) and scripted server (`scripts/sse_server.py`) as separate processes pinned to separate cores; "
        f"load average at start {load_start}, at end {load_average()}.",
        "",
        f"Load: closed loop at concurrency {args.concurrency}, `/v1/completions` streams of {args.output_tokens} "
        f"tokens (tokens per chunk {args.pattern}), TTFT {args.ttft_ms:g} ms and a chunk every {args.chunk_ms:g} ms; "
        f"{len(soak.cell_ends)} cells of {args.cell_s:g} s back to back (each after a warmup of one request per "
        f"stream), {args.duration_s / 60:g} minutes in all; every request written as a JSON line as it finished, "
        "each cell's records and file dropped at its end.",
        "",
        f"Over time (one row per {args.report_s:g} s; **loop lag**: how late a {LAG_PERIOD_S * 1e3:g} ms sleep in "
        "the client's event loop woke, the timer's rounding to whole milliseconds included; **send lag**: "
        "docs/metrics.md):",
        "",
        "| minute | RSS MB | client cores | chunks/s | requests/s | failed | loop lag p50 ms | loop lag p99 ms "
        "| loop lag max ms | send lag p99 ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows(soak.samples),
        "",
        "RSS at the end of each cell (MB): " + ", ".join(f"{mb:.1f}" for _, mb in soak.cell_ends) + ".",
        "",
        f"- RSS slope over the cell ends after the first {SETTLE_CELLS}: "
        + ("n/a (too few cells)" if slope is None else f"{slope:+.3f} MB per minute ({slope * 60:+.1f} MB per hour)")
        + f"; first to last cell end {first[1]:.1f} -> {last[1]:.1f} MB.",
        f"- Event-loop lag over the run: p50 {lag.pct(50):.2f} ms, p99 {lag.pct(99):.2f} ms, p99.9 "
        f"{lag.pct(99.9):.2f} ms, max {lag.max:.2f} ms ({lag.n:,} wake-ups); inside cells (from {BOUNDARY_S:g} s "
        f"after a cell began): p50 {inside.pct(50):.2f}, p99 {inside.pct(99):.2f}, max {inside.max:.2f} ms "
        f"({inside.n:,}); around cell boundaries (a cell's warmup and its first seconds, the previous cell's end: "
        f"connections closed and opened, the collector's run): p99 {around.pct(99):.2f}, max {around.max:.2f} ms "
        f"({around.n:,}). Whole-run percentiles are bucket upper bounds (buckets 1% wide).",
        f"- Send lag of the measured requests (each cell's warmup opens its connections): p50 {send.pct(50):.3f} "
        f"ms, p99 {send.pct(99):.3f} ms, max {send.max:.3f} ms.",
        f"- Requests: {requests:,} finished, {errors} failed"
        + (f" (first: {'; '.join(soak.error_lines)})" if soak.error_lines else "")
        + ".",
        f"- {'PASS' if ok else 'FAIL'}: RSS slope <= {RSS_SLOPE_LIMIT_MB_PER_MIN:g} MB per minute and no failed "
        "request.",
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    p.add_argument("--duration-s", type=float, default=1800.0, help="the whole soak (s)")
    p.add_argument("--cell-s", type=float, default=60.0, help="one cell (s)")
    p.add_argument("--concurrency", type=int, default=256)
    p.add_argument("--output-tokens", type=int, default=64)
    p.add_argument("--pattern", default="1,4,4,2,4", help="tokens per chunk, cycled")
    p.add_argument("--ttft-ms", type=float, default=50.0)
    p.add_argument("--chunk-ms", type=float, default=20.0)
    p.add_argument("--report-s", type=float, default=60.0, help="one table row per this many seconds")
    p.add_argument("--out", default=str(DOC), help="'-' writes nothing")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soak; 0 when the RSS slope is within the limit and no request failed."""
    args = parse_args(argv)
    load_start = load_average()
    with scripted_server(args) as url, tempfile.TemporaryDirectory(prefix="loadgen-soak-") as tmp:
        print(f"soak: concurrency {args.concurrency} for {args.duration_s:g} s against {url}", file=sys.stderr)
        soak = run_in_cell_loop(run_soak(url, args, Path(tmp)))  # the loop `loadgen compare` runs cells on
    slope = rss_slope(soak.cell_ends)
    ok = slope is not None and slope <= RSS_SLOPE_LIMIT_MB_PER_MIN and soak.total_errors == 0
    section = render(soak, args, load_start, slope, ok)
    print(section)
    if args.out != "-":
        write_section(Path(args.out), section, SECTION)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
