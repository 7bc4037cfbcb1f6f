"""A small asyncio HTTP/1.1 client for streaming POSTs, built for timing accuracy.

One :class:`StreamConnection` per concurrency slot: keep-alive, one request at a time, reconnecting when
the server closed the connection or after an error. A request is one write, ``sent_s`` taken right before
it; each response piece is stamped with the connection's clock (seconds) when the event loop reads it,
before any parsing. A body goes to a callback (:meth:`StreamResponse.deliver`) from one loop callback per
loop pass, not through a task wake-up per piece; pieces of a chunked body that cannot end it are held
(up to :data:`HOLD_BYTES`) and decoded with the next one that can, so a stream is decoded in warm
batches while its end is still seen on the read that brings it. Framing per RFC 9112 section 6.3:
chunked (section 7.1, the pure :class:`ChunkedDecoder`), ``Content-Length`` or close-delimited.

Failures raise :class:`TransportError` with a short message (``connection refused (host:port)``,
``connect timeout after 10 s``, ``read timeout: no data for 61.02 s (limit 60 s: [stop].read_timeout_s)``
(the silence observed since the last byte, or since the request when none came), ``connection reset by peer
mid-stream``, ``connection closed mid-stream``, ``bad status line: ...``, ``TLS error: ...``). A request
on a reused connection that the server had closed (no response byte came) is sent once more, on a new
connection, and says so (``resent``: the request's record keeps it).

Unlike httpx: proxies are not supported (``HTTP(S)_PROXY`` is ignored), nor HTTP/2, redirects, cookies,
compression; ``https://`` verifies with ``ssl.create_default_context()``; connect time is not in TTFT.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from loadgen.stream.http1 import _MAX_LINE, ChunkedDecoder, Head, TransportError, _parse_head, _Stale
from loadgen.stream.wire import _describe, _Wire


class StreamResponse:
    """A response whose head has arrived: ``status``, ``reason``, ``headers`` (lower-cased names, repeats
    joined by ``", "``), ``sent_s``. :meth:`deliver` hands the de-chunked body to a callback as it
    arrives; :meth:`read` returns it joined. Read it to its end (``complete``) before the next request, or
    that one reconnects. Reading may raise TransportError."""

    def __init__(self, conn: StreamConnection, head: Head, sent_s: float) -> None:
        self.status, self.reason, self.headers, self._framing, self._left, self._keep = head
        self.sent_s, self.complete, self._chunked, self._conn = sent_s, False, ChunkedDecoder(), conn
        self._sink: Callable[[float, bytes], None] | None = None
        self._error: Exception | None = None  # raised by the framing or the sink inside the pump
        if self._framing == "none" or (self._framing == "length" and self._left == 0):
            self._finish()

    async def read(self) -> bytes:
        """The rest of the body (bytes)."""
        parts: list[bytes] = []
        await self.deliver(lambda _, data: parts.append(data))
        return b"".join(parts)

    async def deliver(self, sink: Callable[[float, bytes], None]) -> None:
        """Call ``sink(arrival_s, data)`` for each non-empty piece of the de-chunked body, in order, until
        the body's end (``complete``). ``arrival_s`` is the connection clock's time when the loop read the
        piece. ``sink`` runs in an event-loop callback, not in the calling task, so it must not block or
        await: in the loop pass after a read that may end the body (for a chunked body at rest, see
        :data:`HOLD_BYTES`; any read otherwise), for every piece queued by then, each stamped on arrival.
        Raises TransportError (reset, EOF mid-body, read timeout, bad chunked framing) or what ``sink``
        raised; after either, the connection stays busy and the next request reconnects."""
        wire, timeout_s = self._conn._wire, self._conn.read_timeout_s
        if self.complete:
            return
        if wire is None:
            raise TransportError("connection closed mid-stream")
        self._sink, wire.pump = sink, self._pump
        try:
            self._pump()  # the pieces queued already (body bytes that came with the head)
            while not self.complete and self._error is None:
                if wire.closed:
                    if (err := wire.lost("mid-stream")) is not None:
                        raise err
                    if self._framing != "close":
                        raise TransportError("connection closed mid-stream")
                    self._finish()
                    break
                timely = await wire.wait(timeout_s)
                self._pump()  # what came since the last pass, so EOF or a timeout is judged on all of it
                if not timely and not (self.complete or wire.closed or self._error):
                    raise wire.timed_out()
        finally:
            wire.pump, wire.hold, self._sink = None, False, None
        if self._error is not None:
            raise self._error

    def _pump(self) -> None:
        wire, sink = self._conn._wire, self._sink
        if wire is None or sink is None or self._error is not None:
            return
        wire.held = 0
        try:
            while wire.pieces and not self.complete:
                arrival, data = wire.pieces.popleft()
                if self._framing == "chunked":
                    body = self._chunked.feed(data)
                    if self._chunked.done:
                        self._finish(self._chunked.tail)
                elif self._framing == "length":
                    body = data[: self._left]
                    self._left -= len(body)
                    if not self._left:
                        self._finish(data[len(body) :])
                else:
                    body = data
                if body:
                    sink(arrival, body)
        except Exception as exc:  # raised in the waiting task by deliver
            self._error = exc
            wire.wake()
            return
        if self.complete:
            wire.wake()
        else:
            wire.hold = self._framing == "chunked" and self._chunked.at_rest

    def _finish(self, extra: bytes = b"") -> None:
        self.complete, self._conn._busy = True, False
        if not self._keep or extra:  # bytes after the response: the connection is not reused
            self._conn.close()


class StreamConnection:
    """One keep-alive HTTP/1.1 connection to ``base_url`` (``http(s)://host[:port][/prefix]``), opened on
    the first request. ``clock`` returns seconds; ``api_key`` adds ``Authorization: Bearer``; timeouts (s):
    connecting (TLS included), and the longest silence since the request or its last byte. ``connections``
    counts the connections opened. A bad ``base_url`` raises ValueError."""

    def __init__(
        self,
        base_url: str,
        clock: Callable[[], float] = time.perf_counter,
        *,
        api_key: str | None = None,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 60.0,
    ) -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base URL must be http(s)://host[:port][/prefix], got {base_url!r}")
        self.host, self.tls, self.prefix = url.hostname, url.scheme == "https", url.path.rstrip("/")
        self.port = url.port or (443 if self.tls else 80)
        self.clock, self.connect_timeout_s, self.read_timeout_s = clock, connect_timeout_s, read_timeout_s
        host = f"[{self.host}]" if ":" in self.host else self.host
        auth = f"authorization: Bearer {api_key}\r\n" if api_key else ""
        self._fixed = (
            f"host: {host}:{self.port}\r\ncontent-type: application/json\r\n"
            f"accept: text/event-stream\r\nuser-agent: loadgen\r\n{auth}"
        )
        self.connections, self._busy = 0, False  # _busy: a response is not read to its end
        self.sent_s: float | None = None
        self.resent: str | None = None  # why the last request was sent again (post_stream), None: once
        self._wire: _Wire | None = None

    def _ready(self) -> bool:
        wire = self._wire  # idle, open, and no stray bytes since the last response
        return wire is not None and not wire.closed and not wire.pieces and not self._busy

    async def open(self) -> None:
        """Connect, unless an idle open connection is there. Raises TransportError."""
        if self._ready():
            return
        self.close()
        loop, context = asyncio.get_running_loop(), ssl.create_default_context() if self.tls else None
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                transport, wire = await loop.create_connection(
                    lambda: _Wire(self.clock), self.host, self.port, ssl=context
                )
        except TimeoutError:
            raise TransportError(f"connect timeout after {self.connect_timeout_s:g} s") from None
        except OSError as exc:
            why = _describe(exc) if isinstance(exc, ConnectionRefusedError) else f"cannot connect: {_describe(exc)}"
            raise TransportError(f"{why} ({self.host}:{self.port})") from None
        wire.transport, self._wire, self.connections = transport, wire, self.connections + 1

    def close(self) -> None:
        """Close the connection, if any; the next request opens a new one."""
        if self._wire is not None and self._wire.transport is not None:
            self._wire.transport.close()
        self._wire, self._busy = None, False

    async def post_stream(self, path: str, body: bytes, headers: Mapping[str, str] | None = None) -> StreamResponse:
        """POST ``body`` (JSON) to ``prefix + path`` with ``headers`` added to Host, Content-Type, Accept, ...;
        returns once the response head arrived. Raises TransportError; ``sent_s`` is set once written."""
        self.sent_s = None
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        request = (
            f"POST {self.prefix}{path} HTTP/1.1\r\n{self._fixed}{extra}content-length: {len(body)}\r\n\r\n"
        ).encode("latin-1") + body
        reused, self.resent = self._ready(), None
        await self.open()
        try:  # after another error the connection stays busy, so the next request reconnects
            return await self._exchange(request)
        except _Stale as exc:
            if not reused:
                raise
            why = str(exc)
        await self.open()  # the server had closed the idle connection: once more, on a new one
        self.resent = f"{why} on a reused connection: sent again on a new one"
        return await self._exchange(request)

    async def _exchange(self, request: bytes) -> StreamResponse:
        wire = self._wire
        assert wire is not None and wire.transport is not None
        self._busy, buf, received = True, b"", False
        self.sent_s = sent = arrival = self.clock()
        wire.last_s = wire.loop.time()  # the read timeout counts from here until a byte comes
        wire.transport.write(request)
        while True:
            if (end := buf.find(b"\r\n\r\n")) >= 0:
                head, buf = _parse_head(buf[:end]), buf[end + 4 :]
                if head is None:  # a 1xx interim response (RFC 9110 section 15.2)
                    continue
                if buf:  # body bytes that came with the head: read them first, with their arrival time
                    wire.pieces.appendleft((arrival, buf))
                return StreamResponse(self, head, sent)
            if len(buf) > _MAX_LINE:
                raise TransportError("response head too large")
            try:
                piece = await wire.next(self.read_timeout_s, "in the head" if received else "before the response")
            except TransportError as exc:  # a reset before any response byte: maybe a stale connection
                raise (_Stale(str(exc)) if wire.closed and not received else exc) from None
            if piece is None:
                raise (
                    TransportError("connection closed in the response head")
                    if received
                    else _Stale("connection closed before the response")
                )
            (arrival, data), received = piece, True
            buf += data
