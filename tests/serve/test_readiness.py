"""Readiness over a real socket (the scripted SSE server): completions that fail while ``/health`` and
``/v1/models`` already answer are retried until one streams a token, within ``startup_timeout_s``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from loadgen.errors import ServerError
from loadgen.records.server import MinimalResponse
from loadgen.serve import readiness, servers
from tests.support.scripted_server import DONE, Counters, completion_chunk, models_body, scripted_server, usage_chunk

STREAM = [
    (0.0, completion_chunk(" a", [7])),
    (0.0, completion_chunk(" b c", [8, 9], finish="length")),
    (0.0, usage_chunk(1, 3)),
    (0.0, DONE),
]
GETS = {"/v1/models": (200, models_body("m"))}


def _spec(url: str, tmp_path: Path, timeout_s: float) -> servers.LaunchSpec:
    return servers.LaunchSpec("plain", [], {}, "127.0.0.1", 0, "m", timeout_s, tmp_path / "log", attach_url=url)


def test_completions_failing_during_startup_are_retried(tmp_path: Path) -> None:
    counters = Counters()
    starting = [(404, [(0.0, b'{"detail": "Not Found"}')])] * 2 + [(500, [(0.0, b'{"error": "loading"}')])]
    with (
        scripted_server({"Hello": [*starting, (200, STREAM)]}, counters, GETS) as url,
        servers.running(_spec(url, tmp_path, 30.0)) as server,
    ):
        response = server.minimal_response
    assert counters.requests == 4
    assert response is not None and response.attempts == 4
    assert response.to_json() == {
        "choices": [{"text": " a b c"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4},
        "chunk_tokens": [1, 2],
        "chunk_tokens_exact": True,
        "attempts": 4,
    }
    assert response.tokens == 3


def test_a_completion_without_tokens_is_no_readiness(tmp_path: Path) -> None:
    empty = [(0.0, usage_chunk(1, 0)), (0.0, DONE)]
    with (
        scripted_server({"Hello": [(200, empty), (200, STREAM)]}, None, GETS) as url,
        servers.running(_spec(url, tmp_path, 30.0)) as server,
    ):
        assert server.minimal_response is not None and server.minimal_response.attempts == 2


def test_completions_that_never_succeed_fail_at_the_startup_limit(tmp_path: Path) -> None:
    started = time.monotonic()
    with (
        scripted_server({"Hello": (500, [(0.0, b'{"error": "engine not ready"}')])}, None, GETS) as url,
        pytest.raises(ServerError, match="within the start-up limit; last: HTTP 500"),
        servers.running(_spec(url, tmp_path, 1.5)),
    ):
        pass
    assert 0.7 < time.monotonic() - started < 5.0


def test_read_stream_counts_tokens_per_chunk() -> None:
    lines = [line for _, raw in STREAM for line in raw.decode().splitlines()]
    folded = readiness.read_stream(lines)
    assert isinstance(folded, MinimalResponse) and folded.chunk_tokens == (1, 2)
    assert readiness.read_stream(['data: {"error": {"message": "x"}}']) == readiness.StreamError({"message": "x"})


def test_a_minimal_completion_that_stalls_ends_at_the_startup_limit(tmp_path: Path) -> None:
    # one token, then 30 s of silence: the start-up limit (2 s) bounds the wait, not a fixed read timeout
    stalled = [(0.0, completion_chunk(" a", [7])), (30.0, DONE)]
    started = time.monotonic()
    with (
        scripted_server({"Hello": (200, stalled)}, None, GETS) as url,
        pytest.raises(
            ServerError, match="no complete minimal completion in 1 tries within the start-up limit; last: ReadTimeout"
        ),
        servers.running(_spec(url, tmp_path, 2.0)),
    ):
        pass
    assert time.monotonic() - started < 6.0
