"""A small scripted SSE server on loopback (real sockets) for stream edge cases the engine cannot be
made to produce. Each POST body's ``prompt`` names a script: a list of (delay_s, raw bytes) steps, sent
as HTTP/1.1 chunked transfer encoding; a step of ``None`` bytes drops the connection."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

Step = tuple[float, bytes | None]


def completion_chunk(text: str, token_ids: list[int], finish: str | None = None) -> bytes:
    """One vLLM-shaped /v1/completions SSE event."""
    body = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish,
                         "stop_reason": None, "token_ids": token_ids}], "usage": None}
    return f"data: {json.dumps(body)}\n\n".encode()


def usage_chunk(prompt_tokens: int, completion_tokens: int) -> bytes:
    """The usage-only final event (``choices: []``)."""
    body = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m", "choices": [],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}
    return f"data: {json.dumps(body)}\n\n".encode()


DONE = b"data: [DONE]\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scripts: ClassVar[dict[str, tuple[int, list[Step]]]] = {}

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        status, steps = self.scripts.get(body.get("prompt", ""), self.scripts.get("*", (404, [])))
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream" if status == 200 else "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for delay, data in steps:
            time.sleep(delay)
            if data is None:
                self.wfile.flush()
                self.connection.shutdown(2)
                return
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


@contextmanager
def scripted_server(scripts: dict[str, tuple[int, list[Step]]]) -> Iterator[str]:
    """Serve ``scripts`` (prompt -> (HTTP status, steps); key ``*`` for any other prompt) on 127.0.0.1;
    yields the base URL."""
    handler = type("Handler", (_Handler,), {"scripts": scripts})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
