"""Closed-loop load schedules: a fixed number of in-flight requests per cell.

Closed loop at concurrency c: c workers each take the next prompt as soon as their previous request
finished. A request's scheduled send time is the moment its worker became free, so send lag (actual
send - scheduled send, DESIGN.md) measures the client's own delay. Every finished request is handed
to ``on_record`` at once (the caller appends it to requests.jsonl), so an interrupted cell keeps
everything that finished.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx

from loadgen.client import RequestRecord, build_payload, monotonic_clock, stream_request
from loadgen.pair import Sampling
from loadgen.workload import Prompt

#: Per-request time limits (s): connecting, and the longest silence allowed inside a stream.
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class CellPlan:
    """One cell: ``prompts`` sent at ``concurrency`` after ``warmup`` (excluded from statistics)."""

    role: str
    workload: str
    endpoint: str
    concurrency: int
    warmup: Sequence[Prompt]
    prompts: Sequence[Prompt]


async def _closed_loop(
    client: httpx.AsyncClient,
    base_url: str,
    model: str,
    sampling: Sampling,
    plan: CellPlan,
    prompts: Sequence[Prompt],
    warmup: bool,
    clock: Callable[[], float],
    on_record: Callable[[RequestRecord], None],
) -> list[RequestRecord]:
    queue: asyncio.Queue[Prompt] = asyncio.Queue()
    for p in prompts:
        queue.put_nowait(p)
    records: list[RequestRecord] = []

    async def worker() -> None:
        free_at = clock()
        while True:
            try:
                prompt = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            record = RequestRecord(
                prompt_id=prompt.prompt_id, role=plan.role, workload=plan.workload,
                concurrency=plan.concurrency, warmup=warmup, scheduled_s=free_at,
                requested_output_tokens=prompt.output_tokens,
            )
            body = build_payload(prompt, sampling, model)
            await stream_request(client, base_url, body, record, clock, plan.endpoint)
            records.append(record)
            on_record(record)
            free_at = clock()

    await asyncio.gather(*(worker() for _ in range(min(plan.concurrency, max(len(prompts), 1)))))
    return records


async def run_cell_async(
    base_url: str,
    model: str,
    sampling: Sampling,
    plan: CellPlan,
    on_record: Callable[[RequestRecord], None],
    before_measured: Callable[[], None] = lambda: None,
) -> tuple[list[RequestRecord], float]:
    """Run the warmup, call ``before_measured`` (e.g. the /metrics scrape), then the measured prompts.

    Returns the measured records and the cell clock's origin (a ``time.perf_counter`` value).
    """
    origin = time.perf_counter()
    clock = monotonic_clock(origin)
    limits = httpx.Limits(max_connections=plan.concurrency + 4, max_keepalive_connections=plan.concurrency + 4)
    timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        if plan.warmup:
            await _closed_loop(client, base_url, model, sampling, plan, plan.warmup, True, clock, on_record)
        before_measured()
        records = await _closed_loop(client, base_url, model, sampling, plan, plan.prompts, False, clock,
                                     on_record)
    return records, origin


def run_cell(
    base_url: str,
    model: str,
    sampling: Sampling,
    plan: CellPlan,
    on_record: Callable[[RequestRecord], None],
    before_measured: Callable[[], None] = lambda: None,
) -> list[RequestRecord]:
    """Synchronous wrapper of :func:`run_cell_async`; returns the measured records."""
    records, _ = asyncio.run(run_cell_async(base_url, model, sampling, plan, on_record, before_measured))
    return records
