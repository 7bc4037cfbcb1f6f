"""A Pushgateway that accepts connections and never answers (a real socket that is listened on and never read)
holds the run up once, not at every cell: the first push waits out its timeout (export.py ``push``'s 10 s) and
says that later cells are not pushed; the cells after it are recorded as not pushed, at once."""

from __future__ import annotations

import socket
import time

import pytest

from loadgen.measure.metrics import MeasuredRequest, cell_stats
from loadgen.run.observe import ObserveOptions, Observers
from tests.run.test_export import record

#: A timed run: make test runs it in a round of its own, after the end-to-end tests.
pytestmark = [pytest.mark.slow, pytest.mark.timed]


def test_a_gateway_that_never_answers_costs_one_timeout_not_one_per_cell() -> None:
    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen(16)
        url = f"http://127.0.0.1:{hole.getsockname()[1]}"
        lines: list[str] = []
        observers = Observers("p", ObserveOptions(pushgateway=url, progress=False), lines.append)
        stats = cell_stats(
            [
                MeasuredRequest(r.scheduled_s, r.send_s, r.chunk_arrivals_s, r.chunk_tokens, False)
                for r in (record(0), record(1))
            ],
            None,
        )
        t0 = time.monotonic()
        errors = [observers.cell_finished("plain", "w", 1, f"c{i}", stats, None)[0] for i in range(1, 5)]
        took = time.monotonic() - t0
        observers.close()
    assert 9.0 < took < 14.0, took  # one 10 s timeout, not four
    first, *later = errors
    assert first is not None and first.startswith(f"push to {url} failed: ") and "timed out" in first
    assert first.endswith("; later cells are not pushed, so the run is not held up by the gateway")
    assert all(e is not None and e.startswith("not pushed: an earlier push waited out its timeout") for e in later)
    assert len([line for line in lines if line.startswith("warning: ")]) == 1
