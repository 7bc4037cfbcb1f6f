"""A fast scripted vLLM-shaped SSE server on a precise timetable (stdlib only; benchmarks, not tests).

It answers ``POST /v1/completions`` and ``POST /v1/chat/completions`` (``stream: true``) with a stream
shaped like vLLM's with ``return_token_ids`` and ``stream_options.include_usage`` (vLLM 0.10.2+,
``vllm/entrypoints/openai/.../protocol.py``), on a timetable measured from the moment the request
body was received (``t0``, the server's ``loop.time()``):

* chat only: a role-only chunk (``delta: {"role": "assistant", "content": ""}``, no tokens) at once;
* token-bearing chunk ``i`` (0-based) at ``t0 + ttft + i * chunk``, carrying ``pattern[i % len(pattern)]``
  token ids (the last chunk carries what is left of ``max_tokens``); chunk ``--empty-chunk`` has
  tokens but empty text (a byte token that does not decode yet); the last one has
  ``finish_reason: "length"``;
* right after the last token chunk: the usage-only chunk (``choices: []``), then ``data: [DONE]``.

The output length is ``max_tokens`` (completions) or ``max_completion_tokens``/``max_tokens`` (chat),
default ``--default-max-tokens``. Frames are HTTP/1.1 chunked transfer encoding on keep-alive
connections. Chunks are pre-encoded once per (endpoint, model, output length); a request only adds its
id. Sends wait for absolute deadlines (``loop.call_at``), so lateness never accumulates. The default event
loop (``--selector fine``) waits on ``epoll`` for whole milliseconds only and sleeps the sub-millisecond
rest of a timed wait (``clock_nanosleep``) before a non-blocking poll: ``epoll`` alone rounds timeouts up
to whole milliseconds, which makes every send up to 1 ms late, and ``select()`` (``--selector select``)
has microsecond timeouts but scans every socket on each wake, which made the server read a burst of 64
requests 80-95 us each (request delivery p99 up to 6 ms). The price of ``fine``: I/O that arrives
during the sub-millisecond sleep waits for its end (< 1 ms). The timer slack is set to 1 ns (Linux; the
default 50 us delays every timed wake-up). A throughput run that does not need sub-millisecond timing can
pass ``--selector epoll``.

Extra endpoints: ``GET /health``; ``GET /v1/models``; ``GET /stats`` (``?reset=1`` to clear), the
server's own lateness (actual send - deadline, ms) over token-bearing chunks and the connections
accepted, plus the counters below; ``GET /counters`` (``?reset=1`` to clear), the counters alone, cheap
enough to poll while streaming (no percentile sort): token-bearing ``chunks`` and their ``tokens`` sent,
``requests`` (streams started), ``open_streams`` (streams in progress now) and ``max_open_streams``;
``GET /script?ttft_ms=X&chunk_ms=Y`` changes the timetable of streams that
start from then on (streams in progress keep theirs) and answers the timetable in force; with
``--trace``, ``GET /trace`` (kept in memory, cleared when read: no file I/O while
streaming): one object per finished request with its ``key`` (the prompt, or the last message's
content), ``t0`` and each token chunk's actual send time (``time.monotonic()`` seconds, the clock of
``time.perf_counter()`` on Linux), for matching client and server timelines.

Run: ``python scripts/sse_server.py --port 0 --ttft-ms 50 --chunk-ms 20 --pattern 1,4,4,2,4``; it
prints ``listening on 127.0.0.1:<port>`` when ready.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import dataclasses
import itertools
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import time
import urllib.parse
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_CRLF = b"\r\n"
_MAX_HEADER_BYTES = 65536
_TEMPLATE_CACHE_SIZE = 256
_SSE_HEADERS = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
    b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
)
_LAST_FRAME = b"0\r\n\r\n"
_CREATED = 1_700_000_000
_PR_SET_TIMERSLACK = 29


@dataclass(frozen=True)
class Script:
    """The timetable: seconds to the first token chunk, seconds between token chunks, tokens per chunk."""

    ttft_s: float
    chunk_s: float
    pattern: tuple[int, ...]
    empty_chunk: int = 1
    default_max_tokens: int = 16

    def chunk_tokens(self, max_tokens: int) -> list[int]:
        """Token counts of the token-bearing chunks for an output of ``max_tokens`` (>= 1) tokens."""
        counts: list[int] = []
        left = max_tokens
        for k in itertools.cycle(self.pattern):
            if left <= 0:
                return counts
            counts.append(min(k, left))
            left -= counts[-1]
        return counts  # pragma: no cover (cycle never ends)


def _frame(payload: bytes) -> bytes:
    """One chunked-transfer-encoding frame."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


class StreamTemplates:
    """Pre-encoded SSE events of whole streams, keyed by (endpoint, model, output tokens).

    Each event is stored without its leading ``data: {"id":"<id>"`` so one request only prepends its id.
    """

    def __init__(self, script: Script) -> None:
        self.script = script
        self._cache: dict[tuple[bool, str, int], tuple[bytes | None, list[bytes]]] = {}
        self._counts: dict[int, list[int]] = {}

    def get(self, chat: bool, model: str, max_tokens: int) -> tuple[bytes | None, list[bytes]]:
        """(role chunk tail or None, token chunk tails) of one stream; the usage chunk depends on the prompt."""
        key = (chat, model, max_tokens)
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) >= _TEMPLATE_CACHE_SIZE:
                self._cache.clear()
            found = self._cache[key] = self._build(chat, model, max_tokens)
        return found

    def _build(self, chat: bool, model: str, max_tokens: int) -> tuple[bytes | None, list[bytes]]:
        obj = "chat.completion.chunk" if chat else "text_completion"
        head = {"object": obj, "created": _CREATED, "model": model}

        def tail(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            # everything after the id: `,"object":...}` plus the SSE event's blank line
            body = json.dumps({**head, "choices": choices, **extra}, separators=(",", ":"))
            return b"," + body[1:].encode() + b"\n\n"

        role = None
        if chat:
            role = tail(
                [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}]
            )
        tokens: list[bytes] = []
        counts = self.script.chunk_tokens(max_tokens)
        position = 0
        for i, k in enumerate(counts):
            ids = [100 + (position + j) % 30000 for j in range(k)]
            position += k
            text = "" if i == self.script.empty_chunk else "".join(f" t{t}" for t in ids)
            finish = "length" if i == len(counts) - 1 else None
            choice: dict[str, Any] = {"index": 0}
            if chat:
                choice["delta"] = {"content": text}
            else:
                choice["text"] = text
            choice.update({"logprobs": None, "finish_reason": finish, "stop_reason": None, "token_ids": ids})
            tokens.append(tail([choice]))
        return role, tokens

    def counts(self, max_tokens: int) -> list[int]:
        """Token counts of the token-bearing chunks of an output of ``max_tokens`` tokens (cached)."""
        found = self._counts.get(max_tokens)
        if found is None:
            if len(self._counts) >= _TEMPLATE_CACHE_SIZE:
                self._counts.clear()
            found = self._counts[max_tokens] = self.script.chunk_tokens(max_tokens)
        return found

    @staticmethod
    def usage_tail(chat: bool, model: str, prompt_tokens: int, completion_tokens: int) -> bytes:
        """The usage-only chunk after the id."""
        obj = "chat.completion.chunk" if chat else "text_completion"
        usage = {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
        }
        body = json.dumps(
            {"object": obj, "created": _CREATED, "model": model, "choices": [], "usage": usage}, separators=(",", ":")
        )
        return b"," + body[1:].encode() + b"\n\n"


class Lateness:
    """Actual send - deadline of every token-bearing chunk (s), kept compactly."""

    def __init__(self) -> None:
        self.samples = array("d")

    def summary(self) -> dict[str, float | int | None]:
        """Count and p50/p99/max lateness in ms (None when empty)."""
        values = sorted(self.samples)
        if not values:
            return {"frames": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}

        def pct(q: float) -> float:
            pos = q * (len(values) - 1)
            lo = int(pos)
            hi = min(lo + 1, len(values) - 1)
            return (values[lo] + (values[hi] - values[lo]) * (pos - lo)) * 1e3

        return {"frames": len(values), "p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": values[-1] * 1e3}


class ScriptedServer:
    """The HTTP/1.1 connection handler and streamer (one instance per server)."""

    def __init__(self, script: Script, model: str, trace: bool = False) -> None:
        self.script = script
        self.model = model
        self.templates = StreamTemplates(script)
        self.lateness = Lateness()
        self.trace: list[dict[str, Any]] | None = [] if trace else None
        self._ids = itertools.count()
        self.connections = 0
        self.handlers: set[asyncio.Task[None]] = set()
        self.chunks = 0
        self.tokens = 0
        self.requests = 0
        self.open_streams = 0
        self.max_open_streams = 0

    def counters(self, reset: bool) -> dict[str, int]:
        """Token-bearing chunks and tokens sent, streams started, streams open now and at most
        (since the last reset); ``reset`` clears all but ``open_streams``."""
        out = {
            "chunks": self.chunks,
            "tokens": self.tokens,
            "requests": self.requests,
            "open_streams": self.open_streams,
            "max_open_streams": self.max_open_streams,
        }
        if reset:
            self.chunks = self.tokens = self.requests = 0
            self.max_open_streams = self.open_streams
        return out

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve requests on one keep-alive connection until the client closes it."""
        self.connections += 1
        task = asyncio.current_task()
        if task is not None:
            self.handlers.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                method, path, headers = _parse_head(head)
                length = int(headers.get("content-length", "0"))
                body = await reader.readexactly(length) if length else b""
                t0 = asyncio.get_running_loop().time()
                keep = await self.route(method, path, body, t0, writer)
                if not keep or headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            return  # shutdown: the outermost task of this connection ends quietly
        finally:
            writer.close()
            if task is not None:
                self.handlers.discard(task)

    async def route(self, method: str, path: str, body: bytes, t0: float, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection should close."""
        route = path.split("?", 1)[0]
        if method == "POST" and route in ("/v1/completions", "/v1/chat/completions"):
            return await self.stream(route == "/v1/chat/completions", body, t0, writer)
        if method == "GET" and route == "/health":
            _respond(writer, 200, b"")
        elif method == "GET" and route == "/v1/models":
            _respond_json(
                writer,
                200,
                {
                    "object": "list",
                    "data": [{"id": self.model, "object": "model", "created": _CREATED, "owned_by": "scripted"}],
                },
            )
        elif method == "GET" and route == "/trace" and self.trace is not None:
            _respond_json(writer, 200, self.trace)
            self.trace = []
        elif method == "GET" and route == "/stats":
            _respond_json(
                writer,
                200,
                {**self.lateness.summary(), "connections": self.connections, **self.counters("reset=1" in path)},
            )
            if "reset=1" in path:
                self.lateness = Lateness()
                self.connections = 0
        elif method == "GET" and route == "/counters":
            _respond_json(writer, 200, self.counters("reset=1" in path))
        elif method == "GET" and route == "/script":
            try:
                self.script = _retime(self.script, path)
            except ValueError as exc:
                _respond_json(writer, 400, {"error": {"message": str(exc), "code": 400}})
            else:
                _respond_json(
                    writer,
                    200,
                    {
                        "ttft_ms": self.script.ttft_s * 1e3,
                        "chunk_ms": self.script.chunk_s * 1e3,
                        "pattern": list(self.script.pattern),
                    },
                )
        else:
            _respond_json(writer, 404, {"error": {"message": f"no route {method} {route}", "code": 404}})
        await writer.drain()
        return True

    async def stream(self, chat: bool, raw: bytes, t0: float, writer: asyncio.StreamWriter) -> bool:
        """Stream one scripted completion on the timetable (module docstring)."""
        try:
            body = json.loads(raw)
            if not body.get("stream"):
                raise ValueError("only stream=true is scripted")
            limit = body.get("max_completion_tokens") if chat else None
            max_tokens = int(limit or body.get("max_tokens") or self.script.default_max_tokens)
            if max_tokens < 1:
                raise ValueError("max_tokens must be >= 1")
        except (ValueError, TypeError, AttributeError) as exc:
            _respond_json(writer, 400, {"error": {"message": str(exc), "code": 400}})
            await writer.drain()
            return True
        model = body.get("model") or self.model
        key = _prompt_key(body, chat)
        role, tails = self.templates.get(chat, str(model), max_tokens)
        counts = self.templates.counts(max_tokens)
        prefix = b'data: {"id":"%s-%d"' % (b"chatcmpl" if chat else b"cmpl", next(self._ids))
        usage = self.templates.usage_tail(chat, str(model), max(1, len(key.split())), max_tokens)

        loop = asyncio.get_running_loop()
        self.requests += 1
        self.open_streams += 1
        self.max_open_streams = max(self.max_open_streams, self.open_streams)
        try:
            await self._send_chunks(loop, writer, t0, self.script, prefix, role, tails, counts, usage, key)
        finally:
            self.open_streams -= 1
        return True

    async def _send_chunks(
        self,
        loop: asyncio.AbstractEventLoop,
        writer: asyncio.StreamWriter,
        t0: float,
        script: Script,
        prefix: bytes,
        role: bytes | None,
        tails: list[bytes],
        counts: list[int],
        usage: bytes,
        key: str,
    ) -> None:
        """Write one stream's frames on the timetable, counting token-bearing chunks and tokens."""
        writer.write(_SSE_HEADERS + (_frame(prefix + role) if role is not None else b""))
        late = self.lateness.samples
        sent = array("d") if self.trace is not None else None
        first = t0 + script.ttft_s
        last = len(tails) - 1
        for i, tail in enumerate(tails):
            deadline = first + i * script.chunk_s
            now = loop.time()
            if now < deadline:
                await _sleep_until(loop, deadline)
                now = loop.time()
            late.append(now - deadline)
            self.chunks += 1
            self.tokens += counts[i]
            if sent is not None:
                sent.append(now)
            if i == last:
                writer.write(_frame(prefix + tail) + _frame(prefix + usage) + _frame(b"data: [DONE]\n\n") + _LAST_FRAME)
            else:
                writer.write(_frame(prefix + tail))
            if writer.transport.get_write_buffer_size() > 65536:
                await writer.drain()
        await writer.drain()
        if self.trace is not None and sent is not None:
            self.trace.append({"key": key, "t0": t0, "sent": sent.tolist()})


def _retime(script: Script, path: str) -> Script:
    """``script`` with the ``ttft_ms`` / ``chunk_ms`` query parameters of ``path`` (ValueError when bad)."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    seconds = {}
    for name, default in (("ttft_ms", script.ttft_s), ("chunk_ms", script.chunk_s)):
        value = float(query[name][-1]) / 1e3 if name in query else default
        if not value >= 0:
            raise ValueError(f"{name} must be >= 0")
        seconds[name] = value
    return dataclasses.replace(script, ttft_s=seconds["ttft_ms"], chunk_s=seconds["chunk_ms"])


def _prompt_key(body: dict[str, Any], chat: bool) -> str:
    """The prompt text (completions) or the last message's content (chat), for traces and usage."""
    if chat:
        messages = body.get("messages") or [{}]
        content = messages[-1].get("content", "") if isinstance(messages[-1], dict) else ""
        return content if isinstance(content, str) else json.dumps(content)
    prompt = body.get("prompt", "")
    return prompt if isinstance(prompt, str) else json.dumps(prompt)


async def _sleep_until(loop: asyncio.AbstractEventLoop, deadline: float) -> None:
    """Sleep until ``loop.time() >= deadline`` (an absolute deadline, unlike ``asyncio.sleep``)."""
    future = loop.create_future()
    handle = loop.call_at(deadline, _wake, future)
    try:
        await future
    finally:
        handle.cancel()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    """Method, path and lower-cased headers of a request head."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    method, path = (parts[0], parts[1]) if len(parts) >= 2 else ("", "")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return method, path, headers


def _respond(writer: asyncio.StreamWriter, status: int, payload: bytes, ctype: str = "text/plain") -> None:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "Error")
    writer.write(
        b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n%s"
        % (status, reason.encode(), ctype.encode(), len(payload), payload)
    )


def _respond_json(writer: asyncio.StreamWriter, status: int, obj: object) -> None:
    _respond(writer, status, json.dumps(obj).encode(), "application/json")


def parse_pattern(text: str) -> tuple[int, ...]:
    """``"1,4,4,2,4"`` -> ``(1, 4, 4, 2, 4)``; every count must be >= 1."""
    pattern = tuple(int(p) for p in text.split(",") if p.strip())
    if not pattern or min(pattern) < 1:
        raise argparse.ArgumentTypeError("pattern needs token counts >= 1, e.g. 1,4,4,2,4")
    return pattern


def reduce_timer_slack() -> bool:
    """Linux: set this thread's timer slack to 1 ns (``prctl(PR_SET_TIMERSLACK)``; the default 50 us
    is added to every timed wait). Best effort: False where unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        return bool(ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, 1, 0, 0, 0) == 0)
    return False


class FineEpollSelector(selectors.EpollSelector):
    """``epoll`` readiness with microsecond timeouts (module docstring): waits whole milliseconds on
    ``epoll_wait``, sleeps the rest, then polls without blocking."""

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None or timeout <= 0:
            return super().select(timeout)
        end = time.monotonic() + timeout
        whole = math.floor(timeout * 1e3) / 1e3
        if whole > 0 and (ready := super().select(whole)):
            return ready
        if (rest := end - time.monotonic()) > 0:
            time.sleep(rest)
        return super().select(0)


def new_loop(selector: str) -> asyncio.AbstractEventLoop:
    """An event loop on ``fine`` (:class:`FineEpollSelector`), ``select()`` (microsecond timeouts) or
    the platform default (``epoll``)."""
    if selector == "fine":
        return asyncio.SelectorEventLoop(FineEpollSelector())
    if selector == "select":
        return asyncio.SelectorEventLoop(selectors.SelectSelector())
    return asyncio.new_event_loop()


async def serve(args: argparse.Namespace) -> None:
    """Listen, print the port, serve until SIGTERM/SIGINT."""
    script = Script(args.ttft_ms / 1e3, args.chunk_ms / 1e3, args.pattern, args.empty_chunk, args.default_max_tokens)
    app = ScriptedServer(script, args.model, args.trace)
    server = await asyncio.start_server(app.handle, args.host, args.port, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on {args.host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()
        server.close()
        for task in list(app.handlers):
            task.cancel()
        await asyncio.gather(*app.handlers, return_exceptions=True)


@contextlib.contextmanager
def spawn(
    options: Sequence[str], cpu: int | None = None, quiet: bool = True
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Run this server as a child process (``--port 0`` plus ``options``), pinned to ``cpu`` when given; yield
    its base URL and process once it listens, and terminate it at the end. ``quiet`` drops its stderr (asyncio
    logs every write to a stream whose client went away). RuntimeError when it does not start."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--port", "0", *options]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if quiet else None, text=True)
    try:
        if cpu is not None:
            os.sched_setaffinity(proc.pid, {cpu})
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            raise RuntimeError(f"sse_server.py did not start: {line!r}")
        yield "http://" + line.split()[-1], proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed when ready)")
    parser.add_argument("--ttft-ms", type=float, default=50.0, help="body received -> first token chunk")
    parser.add_argument("--chunk-ms", type=float, default=20.0, help="interval between token chunks")
    parser.add_argument(
        "--pattern", type=parse_pattern, default=(1, 4, 4, 2, 4), help="tokens per chunk, cycled (default 1,4,4,2,4)"
    )
    parser.add_argument("--empty-chunk", type=int, default=1, help="index of the token chunk with empty text")
    parser.add_argument("--default-max-tokens", type=int, default=16)
    parser.add_argument("--model", default="scripted")
    parser.add_argument(
        "--selector",
        choices=("fine", "select", "epoll"),
        default="fine",
        help="fine (default) and select: microsecond timeouts; epoll: the asyncio default",
    )
    parser.add_argument("--trace", action="store_true", help="keep per-request send times for GET /trace")
    args = parser.parse_args(argv)
    reduce_timer_slack()
    loop = new_loop(args.selector)
    try:
        loop.run_until_complete(serve(args))
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
