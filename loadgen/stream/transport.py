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
connection.

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
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

_MAX_LINE = 65536  # bytes: the longest chunk-size or trailer line, and the longest response head
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_STATUS = re.compile(r"HTTP/1\.([01]) (\d{3})(?: (.*))?")
_SIZE, _DATA, _DATA_END, _TRAILER = range(4)
#: bytes of a chunked body held undecoded at most: pieces under 1 KiB that cannot end the body are decoded
#: with the next one that can, or once this many bytes wait; decoding a stream's pieces in one batch costs
#: less CPU per piece than one piece per wake-up (docs/benchmarks.md, "Client CPU per chunk"). Their
#: arrival times are taken on arrival all the same.
HOLD_BYTES = 4096
HOLD_PIECE_BYTES = 1024  # a larger piece carries several chunks already: decoded at once
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

    @property
    def at_rest(self) -> bool:
        """True when the body cannot end unless a later piece starts with ``0`` or holds ``\\n0``: the
        last-chunk line (``0``, section 7.1) begins at a line start, and no size line is half read."""
        return self._state in (_DATA, _DATA_END) or (self._state == _SIZE and not self._buf)

    def feed(self, data: bytes) -> bytes:
        """Decode the next piece; returns the chunk data it completed, in order."""
        if self.done:
            self.tail += data
            return b""
        if self._state == _SIZE and not self._buf and (nl := data.find(b"\r\n", 0, 18)) > 0:
            size = data[:nl]  # fast path: the piece is one whole non-empty chunk, as servers write them
            if (_HEX.fullmatch(size) and len(data) == (stop := nl + 2 + int(size, 16)) + 2 and stop > nl + 2
                    and data.endswith(b"\r\n")):
                return data[nl + 2 : stop]
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

    Two ways to consume: a task awaits :meth:`next` (the response head), or a ``pump`` is set (the body,
    :meth:`StreamResponse.deliver`): arrivals then schedule one loop callback that hands every queued piece
    to the pump, so a stream costs no task wake-up per piece and every read of a loop pass is stamped
    before any of that pass's parsing. The read timeout counts from the last byte received (``last_s``,
    ``loop.time()`` of the last piece, held or not; of the request's send before any came). It is one lazy timer
    per connection, not one per piece: when it fires before the silence reached the limit, it re-arms
    itself for the limit counted from the last byte then (a timer per chunk cost more CPU than parsing
    the chunk)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.loop = asyncio.get_running_loop()
        self.clock, self.pieces, self.closed = clock, deque[tuple[float, bytes]](), False
        self.transport: asyncio.Transport | None = None  # set by StreamConnection.open
        self.exc: Exception | None = None  # why the connection was lost (None: EOF or still open)
        self.pump: Callable[[], None] | None = None  # set: it takes the pieces, from a loop callback
        self.hold = False  # the pump may wait for a piece that can end a chunked body (ChunkedDecoder.at_rest)
        self._pump_due, self.held = False, 0  # a pump is scheduled; bytes held since the last one
        self._waiter: asyncio.Future[None] | None = None
        self.last_s = self.loop.time()  # loop.time() of the last byte (or of the request sent after it)
        self._limit_s, self.silence_s = 0.0, 0.0  # the read timeout of the wait; the silence that broke it
        self._timer: asyncio.TimerHandle | None = None
        self._expired = False

    def data_received(self, data: bytes) -> None:
        self.last_s = self.loop.time()
        self.pieces.append((self.clock(), data))
        if self.pump is None:
            self.wake()
        elif not self._pump_due:
            if (self.hold and len(data) < HOLD_PIECE_BYTES and (held := self.held + len(data)) < HOLD_BYTES
                    and data[:1] != b"0" and b"\n0" not in data):
                self.held = held  # this piece cannot end the body: decoded later, with the next ones
                return
            self._pump_due = True
            self.loop.call_soon(self._run_pump)

    def _run_pump(self) -> None:
        self._pump_due = False
        if self.pump is not None:
            self.pump()

    def wake(self) -> None:
        """Resume the task waiting in :meth:`wait`, if any."""
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed, self.exc = True, self.exc or exc
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.wake()

    def _watch(self) -> None:
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return  # nobody waits: the next wait arms a new timer
        silence = self.loop.time() - self.last_s
        if silence < self._limit_s:
            self._timer = self.loop.call_later(self._limit_s - silence, self._watch)
            return
        if self.pieces and self.pump is not None:
            self._run_pump()  # held pieces came before the silence: handed over before the timeout
            if waiter.done():
                return
        self._expired, self.silence_s = True, silence
        waiter.set_result(None)

    async def wait(self, timeout_s: float) -> bool:
        """Wait for :meth:`wake` (data when no pump is set, the pump's call, EOF, a reset); False when no
        byte came for ``timeout_s`` since the last one (``silence_s`` then holds the silence observed)."""
        waiter = self._waiter = self.loop.create_future()
        self._limit_s, self._expired = timeout_s, False
        due = self.last_s + timeout_s
        if self._timer is not None and self._timer.when() > due:
            self._timer.cancel()
            self._timer = None
        if self._timer is None:
            self._timer = self.loop.call_at(due, self._watch)
        await waiter
        return not self._expired

    def timed_out(self) -> TransportError:
        """The read timeout's error: the silence observed and the key that sets the limit."""
        return TransportError(f"read timeout: no data for {self.silence_s:.2f} s "
                              f"(limit {self._limit_s:g} s: [stop].read_timeout_s)")

    def lost(self, where: str) -> TransportError | None:
        """The error of a connection that closed (None: a clean EOF)."""
        return None if self.exc is None else TransportError(f"{_describe(self.exc)} {where}")

    async def next(self, timeout_s: float, where: str = "mid-stream") -> tuple[float, bytes] | None:
        """The next piece; None at a clean EOF. Raises TransportError on a reset or a timeout."""
        while not self.pieces:
            if self.closed:
                if (err := self.lost(where)) is None:
                    return None
                raise err
            if not await self.wait(timeout_s) and not self.pieces and not self.closed:
                raise self.timed_out()
        return self.pieces.popleft()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return f"TLS error: {exc.reason or exc}"
    if isinstance(exc, OSError) and exc.errno is not None and exc.errno > 0:
        return os.strerror(exc.errno).lower()  # "connection refused", "connection reset by peer", ...
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)[:200] or type(exc).__name__


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

    def __init__(self, base_url: str, clock: Callable[[], float] = time.perf_counter, *, api_key: str | None = None,
                 connect_timeout_s: float = 10.0, read_timeout_s: float = 60.0) -> None:
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
