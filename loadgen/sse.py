"""Incremental Server-Sent Events decoder and OpenAI/vLLM stream chunk reader (pure: no I/O, no clock).

* :class:`SSEDecoder` turns the bytes of a ``text/event-stream`` body, split anywhere, into
  :class:`SSEEvent` values, following the WHATWG "Server-sent events" parsing rules
  (https://html.spec.whatwg.org/multipage/server-sent-events.html, "Event stream interpretation"),
  with one deliberate difference: :meth:`SSEDecoder.close` dispatches a pending event that lacked its
  closing blank line (the spec discards it), so a truncated stream still yields its last chunk.
* :func:`parse_chunk` interprets one event's ``data`` as an OpenAI-compatible streaming chunk as vLLM
  sends it on ``/v1/completions`` and ``/v1/chat/completions`` (``vllm/entrypoints/openai/completion/
  protocol.py``, ``.../chat_completion/protocol.py``: ``token_ids`` sits on the choice when the request
  sets ``return_token_ids``; the usage-only chunk has ``choices: []``; an error inside a 200 stream is
  ``{"error": {"message": ...}}``, in older releases ``{"object": "error", "message": ...}``; wire
  format seen on vLLM 0.32, docs/vllm-notes.md).

Token counts come only from ``token_ids``, never from text length (docs/metrics.md, "token-bearing chunk").
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from typing import Literal, TypeGuard

import orjson

__all__ = ["SSEDecoder", "SSEEvent", "StreamChunk", "Usage", "common_tokens", "interpret", "load_object",
           "parse_chunk"]

_LINE_END = re.compile(r"\r\n|\r|\n")
_MAX_ERR_SAMPLE = 80
_INT_ONLY = frozenset((int,))


@dataclass(slots=True)
class SSEEvent:
    """One dispatched server-sent event.

    Attributes:
        data: the event's ``data`` field values joined with ``"\\n"`` (no trailing LF).
        event: the last ``event:`` field's value, or ``None`` when there was none or it was empty
            (the spec's default type "message").
    """

    data: str
    event: str | None = None


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder.

    Feed the body in pieces of any size, split at any byte: the events are the same as for the whole
    body at once. Lines end in LF, CR or CRLF (a CR ending one piece and an LF starting the next are
    one line ending); bytes are decoded as UTF-8 incrementally with ``errors="replace"``; one leading
    BOM is dropped; lines starting with ``:`` are comments (keep-alives); ``id``, ``retry`` and
    unknown fields are ignored; an event without ``data`` lines is not dispatched.
    :meth:`feed` or :meth:`close` after :meth:`close` raise ValueError.
    """

    def __init__(self) -> None:
        # "utf-8-sig" drops one leading BOM, even when its bytes arrive split.
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._partial: list[str] = []  # text of the current, unterminated line
        self._skip_lf = False  # the previous text ended in CR: a leading LF is its pair
        self._data: list[str] = []
        self._event: str | None = None
        self._closed = False
        # nothing pending (line, data, event type, CR, UTF-8 bytes, BOM check): the fast path may run
        self._clean = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode the next piece of the body (any number of bytes, 0 allowed).

        Returns the events this piece completed, in stream order (often none).
        """
        if self._closed:
            raise ValueError("SSEDecoder.feed() after close()")
        if self._clean and chunk.endswith(b"\n\n") and b"\r" not in chunk:
            return self._whole_events(bytes(chunk).decode("utf-8", "replace"))
        events = self._process(self._decoder.decode(bytes(chunk), final=False))
        self._clean = (not self._partial and not self._data and self._event is None and not self._skip_lf
                       and self._decoder.getstate() == (b"", 0))
        return events

    def lone_data(self, chunk: bytes) -> bytes | None:
        """The ``data`` of ``chunk`` (UTF-8 bytes) when it is exactly one ``data: {...}`` line and its blank
        line, LF-only, and nothing is pending; else None. Then :meth:`feed` would return one event with
        this data (decoded), and leave the decoder as it is: a caller may skip :meth:`feed` for it, as
        long as the bytes are valid UTF-8 (:func:`load_object` refuses what is not)."""
        if (self._clean and not self._closed and chunk.startswith(b"data: {") and chunk.endswith(b"\n\n")
                and chunk.count(b"\n") == 2 and b"\r" not in chunk):
            return chunk[6:-2]
        return None

    def _whole_events(self, text: str) -> list[SSEEvent]:
        """Fast path: no line, event or UTF-8 sequence is pending and ``text`` ends in a blank line, so
        it is whole events; a single ``data`` line with its blank line is an event at once, anything
        else goes through the general rules. The same events as :meth:`_process`."""
        events: list[SSEEvent] = []
        for block in text[:-2].split("\n\n"):
            if block.startswith("data:") and "\n" not in block:
                events.append(SSEEvent(data=block[6:] if block[5:6] == " " else block[5:]))
            else:
                events.extend(self._process(block + "\n\n"))
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: flush the decoder and dispatch a pending event.

        An incomplete UTF-8 sequence at the end becomes U+FFFD; an unterminated last line is processed
        as a line; an event with data but no closing blank line is dispatched (the WHATWG rules
        discard it). Returns the events this flush completed (0 or 1).
        """
        if self._closed:
            raise ValueError("SSEDecoder.close() called twice")
        events = self._process(self._decoder.decode(b"", final=True))
        self._closed = True
        if self._partial:
            line = "".join(self._partial)
            self._partial = []
            self._line(line, events)
        self._dispatch(events)
        return events

    def _process(self, text: str) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        if not text:
            return events
        pos = 0
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                pos = 1
        for match in _LINE_END.finditer(text, pos):
            self._partial.append(text[pos : match.start()])
            line = "".join(self._partial)
            self._partial = []
            self._line(line, events)
            pos = match.end()
        if pos < len(text):
            self._partial.append(text[pos:])
        elif text.endswith("\r"):
            # "\r" matched alone at the end: an LF in the next piece belongs to it.
            self._skip_lf = True
        return events

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[0] == ":":
            return
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value or None

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._data:
            events.append(SSEEvent(data="\n".join(self._data), event=self._event))
        self._data = []
        self._event = None


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
    if (type(choices) is not list or not choices or type(choice := choices[0]) is not dict
            or obj.get("usage") is not None or obj.get("error") is not None or obj.get("object") == "error"):
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
    if (type(ids) is not list or not (text is None or type(text) is str)
            or not (finish is None or type(finish) is str) or not set(map(type, ids)) <= _INT_ONLY):
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
    if not choices:
        return StreamChunk(kind="data", usage=usage)
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
    )
