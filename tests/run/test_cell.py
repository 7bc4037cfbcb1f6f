"""One cell on a server that fails some requests (the scripted SSE server on loopback: HTTP 429 and 500
with bodies, an error event inside a 200 stream, malformed JSON): every request is kept, each failure
gets its category, the cell's entry counts them, and the pair's error budget stops the run or lets it go
on. The scripted server has no ``/metrics``: the cell is marked and nothing crashes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import RunFailed
from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level, Pair
from loadgen.profile.pairfile import load_pair
from loadgen.profile.workload import Prompt
from loadgen.run.cell import run_cell_on
from tests.support.fakerun import attached, quiet_run
from tests.support.scripted_server import DONE, completion_chunk, scripted_server, usage_chunk

OK = [
    (0.0, completion_chunk(" a", [1])),
    (0.0, completion_chunk(" b", [2], finish="length")),
    (0.0, usage_chunk(2, 2)),
    (0.0, DONE),
]
SCRIPTS = {
    "ok": (200, OK),
    "429": (429, [(0.0, b'{"error": {"message": "rate limited", "type": "RateLimitError", "code": 429}}')]),
    "500": (500, [(0.0, b'{"error": {"message": "engine failed", "code": 500}}')]),
    "event": (200, [(0.0, completion_chunk(" a", [1])), (0.0, b'data: {"error": {"message": "engine dead"}}\n\n')]),
    "garbage": (200, [(0.0, b"data: {oops\n\n")]),
    "short": (200, [(0.0, completion_chunk(" a", [1], finish="length")), (0.0, usage_chunk(2, 1)), (0.0, DONE)]),
}


def _run(tmp_path: Path, prompts: list[str], on_error_budget: str) -> tuple[RunFailed | None, dict[str, Any], int]:
    base = load_pair("demo-cpu")
    pair: Pair = dataclasses.replace(
        base, stop=dataclasses.replace(base.stop, max_error_rate=0.25, on_error_budget=on_error_budget)
    )
    measured = tuple(Prompt(p, "w", "completions", p, None, 2) for p in prompts)
    cell = CellSpec("w", "completions", Level(2), 0, (), measured, (), None)
    failed: RunFailed | None = None
    with scripted_server(SCRIPTS) as url, quiet_run(tmp_path, pair) as run:
        try:
            run_cell_on(run, "plain", attached(url, "plain", tmp_path), cell)
        except RunFailed as exc:
            failed = exc
    entry = json.loads((tmp_path / "cells.jsonl").read_text().splitlines()[-1])
    return failed, entry, len((tmp_path / "requests.jsonl").read_text().splitlines())


FAULTY = ["ok", "429", "ok", "500", "ok", "event", "ok", "garbage"]


def test_errors_over_the_budget_stop_the_run_and_keep_every_request(tmp_path: Path) -> None:
    failed, entry, kept = _run(tmp_path, FAULTY, "stop")
    assert failed is not None and "4 of 8 requests failed" in str(failed)
    assert entry["errors"] == 4 and kept == 8
    assert entry["error_categories"] == {"http_429": 1, "http_5xx": 1, "error_event": 1, "malformed": 1}
    assert "max_error_rate = 0.25" in entry["failure"]
    assert "500" in entry["metrics_error"] and any("server metrics unavailable" in n for n in entry["notes"])
    assert entry["client"]["send_lag_s"]["count"] == 8 and entry["client"]["cpu_s"] > 0


def test_errors_over_the_budget_with_continue_mark_the_cell(tmp_path: Path) -> None:
    failed, entry, kept = _run(tmp_path, FAULTY, "continue")
    assert failed is None and entry["errors"] == 4 and kept == 8 and "over the error budget" in entry["failure"]


@pytest.mark.parametrize("bad", ["429", "500", "event", "garbage"])
def test_errors_within_the_budget_are_counted_not_failed(tmp_path: Path, bad: str) -> None:
    failed, entry, _ = _run(tmp_path, ["ok"] * 4 + [bad], "stop")  # 1 of 5 = 0.2 <= 0.25
    assert failed is None and entry["failure"] is None and entry["errors"] == 1


def test_outputs_shorter_than_requested_stop_the_run(tmp_path: Path) -> None:
    # ignore_eos with min_tokens = max_tokens on a server that does not honour them: no fair comparison
    failed, entry, written = _run(tmp_path, ["ok", "short", "ok", "ok"], "stop")
    assert failed is not None and "did not return their requested output length" in str(failed)
    assert entry["output_length_mismatches"] == 1 and entry["failure"] and written == 4


def test_outputs_shorter_than_requested_with_continue_mark_the_cell(tmp_path: Path) -> None:
    failed, entry, _ = _run(tmp_path, ["ok", "short", "ok", "ok"], "continue")
    assert failed is None and entry["output_length_mismatches"] == 1 and entry["failure"]
