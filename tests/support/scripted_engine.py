"""A scripted stand-in for vLLM's OpenAI server that loadgen *launches* (``[engine].command = [python, "-m",
"tests.support.scripted_engine"]``): it takes the arguments loadgen passes (``--model``, ``--served-model-name``,
``--host``, ``--port``, ``--seed``, ``--speculative-config JSON``, ``--stream-interval N``: the first token alone,
then chunks of at least N tokens as vLLM 0.12+ streams them; anything else ignored), logs the startup
line vLLM logs (``speculative_config=...``), lists its model on ``/v1/models`` as vLLM does (``root`` the
``--model``, ``owned_by`` vllm, ``max_model_len`` 2048), and streams every /v1/completions request as vLLM does with
``return_token_ids`` and ``include_usage``: exactly ``max_tokens`` tokens, the first alone, then one chunk per
step of ``K + 1`` tokens on a speculative server (a perfect draft, K = ``num_speculative_tokens``) or of
one token on a plain one. So the speculative / plain TPOT ratio is close to 1 / (K + 1).

Environment (test hooks): ``SCRIPTED_ENGINE_STEP_S`` the seconds per step (default 0.01);
``SCRIPTED_ENGINE_LOG`` a file whose lines it prints at start-up (a real vLLM startup log's warnings);
``SCRIPTED_ENGINE_FAIL`` set: log a fatal line and exit 1 before listening (a server that never gets ready).
``SCRIPTED_ENGINE_FINGERPRINT``: the ``system_fingerprint`` its usage chunks carry (vLLM's ``vllm-<version>-<hash>``).
``SCRIPTED_ENGINE_BODIES``: a file it appends every completion body to (one JSON line each). A request with
``structured_outputs`` or ``response_format`` and no ``ignore_eos`` ends as a grammar would, after half its
``max_tokens`` (``finish_reason`` stop), its steps proposing K - 1 draft tokens (the grammar refused one).
``SCRIPTED_ENGINE_ACCEPT`` = ``RATES@N``: the share of its K draft tokens each step accepts, changing every N
completions (:func:`accept_rate`): a proposer that warms or cools as it serves.
``SCRIPTED_ENGINE_START_S``: seconds it takes to start (it listens only then), a slow engine start-up.
A shared host effect (every server started with the same environment slows down alike, at the same wall-clock
moment): ``SCRIPTED_ENGINE_EPOCH`` a ``time.time()`` value, and ``SCRIPTED_ENGINE_DRIFT`` either
``linear:R`` (every step takes ``1 + R * t`` times its base, ``t`` the seconds since the epoch) or
``step:F@T`` (``F`` times its base from ``T`` seconds after the epoch on). ``SCRIPTED_ENGINE_JITTER`` = S:
each request's steps take a lognormal factor of log-SD ``S`` more (seeded by the port), the request-to-request
spread of a real server. ``SCRIPTED_ENGINE_CROWD`` = ``N:F``: every step takes ``F`` times its base while ``N``
or more requests are in flight on this server (counted from a request's arrival to its last chunk), a per-token
delay that depends on the batch.

``SCRIPTED_ENGINE_METRICS`` set: ``GET /metrics`` answers vLLM's counters as vLLM names them (one engine,
``engine="0"``), counted from what it streamed: ``vllm:request_success_total{finished_reason="length"}``,
``vllm:generation_tokens_total``, and on a speculative server the spec-decode counters of its perfect draft (per
step of s tokens after the first: one draft, K draft tokens, s - 1 accepted, positions 0..s-2 accepted), with
``process_start_time_seconds`` (none with ``SCRIPTED_ENGINE_MULTIPROC`` set: Prometheus multiprocess mode, as vLLM
serves ``/metrics`` with ``--api-server-count`` above 1). ``SCRIPTED_ENGINE_FAULT`` = ``KIND[:WHICH]@N``: from the
N-th ``/metrics`` answer on (1-based), the counters ``WHICH`` names (``spec``, the default: every spec-decode
counter; ``accepted``: the accepted ones; ``tokens``; ``requests``) read ``KIND``: ``nan`` (``NaN``), ``inf``
(``+Inf``), ``negative`` (their value negated) or ``halve`` (half their value: counters that go backwards without a
restart).

``SCRIPTED_ENGINE_NOT_SSE`` = N: its N-th ``/v1/completions`` request (1-based, every one counted) is answered 200
with a whole JSON body (``Content-Type: application/json``), not an event stream: what a proxy, or a server that
ignored ``stream``, answers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

from tests.support.scripted_server import DONE, completion_chunk, usage_chunk

#: The version ``/version`` reports (``SCRIPTED_ENGINE_VERSION``, e.g. ``0.32.0`` for an attached server that the
#: pair check reads).
VERSION = os.environ.get("SCRIPTED_ENGINE_VERSION", "0.0.0+scripted")
REPO = Path(__file__).resolve().parents[2]
#: A workload and a pair file (``.format(name=, k=, python=, repo=)``) whose servers are this engine.
WORKLOAD = 'name = "w"\nkind = "short-homogeneous"\nendpoint = "completions"\noutput_tokens = 9\nseed = 1\n'
PAIR = """name = "{name}"
[target]
model = "org/target"
revision = "0123456789abcdef0123456789abcdef01234567"
[speculative]
method = "ngram"
prompt_lookup_min = 2
prompt_lookup_max = 4
num_speculative_tokens = {k}
[engine]
command = ["{python}", "-m", "tests.support.scripted_engine"]
env = {{ PYTHONPATH = "{repo}" }}
port = 8300
startup_timeout_s = 30
[sampling]
temperature = 0.0
ignore_eos = true
[run]
workloads = ["w"]
concurrency = [1]
[stop]
min_requests = 6
rounds = 1
warmup_requests = 1
cooldown = false
"""


def write_small_pair(folder: Path, name: str, port: int, tail: str, env: str = "") -> Path:
    """Write ``folder/<name>.toml``, a pair of this engine at ``port`` (speculative at ``port + 1``, K = 1) with
    2 measured requests a cell, and its workload ``folder/workloads/w.toml``; ``tail``: tables appended (a
    ``[design]``, ...); ``env``: more ``[engine].env`` items (``KEY = "value"``, comma-separated). Its path."""
    (folder / "workloads").mkdir(exist_ok=True)
    (folder / "workloads" / "w.toml").write_text(WORKLOAD)
    path = folder / f"{name}.toml"
    path.write_text(
        PAIR.format(name=name, k=1, python=sys.executable, repo=REPO)
        .replace("port = 8300", f"port = {port}")
        .replace(f'PYTHONPATH = "{REPO}"', f'PYTHONPATH = "{REPO}"' + (f", {env}" if env else ""))
        .replace("min_requests = 6", "min_requests = 2")
        + tail
    )
    return path


class _Engine(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model: ClassVar[str] = "m"
    card: ClassVar[dict[str, object]] = {}  # vLLM's ModelCard fields of its /v1/models entry
    k: ClassVar[int] = 0
    stream_interval: ClassVar[int] = 1
    step_s: ClassVar[float] = 0.01
    jitter_sd: ClassVar[float] = 0.0
    jitter: ClassVar[random.Random] = random.Random(0)
    in_flight: ClassVar[int] = 0
    served: ClassVar[int] = 0  # completions begun
    counters: ClassVar[dict[str, float]] = {}
    scrapes: ClassVar[int] = 0
    posts: ClassVar[int] = 0
    started: ClassVar[float] = 0.0
    lock: ClassVar[threading.Lock] = threading.Lock()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle delay between chunks

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        answers = {
            "/health": b"",
            "/v1/models": json.dumps(
                {"object": "list", "data": [{"id": self.model, "object": "model", **self.card}]}
            ).encode(),
            "/version": json.dumps({"version": VERSION}).encode(),
        }
        path = self.path.split("?")[0]
        if path == "/metrics" and os.environ.get("SCRIPTED_ENGINE_METRICS"):
            with self.lock:
                _Engine.scrapes += 1
                text = exposition(dict(_Engine.counters), self.k, _Engine.scrapes, self.model, _Engine.started)
            self._send(200, text.encode(), "text/plain; version=0.0.4")
            return
        self._send(200, answers[path]) if path in answers else self._send(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path != "/v1/completions":
            self._send(404, b'{"error": "only /v1/completions"}')
            return
        with self.lock:
            _Engine.posts += 1
            whole = _Engine.posts == int(os.environ.get("SCRIPTED_ENGINE_NOT_SSE") or 0)
        if whole:  # a 200 that is no event stream: a proxy's answer, or a server that ignored "stream"
            self._send(200, json.dumps({"object": "text_completion", "choices": [{"text": " t", "index": 0}]}).encode())
            return
        with self.lock:
            _Engine.in_flight += 1
            served, _Engine.served = _Engine.served, _Engine.served + 1
            if os.environ.get("SCRIPTED_ENGINE_BODIES"):  # every body as received, one JSON line each
                with Path(os.environ["SCRIPTED_ENGINE_BODIES"]).open("a") as out:
                    out.write(json.dumps(body, sort_keys=True) + "\n")
        try:
            self._stream(body, accept_rate(served))
        finally:
            with self.lock:
                _Engine.in_flight -= 1

    def _stream(self, body: dict[str, object], rate: float = 1.0) -> None:
        n = int(str(body.get("max_tokens") or 16))
        grammar = any(k in body for k in ("structured_outputs", "response_format")) and not body.get("ignore_eos")
        n, k = (max(1, n // 2), max(self.k - 1, 0)) if grammar else (n, self.k)  # the grammar ends it, refuses a draft
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sizes, left, due = [1], n - 1, 0.0
        while left > 0:  # each step accepts ``rate`` of its K draft tokens, on average
            due += rate * k
            accepted = min(int(due + 1e-9), k)
            due -= accepted
            sizes.append(min(accepted + 1, left))
            left -= sizes[-1]
        at, held = 0, 0
        noise = math.exp(self.jitter.gauss(0.0, self.jitter_sd)) if self.jitter_sd else 1.0
        for i, size in enumerate(sizes):
            time.sleep(self.step_s * noise * drift_factor(time.time()) * crowd_factor(_Engine.in_flight))
            held += size
            last = i == len(sizes) - 1
            if i > 0 and held < self.stream_interval and not last:
                continue  # --stream-interval N: the first token at once, then chunks of at least N tokens
            ids = list(range(at + 1, at + held + 1))
            at, held = at + held, 0
            self._chunk(completion_chunk(" t" * len(ids), ids, ("stop" if grammar else "length") if last else None))
        self._count(sizes, k)
        fingerprint = os.environ.get("SCRIPTED_ENGINE_FINGERPRINT")
        self._chunk(usage_chunk(len(str(body.get("prompt", "")).split()), n, fingerprint))
        self._chunk(DONE)
        self.wfile.write(b"0\r\n\r\n")

    def _count(self, sizes: list[int], k: int) -> None:
        """Count one finished request of chunks ``sizes`` (the first one token, then one per step of ``k`` draft
        tokens)."""
        with self.lock:
            c = _Engine.counters
            c["requests"] = c.get("requests", 0) + 1
            c["tokens"] = c.get("tokens", 0) + sum(sizes)
            if k:
                for size in sizes[1:]:
                    c["drafts"] = c.get("drafts", 0) + 1
                    c["draft_tokens"] = c.get("draft_tokens", 0) + k
                    c["accepted"] = c.get("accepted", 0) + size - 1
                    for pos in range(size - 1):
                        c[f"pos{pos}"] = c.get(f"pos{pos}", 0) + 1

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


#: Which counters a fault of ``SCRIPTED_ENGINE_FAULT`` hits (module docstring).
FAULT_TARGETS = {
    "spec": ("drafts", "draft_tokens", "accepted", "pos"),
    "accepted": ("accepted", "pos"),
    "tokens": ("tokens",),
    "requests": ("requests",),
}


def _faulty(key: str, value: float, scrape: int) -> str:
    """``value`` of counter ``key`` as the ``scrape``-th ``/metrics`` answer writes it (module docstring)."""
    fault = os.environ.get("SCRIPTED_ENGINE_FAULT", "")
    kind, _, at = fault.partition("@")
    kind, _, which = kind.partition(":")
    if not fault or scrape < int(at or 1) or not key.startswith(FAULT_TARGETS[which or "spec"]):
        return repr(float(value))
    return {"nan": "NaN", "inf": "+Inf", "negative": repr(-float(value)), "halve": repr(float(value) / 2)}[kind]


def exposition(counters: dict[str, float], k: int, scrape: int, model: str, started: float) -> str:
    """The ``/metrics`` text of ``counters`` (module docstring) at the ``scrape``-th answer."""
    labels = f'engine="0",model_name="{model}"'

    def line(name: str, key: str, extra: str = "") -> str:
        return f"{name}{{{labels}{extra}}} {_faulty(key, counters.get(key, 0), scrape)}\n"

    process = f"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {started!r}\n"
    out = "" if os.environ.get("SCRIPTED_ENGINE_MULTIPROC") else process
    out += "# TYPE vllm:request_success counter\n"
    out += line("vllm:request_success_total", "requests", ',finished_reason="length"')
    out += "# TYPE vllm:generation_tokens counter\n" + line("vllm:generation_tokens_total", "tokens")
    if k:
        for name, key in (
            ("num_drafts", "drafts"),
            ("num_draft_tokens", "draft_tokens"),
            ("num_accepted_tokens", "accepted"),
        ):
            out += f"# TYPE vllm:spec_decode_{name} counter\n" + line(f"vllm:spec_decode_{name}_total", key)
        out += "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter\n"
        for pos in range(k):
            out += line("vllm:spec_decode_num_accepted_tokens_per_pos_total", f"pos{pos}", f',position="{pos}"')
    return out


def drift_factor(now: float) -> float:
    """The host slow-down at wall-clock ``now`` (module docstring); 1.0 without ``SCRIPTED_ENGINE_DRIFT``."""
    drift = os.environ.get("SCRIPTED_ENGINE_DRIFT")
    if not drift:
        return 1.0
    t = now - float(os.environ.get("SCRIPTED_ENGINE_EPOCH", "0"))
    kind, _, arg = drift.partition(":")
    if kind == "linear":
        return 1.0 + float(arg) * max(t, 0.0)
    factor, _, at = arg.partition("@")
    return float(factor) if t >= float(at) else 1.0


def accept_rate(served: int) -> float:
    """The share of its draft tokens the ``served``-th completion (0-based) accepts: 1.0 (a perfect draft) without
    ``SCRIPTED_ENGINE_ACCEPT``; with ``RATES@N`` (``0.9,0.5,0.1@3``) the first completion (the readiness one) and
    the N after it take the first rate, each next N the next one, the last rate from then on."""
    schedule = os.environ.get("SCRIPTED_ENGINE_ACCEPT")
    if not schedule:
        return 1.0
    rates, _, every = schedule.partition("@")
    values = [float(r) for r in rates.split(",")]
    return values[min(max(served - 1, 0) // int(every or 1), len(values) - 1)]


def crowd_factor(in_flight: int) -> float:
    """The step-time factor at ``in_flight`` requests (module docstring); 1.0 without ``SCRIPTED_ENGINE_CROWD``."""
    crowd = os.environ.get("SCRIPTED_ENGINE_CROWD")
    if not crowd:
        return 1.0
    at, _, factor = crowd.partition(":")
    return float(factor) if in_flight >= int(at) else 1.0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    for flag in ("--model", "--served-model-name", "--host", "--port", "--seed", "--speculative-config"):
        parser.add_argument(flag)
    parser.add_argument("--stream-interval", type=int, default=1)
    args, _ = parser.parse_known_args(argv)
    if os.environ.get("SCRIPTED_ENGINE_FAIL"):
        print("RuntimeError: CUDA error: no CUDA-capable device is detected", flush=True)
        return 1
    time.sleep(float(os.environ.get("SCRIPTED_ENGINE_START_S", "0")))
    spec = json.loads(args.speculative_config) if args.speculative_config else None
    _Engine.model = args.served_model_name or args.model
    _Engine.card = {"owned_by": "vllm", "root": args.model, "max_model_len": 2048}
    _Engine.k = int(spec["num_speculative_tokens"]) if spec else 0
    _Engine.stream_interval = args.stream_interval
    _Engine.step_s = float(os.environ.get("SCRIPTED_ENGINE_STEP_S", "0.01"))
    _Engine.jitter_sd = float(os.environ.get("SCRIPTED_ENGINE_JITTER", "0"))
    _Engine.jitter = random.Random(int(args.port))
    _Engine.started = time.time()
    shown = f"SpeculativeConfig(method='{spec.get('method')}', num_spec_tokens={_Engine.k})" if spec else "None"
    print(
        f"Initializing an LLM engine (v{VERSION}) with config: model={args.model!r}, speculative_config={shown}",
        flush=True,
    )
    print("KV cache size: 10,000 tokens", flush=True)
    if os.environ.get("SCRIPTED_ENGINE_LOG"):  # a real startup log's lines, as the engine would print them
        print(Path(os.environ["SCRIPTED_ENGINE_LOG"]).read_text(), flush=True)
    server = ThreadingHTTPServer((args.host or "127.0.0.1", int(args.port)), _Engine)
    server.daemon_threads = True
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
