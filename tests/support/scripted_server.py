"""A small scripted SSE server on loopback (real sockets) for stream edge cases the engine cannot be
made to produce. Each POST body's ``prompt`` names a script: a list of (delay_s, raw bytes) steps, sent
as HTTP/1.1 chunked transfer encoding on keep-alive connections. Special steps: ``None`` shuts the
connection down (FIN) mid-body; :data:`RESET` aborts it (RST); :data:`CLOSE` ends the body (zero
chunk) and then closes the connection without a ``Connection: close`` header, like a server whose
keep-alive timeout expired. ``GET /health`` answers 200 and ``GET /metrics`` 500 unless ``gets`` says
otherwise. A script given as a list of (status, steps) answers its requests in turn (the last one
repeats): a server whose completions fail while it starts. A script given as a function of the prompt
(:data:`PromptScript`) answers each request with what it returns for that request's prompt: a server whose
timing depends on the request. :class:`Counters` counts connections accepted and requests served."""

from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

Step = tuple[float, bytes | None]
Script = tuple[int, list[Step]] | list[tuple[int, list[Step]]]
#: A script computed from each request's prompt: prompt -> (HTTP status, steps).
PromptScript = Callable[[str], tuple[int, list[Step]]]
RESET = b"<reset>"
CLOSE = b"<close>"
#: A first step ``CONTENT_TYPE + b"text/html>"`` sets the answer's Content-Type (a proxy's page, a JSON body).
CONTENT_TYPE = b"<content-type:"


@dataclass
class Counters:
    """Connections accepted and POST requests served (thread-safe increments)."""

    connections: int = 0
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)


def models_body(*names: str) -> bytes:
    """A ``GET /v1/models`` answer listing ``names``."""
    return json.dumps({"object": "list", "data": [{"id": n, "object": "model"} for n in names]}).encode()


def completion_chunk(text: str, token_ids: list[int], finish: str | None = None) -> bytes:
    """One vLLM-shaped /v1/completions SSE event."""
    body = {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": finish,
                "stop_reason": None,
                "token_ids": token_ids,
            }
        ],
        "usage": None,
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def usage_chunk(prompt_tokens: int, completion_tokens: int, fingerprint: str | None = None) -> bytes:
    """The usage-only final event (``choices: []``), with vLLM's ``system_fingerprint`` when given."""
    body: dict[str, object] = {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1,
        "model": "m",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        **({"system_fingerprint": fingerprint} if fingerprint else {}),
    }
    return f"data: {json.dumps(body)}\n\n".encode()


DONE = b"data: [DONE]\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scripts: ClassVar[dict[str, Script | PromptScript]] = {}
    counters: ClassVar[Counters] = Counters()
    gets: ClassVar[dict[str, tuple[int, bytes]]] = {}

    def log_message(self, format: str, *args: object) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.counters.add("connections")

    def do_GET(self) -> None:
        # /health answers 200 (the server is alive); /metrics answers 500, like a broken exporter
        status, body = ({"/health": (200, b""), "/metrics": (500, b"exporter failed")} | self.gets).get(
            self.path, (404, b"")
        )
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.counters.add("requests")
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        prompt = body.get("prompt", "")
        script = self.scripts.get(prompt, self.scripts.get("*", (404, [])))
        if callable(script):
            script = script(prompt)
        if isinstance(script, list):
            with self.counters.lock:
                status, steps = script.pop(0) if len(script) > 1 else script[0]
        else:
            status, steps = script
        ctype = "text/event-stream" if status == 200 else "application/json"
        if steps and (steps[0][1] or b"").startswith(CONTENT_TYPE):  # a content type of the script's own
            ctype, steps = (steps[0][1] or b"")[len(CONTENT_TYPE) : -1].decode(), steps[1:]
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for delay, data in steps:
            time.sleep(delay)
            if data is None:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if data == RESET:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True
                return
            if data == CLOSE:
                self.close_connection = True
                break
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    """A client that hangs up mid-stream (a cancelled or timed-out request) is part of what is tested: its
    BrokenPipe / ConnectionReset is not printed (socketserver would print it to stderr, which click's
    CliRunner captures into a command's output)."""

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


@contextmanager
def scripted_server(
    scripts: Mapping[str, Script | PromptScript],
    counters: Counters | None = None,
    gets: dict[str, tuple[int, bytes]] | None = None,
) -> Iterator[str]:
    """Serve ``scripts`` (prompt -> (HTTP status, steps), a list of them answered in turn, or a function of
    the prompt returning them; key ``*`` for any other prompt) on 127.0.0.1; yields the base URL.
    ``counters``, when given, counts connections and requests; ``gets`` maps GET paths to (status, body),
    over the defaults."""
    handler = type("Handler", (_Handler,), {"scripts": scripts, "counters": counters or Counters(), "gets": gets or {}})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
