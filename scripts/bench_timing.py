"""Benchmark: how accurately loadgen's client measures TTFT, E2E, TPOT, ICL and ITL (DESIGN.md).

It starts ``scripts/sse_server.py`` as a separate process (pinned to its own core when there are two),
runs loadgen's own runner (:func:`loadgen.runner.run_cell_async`, the coroutine behind ``run_cell``; closed loop, chat endpoint) against it at
several concurrencies, and compares every measured request with the scripted truth:

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
server"); the exit status is 1 when a gated metric fails. Run: ``make bench``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sse_server import Script, parse_pattern

from loadgen.client import RequestRecord
from loadgen.metrics import request_timings
from loadgen.pair import Sampling
from loadgen.runner import CellPlan, run_cell_async
from loadgen.workload import Prompt

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "scripts" / "sse_server.py"
SECTION = "## Timing accuracy against a scripted server"
GATED = ("TTFT", "ICL", "ITL", "TPOT")
METRICS = ("TTFT", "E2E", "TPOT", "ICL", "ITL")
MEDIAN_LIMIT_MS = 1.0
P99_LIMIT_MS = 5.0


@dataclass
class LevelResult:
    """Errors (ms, signed) of one concurrency level, per metric, plus send lag and server lateness."""

    concurrency: int
    requests: int
    wall_s: float
    errors_ms: dict[str, list[float]] = field(default_factory=dict)
    send_lag_ms: list[float] = field(default_factory=list)
    server: dict[str, float | int | None] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    split_ms: dict[str, list[float]] = field(default_factory=dict)
    chunks: int = 0


def expected_errors(record: RequestRecord, script: Script) -> dict[str, list[float]] | str:
    """Signed errors (ms) of one request against the script, or why they cannot be computed."""
    if not record.ok:
        return f"{record.prompt_id}: {record.error or 'no tokens'}"
    expected = script.chunk_tokens(record.requested_output_tokens)
    if record.chunk_tokens != expected:
        return f"{record.prompt_id}: chunk tokens {record.chunk_tokens} != scripted {expected}"
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


def trace_split(records: Sequence[RequestRecord], origin: float, trace: Path) -> dict[str, list[float]]:
    """Per-chunk split of the error (ms) from the server trace: request delivery (server body received -
    client send), server lateness is in /stats; client delay (client timestamp - server send)."""
    sent: dict[str, dict[str, object]] = {}
    with contextlib.suppress(FileNotFoundError), trace.open() as fh:
        for line in fh:
            entry = json.loads(line)
            sent[entry["key"]] = entry
    delivery: list[float] = []
    client_delay: list[float] = []
    for r in records:
        entry = sent.get(r.prompt_id)
        if entry is None:
            continue
        t0 = float(entry["t0"])  # type: ignore[arg-type]
        delivery.append((t0 - (origin + r.send_s)) * 1e3)
        server_sent = entry["sent"]
        assert isinstance(server_sent, list)
        client_delay.extend((origin + a - s) * 1e3 for a, s in zip(r.chunk_arrivals_s, server_sent, strict=False))
    return {"request delivery": delivery, "client delay": client_delay}


@contextlib.contextmanager
def scripted_server(args: argparse.Namespace, trace: Path | None) -> Iterator[str]:
    """Start sse_server.py (pinned to the last CPU when there are >= 2); yield its base URL."""
    cmd = [sys.executable, str(SERVER), "--port", "0", "--ttft-ms", str(args.ttft_ms), "--chunk-ms",
           str(args.chunk_ms), "--pattern", ",".join(map(str, args.pattern)), "--selector", args.selector]
    if trace is not None:
        cmd += ["--trace", str(trace)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) >= 2 and not args.no_pin:
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


def server_stats(url: str, reset: bool) -> dict[str, float | int | None]:
    """The server's lateness summary (``GET /stats``)."""
    with urllib.request.urlopen(url + "/stats" + ("?reset=1" if reset else ""), timeout=10) as resp:
        data: dict[str, float | int | None] = json.loads(resp.read())
        return data


def prompts(prefix: str, n: int, output_tokens: int) -> tuple[Prompt, ...]:
    """``n`` chat prompts whose message content is the prompt id (the server trace's key)."""
    return tuple(Prompt(f"{prefix}{i}", "scripted", "chat", None, ({"role": "user", "content": f"{prefix}{i}"},),
                        output_tokens) for i in range(n))


def run_level(url: str, c: int, n: int, args: argparse.Namespace, script: Script, trace: Path | None) -> LevelResult:
    """One closed-loop cell at concurrency ``c`` with ``n`` measured requests."""
    tag = f"c{c}-"
    plan = CellPlan(role="plain", workload="scripted", endpoint="chat", concurrency=c,
                    warmup=prompts(tag + "w", c, args.output_tokens), prompts=prompts(tag + "m", n, args.output_tokens),
                    cooldown=prompts(tag + "f", c, args.output_tokens), label=f"c{c}")
    if trace is not None:
        trace.write_text("")
    start = time.perf_counter()
    # run_cell's coroutine, for the cell clock's origin (a perf_counter value) that the trace needs
    records, origin = asyncio.run(run_cell_async(url, "scripted", Sampling(), plan, lambda r: None,
                                                 lambda: server_stats(url, reset=True)))
    wall = time.perf_counter() - start
    result = LevelResult(c, len(records), wall, {m: [] for m in METRICS}, server=server_stats(url, reset=True))
    for r in records:
        result.send_lag_ms.append((r.send_s - r.scheduled_s) * 1e3)
        got = expected_errors(r, script)
        if isinstance(got, str):
            result.failures.append(got)
            continue
        result.chunks += len(r.chunk_tokens)
        for name, values in got.items():
            result.errors_ms[name].extend(values)
    if trace is not None:
        result.split_ms = trace_split(records, origin, trace)
    return result


def pct(values: Sequence[float], q: float) -> float:
    """Percentile q (0-100, linear interpolation) of ``values``; nan when empty."""
    return float(np.percentile(values, q)) if len(values) else float("nan")


def verdict(errors_ms: Sequence[float]) -> tuple[float, float, bool]:
    """(median |err|, p99 |err|, passes) in ms."""
    abs_err = np.abs(np.asarray(errors_ms, dtype=float))
    med, p99 = pct(abs_err, 50), pct(abs_err, 99)
    return med, p99, bool(len(abs_err)) and med <= MEDIAN_LIMIT_MS and p99 <= P99_LIMIT_MS


def machine() -> dict[str, str]:
    """nproc, CPU model, Python version and OS of this machine."""
    model = "unknown"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"nproc": str(os.cpu_count()), "cpu": model, "python": platform.python_version(),
            "os": f"{platform.system()} {platform.release()}"}


def render(results: Sequence[LevelResult], args: argparse.Namespace, command: str, verdicts: dict[str, bool]) -> str:
    """The Markdown section (also printed)."""
    m = machine()
    lines = [
        SECTION, "",
        f"Run {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}: `{command}`", "",
        f"Machine: nproc {m['nproc']}, CPU {m['cpu']}, Python {m['python']}, {m['os']}; client (loadgen runner, "
        f"asyncio + httpx) and scripted server (`scripts/sse_server.py`, `{args.selector}` loop) as separate "
        f"processes{'' if args.no_pin else ', each pinned to its own core'}.", "",
        f"Script: chat endpoint, TTFT {args.ttft_ms:g} ms, a token chunk every {args.chunk_ms:g} ms, tokens per "
        f"chunk {','.join(map(str, args.pattern))} (cycled), {args.output_tokens} output tokens; role-only first "
        "chunk, one token chunk with empty text, usage-only chunk, `[DONE]`. Closed loop (`run_cell`), warmup and "
        "cooldown of one round each.", "",
        "Absolute error of each client-measured value against the scripted one (ms): median / p99; bias = "
        "median signed error. ICL and ITL: every sample; TTFT, E2E, TPOT: one per request.", "",
        "| concurrency | requests | metric | samples | median abs err | p99 abs err | bias | verdict |",
        "|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    for res in results:
        for name in METRICS:
            errs = res.errors_ms[name]
            med, p99, ok = verdict(errs)
            gated = res.concurrency == args.gate_concurrency and name in GATED
            mark = ("PASS" if ok else "FAIL") if gated else "info"
            lines.append(f"| {res.concurrency} | {res.requests} | {name} | {len(errs)} | {med:.3f} | {p99:.3f} | "
                         f"{pct(errs, 50):+.3f} | {mark} |")
    lines += ["", "Send lag (actual send - scheduled send) and the server's own lateness (actual send - deadline, "
              "token chunks), ms; chunk rate = token chunks / cell wall time; connections = TCP connections the "
              "server accepted during the measured phase and cooldown:", "",
              "| concurrency | send lag p50 | send lag p99 | server late p50 | server late p99 | chunks/s | connections "
              "| failures |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for res in results:
        s = res.server
        lines.append(f"| {res.concurrency} | {pct(res.send_lag_ms, 50):.3f} | {pct(res.send_lag_ms, 99):.3f} | "
                     f"{_ms(s.get('p50_ms'))} | {_ms(s.get('p99_ms'))} | {res.chunks / res.wall_s:.0f} | "
                     f"{s.get('connections')} | {len(res.failures)} |")
    if any(res.split_ms for res in results):
        lines += ["", "Trace split (ms): request delivery = server body received - client send; client delay = "
                  "client chunk timestamp - server send:", "",
                  "| concurrency | part | p50 | p99 | max |", "|---:|---|---:|---:|---:|"]
        for res in results:
            for part, values in res.split_ms.items():
                lines.append(f"| {res.concurrency} | {part} | {pct(values, 50):.3f} | {pct(values, 99):.3f} | "
                             f"{max(values, default=float('nan')):.3f} |")
    lines += ["", f"Requirement (at concurrency {args.gate_concurrency}): median abs error <= {MEDIAN_LIMIT_MS:g} ms "
              f"and p99 <= {P99_LIMIT_MS:g} ms for TTFT, ICL, ITL, TPOT.", ""]
    lines += [f"- {name}: {'PASS' if ok else 'FAIL'}" for name, ok in verdicts.items()]
    return "\n".join(lines) + "\n"


def _ms(value: float | int | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def write_section(path: Path, section: str) -> None:
    """Replace (or append) this benchmark's section of ``path``, keeping the others."""
    text = path.read_text() if path.exists() else "# Benchmarks\n\nMeasured by `make bench`; numbers, not tests.\n"
    start = text.find(SECTION)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section + ("" if end < 0 else text[end + 1:])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


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
    p.add_argument("--selector", choices=("select", "epoll"), default="select", help="the server's event loop")
    p.add_argument("--trace", action="store_true", help="split errors per chunk with the server's trace")
    p.add_argument("--no-pin", action="store_true", help="do not pin client and server to separate cores")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md", help="'-' writes nothing")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when every gated metric passes, 1 otherwise."""
    args = parse_args(argv)
    levels = [int(c) for c in args.concurrency.split(",")]
    counts = [int(n) for n in args.requests.split(",")]
    if len(counts) != len(levels):
        raise SystemExit("--requests needs one count per --concurrency level")
    script = Script(args.ttft_ms / 1e3, args.chunk_ms / 1e3, args.pattern)
    command = shlex.join(["python", *sys.argv]) if argv is None else shlex.join(["python", "bench_timing.py", *argv])
    results: list[LevelResult] = []
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.jsonl" if args.trace else None
        with scripted_server(args, trace) as url:
            for c, n in zip(levels, counts, strict=True):
                res = run_level(url, c, n, args, script, trace)
                print(f"concurrency {c}: {res.requests} requests in {res.wall_s:.1f} s", file=sys.stderr)
                results.append(res)
    gate = next((r for r in results if r.concurrency == args.gate_concurrency), None)
    verdicts = {name: gate is not None and not gate.failures and verdict(gate.errors_ms[name])[2] for name in GATED}
    section = render(results, args, command, verdicts)
    print(section)
    for res in results:
        for failure in res.failures[:5]:
            print(f"concurrency {res.concurrency}: {failure}", file=sys.stderr)
    if str(args.out) != "-":
        write_section(args.out, section)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
