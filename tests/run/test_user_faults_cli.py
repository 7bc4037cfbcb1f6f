"""Faults as a user meets them, black box: ``loadgen`` in a subprocess, on scripted engines started by hand and
attached (tests/support/faultrun.py). Each test says what the user sees (the lines, the exit code) and that every
finished request is on the card or counted: a Pushgateway that never answers (one warning, every request on a
complete card), a 200 answer that is no event stream (its Content-Type named, the request counted as failed),
a prompt file or trace that is not UTF-8 (one line before anything starts), and a chat workload on attached
servers (asked with a chat request, not judged by launch settings they do not use)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.support.faultrun import engines, loadgen, run_dir, write_pair
from tests.support.promstack import free_port_block
from tests.support.tokfactory import trained_vocab, write_model

pytestmark = pytest.mark.slow

#: Measured requests of the fault pair's run: 2 blocks x (plain, placebo, speculative) x 2 requests.
MEASURED = 2 * 3 * 2


def _compare(tmp: Path, extra: list[str], env: dict[str, dict[str, str]] | None = None) -> tuple[int, str]:
    """``loadgen compare`` of the fault pair (placebo blocks) on attached scripted engines (``env``: more
    environment per role); its exit code and output."""
    port = free_port_block(4)
    with engines(tmp, {"plain": port + 2, "speculative": port + 3}, env) as urls:
        pair = write_pair(tmp, port, "blocks")
        args = ["compare", str(pair), "--allow-unpinned", "--no-progress", "--runs-dir", str(tmp / "runs")]
        args += ["--attach-plain", urls["plain"], "--attach-speculative", urls["speculative"], *extra]
        ran = loadgen(tmp, args, timeout_s=240)
    assert "Traceback" not in ran.output, ran.output
    return ran.code, ran.output


def _cells(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run / "cells.jsonl").read_text().splitlines()]


def test_a_gateway_that_never_answers_is_one_warning_and_the_run_keeps_every_request(tmp_path: Path) -> None:
    with socket.socket() as hole:  # listened on, never read: every push waits out its timeout
        hole.bind(("127.0.0.1", 0))
        hole.listen(16)
        url = f"http://127.0.0.1:{hole.getsockname()[1]}"
        code, output = _compare(tmp_path, ["--pushgateway", url])
    assert code == 0, output
    (warning,) = [line for line in output.splitlines() if line.startswith("warning: ")]
    assert warning.startswith(f"warning: push to {url} failed: ") and "timed out" in warning
    assert warning.endswith("; later cells are not pushed, so the run is not held up by the gateway")
    run = run_dir(tmp_path)
    first, *later = (c["push_error"] for c in _cells(run))
    assert first == warning.removeprefix("warning: ") and len(later) == 5
    assert all(str(e).startswith("not pushed: an earlier push waited out its timeout") for e in later)
    card = json.loads((run / "card.json").read_text())
    assert card["complete"] is True and card["requests_on_disk"]["measured"] == MEASURED


def test_a_200_answer_that_is_no_event_stream_is_named_and_counted(tmp_path: Path) -> None:
    # the speculative server's 6th request (its readiness check, block 0's warmup and 2 requests, block 1's warmup,
    # then the first measured request of block 1) answers a whole JSON body, as a proxy would
    code, output = _compare(tmp_path, [], {"speculative": {"SCRIPTED_ENGINE_NOT_SSE": "6"}})
    said = "malformed: HTTP 200 with Content-Type application/json, not an event stream (text/event-stream): "
    assert code == 1, output  # over the error budget (max_error_rate = 0): the run stops, keeping what it measured
    assert (
        "[speculative] w c1 block 1: 1/2 ok in " in output
        and "; FAILED: 1 of 2 requests failed (malformed: 1)" in output
    )
    (line,) = [line for line in output.splitlines() if line.startswith("loadgen: error: ")]
    assert line.startswith("loadgen: error: cell w c1 on the speculative server: 1 of 2 requests failed (malformed: 1)")
    assert f"first: {said}" in line and "something other than the server answers at this URL" in line
    run = run_dir(tmp_path)
    failed = [r for r in map(json.loads, (run / "requests.jsonl").read_text().splitlines()) if r.get("error")]
    assert [(r["role"], r["phase"], r["error"].startswith(said)) for r in failed] == [("speculative", "measured", True)]
    card = json.loads((run / "card.json").read_text())
    assert card["complete"] is False and card["requests_on_disk"]["measured"] == 8  # 4 slots x 2, the failed one too
    (cell,) = card["cells"]
    assert (cell["speculative"]["requests"], cell["speculative"]["errors"]) == (4, 1)


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("prompts.jsonl", b'{"prompt": "tea"}\n{"prompt": "caf\xe9 au lait"}\n', "line 2 (byte 16: 0xe9)"),
        (
            "trace.jsonl",
            b'{"timestamp": 0, "prompt": "tea"}\n{"timestamp": 9, "prompt": "caf\xe9"}\n',
            "line 2 (byte 32: 0xe9)",
        ),
    ],
    ids=["prompt-file", "trace"],
)
def test_a_file_that_is_not_utf8_is_refused_in_one_line_before_anything_starts(
    tmp_path: Path, name: str, text: bytes, where: str
) -> None:
    data = tmp_path / name
    data.write_bytes(text)  # a Latin-1 export: its bytes would be replaced, and the prompts sent differ from the file
    kind = "file" if name == "prompts.jsonl" else "trace"
    workload = tmp_path / "workloads" / "mine.toml"
    pair = write_pair(tmp_path, free_port_block(4), "blocks")
    workload.write_text(f'name = "mine"\nkind = "{kind}"\npath = "{data}"\noutput_tokens = 4\n')
    pair.write_text(pair.read_text().replace(str(tmp_path / "workloads" / "w.toml"), str(workload)))
    runs = tmp_path / "runs"
    for args in (["check", str(pair)], ["compare", str(pair), "--runs-dir", str(runs)]):
        ran = loadgen(tmp_path, args)
        assert ran.code == 2, ran.output
        assert ran.output.splitlines() == [
            f"loadgen: error: {data}: {where} is not UTF-8; 1 line(s) hold such bytes; save the file as UTF-8 "
            "(e.g. iconv -f latin1 -t utf-8)"
        ]
    assert not runs.exists()  # nothing started, nothing measured


def test_a_chat_workload_on_attached_servers_asks_them_instead_of_the_launch_settings(tmp_path: Path) -> None:
    target = write_model(tmp_path / "target", trained_vocab())  # a tokenizer without a chat template
    chat = tmp_path / "workloads" / "chat.toml"
    port = free_port_block(4)
    pair = write_pair(tmp_path, port, "blocks")
    chat.write_text('name = "wc"\nkind = "short-homogeneous"\nendpoint = "chat"\noutput_tokens = 9\nseed = 1\n')
    text = pair.read_text().replace(str(tmp_path / "workloads" / "w.toml"), str(chat))
    pair.write_text(
        text.replace(
            'model = "org/target"\nrevision = "0123456789abcdef0123456789abcdef01234567"', f'model = "{target}"'
        )
    )
    launched = loadgen(tmp_path, ["check", str(pair)])  # the servers loadgen would launch have no chat template
    assert launched.code == 2 and "FAIL chat template: " in launched.output, launched.output
    runs = tmp_path / "runs"
    with engines(tmp_path, {"plain": port + 2, "speculative": port + 3}) as urls:  # they answer no chat request
        attach = ["--attach-plain", urls["plain"], "--attach-speculative", urls["speculative"]]
        ran = loadgen(tmp_path, ["compare", str(pair), "--no-progress", "--runs-dir", str(runs), *attach])
    assert ran.code == 1 and "Traceback" not in ran.output, ran.output
    assert " chat template: " not in ran.output  # no finding: the launch settings of servers started by hand
    (line,) = [line for line in ran.output.splitlines() if line.startswith("loadgen: error: ")]
    assert line == (
        f"loadgen: error: plain server at {urls['plain']} refused a minimal chat request (HTTP 404: "
        '{"error": "only /v1/completions"}); the chat workload(s) wc need a chat template on that server: start it '
        "with --chat-template FILE, or use completions workloads"
    )
    run = run_dir(tmp_path)
    assert f"nothing measured; {run} is marked refused" in ran.output
    assert not (run / "requests.jsonl").exists() or not (run / "requests.jsonl").read_text()
    listed = loadgen(tmp_path, ["runs", "--runs-dir", str(runs)])
    assert f"refused   run   {run}  plain server at {urls['plain']} refused a minimal chat request" in listed.output
