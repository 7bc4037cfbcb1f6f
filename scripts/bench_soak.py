"""Benchmark: a long soak of loadgen's streaming client; its memory (RSS) and event-loop lag over time.

It starts ``scripts/sse_server.py`` on loopback (its own process, pinned to one core when there are two)
and runs loadgen's runner in this process (``run_cell_async``, closed loop, ``/v1/completions``) the way
``loadgen compare`` runs a pair: cell after cell, each of ``--cell-s`` seconds at ``--concurrency``, for
``--duration-s`` in all (30 minutes by default). Every finished request is written as a JSON line to the
cell's file as it finishes (as ``requests.jsonl`` is), and a cell's records and file are dropped when the
cell ends, so anything that grows from cell to cell is the client's own.

Measured, every ``--sample-s`` seconds:

* RSS of this process (psutil) and its CPU use (cores);
* event-loop lag: a task in the same event loop sleeps ``LAG_PERIOD_S`` at a time; lag = how much later
  than asked it wakes (p50, p99, max per sample; epoll rounds a timed wait up to the next millisecond, so
  up to 1 ms of it is the selector's, not the load's);
* token-bearing chunks and requests finished per second, failed requests, send lag p99 (DESIGN.md).

Reported: one table row per ``--report-s`` (the samples in it merged), the RSS at every cell end and its
least-squares slope (MB per minute) over the cell ends after the first ``SETTLE_CELLS`` (the allocator's
warm-up), and the loop lag over the whole run. The exit status is 1 when the RSS slope exceeds
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
import subprocess
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

from loadgen.client import RequestRecord
from loadgen.pair import Sampling
from loadgen.runner import CellPlan, run_cell_async
from loadgen.workload import Prompt

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "scripts" / "sse_server.py"
SECTION = "## Soak: memory and event-loop lag over time"
MODEL = "scripted"
LAG_PERIOD_S = 0.05
SETTLE_CELLS = 2
BOUNDARY_S = 2.0  # the first seconds of a cell, for the loop lag's split (split_lag)
RSS_SLOPE_LIMIT_MB_PER_MIN = 0.5
PROMPTS_PER_CELL = 1_000_000  # references to one prompt; the cell's duration stops it long before


@dataclass
class Sample:
    """One sampling interval."""

    t_s: float  # end of the interval, seconds since the soak started
    wall_s: float
    rss_mb: float
    cpu_cores: float
    chunks: int
    requests: int
    errors: int
    lag_ms: list[float] = field(default_factory=list)
    send_lag_ms: list[float] = field(default_factory=list)


@dataclass
class Soak:
    """Counters of the interval in progress, and what was sampled so far."""

    start: float
    proc: psutil.Process
    samples: list[Sample] = field(default_factory=list)
    cell_ends: list[tuple[float, float]] = field(default_factory=list)  # (minutes, RSS MB)
    cell_spans: list[tuple[float, float]] = field(default_factory=list)  # (start, end) s since the start
    lag_at: list[tuple[float, float]] = field(default_factory=list)  # (s since the start, lag ms), all of them
    chunks: int = 0
    requests: int = 0
    errors: int = 0
    error_lines: list[str] = field(default_factory=list)
    lag_ms: list[float] = field(default_factory=list)
    send_lag_ms: list[float] = field(default_factory=list)

    def record(self, r: RequestRecord) -> None:
        self.chunks += len(r.chunk_tokens)
        self.requests += 1
        if r.phase == "measured":  # a cell's warmup opens its connections: their connect time is send lag
            self.send_lag_ms.append((r.send_s - r.scheduled_s) * 1e3)
        if r.error is not None or r.output_tokens != r.requested_output_tokens:
            self.errors += 1
            if len(self.error_lines) < 5:
                self.error_lines.append(r.error or f"{r.output_tokens} of {r.requested_output_tokens} tokens")

    def rss_mb(self) -> float:
        return float(self.proc.memory_info().rss) / 2**20

    def take(self, wall_s: float, cpu_s: float) -> None:
        self.samples.append(Sample(time.perf_counter() - self.start, wall_s, self.rss_mb(), cpu_s / wall_s,
                                   self.chunks, self.requests, self.errors, self.lag_ms, self.send_lag_ms))
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
        soak.lag_ms.append((now - due) * 1e3)
        soak.lag_at.append((now - soak.start, (now - due) * 1e3))


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
    prompt = Prompt("soak", "soak", "completions", "Write a long story about a lighthouse keeper.", None,
                    args.output_tokens)
    side = [asyncio.create_task(loop_lag(soak)), asyncio.create_task(sampler(soak, args.sample_s))]
    try:
        cell = 0
        while (left := args.duration_s - (time.perf_counter() - soak.start)) > 1.0:
            plan = CellPlan(role="plain", workload="soak", endpoint="completions", concurrency=args.concurrency,
                            warmup=[prompt] * args.concurrency, prompts=[prompt] * PROMPTS_PER_CELL,
                            duration_s=min(args.cell_s, left),
                            label=f"c{args.concurrency}", repetition=cell)
            path, began = workdir / f"cell-{cell}.jsonl", time.perf_counter() - soak.start
            with open(path, "w") as fh:
                records, _ = await run_cell_async(url, MODEL, Sampling(), plan, functools.partial(_keep, fh, soak))
            soak.cell_spans.append((began, time.perf_counter() - soak.start))
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
    """sse_server.py (TTFT and chunk interval from ``args``), pinned to the last core when there are two."""
    cmd = [sys.executable, str(SERVER), "--port", "0", "--ttft-ms", str(args.ttft_ms), "--chunk-ms",
           str(args.chunk_ms), "--pattern", args.pattern, "--model", MODEL]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) >= 2:
            os.sched_setaffinity(proc.pid, {cpus[-1]})
            os.sched_setaffinity(0, set(cpus[:-1]))
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            raise RuntimeError(f"sse_server.py did not start: {line!r}")
        yield "http://" + line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


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


def split_lag(soak: Soak) -> tuple[list[float], list[float]]:
    """Loop lag (ms) inside cells, from ``BOUNDARY_S`` after a cell began to its end, and the rest: around
    the cell boundaries, where a cell's connections are closed, the collector runs and the next cell's
    connections open."""
    inside: list[float] = []
    around: list[float] = []
    for t, lag in soak.lag_at:
        steady = any(start + BOUNDARY_S <= t <= end for start, end in soak.cell_spans)
        (inside if steady else around).append(lag)
    return inside, around


def rows(samples: Sequence[Sample], report_s: float) -> list[str]:
    """Markdown rows, one per ``report_s`` of samples."""
    out: list[str] = []
    group: list[Sample] = []
    for i, s in enumerate(samples):
        group.append(s)
        if s.t_s >= (len(out) + 1) * report_s or i == len(samples) - 1:
            wall = sum(g.wall_s for g in group)
            lag = [v for g in group for v in g.lag_ms]
            send = [v for g in group for v in g.send_lag_ms]
            out.append(f"| {s.t_s / 60:.1f} | {s.rss_mb:.1f} | {sum(g.cpu_cores * g.wall_s for g in group) / wall:.2f} "
                       f"| {sum(g.chunks for g in group) / wall:,.0f} | {sum(g.requests for g in group) / wall:,.1f} "
                       f"| {sum(g.errors for g in group)} | {pct(lag, 50):.2f} | {pct(lag, 99):.2f} "
                       f"| {max(lag, default=float('nan')):.2f} | {pct(send, 99):.3f} |")
            group = []
    return out


def render(soak: Soak, args: argparse.Namespace, load_start: str, slope: float | None, ok: bool) -> str:
    m = machine()
    lag = [v for s in soak.samples for v in s.lag_ms]
    send = [v for s in soak.samples for v in s.send_lag_ms]
    inside, around = split_lag(soak)
    errors = sum(s.errors for s in soak.samples)
    requests = sum(s.requests for s in soak.samples)
    first, last = soak.cell_ends[0] if soak.cell_ends else (0, 0), soak.cell_ends[-1] if soak.cell_ends else (0, 0)
    lines = [
        SECTION, "",
        f"Run {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}: `{describe_command()}`{by_make()}", "",
        f"Machine: {m['nproc']} cores ({m['cpu']}), Python {m['python']}, {m['os']}; client (loadgen's runner, this "
        f"process) and scripted server (`scripts/sse_server.py`) as separate processes pinned to separate cores; "
        f"load average at start {load_start}, at end {load_average()}.", "",
        f"Load: closed loop at concurrency {args.concurrency}, `/v1/completions` streams of {args.output_tokens} "
        f"tokens (tokens per chunk {args.pattern}), TTFT {args.ttft_ms:g} ms and a chunk every {args.chunk_ms:g} ms; "
        f"{len(soak.cell_ends)} cells of {args.cell_s:g} s back to back (each after a warmup of one request per "
        f"stream), {args.duration_s / 60:g} minutes in all; every request written as a JSON line as it finished, "
        "each cell's records and file dropped at its end.", "",
        f"Over time (one row per {args.report_s:g} s; **loop lag**: how late a {LAG_PERIOD_S * 1e3:g} ms sleep in "
        "the client's event loop woke, epoll's rounding to the next millisecond included; **send lag**: DESIGN.md):",
        "",
        "| minute | RSS MB | client cores | chunks/s | requests/s | failed | loop lag p50 ms | loop lag p99 ms "
        "| loop lag max ms | send lag p99 ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows(soak.samples, args.report_s), "",
        "RSS at the end of each cell (MB): " + ", ".join(f"{mb:.1f}" for _, mb in soak.cell_ends) + ".", "",
        f"- RSS slope over the cell ends after the first {SETTLE_CELLS}: "
        + ("n/a (too few cells)" if slope is None else f"{slope:+.3f} MB per minute ({slope * 60:+.1f} MB per hour)")
        + f"; first to last cell end {first[1]:.1f} -> {last[1]:.1f} MB.",
        f"- Event-loop lag over the run: p50 {pct(lag, 50):.2f} ms, p99 {pct(lag, 99):.2f} ms, p99.9 "
        f"{pct(lag, 99.9):.2f} ms, max {max(lag, default=float('nan')):.2f} ms ({len(lag):,} wake-ups); inside "
        f"cells (from {BOUNDARY_S:g} s after a cell began): p50 {pct(inside, 50):.2f}, p99 {pct(inside, 99):.2f}, "
        f"max {max(inside, default=float('nan')):.2f} ms ({len(inside):,}); around cell boundaries (connections "
        f"closed and opened, the collector's run): p99 {pct(around, 99):.2f}, max "
        f"{max(around, default=float('nan')):.2f} ms ({len(around):,}).",
        f"- Send lag of the measured requests (each cell's warmup opens its connections): p50 {pct(send, 50):.3f} "
        f"ms, p99 {pct(send, 99):.3f} ms, max {max(send, default=float('nan')):.3f} ms.",
        f"- Requests: {requests:,} finished, {errors} failed"
        + (f" (first: {'; '.join(soak.error_lines)})" if soak.error_lines else "") + ".",
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
    p.add_argument("--sample-s", type=float, default=10.0)
    p.add_argument("--report-s", type=float, default=60.0, help="one table row per this many seconds")
    p.add_argument("--out", default=str(DOC), help="'-' writes nothing")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soak; 0 when the RSS slope is within the limit and no request failed."""
    args = parse_args(argv)
    load_start = load_average()
    with scripted_server(args) as url, tempfile.TemporaryDirectory(prefix="loadgen-soak-") as tmp:
        print(f"soak: concurrency {args.concurrency} for {args.duration_s:g} s against {url}", file=sys.stderr)
        soak = asyncio.run(run_soak(url, args, Path(tmp)))
    slope = rss_slope(soak.cell_ends)
    ok = slope is not None and slope <= RSS_SLOPE_LIMIT_MB_PER_MIN and sum(s.errors for s in soak.samples) == 0
    section = render(soak, args, load_start, slope, ok)
    print(section)
    if args.out != "-":
        write_section(Path(args.out), section, SECTION)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
