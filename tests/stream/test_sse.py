"""Tests for loadgen.sse: the incremental SSE decoder and the OpenAI/vLLM chunk reader."""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadgen.stream.chunks import StreamChunk, Usage, interpret, load_object, parse_chunk
from loadgen.stream.sse import SSEDecoder, SSEEvent

DATA = Path(__file__).parents[1] / "data"
RECORDED = {
    "completions": DATA / "vllm032_completions_stream.txt",
    "chat": DATA / "vllm032_chat_stream.txt",
}


def decode(pieces: Sequence[bytes]) -> list[SSEEvent]:
    dec = SSEDecoder()
    events: list[SSEEvent] = []
    for piece in pieces:
        events.extend(dec.feed(piece))
    events.extend(dec.close())
    return events


def split_at(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted(cuts), len(body)]
    return [body[a:b] for a, b in pairwise(bounds)]


# --- inline samples with the shapes vLLM 0.32 sends (docs/vllm-notes.md) -------------------------------

_CMPL_CHUNKS: list[tuple[str, list[int], str | None]] = [
    (" Paris", [7042, 30, 216, 198], None),
    (". It is", [1114, 314, 25, 9], None),
    ("", [243], None),  # a byte-level token that does not decode to text yet
    ("é the capital", [166, 1048, 260, 3577], None),
    (" of France", [282, 4649], None),
    (".\n", [30, 198, 198, 504], None),
    (" The city", [378, 2303, 314], None),
    (" has", [599, 1162, 1431, 253], None),
    (" many", [1010, 1030, 1050, 1070], None),
    ("", [11, 12, 13], "length"),
]
CMPL_TOKENS = sum(len(ids) for _, ids, _ in _CMPL_CHUNKS)  # 4+4+1+4+2+4+3+4+4+3 = 33


def _cmpl_line(text: str, ids: list[int], finish: str | None, first: bool) -> str:
    obj: dict[str, object] = {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": finish,
                "stop_reason": None,
                "token_ids": ids,
            }
        ],
        "usage": None,
    }
    if first:
        obj["prompt_token_ids"] = [504, 3575, 282, 4649, 314]
    return "data: " + json.dumps(obj, ensure_ascii=False) + "\n\n"


USAGE_LINE = (
    'data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],'
    f'"usage":{{"prompt_tokens":5,"total_tokens":{5 + CMPL_TOKENS},"completion_tokens":{CMPL_TOKENS}}}}}\n\n'
)
INLINE_COMPLETIONS = (
    "".join(_cmpl_line(t, ids, f, i == 0) for i, (t, ids, f) in enumerate(_CMPL_CHUNKS))
    + USAGE_LINE
    + "data: [DONE]\n\n"
).encode()

_CHAT_HEAD = '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":['
INLINE_CHAT = (
    f'data: {_CHAT_HEAD}{{"index":0,"delta":{{"role":"assistant","content":""}},'
    '"logprobs":null,"finish_reason":null}],"prompt_token_ids":[1,2,3]}\n\n'
    f'data: {_CHAT_HEAD}{{"index":0,"delta":{{"content":"Hello"}},"logprobs":null,'
    '"finish_reason":null,"token_ids":[19556,28,2]}]}\n\n'
    ": keep-alive\n\n"
    f'data: {_CHAT_HEAD}{{"index":0,"delta":{{"content":" 世界"}},"logprobs":null,'
    '"finish_reason":"stop","token_ids":[1234,5678]}]}\n\n'
    f'data: {_CHAT_HEAD}],"usage":{{"prompt_tokens":3,"total_tokens":8,"completion_tokens":5}}}}\n\n'
    "data: [DONE]\n\n"
).encode()


# --- SSE framing -------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [b"data:x\n\n", b"data: x\n\n"])
def test_data_with_and_without_space(line: bytes) -> None:
    assert decode([line]) == [SSEEvent(data="x", event=None)]


def test_only_one_space_is_stripped() -> None:
    assert decode([b"data:  two\n\n"]) == [SSEEvent(data=" two")]


def test_comments_and_keepalives_are_ignored() -> None:
    body = b": ping\n\n:\n\ndata: a\n: inside an event\ndata: b\n\n: trailing\n"
    assert decode([body]) == [SSEEvent(data="a\nb")]


@pytest.mark.parametrize("end", [b"\n", b"\r", b"\r\n"])
def test_line_endings(end: bytes) -> None:
    body = b"data: one" + end + b"data: two" + end + end + b"data: three" + end + end
    assert decode([body]) == [SSEEvent("one\ntwo"), SSEEvent("three")]


def test_cr_lf_split_across_feeds_is_one_line_ending() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: a\r") == []
    assert dec.feed(b"\n") == []  # pairs with the CR: not a blank line
    assert dec.feed(b"\n") == [SSEEvent("a")]  # this one is the blank line
    assert dec.feed(b"data: b\r") == []
    assert dec.feed(b"") == []  # an empty piece keeps the pending CR
    assert dec.feed(b"\n\r") == [SSEEvent("b")]
    assert dec.close() == []


def test_cr_cr_split_across_feeds_dispatches() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: a\r") == []
    assert dec.feed(b"\r") == [SSEEvent("a")]


def test_line_without_colon_is_field_with_empty_value() -> None:
    assert decode([b"data\n\n"]) == [SSEEvent(data="")]
    assert decode([b"data\ndata\n\n"]) == [SSEEvent(data="\n")]
    assert decode([b"event\ndata: x\n\n"]) == [SSEEvent(data="x", event=None)]


def test_event_field_and_no_data_not_dispatched() -> None:
    body = b"event: ping\n\nevent: error\ndata: {}\n\n"
    assert decode([body]) == [SSEEvent(data="{}", event="error")]


def test_unknown_id_retry_fields_ignored() -> None:
    assert decode([b"id: 7\nretry: 1000\nfoo: bar\ndata: x\nDATA: y\n\n"]) == [SSEEvent("x")]


def test_multi_line_data() -> None:
    body = b'data: {"a":\ndata:  1}\ndata:\ndata: end\n\n'
    assert decode([body]) == [SSEEvent(data='{"a":\n 1}\n\nend')]


def test_bom_at_start_ignored_even_split_and_only_once() -> None:
    assert decode([b"\xef\xbb\xbfdata: x\n\n"]) == [SSEEvent("x")]
    assert decode([b"\xef", b"\xbb", b"\xbfdata: x\n\n"]) == [SSEEvent("x")]
    # A second BOM is part of the field name "\ufeffdata": unknown, ignored.
    assert decode([b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n"]) == []
    assert decode([b"data: \xef\xbb\xbfx\n\n"]) == [SSEEvent("\ufeffx")]


@pytest.mark.parametrize("text", ["é", "😀", "東京", "naïve 😀 東京 ok"])
def test_multibyte_utf8_split_at_every_byte(text: str) -> None:
    body = f"data: {text}\n\n".encode()
    for cut in range(len(body) + 1):
        assert decode([body[:cut], body[cut:]]) == [SSEEvent(text)], cut
    assert decode([bytes([b]) for b in body]) == [SSEEvent(text)]


def test_invalid_utf8_is_replaced() -> None:
    assert decode([b"data: a\xffb\n\n"]) == [SSEEvent("a\ufffdb")]
    # Stream cut inside a multi-byte character: close() flushes U+FFFD.
    assert decode([b"data: x\xf0\x9f"]) == [SSEEvent("x\ufffd")]


def test_close_flushes_pending_event_missing_blank_line() -> None:
    dec = SSEDecoder()
    assert dec.feed(b'data: {"choices":[]}\n\ndata: [DONE]') == [SSEEvent('{"choices":[]}')]
    assert dec.close() == [SSEEvent("[DONE]")]
    assert decode([b"data: a\ndata: b\n"]) == [SSEEvent("a\nb")]
    assert decode([b"data: a\r"]) == [SSEEvent("a")]
    assert decode([b"data: a\n\n", b": bye"]) == [SSEEvent("a")]
    assert decode([b""]) == []


def test_feed_or_close_after_close_raises() -> None:
    dec = SSEDecoder()
    dec.close()
    with pytest.raises(ValueError, match="after close"):
        dec.feed(b"data: x\n\n")
    with pytest.raises(ValueError, match="twice"):
        dec.close()


# --- property tests ----------------------------------------------------------------------------------

_value = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"), max_size=12)
_event = st.tuples(
    st.lists(_value, min_size=1, max_size=3),  # data lines
    st.one_of(st.none(), _value.filter(lambda v: v != "")),  # event type
    st.sampled_from(["\n", "\r", "\r\n"]),  # one line-ending style per event
    st.booleans(),  # a comment line before the event
)


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[SSEEvent], list[int]]:
    events = draw(st.lists(_event, max_size=5))
    text = "\ufeff" if draw(st.booleans()) else ""
    expected: list[SSEEvent] = []
    for data_lines, etype, end, comment in events:
        if comment:
            text += ": keep-alive" + end
        if etype is not None:
            text += f"event: {etype}{end}"
        text += "".join(f"data: {v}{end}" for v in data_lines) + end
        expected.append(SSEEvent("\n".join(data_lines), etype))
    body = text.encode()
    cuts = draw(st.lists(st.integers(0, len(body)), max_size=12))
    return body, expected, cuts


@given(streams())
@settings(max_examples=300)
def test_property_arbitrary_splits_match_whole_and_model(
    case: tuple[bytes, list[SSEEvent], list[int]],
) -> None:
    body, expected, cuts = case
    whole = decode([body])
    assert whole == expected
    assert decode(split_at(body, cuts)) == whole


_block = st.one_of(
    _value.map(lambda v: f"data: {v}"),
    _value.map(lambda v: f"data:{v}"),  # with and without the space
    st.tuples(_value, _value).map(lambda vs: f"event: {vs[0]}\ndata: {vs[1]}"),
    st.tuples(_value, _value).map(lambda vs: f"data: {vs[0]}\ndata: {vs[1]}"),  # two data lines
    _value.map(lambda v: f": {v}\ndata: {v}"),
    st.just("data"),
    st.just("id: 7"),
    st.just(""),  # comment, bare field
    _value.map(lambda v: f"data: {v}\n"),  # an extra blank line after the event
)


@given(st.lists(st.lists(_block, min_size=1, max_size=3), max_size=6))
@settings(max_examples=300)
def test_property_whole_event_pieces_match_byte_by_byte(pieces: list[list[str]]) -> None:
    # Pieces that end on an event boundary after a first event take the decoder's fast path; the events must
    # be those of the general rules (every byte fed alone).
    body = [b"data: first\n\n"] + ["".join(b + "\n\n" for b in piece).encode() for piece in pieces]
    assert decode(body) == decode([bytes([b]) for b in b"".join(body)])


@given(st.lists(st.integers(0, len(INLINE_COMPLETIONS)), max_size=40))
def test_property_inline_stream_arbitrary_splits(cuts: list[int]) -> None:
    assert decode(split_at(INLINE_COMPLETIONS, cuts)) == decode([INLINE_COMPLETIONS])


def _recorded(kind: str) -> bytes:
    path = RECORDED[kind]
    if not path.exists():
        pytest.skip(f"{path.name} not recorded yet")
    return path.read_bytes()


def _bodies() -> list[tuple[str, bytes | None]]:
    return [("inline_completions", INLINE_COMPLETIONS), ("inline_chat", INLINE_CHAT)] + [
        (f"recorded_{k}", None) for k in RECORDED
    ]


@pytest.mark.parametrize(("name", "inline"), _bodies())
def test_every_single_split_position_matches_whole(name: str, inline: bytes | None) -> None:
    body = inline if inline is not None else _recorded(name.removeprefix("recorded_"))
    whole = decode([body])
    assert len(whole) >= 3
    for cut in range(len(body) + 1):
        assert decode([body[:cut], body[cut:]]) == whole, cut
    assert decode([bytes([b]) for b in body]) == whole


# --- parse_chunk -------------------------------------------------------------------------------------


def _events_to_chunks(body: bytes) -> list[StreamChunk]:
    return [parse_chunk(e.data) for e in decode([body])]


def test_completions_chunk_with_several_token_ids() -> None:
    chunk = parse_chunk(
        '{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,'
        '"text":" Paris","logprobs":null,"finish_reason":null,"stop_reason":null,'
        '"token_ids":[7042,30,216,198]}],"usage":null}'
    )
    assert chunk == StreamChunk(
        kind="data", token_count=4, token_ids=(7042, 30, 216, 198), text=" Paris", has_token_ids=True
    )


def test_tokens_with_empty_text_still_count() -> None:
    chunk = parse_chunk('{"choices":[{"index":0,"text":"","finish_reason":null,"token_ids":[243,161]}]}')
    assert (chunk.kind, chunk.token_count, chunk.text) == ("data", 2, "")


@pytest.mark.parametrize("reason", ["length", "stop"])
def test_finish_reason(reason: str) -> None:
    chunk = parse_chunk(f'{{"choices":[{{"index":0,"text":".","finish_reason":"{reason}","token_ids":[13]}}]}}')
    assert (chunk.finish_reason, chunk.token_count) == (reason, 1)


def test_usage_only_final_chunk() -> None:
    chunk = parse_chunk(
        '{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],'
        '"usage":{"prompt_tokens":5,"total_tokens":37,"completion_tokens":32}}'
    )
    assert chunk == StreamChunk(kind="data", usage=Usage(prompt_tokens=5, completion_tokens=32))
    assert (chunk.token_count, chunk.has_token_ids, chunk.finish_reason) == (0, False, None)


def test_done() -> None:
    assert parse_chunk("[DONE]") == StreamChunk(kind="done")


def test_error_event_inside_200_stream() -> None:
    chunk = parse_chunk(
        '{"error":{"message":"The model does not support this","type":"BadRequestError","param":null,"code":400}}'
    )
    assert (chunk.kind, chunk.error, chunk.token_count) == ("error", "The model does not support this", 0)
    old = parse_chunk('{"object":"error","message":"engine dead","type":"InternalServerError","code":500}')
    assert (old.kind, old.error) == ("error", "engine dead")
    bare = parse_chunk('{"error":"overloaded"}')
    assert (bare.kind, bare.error) == ("error", "overloaded")
    no_msg = parse_chunk('{"error":{"code":500}}')
    assert (no_msg.kind, no_msg.error) == ("error", '{"code": 500}')


def test_error_event_through_decoder() -> None:
    body = (
        b'data: {"choices":[{"index":0,"text":"a","finish_reason":null,"token_ids":[64]}]}\n\n'
        b'event: error\ndata: {"error":{"message":"boom","type":"InternalServerError","code":500}}\n\n'
    )
    events = decode([body])
    assert [e.event for e in events] == [None, "error"]
    chunks = [parse_chunk(e.data) for e in events]
    assert [(c.kind, c.token_count, c.error) for c in chunks] == [("data", 1, None), ("error", 0, "boom")]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ("not json at all", "not JSON"),
        ('{"choices": [', "not JSON"),
        ("", "not JSON"),
        ("[1, 2]", "not an object"),
        ('"text"', "not an object"),
        ("42", "not an object"),
        ('{"choices":"x"}', "choices is not a list"),
        ('{"choices":[3]}', "choices[0] is not an object"),
        ('{"choices":[{"delta":"x"}]}', "delta is not an object"),
        ('{"choices":[{"text":5}]}', "text/content"),
        ('{"choices":[{"text":"a","finish_reason":1}]}', "finish_reason"),
        ('{"choices":[{"text":"a","token_ids":["1"]}]}', "token_ids"),
        ('{"choices":[{"text":"a","token_ids":[true]}]}', "token_ids"),
        ('{"choices":[{"text":"a","token_ids":7}]}', "token_ids"),
        ('{"choices":[],"usage":{"prompt_tokens":"5","completion_tokens":1}}', "usage"),
        ('{"choices":[],"usage":[1]}', "usage is not an object"),
    ],
)
def test_malformed(data: str, needle: str) -> None:
    chunk = parse_chunk(data)
    assert chunk.kind == "malformed"
    assert chunk.error is not None and needle in chunk.error
    assert chunk.token_count == 0


def test_malformed_message_is_short() -> None:
    chunk = parse_chunk("x" * 10_000)
    assert chunk.error is not None and len(chunk.error) < 120


def test_chat_role_only_first_chunk_carries_no_tokens() -> None:
    chunk = parse_chunk(
        '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        '"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}'
    )
    assert chunk == StreamChunk(kind="data")
    empty_ids = parse_chunk('{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"token_ids":[]}]}')
    assert (empty_ids.token_count, empty_ids.has_token_ids, empty_ids.text) == (0, True, "")


def test_chat_token_ids_on_choice_or_in_delta() -> None:
    on_choice = parse_chunk('{"choices":[{"index":0,"delta":{"content":"Hi there"},"token_ids":[1,2,3]}]}')
    in_delta = parse_chunk('{"choices":[{"index":0,"delta":{"content":"Hi there","token_ids":[1,2,3]}}]}')
    for chunk in (on_choice, in_delta):
        assert (chunk.token_count, chunk.token_ids, chunk.text) == (3, (1, 2, 3), "Hi there")
    null_content = parse_chunk('{"choices":[{"index":0,"delta":{"content":null},"token_ids":[9]}]}')
    assert (null_content.text, null_content.token_count) == ("", 1)


def test_tokens_are_never_counted_from_text() -> None:
    chunk = parse_chunk('{"choices":[{"index":0,"text":"four words of text","finish_reason":null}]}')
    assert (chunk.kind, chunk.token_count, chunk.has_token_ids, chunk.text) == (
        "data",
        0,
        False,
        "four words of text",
    )


def test_prompt_token_ids_are_not_counted() -> None:
    chunk = parse_chunk('{"prompt_token_ids":[1,2,3,4,5],"choices":[{"index":0,"text":"a","token_ids":[64]}]}')
    assert (chunk.token_count, chunk.token_ids) == (1, (64,))


def test_continuous_usage_on_a_token_chunk() -> None:
    chunk = parse_chunk(
        '{"choices":[{"index":0,"text":"ab","token_ids":[1,2]}],'
        '"usage":{"prompt_tokens":7,"completion_tokens":6,"total_tokens":13}}'
    )
    assert (chunk.token_count, chunk.usage) == (2, Usage(prompt_tokens=7, completion_tokens=6))


def test_null_choices_is_like_empty() -> None:
    assert parse_chunk('{"choices":null}') == StreamChunk(kind="data")


def test_inline_completions_stream_end_to_end() -> None:
    chunks = _events_to_chunks(INLINE_COMPLETIONS)
    assert [c.kind for c in chunks] == ["data"] * 11 + ["done"]
    bearing = [c for c in chunks if c.token_count > 0]
    assert [c.token_count for c in bearing] == [4, 4, 1, 4, 2, 4, 3, 4, 4, 3]
    assert sum(c.token_count for c in bearing) == 33
    assert bearing[0].text == " Paris" and bearing[0].token_ids == (7042, 30, 216, 198)
    assert [c.text for c in bearing if c.text == ""] == ["", ""]
    assert [c.finish_reason for c in bearing] == [None] * 9 + ["length"]
    assert chunks[-2].usage == Usage(prompt_tokens=5, completion_tokens=33)
    assert "".join(c.text for c in bearing) == (" Paris. It isé the capital of France.\n The city has many")


def test_inline_chat_stream_end_to_end() -> None:
    chunks = _events_to_chunks(INLINE_CHAT)
    assert [(c.kind, c.token_count, c.text, c.finish_reason) for c in chunks] == [
        ("data", 0, "", None),
        ("data", 3, "Hello", None),
        ("data", 2, " 世界", "stop"),
        ("data", 0, "", None),
        ("done", 0, "", None),
    ]
    assert chunks[3].usage == Usage(prompt_tokens=3, completion_tokens=5)


def test_missing_done_close_flushes_usage_chunk() -> None:
    body = INLINE_COMPLETIONS.removesuffix(b"data: [DONE]\n\n").removesuffix(b"\n\n")
    dec = SSEDecoder()
    fed = [parse_chunk(e.data) for e in dec.feed(body)]
    assert len(fed) == 10 and fed[-1].finish_reason == "length"
    flushed = [parse_chunk(e.data) for e in dec.close()]
    assert flushed == [StreamChunk(kind="data", usage=Usage(prompt_tokens=5, completion_tokens=33))]


@pytest.mark.parametrize("kind", sorted(RECORDED))
def test_recorded_stream_token_accounting(kind: str) -> None:
    chunks = _events_to_chunks(_recorded(kind))
    assert chunks[-1].kind == "done"
    assert all(c.kind == "data" for c in chunks[:-1])
    usage = [c.usage for c in chunks if c.usage is not None]
    assert len(usage) >= 1
    bearing = [c for c in chunks if c.token_count > 0]
    assert bearing, "no token-bearing chunk"
    assert all(c.has_token_ids for c in bearing)
    # Token counts from token_ids reconcile with the server's usage.completion_tokens.
    assert sum(c.token_count for c in bearing) == usage[-1].completion_tokens
    # finish_reason rides on the last token-bearing chunk (docs/vllm-notes.md, vLLM 0.32).
    assert bearing[-1].finish_reason in {"length", "stop"}
    assert all(c.finish_reason is None for c in bearing[:-1])
    # The usage-only chunk comes after the last token-bearing chunk and carries none.
    assert chunks[-2].usage is not None and chunks[-2].token_count == 0
    if kind == "chat":
        first = chunks[0]
        assert (first.token_count, first.text) == (0, "")  # role-only chunk


# --- the one-event fast path (SSEDecoder.lone_data + load_object + interpret) ------------------------

_LONE_CASES = [
    b'data: {"choices":[{"index":0,"text":" a","token_ids":[5,6],"finish_reason":null}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"\xc3\xa9"},"token_ids":[7]}]}\n\n',  # UTF-8 text
    b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n',
    b'data: {"error":{"message":"boom"}}\n\n',
    b'data: {"choices":[{"text":"a","token_ids":[true]}]}\n\n',  # malformed after parsing
    b'data: {"choices":[{"text":"a","token_ids":[1]}]} \n\n',  # trailing space
    b'data: {"a": NaN}\n\n',  # orjson refuses, json accepts
    b'data: {"a": 123456789012345678901234567890}\n\n',  # over 64 bits
    b'data: {"a": "\\ud800"}\n\n',  # an escaped lone surrogate
    b'data: {"choices": [\n\n',  # not JSON
    b'data: {"a":"\xff"}\n\n',  # invalid UTF-8
    b'data: {"a":1}{"b":2}\n\n',  # two values
    b"data: [DONE]\n\n",
    b'data:{"choices":[]}\n\n',  # no space: the general path
    b'data: {"choices":[]}\r\n\r\n',  # CRLF: the general path
    b'data: {"choices":[]}\ndata: {"x":1}\n\n',  # two data lines
    b'data: {"choices":[]}\n\ndata: {"choices":[]}\n\n',  # two events
    b': comment\ndata: {"choices":[]}\n\n',
    b'data: {"choices":[]}\n',  # no blank line yet
]


@pytest.mark.parametrize("piece", _LONE_CASES)
def test_lone_data_fast_path_matches_the_general_rules(piece: bytes) -> None:
    # After a first event (the decoder is then clean), a piece the fast path takes must give what the
    # decoder and parse_chunk give; a piece it refuses leaves the decoder untouched.
    fast, slow = SSEDecoder(), SSEDecoder()
    for dec in (fast, slow):
        assert dec.lone_data(b'data: {"x":1}\n\n') is None  # not clean before the first piece (BOM check)
        assert dec.feed(b'data: {"x":1}\n\n') == [SSEEvent('{"x":1}')]
    expected = [parse_chunk(e.data) for e in slow.feed(piece)]
    data = fast.lone_data(piece)
    if data is None:
        assert [parse_chunk(e.data) for e in fast.feed(piece)] == expected
        return
    assert len(expected) == 1
    obj = load_object(data)
    if obj is None:  # refused: the general path gives the answer
        assert [parse_chunk(e.data) for e in fast.feed(piece)] == expected
    else:
        assert interpret(obj) == expected[0]
    assert fast.feed(b'data: {"y":2}\n\n') == slow.feed(b'data: {"y":2}\n\n') == [SSEEvent('{"y":2}')]


def test_lone_data_takes_the_common_vllm_chunk() -> None:
    dec = SSEDecoder()
    dec.feed(b'data: {"x":1}\n\n')
    data = dec.lone_data(_LONE_CASES[0])
    assert (
        data is not None
        and (obj := load_object(data)) is not None
        and interpret(obj) == StreamChunk(kind="data", token_count=2, token_ids=(5, 6), text=" a", has_token_ids=True)
    )
    assert load_object(b'{"a": NaN}') is None and load_object(b'{"a":"\xff"}') is None
    assert load_object(b"[1]") is None
