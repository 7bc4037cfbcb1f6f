"""Strict JSON out: run files never hold NaN or Infinity (non-finite statistics are written as null),
and a request body with a non-finite number is refused before anything is sent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.profile.pair import Sampling
from loadgen.profile.workload import Prompt
from loadgen.records.request import RequestRecord
from loadgen.store.rundir import JsonlAppender, write_json
from loadgen.stream.client import build_payload, monotonic_clock, stream_request
from loadgen.stream.transport import StreamConnection
from tests.support.scripted_server import DONE, Counters, completion_chunk, scripted_server

NAN, INF = float("nan"), float("inf")
DIRTY = {
    "ratio": INF,
    "p50": NAN,
    "ok": 1.5,
    "nested": {"values": [1.0, -INF, NAN], "pair": (NAN, 2)},
    "text": "NaN",
    "none": None,
}
CLEAN = {
    "ratio": None,
    "p50": None,
    "ok": 1.5,
    "nested": {"values": [1.0, None, None], "pair": [None, 2]},
    "text": "NaN",
    "none": None,
}


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name} written")

    return json.loads(text, parse_constant=refuse)


def test_write_json_writes_non_finite_numbers_as_null(tmp_path: Path) -> None:
    write_json(tmp_path / "card.json", {"cells": [DIRTY]})
    assert _strict((tmp_path / "card.json").read_text()) == {"cells": [CLEAN]}


def test_jsonl_appender_writes_non_finite_numbers_as_null(tmp_path: Path) -> None:
    out = JsonlAppender(tmp_path / "cells.jsonl")
    out.append(DIRTY)
    out.append({"ok": 2.0})
    out.close()
    lines = (tmp_path / "cells.jsonl").read_text().splitlines()
    assert [_strict(line) for line in lines] == [CLEAN, {"ok": 2.0}]


def test_request_body_with_nan_is_never_sent() -> None:
    counters = Counters()

    async def go(sampling: Sampling) -> RequestRecord:
        with scripted_server(
            {"*": (200, [(0.0, completion_chunk(" a", [1], finish="length")), (0.0, DONE)])}, counters
        ) as url:
            p = Prompt("p0", "w", "completions", "hi", None, 1)
            rec = RequestRecord("p0", "plain", "w", 1, "measured", 0.0, requested_output_tokens=1)
            conn = StreamConnection(url, monotonic_clock(0.0), connect_timeout_s=5.0, read_timeout_s=5.0)
            try:
                return await stream_request(conn, build_payload(p, sampling, "m"), rec)
            finally:
                conn.close()

    with pytest.raises(ValueError, match="JSON compliant"):
        asyncio.run(go(Sampling(temperature=NAN)))
    assert counters.requests == 0
    record = asyncio.run(go(Sampling(temperature=0.0)))
    assert record.error is None and counters.requests == 1
