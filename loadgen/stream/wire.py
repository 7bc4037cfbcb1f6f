"""The connection's byte queue (an asyncio Protocol): pieces stamped with the connection's clock on
arrival, the pump that hands a response body over once per loop pass, and the lazy read-timeout timer
counted from the last byte (transport.py describes the client as a whole).
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections import deque
from collections.abc import Callable

from loadgen.stream.http1 import TransportError

#: bytes of a chunked body held undecoded at most: pieces under 1 KiB that cannot end the body are decoded
#: with the next one that can, or once this many bytes wait; decoding a stream's pieces in one batch costs
#: less CPU per piece than one piece per wake-up (docs/benchmarks.md, "Client CPU per chunk"). Their
#: arrival times are taken on arrival all the same.
HOLD_BYTES = 4096
HOLD_PIECE_BYTES = 1024  # a larger piece carries several chunks already: decoded at once


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
            if (
                self.hold
                and len(data) < HOLD_PIECE_BYTES
                and (held := self.held + len(data)) < HOLD_BYTES
                and data[:1] != b"0"
                and b"\n0" not in data
            ):
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
        return TransportError(
            f"read timeout: no data for {self.silence_s:.2f} s (limit {self._limit_s:g} s: [stop].read_timeout_s)"
        )

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
