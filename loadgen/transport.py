"""A small asyncio HTTP/1.1 client for streaming POSTs, built for timing accuracy.

One :class:`StreamConnection` per concurrency slot: keep-alive, one request at a time, reconnecting when
the server closed the connection or after an error. A request is one write, ``sent_s`` taken right before
it; each response piece is stamped with the connection's clock (seconds) when the event loop reads it,
before any parsing. Framing per RFC 9112 section 6.3: chunked (section 7.1, the pure
:class:`ChunkedDecoder`), ``Content-Length`` or close-delimited. Failures raise :class:`TransportError`
with a short message (``connection refused (host:port)``, ``connect timeout after 10 s``, ``read timeout:
no data for 300 s``, ``connection reset by peer mid-stream``, ``connection closed mid-stream``, ``bad
status line: ...``, ``TLS error: ...``). A request on a reused connection that the server had closed (no
response byte came) is sent once more, on a new connection.

Unlike httpx: proxies are not supported (``HTTP(S)_PROXY`` is ignored), nor HTTP/2, redirects, cookies,
compression; ``https://`` verifies with ``ssl.create_default_context()``; connect time is not in TTFT.
"""

from __future__ import annotations

import asyncio
import os
import re
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from urllib.parse import urlsplit

_MAX_LINE = 65536  # bytes: the longest chunk-size or trailer line, and the longest response head
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_STATUS = re.compile(r"HTTP/1\.([01]) (\d{3})(?: (.*))?")
_SIZE, _DATA, _DATA_END, _TRAILER = range(4)
Head = tuple[int, str, dict[str, str], str, int, bool]  # status, reason, headers, framing, length, keep-alive


class TransportError(Exception):
    """A request failed in the transport; ``str(err)`` is a short message (module docstring)."""


class _Stale(TransportError):
    """The connection was closed before any byte of the response came."""


class ChunkedDecoder:
    """Incremental decoder of the chunked transfer coding (RFC 9112 section 7.1); pure, no I/O. :meth:`feed`
    takes the body split anywhere and returns the chunk data completed (``b""`` if none), the same for any
    split. Extensions and trailers are discarded; a bare LF ends a line too (section 2.2). ``done`` after the
    trailer section; later bytes go to ``tail``. Bad size line, data without CRLF: TransportError."""

    def __init__(self) -> None:
        self._state, self._left, self._buf = _SIZE, 0, b""  # _left: chunk data to come; _buf: partial line
        self.done, self.tail = False, b""

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
                pos, self._left = pos + take, self._left - take
                self._state = _DATA if self._left else _DATA_END
                continue
            nl = buf.find(b"\n", pos, pos + _MAX_LINE + 1)
            if nl < 0:
                if end - pos > _MAX_LINE:
                    raise TransportError("chunked body: line too long")
                self._buf = buf[pos:]
                break
            line = buf[pos : nl - 1] if nl > pos and buf[nl - 1] == 13 else buf[pos:nl]  # 13: CR
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
    """Queues (arrival time, bytes) as the loop reads them; remembers EOF and the closing error.

    The read timeout is one lazy timer per connection, not one per wait: a wait moves the deadline, and
    the timer, when it fires early, re-arms itself for the deadline then in force (a timer per chunk
    cost more CPU than parsing the chunk)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock, self.pieces, self.closed = clock, deque[tuple[float, bytes]](), False
        self.transport: asyncio.Transport | None = None  # set by StreamConnection.open
        self.exc: Exception | None = None  # why the connection was lost (None: EOF or still open)
        self._waiter: asyncio.Future[None] | None = None
        self._deadline, self._expired = 0.0, False  # loop.time() by which data must come; it passed
        self._timer: asyncio.TimerHandle | None = None

    def data_received(self, data: bytes) -> None:
        self.pieces.append((self.clock(), data))
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed, self.exc = True, self.exc or exc
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _watch(self) -> None:
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return  # nobody waits: the next wait arms a new timer
        loop = waiter.get_loop()
        if loop.time() < self._deadline:
            self._timer = loop.call_at(self._deadline, self._watch)
        else:
            self._expired = True
            waiter.set_result(None)

    async def next(self, timeout_s: float, where: str = "mid-stream") -> tuple[float, bytes] | None:
        """The next piece; None at a clean EOF. Raises TransportError on a reset or a timeout."""
        while not self.pieces:
            if self.closed:
                if self.exc is None:
                    return None
                raise TransportError(f"{_describe(self.exc)} {where}")
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            self._deadline, self._expired = loop.time() + timeout_s, False
            if self._timer is not None and self._timer.when() > self._deadline:
                self._timer.cancel()
                self._timer = None
            if self._timer is None:
                self._timer = loop.call_at(self._deadline, self._watch)
            await waiter
            if self._expired and not self.pieces and not self.closed:
                raise TransportError(f"read timeout: no data for {timeout_s:g} s")
        return self.pieces.popleft()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return f"TLS error: {exc.reason or exc}"
    if isinstance(exc, OSError) and exc.errno is not None and exc.errno > 0:
        return os.strerror(exc.errno).lower()  # "connection refused", "connection reset by peer", ...
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)[:200] or type(exc).__name__


class StreamResponse:
    """A response whose head has arrived: ``status``, ``reason``, ``headers`` (lower-cased names, repeats
    joined by ``", "``), ``sent_s``. ``async for arrival_s, data in response`` yields the de-chunked body
    in non-empty pieces as they arrived; :meth:`read` returns the rest joined. Read it to its end
    (``complete``) before the next request, or that one reconnects. Reading may raise TransportError."""

    def __init__(self, conn: StreamConnection, head: Head, sent_s: float) -> None:
        self.status, self.reason, self.headers, self._framing, self._left, self._keep = head
        self.sent_s, self.complete, self._chunked, self._conn = sent_s, False, ChunkedDecoder(), conn
        if self._framing == "none" or (self._framing == "length" and self._left == 0):
            self._finish()

    async def read(self) -> bytes:
        """The rest of the body (bytes)."""
        return b"".join([data async for _, data in self])

    async def __aiter__(self) -> AsyncIterator[tuple[float, bytes]]:
        wire, timeout_s = self._conn._wire, self._conn.read_timeout_s
        while not self.complete:  # an error leaves the connection busy: the next request reconnects
            if wire and wire.pieces:  # no coroutine call when a piece is already queued
                arrival, data = wire.pieces.popleft()
            elif (piece := await wire.next(timeout_s) if wire else None) is not None:
                arrival, data = piece
            else:
                if self._framing != "close":
                    raise TransportError("connection closed mid-stream")
                self._finish()
                return
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
                yield arrival, body

    def _finish(self, extra: bytes = b"") -> None:
        self.complete, self._conn._busy = True, False
        if not self._keep or extra:  # bytes after the response: the connection is not reused
            self._conn.close()


class StreamConnection:
    """One keep-alive HTTP/1.1 connection to ``base_url`` (``http(s)://host[:port][/prefix]``), opened on
    the first request. ``clock`` returns seconds; ``api_key`` adds ``Authorization: Bearer``; timeouts (s):
    connecting (TLS included), and the longest silence while a response is awaited. ``connections``
    counts the connections opened. A bad ``base_url`` raises ValueError."""

    def __init__(self, base_url: str, clock: Callable[[], float] = time.perf_counter, *, api_key: str | None = None,
                 connect_timeout_s: float = 10.0, read_timeout_s: float = 300.0) -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base URL must be http(s)://host[:port][/prefix], got {base_url!r}")
        self.host, self.tls, self.prefix = url.hostname, url.scheme == "https", url.path.rstrip("/")
        self.port = url.port or (443 if self.tls else 80)
        self.clock, self.connect_timeout_s, self.read_timeout_s = clock, connect_timeout_s, read_timeout_s
        host = f"[{self.host}]" if ":" in self.host else self.host
        auth = f"authorization: Bearer {api_key}\r\n" if api_key else ""
        self._fixed = (f"host: {host}:{self.port}\r\ncontent-type: application/json\r\n"
                       f"accept: text/event-stream\r\nuser-agent: loadgen\r\n{auth}")
        self.connections, self._busy = 0, False  # _busy: a response is not read to its end
        self.sent_s: float | None = None
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
                transport, wire = await loop.create_connection(lambda: _Wire(self.clock), self.host, self.port,
                                                               ssl=context)
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
        request = (f"POST {self.prefix}{path} HTTP/1.1\r\n{self._fixed}{extra}content-length: {len(body)}\r\n\r\n"
                   ).encode("latin-1") + body
        reused = self._ready()
        await self.open()
        try:  # after another error the connection stays busy, so the next request reconnects
            return await self._exchange(request)
        except _Stale:
            if not reused:
                raise
        await self.open()  # the server had closed the idle connection: once more, on a new one
        return await self._exchange(request)

    async def _exchange(self, request: bytes) -> StreamResponse:
        wire = self._wire
        assert wire is not None and wire.transport is not None
        self._busy, buf, received = True, b"", False
        self.sent_s = sent = arrival = self.clock()
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
                raise (TransportError("connection closed in the response head") if received
                       else _Stale("connection closed before the response"))
            (arrival, data), received = piece, True
            buf += data


def _parse_head(head: bytes) -> Head | None:
    """Status line and fields of a response head; None for a 1xx (interim) response. Framing per RFC 9112
    section 6.3: "none" (204, 304), "chunked", "length" (Content-Length), else "close"."""
    lines = head.decode("latin-1").split("\r\n")
    if (match := _STATUS.fullmatch(lines[0])) is None:
        raise TransportError(f"bad status line: {lines[0][:60]!r}")
    status, headers = int(match.group(2)), dict[str, str]()
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise TransportError(f"bad header line: {line[:60]!r}")
        key, value = name.lower(), value.strip(" \t")
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if status < 200:  # 101 cannot come: no Upgrade is ever sent (RFC 9110 section 15.2.2)
        return None
    framing, length = "close", 0
    if status in (204, 304):
        framing = "none"
    elif (coding := headers.get("transfer-encoding")) is not None:
        framing = "chunked" if coding.rsplit(",", 1)[-1].strip().lower() == "chunked" else "close"
    elif "content-length" in headers:
        if not re.fullmatch(r"[0-9]{1,18}", value := headers["content-length"].strip()):
            raise TransportError(f"bad Content-Length: {value[:40]!r}")
        framing, length = "length", int(value)
    tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    keep = match.group(1) == "1" and framing != "close" and "close" not in tokens
    return status, match.group(3) or "", headers, framing, length, keep
