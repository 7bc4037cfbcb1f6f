"""OpenAI/vLLM stream chunk reader (pure: no I/O, no clock).

:func:`parse_chunk` interprets one SSE event's ``data`` (sse.py) as an OpenAI-compatible streaming chunk as
vLLM sends it on ``/v1/completions`` and ``/v1/chat/completions`` (``vllm/entrypoints/openai/completion/
protocol.py``, ``.../chat_completion/protocol.py``: ``token_ids`` sits on the choice when the request sets
``return_token_ids``; the usage-only chunk has ``choices: []``; an error inside a 200 stream is
``{"error": {"message": ...}}``, in older releases ``{"object": "error", "message": ...}``; wire format seen
on vLLM 0.32, docs/vllm-notes.md).

Token counts come only from ``token_ids``, never from text length (docs/metrics.md, "token-bearing chunk").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal, TypeGuard

import orjson

__all__ = ["StreamChunk", "Usage", "common_tokens", "interpret", "load_object", "parse_chunk"]

_MAX_ERR_SAMPLE = 80
_INT_ONLY = frozenset((int,))


@dataclass(frozen=True)
class Usage:
    """The ``usage`` object of a chunk (tokens): on vLLM's final chunk with
    ``stream_options.include_usage``, on every chunk (cumulative) with ``continuous_usage_stats``.
    """

    prompt_tokens: int
    completion_tokens: int


@dataclass(slots=True)
class StreamChunk:
    """One streaming chunk, interpreted.

    Attributes:
        kind: "data" (an OpenAI chunk object), "done" (``[DONE]``), "error" (an error object inside
            the stream), "malformed" (not a JSON object, or a field of the wrong type).
        token_count: tokens carried by this chunk: ``len(token_ids)`` when the server sent
            ``token_ids``, else 0. Never derived from text.
        token_ids: the generated token ids of choice 0 in this chunk, ``()`` if none.
        text: the generated text of choice 0 (``text`` for completions, ``delta.content`` for chat);
            may be ``""`` even when tokens > 0 (byte tokens that do not decode to UTF-8 yet).
        finish_reason: ``"stop"``, ``"length"``, ... (vLLM: on the last token-bearing chunk).
        usage: the chunk's non-null ``usage``, else ``None``.
        error: the message for kinds "error" and "malformed", else ``None``.
        fingerprint: the chunk's ``system_fingerprint`` (vLLM sends it on the usage chunk), else ``None``.
        has_token_ids: whether choice 0 carried a ``token_ids`` list. When False, ``token_count`` is 0
            because the count is unknown, not known to be 0 (though a chunk without choices, like the
            usage-only one, or a chat role-only delta carries none).
    """

    kind: Literal["data", "done", "error", "malformed"]
    token_count: int = 0
    token_ids: tuple[int, ...] = ()
    text: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    error: str | None = None
    has_token_ids: bool = False
    fingerprint: str | None = None


def _malformed(message: str) -> StreamChunk:
    return StreamChunk(kind="malformed", error=message)


def _sample(data: str) -> str:
    return data if len(data) <= _MAX_ERR_SAMPLE else data[:_MAX_ERR_SAMPLE] + "..."


def _error_message(obj: dict[str, object]) -> str:
    err = obj.get("error")
    if isinstance(err, dict):
        msg = err.get("message")
        if isinstance(msg, str) and msg:
            return msg
        return json.dumps(err, sort_keys=True)
    if isinstance(err, str) and err:
        return err
    msg = obj.get("message")
    if isinstance(msg, str) and msg:
        return msg
    return json.dumps(obj, sort_keys=True)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _usage(raw: object) -> Usage | str:
    if not isinstance(raw, dict):
        return "usage is not an object"
    prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
    if _is_int(prompt) and _is_int(completion):
        return Usage(prompt_tokens=prompt, completion_tokens=completion)
    return "usage lacks integer prompt_tokens/completion_tokens"


def parse_chunk(data: str) -> StreamChunk:
    """Interpret the ``data`` of one SSE event (a JSON object, or ``[DONE]``) from an OpenAI stream.

    Returns a :class:`StreamChunk`; never raises. Only choice 0 is read (``n > 1`` is out of scope).
    ``token_ids`` is read from the choice, else from a chat ``delta``; the top-level
    ``prompt_token_ids`` (vLLM's first chunk with ``return_token_ids``) is never counted.
    """
    if data[:1] != "{" and data.strip() == "[DONE]":
        return StreamChunk(kind="done")
    try:
        obj: object = orjson.loads(data)
    except ValueError:  # what orjson refuses (NaN, integers over 64 bits, lone surrogates) may still be JSON
        try:
            obj = json.loads(data)
        except ValueError:
            return _malformed(f"not JSON: {_sample(data)!r}")
    if not isinstance(obj, dict):
        return _malformed(f"JSON is not an object: {_sample(data)!r}")
    return interpret(obj)


def load_object(data: bytes) -> dict[str, object] | None:
    """The JSON object orjson reads from ``data`` (UTF-8 bytes, e.g. from :meth:`SSEDecoder.lone_data`): then
    :func:`interpret` of it is :func:`parse_chunk` of ``data.decode()``, with no decoding. None when orjson
    refuses it (invalid UTF-8, NaN, lone surrogates, not JSON) or it is not an object: then
    :func:`parse_chunk` of the decoded text gives the answer."""
    try:
        obj = orjson.loads(data)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def common_tokens(obj: dict[str, object]) -> tuple[list[int], str | None] | None:
    """``(token_ids, finish_reason)`` of the common chunk, the one nearly every event of a vLLM stream is:
    a plain dict with no ``usage`` and no error, whose choice 0 carries a ``token_ids`` list of integers
    (on the choice, or for chat on its ``delta``) beside text that is a string or absent. For such an
    object :func:`interpret` returns ``StreamChunk(kind="data", token_ids=tuple(token_ids),
    finish_reason=finish_reason, has_token_ids=True, ...)``, so a reader may use this pair instead; None for
    every other object (then :func:`interpret` gives the answer). No StreamChunk is built: this is the
    per-chunk path of a client's CPU budget (docs/benchmarks.md)."""
    choices = obj.get("choices")
    if (
        type(choices) is not list
        or not choices
        or type(choice := choices[0]) is not dict
        or obj.get("usage") is not None
        or obj.get("error") is not None
        or obj.get("object") == "error"
    ):
        return None
    delta = choice.get("delta")
    if delta is None:
        text, ids = choice.get("text"), choice.get("token_ids")
    elif type(delta) is dict:
        text, ids = delta.get("content"), choice.get("token_ids")
        if ids is None:
            ids = delta.get("token_ids")
    else:
        return None
    finish = choice.get("finish_reason")
    if (
        type(ids) is not list
        or not (text is None or type(text) is str)
        or not (finish is None or type(finish) is str)
        or not set(map(type, ids)) <= _INT_ONLY
    ):
        return None
    return ids, finish


def interpret(obj: dict[str, object]) -> StreamChunk:
    """:func:`parse_chunk` of a JSON object already read (see :func:`load_object`)."""
    if obj.get("error") is not None or obj.get("object") == "error":
        return StreamChunk(kind="error", error=_error_message(obj))

    usage: Usage | None = None
    raw_usage = obj.get("usage")
    if raw_usage is not None:
        parsed = _usage(raw_usage)
        if isinstance(parsed, str):
            return _malformed(parsed)
        usage = parsed

    choices = obj.get("choices")
    choices = [] if choices is None else choices
    if not isinstance(choices, list):
        return _malformed("choices is not a list")
    printed = obj.get("system_fingerprint")
    fingerprint = printed if isinstance(printed, str) and printed else None
    if not choices:
        return StreamChunk(kind="data", usage=usage, fingerprint=fingerprint)
    choice = choices[0]
    if not isinstance(choice, dict):
        return _malformed("choices[0] is not an object")

    delta = choice.get("delta")
    if delta is not None and not isinstance(delta, dict):
        return _malformed("delta is not an object")
    text_raw = delta.get("content") if delta is not None else choice.get("text")
    if text_raw is not None and not isinstance(text_raw, str):
        return _malformed("text/content is not a string")
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        return _malformed("finish_reason is not a string")

    ids_raw = choice.get("token_ids")
    if ids_raw is None and delta is not None:
        ids_raw = delta.get("token_ids")
    ids: tuple[int, ...] = ()
    if ids_raw is not None:
        if not isinstance(ids_raw, list) or not set(map(type, ids_raw)) <= _INT_ONLY:  # bool is not int here
            return _malformed("token_ids is not a list of integers")
        ids = tuple(ids_raw)

    return StreamChunk(
        kind="data",
        token_count=len(ids),
        token_ids=ids,
        text=text_raw or "",
        finish_reason=finish,
        usage=usage,
        has_token_ids=ids_raw is not None,
        fingerprint=fingerprint,
    )
