"""Per-request outcomes end to end: streams that end without a token are failed requests (category
``no_tokens``) through the real client on the scripted SSE server, and a run folder written by the real cell
path (two scripted servers) gives the same failed counts in cells.jsonl, card.json, card.md and the summary,
plus finish reasons, stop-rule differences, usage mismatches and first chunks with several tokens."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from loadgen.cli.summary import print_summary
from loadgen.measure.faults import classify
from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level
from loadgen.profile.pairfile import load_pair
from loadgen.profile.workload import Prompt
from loadgen.records.request import RequestRecord
from loadgen.report.carddata import build_card
from loadgen.run.cell import run_cell_on
from loadgen.store.files import load_records
from tests.support.cards import card_record, markdown
from tests.support.fakerun import attached, fetch_one, quiet_run
from tests.support.scripted_server import DONE, completion_chunk, scripted_server, usage_chunk

ROLE_CHUNK = (
    b'data: {"id": "chat-1", "object": "chat.completion.chunk", "choices": [{"index": 0, '
    b'"delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}]}\n\n'
)
EMPTY = {
    "only-done": (200, [(0.0, DONE)]),
    "only-role": (200, [(0.0, ROLE_CHUNK), (0.0, DONE)]),
    "only-usage": (200, [(0.0, usage_chunk(5, 0)), (0.0, DONE)]),
    "finish-no-token": (200, [(0.0, completion_chunk("", [], finish="stop")), (0.0, usage_chunk(5, 0)), (0.0, DONE)]),
    "empty-body": (200, []),
}


def _fetch(prompt: str) -> RequestRecord:
    return fetch_one(EMPTY, prompt, 4)


@pytest.mark.parametrize("script", sorted(EMPTY))
def test_a_200_stream_without_a_token_is_a_failed_request(script: str) -> None:
    r = _fetch(script)
    assert r.http_status == 200 and r.chunk_tokens == [] and not r.ok
    assert r.error is not None and classify(r.error) == "no_tokens"
    assert "HTTP 200" in r.error and "no token-bearing chunk" in r.error


def test_an_old_record_without_error_or_token_loads_as_no_tokens() -> None:
    old = {
        "prompt_id": "p",
        "role": "plain",
        "workload": "w",
        "concurrency": 1,
        "warmup": False,
        "scheduled_s": 0.0,
        "send_s": 0.1,
        "http_status": 200,
        "error": None,
        "chunk_arrivals_s": [],
        "chunk_tokens": [],
    }  # an older requests.jsonl line: no phase, no finish_reason
    r = RequestRecord.from_json(old, source="requests.jsonl line 1")
    assert r.phase == "measured" and r.finish_reason is None
    assert r.error is not None and classify(r.error) == "no_tokens"
    ok = RequestRecord.from_json(old | {"chunk_arrivals_s": [0.2], "chunk_tokens": [1]}, source="requests.jsonl line 2")
    assert ok.error is None and ok.finish_reason is None


# --- the run folder: one cell of four prompts, three tokens requested each, on both servers -------------------


def _stream(*chunks: tuple[list[int], str | None], usage: int | None = None) -> list[tuple[float, bytes | None]]:
    steps: list[tuple[float, bytes | None]] = [(0.0, completion_chunk(" x", ids, finish)) for ids, finish in chunks]
    n = sum(len(ids) for ids, _ in chunks)
    return [*steps, (0.0, usage_chunk(5, n if usage is None else usage)), (0.0, DONE)]


PLAIN = {
    "a": (200, _stream(([1], None), ([2], None), ([3], "length"))),
    "b": (200, _stream(([4], None), ([5], "stop"))),  # plain stops (stop) after 2 tokens
    "c": (200, [(0.0, DONE)]),  # a 200 stream without a token
    "d": (200, _stream(([7], None), ([8], None), ([9], "length"))),
}
SPEC = {
    "a": (200, _stream(([1, 2], None), ([3], "length"))),  # first chunk of two tokens
    "b": (200, _stream(([4, 5], None), ([6], "length"))),  # length where plain stopped; one token past its stop
    "c": (200, [(0.0, usage_chunk(5, 0)), (0.0, DONE)]),  # only a usage chunk
    "d": (200, _stream(([7], None), ([8], None), ([9], "length"), usage=4)),  # usage says 4, token ids 3
}


def _run_folder(tmp_path: Path) -> Path:
    base = load_pair("demo-cpu")
    pair = dataclasses.replace(
        base, stop=dataclasses.replace(base.stop, max_error_rate=0.5, on_error_budget="continue")
    )
    measured = tuple(Prompt(p, "w", "completions", p, None, 3) for p in "abcd")
    cell = CellSpec("w", "completions", Level(2), 0, (), measured, (), None)
    with quiet_run(tmp_path, pair) as run:
        for role, scripts in (("plain", PLAIN), ("speculative", SPEC)):
            with scripted_server(scripts) as url:
                run_cell_on(run, role, attached(url, role, tmp_path), cell)
    workload = {"name": "w", "kind": "synthetic", "input_tokens": None, "output_tokens": 3}
    protocol = {
        "pair": pair.name,
        "target": {"model": "m", "revision": None, "local": False},
        "draft": None,
        "speculative_config": {},
        "sampling": {"temperature": 0.0},
        "workloads": [workload],
        "concurrency": [2],
        "load": None,
        "stop_rule": {},
        "prompts_sha256": "0",
        "criteria": {},
        "slo": {},
        "hardware": None,
        "cells": [{"workload": "w", "concurrency": 2, "level": "c2", "rate_rps": None, "repetition": 0}],
    }
    (tmp_path / "protocol.json").write_text(json.dumps(protocol))
    return tmp_path


def test_failed_counts_agree_everywhere_and_the_card_shows_outcomes(tmp_path: Path) -> None:
    run = _run_folder(tmp_path)
    entries = {e["role"]: e for e in map(json.loads, (run / "cells.jsonl").read_text().splitlines())}
    for role in ("plain", "speculative"):
        assert entries[role]["errors"] == 1 and entries[role]["error_categories"] == {"no_tokens": 1}
    assert entries["speculative"]["usage_mismatches"] == 1 and entries["plain"]["usage_mismatches"] == 0
    assert {r.prompt_id: r.finish_reason for r in load_records(run) if r.role == "plain"} == {
        "a": "length",
        "b": "stop",
        "c": None,
        "d": "length",
    }
    lines = [json.loads(line) for line in (run / "requests.jsonl").read_text().splitlines()]
    assert all("finish_reason" in line for line in lines)

    card = build_card(run).to_json()
    cell = card["cells"][0]
    plain, spec = cell["plain"], cell["speculative"]
    assert plain["errors"] == spec["errors"] == 1
    assert plain["error_categories"] == spec["error_categories"] == {"no_tokens": 1}
    assert plain["finish_reasons"] == {"length": 2, "stop": 1} and spec["finish_reasons"] == {"length": 3}
    assert spec["usage_mismatches"] == 1 and plain["usage_mismatches"] == 0
    assert spec["first_chunk_multi_token_requests"] == 2 and plain["first_chunk_multi_token_requests"] == 0
    notes = "\n".join(cell["notes"])
    assert "plain: 1 of 4 requests failed (no_tokens: 1)" in notes
    assert "speculative: 1 of 4 requests failed (no_tokens: 1)" in notes
    assert "speculative finished 1 of 3 paired requests with `length` where the plain server stopped (`stop`)" in notes
    assert "speculative returned tokens past the plain server's stop in 1 request (1 token in all)" in notes
    assert "speculative: 1 of 4 requests' usage completion_tokens disagreed with the counted token ids" in notes
    assert (
        "speculative: 2 of 3 requests carried more than one token (up to 2) in their first token-bearing chunk" in notes
    )
    lossless = next(n for n in cell["notes"] if n.startswith("lossless check"))
    assert "nondeterminism" not in lossless
    assert "1 of 1 differing requests differ in length or finish reason" in lossless

    md = markdown(card)
    assert "plain: 1 of 4 requests failed (no_tokens: 1)" in md
    assert "finish reasons: plain length 2, stop 1; speculative length 3" in md
    console = Console(width=250, record=True)
    print_summary(card_record(card), console)
    text = console.export_text()
    assert "failed" in text and "1 / 1" in text


def test_peak_output_throughput_is_on_the_card(tmp_path: Path) -> None:
    card: dict[str, Any] = build_card(_run_folder(tmp_path)).to_json()
    side = card["cells"][0]["speculative"]
    md = markdown(card)
    # the scripted cell's window is a fraction of a second: under two whole 1-second buckets, no peak
    assert side["window_s"] < 2 and side["peak_output_throughput_tps"] is None
    assert side["peak_output_note"].startswith("window too short for a peak (")
    row = next(line for line in md.splitlines() if line.startswith("| peak output throughput (tokens/s, 1 s buckets)"))
    assert row.count("window too short for a peak") == 2
