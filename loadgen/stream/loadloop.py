"""Load schedules of one cell: closed loop (fixed concurrency) or open loop (arrival rate with a cap).

A cell runs in phases:

1. warmup: ``plan.warmup`` requests at the cell's concurrency, all finished before going on;
2. ``before_measured()`` (the caller's /metrics scrape);
3. measured: closed loop, c workers each take the next prompt as soon as their previous request
   finished; open loop, request i is due at ``arrival_offsets[i]`` and waits for a free slot when
   ``plan.concurrency`` are in flight. The stop rule is a request count or a duration;
4. cooldown (closed loop): free workers keep sending filler requests (excluded from statistics)
   until the last measured request has finished, so concurrency stays level to the end.

A request's ``scheduled_s`` is when it could first be sent (its worker became free, or its arrival
time and a free slot), so send lag = ``send_s - scheduled_s`` measures the client's own delay
(docs/metrics.md), including connecting when a slot's connection has to be (re)opened; ``arrival_s`` keeps
the open-loop schedule. Every finished request is handed to ``on_record`` at once, so an interrupted
cell keeps what finished.

Python's cyclic garbage collector is off during a cell: its passes walk the records kept so far and stop
the event loop meanwhile; in a 40 s cell at 256 streams (21,760 requests) they paused it 158 times, up
to 8.7 ms (a middle generation) and 33.5 ms (a full collection), and a chunk that arrives during a
pause is stamped after it. Streams make next to no reference cycles, so little memory waits; the one
full collection runs when the cell ends (about 100 ms there), when nothing is measured.

Streams go over :mod:`loadgen.transport`: one keep-alive :class:`StreamConnection` per slot (closed
loop: per worker; open loop: a pool of ``plan.concurrency`` connections, one handed out with each
semaphore slot), shared by warmup, measured phase and cooldown, and closed at the end of the cell.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Any, ParamSpec, TypeVar

import httpx

from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Sampling
from loadgen.profile.workload import Prompt
from loadgen.records.request import RequestRecord
from loadgen.stream.client import build_payload, monotonic_clock, stream_request
from loadgen.stream.transport import StreamConnection
from loadgen.util.tls import tls_context

T = TypeVar("T")
P = ParamSpec("P")

#: Per-request time limits (s): connecting, and the longest silence allowed inside a stream when the plan
#: gives none (a cell's comes from profile/timeouts.py: [stop].read_timeout_s or derived from the profile).
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
#: The open loop sleeps until this long before a request is due (s), then yields to the loop until it is:
#: uvloop's timers round to whole milliseconds, so a plain sleep left requests up to 1 ms late (p50 1.2 ms at
#: 200 requests/s; docs/benchmarks.md "Trace replay: send lag against the schedule").
FINE_WAIT_S = 0.001


def _read_timeout(plan: CellSpec) -> float:
    return READ_TIMEOUT_S if plan.read_timeout_s is None else plan.read_timeout_s


@dataclass
class _Cell:
    pool: list[StreamConnection]  # idle connections, one per slot (all of them between phases)
    model: str
    sampling: Sampling
    plan: CellSpec
    clock: Callable[[], float]
    on_record: Callable[[RequestRecord], None]
    records: list[RequestRecord] = field(default_factory=list)

    async def send(
        self, conn: StreamConnection, prompt: Prompt, phase: str, scheduled_s: float, arrival_s: float | None = None
    ) -> None:
        record = RequestRecord(
            prompt_id=prompt.prompt_id,
            role=self.plan.role,
            workload=self.plan.workload,
            concurrency=self.plan.concurrency,
            phase=phase,
            scheduled_s=scheduled_s,
            requested_output_tokens=prompt.output_tokens,
            arrival_s=arrival_s,
            level=self.plan.level.label,
            repetition=self.plan.repetition,
        )
        body = replace(build_payload(prompt, self.sampling, self.model), cache_salt=self.plan.cache_salt)
        record = await stream_request(conn, body, record, self.plan.endpoint)
        if phase == "measured":
            self.records.append(record)
        self.on_record(record)

    async def closed_loop(self, prompts: Sequence[Prompt], phase: str, fillers: Sequence[Prompt] = ()) -> None:
        """c workers over ``prompts``; then, while measured requests are in flight, over ``fillers``."""
        pending = list(reversed(prompts))
        spare = list(reversed(fillers))
        in_flight = 0
        deadline: float | None = None

        async def worker(conn: StreamConnection) -> None:
            nonlocal in_flight, deadline
            free_at = self.clock()
            while True:
                if pending and (deadline is None or self.clock() < deadline):
                    prompt, kind = pending.pop(), phase
                    if deadline is None and self.plan.duration_s is not None:
                        deadline = self.clock() + self.plan.duration_s
                    in_flight += 1
                elif in_flight > 0 and spare:
                    prompt, kind = spare.pop(), "cooldown"
                else:
                    return
                try:
                    await self.send(conn, prompt, kind, free_at)
                finally:
                    if kind == phase:
                        in_flight -= 1
                free_at = self.clock()

        workers = min(self.plan.concurrency, max(len(prompts), 1))
        # the pool's top (its end), so the open loop's LIFO hands out the connections a warmup opened first
        await asyncio.gather(*(worker(conn) for conn in self.pool[len(self.pool) - workers :]))

    async def open_loop(self, prompts: Sequence[Prompt], arrivals_s: Sequence[float]) -> None:
        """Send prompt i at ``start + arrivals_s[i]``, at most ``plan.concurrency`` in flight."""
        slots = asyncio.Semaphore(self.plan.concurrency)
        start = self.clock()
        tasks = []
        for prompt, offset in zip(prompts, arrivals_s, strict=True):
            due = start + offset
            if self.plan.duration_s is not None and offset > self.plan.duration_s:
                break
            while (delay := due - self.clock()) > 0:  # timers round to ms: sleep to 1 ms before, then yield
                await asyncio.sleep(delay - FINE_WAIT_S if delay > FINE_WAIT_S else 0)
            # a free slot: the request was sendable when due; otherwise from the moment a slot frees up
            scheduled = due
            if slots.locked():
                await slots.acquire()
                scheduled = self.clock()
            else:
                await slots.acquire()
            tasks.append(asyncio.create_task(self._release_after(slots, prompt, scheduled, due)))
        await asyncio.gather(*tasks)

    async def _release_after(self, slots: asyncio.Semaphore, prompt: Prompt, scheduled: float, due: float) -> None:
        conn = self.pool.pop()  # a slot is held, so a connection is free: the most recently used one
        try:
            await self.send(conn, prompt, "measured", scheduled, due)
        finally:
            self.pool.append(conn)
            slots.release()


async def run_cell_async(
    base_url: str,
    model: str,
    sampling: Sampling,
    plan: CellSpec,
    on_record: Callable[[RequestRecord], None],
    before_measured: Callable[[], None] = lambda: None,
    during_measured: Callable[[httpx.AsyncClient, Callable[[], float]], Coroutine[Any, Any, None]] | None = None,
    api_key: str | None = None,
) -> tuple[list[RequestRecord], float]:
    """Run the cell's phases (module docstring). ``during_measured(client, clock)`` (e.g. a gauge
    sampler) runs as a task during the measured phase, with a small httpx client of its own (streams do
    not use httpx), and is cancelled at its end. Returns the measured records (in completion order) and
    the cell clock's origin (a ``time.perf_counter`` value)."""
    origin = time.perf_counter()
    clock = monotonic_clock(origin)
    pool = [
        StreamConnection(
            base_url, clock, api_key=api_key, connect_timeout_s=CONNECT_TIMEOUT_S, read_timeout_s=_read_timeout(plan)
        )
        for _ in range(max(plan.concurrency, 1))
    ]
    cell = _Cell(pool, model, sampling, plan, clock, on_record)
    side: asyncio.Task[None] | None = None
    client: httpx.AsyncClient | None = None
    collecting = gc.isenabled()
    gc.disable()  # no collector pauses inside a cell (module docstring); back on, with a collection, at its end
    try:
        if plan.warmup:
            await cell.closed_loop(plan.warmup, "warmup")
        before_measured()
        if during_measured is not None:
            client = httpx.AsyncClient(
                timeout=httpx.Timeout(_read_timeout(plan), connect=CONNECT_TIMEOUT_S),
                headers={"Authorization": f"Bearer {api_key}"} if api_key else None,
                verify=tls_context(),
            )
            side = asyncio.create_task(during_measured(client, clock))
        if plan.arrivals_s is None:
            await cell.closed_loop(plan.measured, "measured", plan.cooldown)
        else:
            await cell.open_loop(plan.measured, plan.arrivals_s)
    finally:
        if side is not None:
            side.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await side
        if client is not None:
            await client.aclose()
        for conn in pool:
            conn.close()
        if collecting:
            gc.enable()
            gc.collect()
    return cell.records, origin


def run_in_cell_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end on a new loop from :func:`new_event_loop`, the loop every cell runs on.

    SIGINT and SIGTERM (in the main thread, unless ignored) only note the signal and cancel ``coro``;
    KeyboardInterrupt is raised here, once the loop has stopped, even when ``coro`` had already finished.
    asyncio.Runner's own handler raises KeyboardInterrupt from inside the signal handler once the task is
    done, and at the end of a cell the next Python code to run can be a weak-reference callback (a finished
    task leaving asyncio's task set), where an exception is printed and dropped: such a Ctrl-C was lost."""
    hits = 0
    main: asyncio.Task[T] | None = None

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal hits
        hits += 1
        if main is not None and not main.done():
            main.get_loop().call_soon_threadsafe(main.cancel)

    async def watched() -> T:
        nonlocal main
        main = asyncio.current_task()
        return await coro

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        previous = {
            sig: signal.signal(sig, on_signal)
            for sig in (signal.SIGINT, signal.SIGTERM)
            if signal.getsignal(sig) is not signal.SIG_IGN
        }  # an ignored signal stays ignored
    try:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:  # it leaves a handler it did not set alone
            result = runner.run(watched())
    except asyncio.CancelledError:
        if hits:
            raise KeyboardInterrupt from None
        raise
    finally:
        main = None  # the task is freed (and leaves asyncio's weak task set) while the signals are still noted
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
    if hits:
        raise KeyboardInterrupt
    return result


def new_event_loop() -> asyncio.AbstractEventLoop:
    """The event loop cells run on: uvloop's where it is installed (its C loop costs less CPU per chunk than
    asyncio's, docs/benchmarks.md), else asyncio's. Its timers round to whole milliseconds, which only the open
    loop's sleeps until an arrival use: it sleeps to :data:`FINE_WAIT_S` before the due time and yields to the
    loop from there, and the send lag (``send_s - scheduled_s``) accounts for any late wake-up."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _synchronous(
    fn: Callable[P, Coroutine[Any, Any, tuple[list[RequestRecord], float]]],
) -> Callable[P, list[RequestRecord]]:
    def run(*args: P.args, **kwargs: P.kwargs) -> list[RequestRecord]:
        records, _ = run_in_cell_loop(fn(*args, **kwargs))
        return records

    run.__doc__ = "Synchronous form of :func:`run_cell_async` (same arguments); returns the measured records."
    return run


#: :func:`run_cell_async` on the cell's own loop (:func:`run_in_cell_loop`), returning the measured records.
run_cell = _synchronous(run_cell_async)
