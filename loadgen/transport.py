"""A small asyncio HTTP/1.1 client for streaming POSTs, built for timing accuracy.

One :class:`StreamConnection` per concurrency slot: a keep-alive connection that sends one request at a
time and reconnects when the server closed it or after an error. The request (head and body) goes out
in one write, and :attr:`StreamConnection.sent_s` is taken right before it; each piece of the response
is stamped with the clock the moment the event loop reads it from the socket (``data_received``),
before any parsing. Times are seconds on the ``clock`` given (the cell clock). Body framing follows
RFC 9112 section 6.3: chunked transfer coding (section 7.1, decoded by the pure
:class:`ChunkedDecoder`), ``Content-Length``, or close-delimited; 1xx interim responses are skipped.

Failures raise :class:`TransportError` with a short message: ``connection refused (host:port)``,
``connect timeout after 10 s``, ``read timeout: no data for 300 s``, ``connection reset mid-stream``,
``connection closed mid-stream``, ``connection closed before the response``, ``bad status line: ...``,
``TLS error: ...``. A request on a reused connection that the server had closed meanwhile (nothing
received) is sent once more on a new connection, as browsers and urllib3 do.

Differences from httpx: no proxies (``HTTP(S)_PROXY`` are ignored), no HTTP/2, no redirects, no
cookies, no compression (no ``Accept-Encoding`` is sent); ``https://`` verifies certificates with
``ssl.create_default_context()`` (the system store; ``SSL_CERT_FILE`` applies); the connect time of a
new connection comes before ``sent_s`` (so it is send lag, not TTFT).
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from typing import cast
from urllib.parse import urlsplit

__all__ = ["ChunkedDecoder", "StreamConnection", "StreamResponse", "TransportError"]

_MAX_LINE = 65536  # bytes: longest chunk-size or trailer line, and the whole response head
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_STATUS = re.compile(r"HTTP/1\.([01]) (\d{3})(?: (.*))?")
_DIGITS = re.compile(r"[0-9]{1,18}")
_SIZE, _DATA, _DATA_END, _TRAILER = range(4)


class TransportError(Exception):
    """A request failed in the transport; ``str(err)`` is a short message (module docstring)."""


class _Lost(TransportError):
    """The peer closed the connection with an error (e.g. a reset) while a response was awaited."""


class _Stale(TransportError):
    """The connection was closed before any byte of the response (maybe before the request)."""


class ChunkedDecoder:
    """Incremental decoder of the chunked transfer coding (RFC 9112 section 7.1); pure, no I/O.

    :meth:`feed` takes the message body's bytes split anywhere and returns the data they complete
    (``b""`` when none): the output is the same for every split. Chunk extensions and trailer fields
    are read and discarded; a bare LF is accepted as a line end (RFC 9112 section 2.2). ``done`` turns
    True after the last chunk's trailer section; bytes after that are kept in ``tail`` (they belong
    to no message). Raises :class:`TransportError` for a bad chunk-size line, chunk data not followed
    by CRLF, or a line over 64 KiB.
    """

    def __init__(self) -> None:
        self._state = _SIZE
        self._left = 0  # bytes of chunk data still to come
        self._buf = b""  # an unterminated line
        self.done = False
        self.tail = b""

    def feed(self, data: bytes) -> bytes:
        """Decode the next piece; returns the chunk data it completed, in order."""
        if self.done:
            self.tail += data
            return b""
        buf, self._buf = (self._buf + data if self._buf else data), b""
        out: list[bytes] = []
        pos, end = 0, len(buf)
        while pos < end:
            if self._state == _DATA:
                take = min(self._left, end - pos)
                out.append(buf[pos : pos + take])
                pos += take
                self._left -= take
                if not self._left:
                    self._state = _DATA_END
                continue
            nl = buf.find(b"\n", pos, pos + _MAX_LINE + 1)
            if nl < 0:
                if end - pos > _MAX_LINE:
                    raise TransportError("chunked body: line too long")
                self._buf = buf[pos:]
                break
            line = buf[pos : nl - 1] if nl > pos and buf[nl - 1] == 13 else buf[pos:nl]
            pos = nl + 1
            if self._state == _SIZE:
                size = line.split(b";", 1)[0].strip(b" \t")
                if not _HEX.fullmatch(size):
                    raise TransportError(f"chunked body: bad chunk-size line {line[:40]!r}")
                self._left = int(size, 16)
                self._state = _DATA if self._left else _TRAILER
            elif self._state == _DATA_END:
                if line:
                    raise TransportError("chunked body: chunk data not followed by CRLF")
                self._state = _SIZE
            elif not line:  # the blank line that ends the trailer section
                self.done, self.tail = True, buf[pos:]
                break
        return out[0] if len(out) == 1 else b"".join(out)


class _Wire(asyncio.Protocol):
    """Queues (arrival time, bytes) as the loop reads them; remembers EOF and the closing error."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.pieces: deque[tuple[float, bytes]] = deque()
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.exc: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.pieces.append((self.clock(), data))
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def eof_received(self) -> bool:
        self.connection_lost(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed, self.exc = True, self.exc or exc
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def next(self, timeout_s: float, where: str = "mid-stream") -> tuple[float, bytes] | None:
        """The next piece; None at a clean EOF. Raises _Lost (reset) or TransportError (timeout)."""
        while not self.pieces:
            if self.closed:
                if self.exc is not None:
                    raise _Lost(_describe(self.exc, where))
                return None
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(timeout_s, _expire, waiter, timeout_s)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        return self.pieces.popleft()


def _expire(waiter: asyncio.Future[None], timeout_s: float) -> None:
    if not waiter.done():
        waiter.set_exception(TransportError(f"read timeout: no data for {timeout_s:g} s"))


def _describe(exc: BaseException, where: str) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError | BrokenPipeError):
        return f"connection reset {where}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error: {exc.reason or exc}"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host: {exc.strerror}"
    return f"{(exc.strerror if isinstance(exc, OSError) else None) or type(exc).__name__} {where}"


class StreamResponse:
    """A response whose head has arrived; iterate it for the body.

    ``status`` (int), ``reason``, ``headers`` (lower-cased names; repeated fields joined with ``", "``),
    ``sent_s`` (clock value right before the request was written). ``async for arrival_s, data in
    response`` yields the de-chunked body in pieces as they arrived (``arrival_s`` on the connection's
    clock, taken before parsing; pieces are never empty); :meth:`read` returns the rest of it joined.
    Read it to its end (``complete``) before the connection's next request, or that request reconnects.
    Reading raises :class:`TransportError`, after which the connection reconnects on its next request.
    """

    def __init__(self, conn: StreamConnection, status: int, reason: str, headers: dict[str, str], sent_s: float,
                 framing: str, length: int, keep_alive: bool, first: tuple[float, bytes]) -> None:
        self.status, self.reason, self.headers, self.sent_s = status, reason, headers, sent_s
        self.complete = False
        self._conn, self._framing, self._left, self._keep = conn, framing, length, keep_alive
        self._wire = conn._wire  # the connection this response arrived on
        self._chunked = ChunkedDecoder()
        self._first: tuple[float, bytes] | None = first
        if framing == "none" or (framing == "length" and length == 0):
            self._finish(first[1])

    def __aiter__(self) -> AsyncIterator[tuple[float, bytes]]:
        return self._pieces()

    async def read(self) -> bytes:
        """The rest of the body (bytes)."""
        return b"".join([data async for _, data in self])

    async def _pieces(self) -> AsyncIterator[tuple[float, bytes]]:
        piece, self._first = self._first, None
        wire, timeout_s = self._wire, self._conn.read_timeout_s
        try:
            while not self.complete:
                if piece is None:
                    assert wire is not None
                    piece = await wire.next(timeout_s)
                    if piece is None:
                        if self._framing != "close":
                            raise TransportError("connection closed mid-stream")
                        self._finish(b"")
                        return
                arrival, data = piece
                piece = None
                body = self._decode(data)
                if body:
                    yield arrival, body
        except TransportError:
            if self._conn._wire is wire:
                self._conn.close()
            raise

    def _decode(self, data: bytes) -> bytes:
        if self._framing == "chunked":
            body = self._chunked.feed(data)
            if self._chunked.done:
                self._finish(self._chunked.tail)
            return body
        if self._framing == "length":
            body, rest = data[: self._left], data[self._left :]
            self._left -= len(body)
            if not self._left:
                self._finish(rest)
            return body
        return data

    def _finish(self, extra: bytes) -> None:
        self.complete = True
        if self._conn._wire is self._wire:
            self._conn._release(self._keep and not extra)


class StreamConnection:
    """One keep-alive HTTP/1.1 connection to ``base_url`` (``http://`` or ``https://``, optional path
    prefix); it is opened on the first request. ``clock`` returns seconds (default ``time.perf_counter``);
    ``api_key`` adds ``Authorization: Bearer``; timeouts in seconds: connecting (TLS included) and the
    longest silence while waiting for response bytes. ``connections`` counts TCP connections opened.
    A bad ``base_url`` raises ValueError; everything else raises :class:`TransportError`.
    """

    def __init__(self, base_url: str, clock: Callable[[], float] = time.perf_counter, *, api_key: str | None = None,
                 connect_timeout_s: float = 10.0, read_timeout_s: float = 300.0) -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base URL must be http://host[:port] or https://..., got {base_url!r}")
        self.host, self.tls = url.hostname, url.scheme == "https"
        self.port = url.port or (443 if self.tls else 80)
        self.clock, self.connect_timeout_s, self.read_timeout_s = clock, connect_timeout_s, read_timeout_s
        self.prefix = url.path.rstrip("/")
        name = f"[{self.host}]" if ":" in self.host else self.host
        authority = name if url.port in (None, 443 if self.tls else 80) else f"{name}:{self.port}"
        auth = f"authorization: Bearer {api_key}\r\n" if api_key else ""
        self._fixed = (f"host: {authority}\r\ncontent-type: application/json\r\naccept: text/event-stream\r\n"
                       f"user-agent: loadgen\r\n{auth}")
        self.connections = 0
        self.sent_s: float | None = None
        self._wire: _Wire | None = None
        self._busy = False

    def _ready(self) -> bool:
        wire = self._wire
        return wire is not None and not wire.closed and not wire.pieces and not self._busy

    async def open(self) -> None:
        """Connect unless an idle, open connection is there. Raises TransportError."""
        if self._ready():
            return
        self.close()
        loop = asyncio.get_running_loop()
        context = ssl.create_default_context() if self.tls else None
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                _, wire = await loop.create_connection(lambda: _Wire(self.clock), self.host, self.port, ssl=context)
        except TimeoutError:
            raise TransportError(f"connect timeout after {self.connect_timeout_s:g} s") from None
        except OSError as exc:
            raise TransportError(f"{_describe(exc, 'while connecting')} ({self.host}:{self.port})") from None
        self._wire, self.connections = wire, self.connections + 1

    def close(self) -> None:
        """Close the connection (if any); the next request opens a new one."""
        if self._wire is not None and self._wire.transport is not None:
            self._wire.transport.close()
        self._wire, self._busy = None, False

    async def post_stream(self, path: str, body: bytes, headers: Mapping[str, str] | None = None) -> StreamResponse:
        """POST ``body`` (JSON bytes) to ``prefix + path``; returns once the response head arrived.

        ``headers`` are added to the fixed ones (Host, Content-Type, Accept, User-Agent, Authorization,
        Content-Length). Raises TransportError; ``sent_s`` is set if the request was written.
        """
        self.sent_s = None
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        request = (f"POST {self.prefix}{path} HTTP/1.1\r\n{self._fixed}{extra}content-length: {len(body)}\r\n\r\n"
                   ).encode("latin-1") + body
        for retry in (False, True):
            reused = self._ready()
            await self.open()
            try:
                return await self._exchange(request)
            except _Stale as exc:
                self.close()
                if not reused or retry:
                    raise TransportError(str(exc)) from None
            except TransportError:
                self.close()
                raise
        raise AssertionError("unreachable")

    async def _exchange(self, request: bytes) -> StreamResponse:
        wire = self._wire
        assert wire is not None and wire.transport is not None
        self._busy = True
        self.sent_s = sent = self.clock()
        wire.transport.write(request)
        buf, arrival, received = b"", sent, False
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _MAX_LINE:
                    raise TransportError("response head too large")
                try:
                    piece = await wire.next(self.read_timeout_s, "in the response head" if received
                                            else "before the response")
                except _Lost as exc:
                    raise (TransportError(str(exc)) if received else _Stale(str(exc))) from None
                if piece is None:
                    raise (TransportError("connection closed in the response head") if received
                           else _Stale("connection closed before the response"))
                arrival, data = piece
                buf, received = buf + data, True
                continue
            lines = buf[:end].decode("latin-1").split("\r\n")
            buf = buf[end + 4 :]
            match = _STATUS.fullmatch(lines[0])
            if match is None:
                raise TransportError(f"bad status line: {lines[0][:60]!r}")
            status = int(match.group(2))
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, colon, value = line.partition(":")
                if not colon or not name or name != name.strip():
                    raise TransportError(f"bad header line: {line[:60]!r}")
                key, value = name.lower(), value.strip(" \t")
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
            if 100 <= status < 200 and status != 101:
                continue  # interim response (RFC 9110 section 15.2): the final one follows
            framing, length = _framing(status, headers)
            keep = (match.group(1) == "1" and framing != "close"
                    and "close" not in {t.strip().lower() for t in headers.get("connection", "").split(",")})
            return StreamResponse(self, status, match.group(3) or "", headers, sent, framing, length, keep,
                                  (arrival, buf))

    def _release(self, reusable: bool) -> None:
        self._busy = False
        if not reusable:
            self.close()

    async def __aenter__(self) -> StreamConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


def _framing(status: int, headers: dict[str, str]) -> tuple[str, int]:
    """("none" | "chunked" | "length" | "close", Content-Length) per RFC 9112 section 6.3."""
    if status == 101:
        raise TransportError("unexpected 101 Switching Protocols")
    if status in (204, 304):
        return "none", 0
    coding = headers.get("transfer-encoding")
    if coding is not None:
        return ("chunked" if coding.rsplit(",", 1)[-1].strip().lower() == "chunked" else "close"), 0
    if "content-length" not in headers:
        return "close", 0
    values = {v.strip() for v in headers["content-length"].split(",")}
    value = values.pop()
    if values or not _DIGITS.fullmatch(value):
        raise TransportError(f"bad Content-Length: {headers['content-length'][:40]!r}")
    return "length", int(value)
