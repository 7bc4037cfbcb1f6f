"""The streaming client against a scripted SSE server on real loopback sockets."""

from __future__ import annotations

import itertools

import orjson
import pytest

from loadgen.measure.faults import classify
from loadgen.profile.pair import Sampling
from loadgen.profile.workload import Prompt
from loadgen.records.request import RequestRecord
from loadgen.stream.chunks import common_tokens, interpret
from loadgen.stream.client import _absorb, _Reader, _Timeline, build_payload
from tests.support.fakerun import fetch_one
from tests.support.scripted_server import CONTENT_TYPE, DONE, completion_chunk, usage_chunk

SCRIPTS = {
    "normal": (
        200,
        [
            (0.05, completion_chunk(" Paris", [7042])),
            (0.02, completion_chunk("", [30, 216, 198])),  # several tokens, empty text
            (0.02, completion_chunk(" is", [314, 3], finish="length")),
            (0.0, usage_chunk(5, 6)),
            (0.0, DONE),
        ],
    ),
    "no-done": (200, [(0.0, completion_chunk(" a", [1], finish="length")), (0.0, usage_chunk(2, 1))]),
    "http-500": (500, [(0.0, b'{"error": {"message": "boom", "type": "InternalServerError"}}')]),
    "error-event": (
        200,
        [(0.0, completion_chunk(" a", [1])), (0.0, b'data: {"error": {"message": "engine dead", "code": 500}}\n\n')],
    ),
    "not-json": (200, [(0.0, completion_chunk(" a", [1])), (0.0, b"data: {oops\n\n")]),
    "no-token-ids": (
        200,
        [(0.0, b'data: {"choices": [{"index": 0, "text": " a", "finish_reason": null}]}\n\n'), (0.0, DONE)],
    ),
    "reset": (200, [(0.0, completion_chunk(" a", [1])), (0.01, None)]),
}


def _fetch(prompt: str) -> RequestRecord:
    return fetch_one(SCRIPTS, prompt, 6)


def test_normal_stream() -> None:
    r = _fetch("normal")
    assert r.error is None and r.http_status == 200
    assert r.chunk_tokens == [1, 3, 2]
    assert r.token_ids == [7042, 30, 216, 198, 314, 3]
    assert r.output_tokens == 6 == r.usage_completion_tokens
    assert r.usage_prompt_tokens == 5
    assert r.finish_reason == "length"
    # the scripted server waits 50 ms before the first chunk: TTFT cannot be shorter
    assert r.chunk_arrivals_s[0] - r.send_s >= 0.05
    assert r.chunk_arrivals_s == sorted(r.chunk_arrivals_s)


def test_missing_done_still_completes() -> None:
    r = _fetch("no-done")
    assert r.error is None and r.chunk_tokens == [1] and r.usage_completion_tokens == 1


def test_http_error_is_recorded() -> None:
    r = _fetch("http-500")
    assert r.http_status == 500
    assert r.error is not None and r.error.startswith("HTTP 500") and "boom" in r.error
    assert not r.ok


def test_error_event_in_200_stream() -> None:
    r = _fetch("error-event")
    assert r.http_status == 200 and r.error is not None and "engine dead" in r.error
    assert r.chunk_tokens == [1]


def test_malformed_chunk() -> None:
    r = _fetch("not-json")
    assert r.error is not None and r.error.startswith("malformed")


def test_connection_reset_mid_stream() -> None:
    r = _fetch("reset")
    assert r.error is not None
    assert r.chunk_tokens == [1]


def test_text_without_token_ids_is_an_error_not_a_guess() -> None:
    r = _fetch("no-token-ids")
    assert r.error is not None and r.error.startswith("no-token-ids")
    assert r.chunk_tokens == []


def test_payload_is_fair_by_default() -> None:
    chat = Prompt("c", "w", "chat", None, ({"role": "user", "content": "hi"},), 64)
    body = build_payload(chat, Sampling(temperature=0.0, seed=7), "m").to_json()
    assert body["max_completion_tokens"] == 64 == body["min_tokens"]
    assert body["ignore_eos"] is True and body["return_token_ids"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "user", "content": "hi"}] and body["seed"] == 7
    comp = build_payload(Prompt("t", "w", "completions", "Once", None, 8), Sampling(ignore_eos=False), "m").to_json()
    assert comp["max_tokens"] == 8 and "min_tokens" not in comp and comp["prompt"] == "Once"


# --- the common-chunk path (sse.common_tokens) gives what the general interpretation gives ----------------


def _variants() -> list[dict[str, object]]:
    """Chunk objects around vLLM's common one: each field right, absent, null or of a wrong type."""
    ids_values: list[object] = [[5, 6], [], [7], [True], [1.0], [1, "2"], None, "5", [[1]], _MISSING]
    text_values: list[object] = [" a", "", None, 3, _MISSING]
    finish_values: list[object] = [None, "length", 0, _MISSING]
    out: list[dict[str, object]] = []
    for ids, text, finish, chat, ids_in_delta in itertools.product(
        ids_values, text_values, finish_values, (False, True), (False, True)
    ):
        if ids_in_delta and not chat:
            continue
        choice: dict[str, object] = {"index": 0}
        holder: dict[str, object] = choice
        if chat:
            holder = {"role": "assistant"}
            choice["delta"] = holder
        for key, value, where in (
            ("content" if chat else "text", text, holder),
            ("token_ids", ids, holder if ids_in_delta else choice),
            ("finish_reason", finish, choice),
        ):
            if value is not _MISSING:
                where[key] = value
        out.append({"id": "cmpl-1", "object": "text_completion", "choices": [choice]})
    common = out[0]
    out += [
        {**common, "usage": {"prompt_tokens": 3, "completion_tokens": 2}},
        {**common, "usage": None},
        {**common, "error": {"message": "boom"}},
        {**common, "object": "error"},
        {**common, "choices": []},
        {**common, "choices": None},
        {**common, "choices": [1]},
        {**common, "choices": {"0": 1}},
        {"choices": [{"delta": 5, "token_ids": [1]}]},
        {"choices": [{"delta": None, "text": "a", "token_ids": [1]}]},
        {"choices": [{"delta": {}, "token_ids": [1]}]},
    ]
    return out


_MISSING = object()


def test_the_common_chunk_path_matches_the_general_interpretation() -> None:
    taken = 0
    for obj in _variants():
        general, fast = _Timeline(), _Timeline()
        general_over = _absorb(general, interpret(obj), 1.5)
        reader = _Reader(fast)
        reader.feed(0.5, b'data: {"x":1}\n\n')  # a first event: the decoder is clean afterwards
        reader.feed(1.5, b"data: " + orjson.dumps(obj) + b"\n\n")
        assert (reader.over, fast) == (general_over, general), obj
        taken += common_tokens(obj) is not None
    assert taken >= 60  # the common shapes do take the path (not only the general one)
    assert common_tokens({"choices": [{"text": " a", "token_ids": [5, 6], "finish_reason": None}]}) == ([5, 6], None)
    assert common_tokens({"choices": [{"delta": {"content": "b"}, "token_ids": [7], "finish_reason": "stop"}]}) == (
        [7],
        "stop",
    )
    assert common_tokens({"choices": [{"text": "a", "token_ids": [True]}]}) is None


@pytest.mark.parametrize(
    ("ctype", "body"),
    [
        ("application/json", b'{"id": "cmpl-1", "object": "text_completion", "choices": [{"text": "hi"}]}'),
        ("text/html; charset=utf-8", b"<html><body>Sign in to continue</body></html>"),
    ],
)
def test_a_200_that_is_not_an_event_stream_names_its_content_type(ctype: str, body: bytes) -> None:
    # a proxy's page or a non-streaming JSON answer: said as such, not only "no tokens"

    rec = fetch_one({"p": (200, [(0.0, CONTENT_TYPE + ctype.encode() + b">"), (0.0, body)])}, "p", 2)
    assert rec.http_status == 200 and rec.chunk_tokens == []
    assert rec.error is not None and rec.error.startswith(
        f"malformed: HTTP 200 with Content-Type {ctype}, not an event stream (text/event-stream): "
        f"{body.decode()[:160]!r}; something other than the server answers at this URL"
    )
    assert classify(rec.error) == "malformed"


def test_every_sampling_field_is_sent_so_generation_config_defaults_cannot_apply() -> None:
    """vLLM fills every sampling field a request leaves out from the model's generation_config.json (Qwen2.5-Instruct:
    repetition_penalty 1.05, top_k 20): each is sent, neutral unless the pair declares it."""
    body = build_payload(Prompt("t", "w", "completions", "Once", None, 8), Sampling(), "m").to_json()
    assert {k: body[k] for k in ("temperature", "top_p", "top_k", "min_p")} == {
        "temperature": 0.0,
        "top_p": 1.0,
        "top_k": -1,
        "min_p": 0.0,
    }
    assert (body["repetition_penalty"], body["presence_penalty"], body["frequency_penalty"]) == (1.0, 0.0, 0.0)
    declared = build_payload(Prompt("t", "w", "completions", "Once", None, 8), Sampling(repetition_penalty=1.05), "m")
    assert declared.to_json()["repetition_penalty"] == 1.05
