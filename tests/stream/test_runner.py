"""Load schedules against a scripted SSE server on real loopback sockets."""

from __future__ import annotations

import itertools
import signal
import threading
import time

import pytest

from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level, Sampling
from loadgen.profile.workload import Prompt
from loadgen.records.request import RequestRecord
from loadgen.stream.loadloop import run_cell
from tests.support.scripted_server import DONE, Counters, completion_chunk, scripted_server, usage_chunk

#: Timed scripted runs: ratios a vLLM server's load beside them would move (make test runs them in a round of
#: their own, after the end-to-end tests).
pytestmark = pytest.mark.timed

# every request: 3 tokens over ~60 ms
STREAM = (
    200,
    [
        (0.02, completion_chunk(" a", [1])),
        (0.02, completion_chunk(" b", [2])),
        (0.02, completion_chunk(" c", [3], finish="length")),
        (0.0, usage_chunk(4, 3)),
        (0.0, DONE),
    ],
)


def _prompts(prefix: str, n: int) -> tuple[Prompt, ...]:
    return tuple(Prompt(f"{prefix}{i}", "w", "completions", f"{prefix}{i}", None, 3) for i in range(n))


def _run(
    plan: CellSpec,
    counters: Counters | None = None,
) -> tuple[list[RequestRecord], list[RequestRecord], list[str]]:
    seen: list[RequestRecord] = []
    events: list[str] = []
    with scripted_server({"*": STREAM}, counters) as url:
        measured = run_cell(url, "m", Sampling(), plan, seen.append, lambda: events.append("before"))
    return measured, seen, events


def test_closed_loop_phases_and_cooldown() -> None:
    plan = CellSpec(
        "w", "completions", Level(3), 0, _prompts("w", 2), _prompts("m", 7), _prompts("f", 12), role="plain"
    )
    measured, seen, events = _run(plan)
    assert events == ["before"]
    assert sorted(r.prompt_id for r in measured) == [f"m{i}" for i in range(7)]
    phases = [r.phase for r in seen]
    # the warmup finished before any measured request was sent
    first_measured = min(r.send_s for r in measured)
    assert all(r.done_s is not None and r.done_s <= first_measured for r in seen if r.phase == "warmup")
    assert phases.count("warmup") == 2
    # cooldown fillers keep slots busy while measured requests are in flight, and stop after
    last_done = max(r.done_s or 0.0 for r in measured)
    fillers = [r for r in seen if r.phase == "cooldown"]
    assert fillers, "free slots should send fillers while the last measured requests run"
    assert all(r.send_s <= last_done for r in fillers)
    assert all(r.output_tokens == 3 and r.error is None for r in seen)
    # closed loop: a request is scheduled when its worker became free and never sent before that
    assert all(r.send_s >= r.scheduled_s for r in measured)


def test_open_loop_follows_the_schedule() -> None:
    arrivals = tuple(0.03 * i for i in range(6))
    plan = CellSpec("w", "completions", Level(16, 33.0), measured=_prompts("m", 6), arrivals_s=arrivals, role="plain")
    measured, _, _ = _run(plan)
    by_id = {r.prompt_id: r for r in measured}
    start = by_id["m0"].arrival_s
    assert start is not None
    for i in range(6):
        r = by_id[f"m{i}"]
        assert r.arrival_s is not None and r.arrival_s - start == pytest.approx(0.03 * i, abs=1e-9)
        # no cap reached: it could be sent when due, and was not sent early
        assert r.scheduled_s == r.arrival_s
        assert r.send_s >= r.scheduled_s
        assert r.level == "r33"


def test_open_loop_cap_delays_but_is_not_send_lag() -> None:
    plan = CellSpec("w", "completions", Level(1), measured=_prompts("m", 3), arrivals_s=(0.0, 0.0, 0.0), role="plain")
    measured, _, _ = _run(plan)
    ordered = sorted(measured, key=lambda r: r.send_s)
    # with one slot, each request waits for the previous one: scheduled when the slot frees
    for prev, nxt in itertools.pairwise(ordered):
        assert prev.done_s is not None and nxt.scheduled_s >= prev.done_s - 1e-3
        assert nxt.scheduled_s > nxt.arrival_s  # type: ignore[operator]


def test_duration_stop_rule() -> None:
    plan = CellSpec("w", "completions", Level(1), measured=_prompts("m", 50), role="plain", duration_s=0.2)
    measured, _, _ = _run(plan)
    # each request takes ~60 ms: a 0.2 s window admits about 4, far fewer than the 50 prepared
    assert 1 <= len(measured) < 50
    first = min(r.send_s for r in measured)
    assert all(r.send_s - first <= 0.2 for r in measured)


def test_one_keep_alive_connection_per_slot() -> None:
    closed = Counters()
    plan = CellSpec("w", "completions", Level(3), 0, _prompts("w", 3), _prompts("m", 9), _prompts("f", 6), role="plain")
    _, seen, _ = _run(plan, closed)
    assert all(r.error is None for r in seen) and closed.requests == len(seen) > 9
    assert closed.connections == 3  # warmup, measured and cooldown over the same three connections
    opened = Counters()
    # open loop, 16 slots, but a request (~60 ms) every 30 ms keeps at most ~3 in flight: LIFO reuses them
    plan = CellSpec(
        "w",
        "completions",
        Level(16, 1.0),
        measured=_prompts("m", 8),
        arrivals_s=tuple(0.03 * i for i in range(8)),
        role="plain",
    )
    measured, _, _ = _run(plan, opened)
    assert all(r.error is None for r in measured) and opened.requests == 8
    # about 3 in flight on a quiet machine; a loaded one can stretch a request and open one or two more,
    # while a pool without LIFO reuse would open up to the 8 requests' worth
    assert opened.connections <= 6


@pytest.mark.slow
def test_an_interrupt_near_the_end_of_a_cell_is_never_lost() -> None:
    # SIGINT at moments spread over a cell's last part and just after it: every one must surface as
    # KeyboardInterrupt, from run_cell or (after the cell) from the code that runs next. asyncio.Runner's
    # handler raised it from inside the signal handler once the cell's task was done, where the next Python
    # code could be a weak-reference callback that drops it (2 to 4 lost in 60 such trials before the fix).
    plan = CellSpec(
        role="plain",
        workload="w",
        endpoint="completions",
        level=Level(2),
        warmup=_prompts("w", 1),
        measured=_prompts("m", 6),
    )
    # Python's own SIGINT handler, as in a terminal (a shell starts background jobs with SIGINT ignored)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        lost, cell_s = _interrupt_trials(plan)
    finally:
        signal.signal(signal.SIGINT, before)
    assert lost == [], f"interrupts lost at {lost} s into a {cell_s:.3f} s cell"


def _interrupt_trials(plan: CellSpec) -> tuple[list[float], float]:
    with scripted_server({"*": STREAM}) as url:
        t0 = time.perf_counter()
        run_cell(url, "m", Sampling(), plan, lambda r: None)
        cell_s = time.perf_counter() - t0
        lost = []
        main = threading.main_thread().ident
        assert main is not None and threading.current_thread() is threading.main_thread()
        for trial in range(40):
            delay = cell_s * (0.6 + 0.6 * trial / 40)
            # to the main thread, as a terminal's Ctrl-C reaches a single-threaded loadgen: a signal sent to
            # the process may land on a server thread, and the main thread would see it a little later
            timer = threading.Timer(delay, signal.pthread_kill, (main, signal.SIGINT))
            interrupted = False
            try:
                timer.start()
                run_cell(url, "m", Sampling(), plan, lambda r: None)
                timer.join()  # sent after the cell ended: it interrupts this wait or the sleep
                time.sleep(1.0)
            except KeyboardInterrupt:
                interrupted = True
            timer.join()
            if not interrupted:
                lost.append(round(delay, 3))
    return lost, cell_s
