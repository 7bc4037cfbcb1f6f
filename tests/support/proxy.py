"""A small HTTP proxy on loopback (real sockets) in front of scripted engines, for the topologies loadgen meets
behind one URL: a prefill/decode router whose ``/metrics`` is the prefill instance's while the decode instance
streams the tokens (:func:`disaggregated`), and a Service round-robining over replicas (:func:`round_robin`).
Each request is sent on to the backend its route names and the answer streamed back as it comes (chunked), so a
stream keeps its timing."""

from __future__ import annotations

import http.client
import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import urlsplit

#: (method, path) -> the backend's base URL.
Route = Callable[[str, str], str]


class _Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    route: ClassVar[Route]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._forward("GET")

    def do_POST(self) -> None:
        self._forward("POST")

    def _forward(self, method: str) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
        target = urlsplit(type(self).route(method, self.path))
        conn = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
            conn.request(method, self.path, body=body, headers=headers)
            answer = conn.getresponse()
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.getheader("Content-Type") or "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while data := answer.read1(65536):
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        finally:
            conn.close()


@contextmanager
def proxy(route: Route) -> Iterator[str]:
    """Serve a proxy sending each request where ``route(method, path)`` says; yields its base URL."""
    handler = type("Proxy", (_Proxy,), {"route": staticmethod(route)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def disaggregated(decode: str, prefill: str) -> Route:
    """A prefill/decode router's routes: every request to ``decode``, ``/metrics`` to ``prefill`` (the router shows
    the first instance's metrics)."""
    return lambda method, path: prefill if path.split("?")[0] == "/metrics" else decode


def round_robin(*backends: str) -> Route:
    """A Service's routes: each request to the next of ``backends`` in turn, GETs (``/metrics`` scrapes included)
    and POSTs each in their own turn, as requests on connections of their own would be spread."""
    turns, lock = {m: itertools.cycle(backends) for m in ("GET", "POST")}, threading.Lock()

    def route(method: str, path: str) -> str:
        with lock:
            return next(turns[method])

    return route
