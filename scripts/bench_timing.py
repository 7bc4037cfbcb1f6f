"""Benchmark: how accurately loadgen's client measures TTFT, E2E, TPOT, ICL and ITL (docs/metrics.md).

It starts ``scripts/sse_server.py`` as a separate process (pinned to its own core when there are two),
runs loadgen's own runner against it (``run_cell_async``, the coroutine behind ``run_cell``: closed
loop, chat endpoint) at several concurrencies, and compares every measured request with the script:

* TTFT error = client TTFT - ``ttft``;  E2E error = client E2E - (``ttft`` + (chunks - 1) * ``chunk``);
* TPOT error = client TPOT - (chunks - 1) * ``chunk`` / (tokens - 1);
* every inter-chunk gap (ICL) - ``chunk``;  every ITL sample of a k-token chunk - ``chunk`` / k.

The scripted stream has several tokens per chunk (``--pattern``), a role-only first chunk, a token
chunk with empty text and a usage-only chunk. The requirement checked (at ``--gate-concurrency``):
median of the absolute errors <= 1 ms and p99 <= 5 ms for TTFT, ICL, ITL and TPOT (E2E is reported).
Also reported: send lag p50/p99 and the server's own lateness (actual send - deadline), so a failure
can be split into server lateness and client delay; ``--trace`` splits it per chunk (server send ->
client timestamp) on the shared ``CLOCK_MONOTONIC``.

Results go to stdout and to ``docs/benchmarks.md`` (section "Timing accuracy against a scripted
server"; a ``--realtime`` run has a section of its own, so both kinds of run are kept); the exit status
is 1 when a gated metric fails. Run: ``make bench``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from benchdoc import by_make, describe_command, machine, write_section
from sse_server import Script, parse_pattern, spawn

from loadgen.measure.metrics import request_timings
from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level, Sampling
from loadgen.profile.workload import Prompt
from loadgen.records.request import RequestRecord
from loadgen.stream.loadloop import run_cell_async, run_in_cell_loop

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Timing accuracy against a scripted server"
GATED = ("TTFT", "ICL", "ITL", "TPOT")
METRICS = ("TTFT", "E2E", "TPOT", "ICL", "ITL")
MEDIAN_LIMIT_MS = 1.0
P99_LIMIT_MS = 5.0
#: The whole benchmark's time limit (s): levels that would run past it are stopped and fail.
BUDGET_S = 170.0


@dataclass
class LevelResult:
    """Errors (ms, signed) of one concurrency level, per metric, plus send lag and server lateness."""

    concurrency: int
    requests: int
    client_us_per_chunk: float
    errors_ms: dict[str, list[float]] = field(default_factory=dict)
    send_lag_ms: list[float] = field(default_factory=list)
    server: dict[str, float | int | None] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    split_ms: dict[str, list[float]] = field(default_factory=dict)


def expected_errors(record: RequestRecord, script: Script) -> dict[str, list[float]] | str:
    """Signed errors (ms) of one request against the script, or why they cannot be computed."""
    if not record.ok:
        return f"{record.prompt_id}: {record.error or 'no tokens'}"
    expected = script.chunk_tokens(record.requested_output_tokens)
    if record.chunk_tokens != expected:
        return f"{record.prompt_id}: chunk tokens {record.chunk_tokens} != scripted {expected}"
    if record.finish_reason != "length" or record.usage_completion_tokens != sum(expected):
        return f"{record.prompt_id}: finish_reason {record.finish_reason}, usage {record.usage_completion_tokens}"
    timings = request_timings(record.send_s, record.chunk_arrivals_s, record.chunk_tokens)
    assert timings is not None  # ok implies token-bearing chunks
    n, tokens = len(expected), sum(expected)
    itl_truth = [script.chunk_s / k for k in expected[1:] for _ in range(k)]
    errors = {
        "TTFT": [timings.ttft_s - script.ttft_s],
        "E2E": [timings.e2e_s - (script.ttft_s + (n - 1) * script.chunk_s)],
        "TPOT": [] if timings.tpot_s is None else [timings.tpot_s - (n - 1) * script.chunk_s / (tokens - 1)],
        "ICL": [gap - script.chunk_s for gap in timings.icl_s],
        "ITL": [x - t for x, t in zip(timings.itl_s, itl_truth, strict=True)],
    }
    return {name: [v * 1e3 for v in values] for name, values in errors.items()}


def trace_split(records: Sequence[RequestRecord], origin: float, trace: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Split of the error (ms) with the server's trace (``GET /trace``), on the shared monotonic clock:
    request delivery = server body received - client send; client delay = client chunk timestamp -
    server send (the server's own lateness is in ``/stats``)."""
    sent = {entry["key"]: entry for entry in trace}
    delivery: list[float] = []
    client_delay: list[float] = []
    for r in records:
        entry = sent.get(r.prompt_id)
        if entry is None:
            continue
        delivery.append((entry["t0"] - (origin + r.send_s)) * 1e3)
        client_delay.extend((origin + a - s) * 1e3 for a, s in zip(r.chunk_arrivals_s, entry["sent"], strict=False))
    return {"request delivery": delivery, "client delay": client_delay}


@contextlib.contextmanager
def scripted_server(args: argparse.Namespace) -> Iterator[tuple[str, int]]:
    """Start sse_server.py (pinned to the last CPU when there are >= 2, the client to the others);
    yield its base URL and process id."""
    options = [
        "--ttft-ms",
        str(args.ttft_ms),
        "--chunk-ms",
        str(args.chunk_ms),
        "--pattern",
        ",".join(map(str, args.pattern)),
        "--selector",
        args.selector,
        *(["--trace"] if args.trace else []),
    ]
    cpus = sorted(os.sched_getaffinity(0))
    pin = len(cpus) >= 2 and not args.no_pin
    with spawn(options, cpus[-1] if pin else None, quiet=False) as (url, proc):
        if args.realtime:
            set_realtime(proc.pid)
        if pin:
            os.sched_setaffinity(0, set(cpus[:-1]))
        yield url, proc.pid


def set_realtime(pid: int) -> None:
    """SCHED_FIFO priority 10 for ``pid`` (0 = this process): isolates the measurement from other
    processes' load (needs root or CAP_SYS_NICE; the kernel keeps 5% of each core for others)."""
    os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(10))


class CpuMeter:
    """CPU time over an interval, in cores: this process, the server process, and everything else
    (``/proc/stat`` busy time minus both), so a reader can see whether other work loaded the machine."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.tick = os.sysconf("SC_CLK_TCK")
        self.start = self._snapshot()

    def _snapshot(self) -> tuple[float, float, float, float]:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
        busy = (sum(fields[:8]) - fields[3] - fields[4]) / self.tick  # all but idle and iowait
        with open(f"/proc/{self.server_pid}/stat") as fh:
            stat = fh.read().rsplit(")", 1)[1].split()
        server = (int(stat[11]) + int(stat[12])) / self.tick
        return time.perf_counter(), busy, time.process_time(), server

    def stop(self) -> dict[str, float]:
        """Cores used since construction: ``client``, ``server``, ``other``; also ``client_s`` (CPU s)."""
        end = self._snapshot()
        wall, busy, client, server = (b - a for a, b in zip(self.start, end, strict=True))
        return {
            "client": client / wall,
            "server": server / wall,
            "other": max(0.0, busy - client - server) / wall,
            "client_s": client,
        }


def server_get(url: str, path: str) -> Any:
    """GET ``url + path`` from the scripted server, decoded JSON (``/stats``, ``/trace``)."""
    with urllib.request.urlopen(url + path, timeout=10) as resp:
        return json.loads(resp.read())


def prompts(prefix: str, n: int, output_tokens: int) -> tuple[Prompt, ...]:
    """``n`` chat prompts whose message content is the prompt id (the server trace's key)."""
    return tuple(
        Prompt(f"{prefix}{i}", "scripted", "chat", None, ({"role": "user", "content": f"{prefix}{i}"},), output_tokens)
        for i in range(n)
    )


def run_level(
    url: str, server_pid: int, c: int, n: int, args: argparse.Namespace, script: Script, timeout_s: float
) -> LevelResult:
    """One closed-loop cell at concurrency ``c`` with ``n`` measured requests; TimeoutError after
    ``timeout_s``."""
    tag = f"c{c}-"
    plan = CellSpec(
        role="plain",
        workload="scripted",
        endpoint="chat",
        level=Level(c),
        warmup=tuple(prompts(tag + "w", c, args.output_tokens)),
        measured=tuple(prompts(tag + "m", n, args.output_tokens)),
        cooldown=tuple(prompts(tag + "f", c, args.output_tokens)),
    )
    all_chunks = [0]

    def count(record: RequestRecord) -> None:
        all_chunks[0] += len(record.chunk_tokens)

    meter = CpuMeter(server_pid)
    # run_cell's coroutine, for the cell clock's origin (a perf_counter value) that the trace needs
    cell = run_cell_async(url, "scripted", Sampling(), plan, count, lambda: server_get(url, "/stats?reset=1"))
    records, origin = run_in_cell_loop(asyncio.wait_for(cell, timeout_s))
    cpu = meter.stop()
    stats = server_get(url, "/stats?reset=1")
    stats["connections"] -= 1  # the connection of this /stats request itself
    result = LevelResult(
        c,
        len(records),
        cpu.pop("client_s") / max(all_chunks[0], 1) * 1e6,
        {m: [] for m in METRICS},
        server=stats,
        cpu=cpu,
    )
    for r in records:
        result.send_lag_ms.append((r.send_s - r.scheduled_s) * 1e3)
        got = expected_errors(r, script)
        if isinstance(got, str):
            result.failures.append(got)
            continue
        for name, values in got.items():
            result.errors_ms[name].extend(values)
    if args.trace:
        result.split_ms = trace_split(records, origin, server_get(url, "/trace"))
    return result


def pct(values: Sequence[float], q: float) -> float:
    """Percentile q (0-100, linear interpolation) of ``values``; nan when empty."""
    return float(np.percentile(values, q)) if len(values) else float("nan")


def verdict(errors_ms: Sequence[float]) -> tuple[float, float, bool]:
    """(median |err|, p99 |err|, passes) in ms."""
    abs_err = np.abs(np.asarray(errors_ms, dtype=float))
    med, p99 = pct(abs_err, 50), pct(abs_err, 99)
    return med, p99, bool(len(abs_err)) and med <= MEDIAN_LIMIT_MS and p99 <= P99_LIMIT_MS


def section_title(realtime: bool) -> str:
    """The heading of this benchmark's section in docs/benchmarks.md (one per kind of run)."""
    return SECTION + (" (SCHED_FIFO, `--realtime`)" if realtime else "")


def render(
    results: Sequence[LevelResult],
    args: argparse.Namespace,
    command: str,
    verdicts: dict[str, bool],
    load_at_start: str,
) -> str:
    """The Markdown section (also printed)."""
    m = machine()
    lines = [
        section_title(args.realtime),
        "",
        f"Run {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}: `{command}`{by_make()}",
        "",
        f"Machine: nproc {m['nproc']}, CPU {m['cpu']}, Python {m['python']}, {m['os']}; client (loadgen's runner, "
        f"client and transport) and scripted server (`scripts/sse_server.py`, `{args.selector}` loop) as separate "
        f"processes{'' if args.no_pin else ', each pinned to its own core'}"
        f"{', both SCHED_FIFO (--realtime)' if args.realtime else ''}; load average at start {load_at_start}.",
        "",
        f"Script: chat endpoint, TTFT {args.ttft_ms:g} ms, a token chunk every {args.chunk_ms:g} ms, tokens per "
        f"chunk {','.join(map(str, args.pattern))} (cycled), {args.output_tokens} output tokens; role-only first "
        "chunk, one token chunk with empty text, usage-only chunk, `[DONE]`. Closed loop (`run_cell`), warmup and "
        "cooldown of one round each. Identical requests keep the streams in step, so the chunks of all "
        "in-flight requests arrive together, as from one batched engine step.",
        "",
        "Absolute error of each client-measured value against the scripted one (ms): median / p99; bias = "
        "median signed error. ICL and ITL: every sample; TTFT, E2E, TPOT: one per request.",
        "",
        "| concurrency | requests | metric | samples | median abs err | p99 abs err | bias | verdict |",
        "|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    for res in results:
        for name in METRICS:
            errs = res.errors_ms[name]
            med, p99, ok = verdict(errs)
            gated = res.concurrency == args.gate_concurrency and name in GATED
            mark = ("PASS" if ok else "FAIL") if gated else "info"
            lines.append(
                f"| {res.concurrency} | {res.requests} | {name} | {len(errs)} | {med:.3f} | {p99:.3f} | "
                f"{pct(errs, 50):+.3f} | {mark} |"
            )
    lines += [
        "",
        "Send lag (actual send - scheduled send, ms); the server's own lateness (actual send - deadline of "
        "token chunks, ms); new TCP connections the server accepted for streams in the measured phase and "
        "cooldown; CPU over the cell in cores (client = this process, other = every other process on the "
        "machine) and the client's CPU per received token chunk:",
        "",
        "| concurrency | send lag p50 | send lag p99 | server late p50 | server late p99 | connections | "
        "client CPU | server CPU | other CPU | client us/chunk | failures |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for res in results:
        s = res.server
        lines.append(
            f"| {res.concurrency} | {pct(res.send_lag_ms, 50):.3f} | {pct(res.send_lag_ms, 99):.3f} | "
            f"{_ms(s.get('p50_ms'))} | {_ms(s.get('p99_ms'))} | {s.get('connections')} | "
            f"{res.cpu['client']:.2f} | {res.cpu['server']:.2f} | {res.cpu['other']:.2f} | "
            f"{res.client_us_per_chunk:.0f} | {len(res.failures)} |"
        )
    if any(res.split_ms for res in results):
        lines += [
            "",
            "Trace split (ms): request delivery = server body received - client send; client delay = "
            "client chunk timestamp - server send:",
            "",
            "| concurrency | part | p50 | p99 | max |",
            "|---:|---|---:|---:|---:|",
        ]
        for res in results:
            for part, values in res.split_ms.items():
                lines.append(
                    f"| {res.concurrency} | {part} | {pct(values, 50):.3f} | {pct(values, 99):.3f} | "
                    f"{max(values, default=float('nan')):.3f} |"
                )
    lines += [
        "",
        f"Requirement (at concurrency {args.gate_concurrency}): median abs error <= {MEDIAN_LIMIT_MS:g} ms "
        f"and p99 <= {P99_LIMIT_MS:g} ms for TTFT, ICL, ITL, TPOT.",
        "",
    ]
    lines += [f"- {name}: {'PASS' if ok else 'FAIL'}" for name, ok in verdicts.items()]
    return "\n".join(lines) + "\n"


def _ms(value: float | int | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--concurrency", default="1,64,256", help="comma-separated levels")
    p.add_argument("--requests", default="30,320,768", help="measured requests per level (comma-separated)")
    p.add_argument("--gate-concurrency", type=int, default=64)
    p.add_argument("--ttft-ms", type=float, default=50.0)
    p.add_argument("--chunk-ms", type=float, default=20.0)
    p.add_argument("--pattern", type=parse_pattern, default=(1, 4, 4, 2, 4))
    p.add_argument("--output-tokens", type=int, default=64)
    p.add_argument("--selector", choices=("fine", "select", "epoll"), default="fine", help="the server's event loop")
    p.add_argument(
        "--no-trace",
        dest="trace",
        action="store_false",
        help="skip the per-chunk split of the errors (the server then writes no trace)",
    )
    p.add_argument("--no-pin", action="store_true", help="do not pin client and server to separate cores")
    p.add_argument(
        "--realtime",
        action="store_true",
        help="run client and server SCHED_FIFO (root), to keep other processes' load out of the numbers",
    )
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md", help="'-' writes nothing")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when every gated metric passes, 1 otherwise."""
    args = parse_args(argv)
    if args.realtime:
        try:
            set_realtime(0)
        except PermissionError:
            print("--realtime needs root or CAP_SYS_NICE (SCHED_FIFO); run without it", file=sys.stderr)
            return 2
    with open("/proc/loadavg") as fh:
        load_at_start = " ".join(fh.read().split()[:3])
    levels = [int(c) for c in args.concurrency.split(",")]
    counts = [int(n) for n in args.requests.split(",")]
    if len(counts) != len(levels) or args.gate_concurrency not in levels:
        print(
            "--requests needs one count per --concurrency level, and --gate-concurrency must be a level",
            file=sys.stderr,
        )
        return 2
    script = Script(args.ttft_ms / 1e3, args.chunk_ms / 1e3, args.pattern)
    command = describe_command(argv)
    results: list[LevelResult] = []
    with scripted_server(args) as (url, pid):
        begin = time.perf_counter()
        for c, n in zip(levels, counts, strict=True):
            start = time.perf_counter()
            try:
                results.append(run_level(url, pid, c, n, args, script, BUDGET_S - (start - begin)))
            except TimeoutError:
                print(f"concurrency {c}: stopped at the {BUDGET_S:g} s budget; FAIL", file=sys.stderr)
                return 1
            print(f"concurrency {c}: {n} requests in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    gate = next((r for r in results if r.concurrency == args.gate_concurrency), None)
    verdicts = {name: gate is not None and not gate.failures and verdict(gate.errors_ms[name])[2] for name in GATED}
    section = render(results, args, command, verdicts, load_at_start)
    print(section)
    for res in results:
        for failure in res.failures[:5]:
            print(f"concurrency {res.concurrency}: {failure}", file=sys.stderr)
    if str(args.out) != "-":
        write_section(args.out, section, section_title(args.realtime))
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
