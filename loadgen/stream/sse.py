"""Incremental Server-Sent Events decoder (pure: no I/O, no clock).

:class:`SSEDecoder` turns the bytes of a ``text/event-stream`` body, split anywhere, into :class:`SSEEvent`
values, following the WHATWG "Server-sent events" parsing rules
(https://html.spec.whatwg.org/multipage/server-sent-events.html, "Event stream interpretation"), with one
deliberate difference: :meth:`SSEDecoder.close` dispatches a pending event that lacked its closing blank
line (the spec discards it), so a truncated stream still yields its last chunk. What an event's ``data``
means is chunks.py.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent"]

_LINE_END = re.compile(r"\r\n|\r|\n")


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
        self._clean = (
            not self._partial
            and not self._data
            and self._event is None
            and not self._skip_lf
            and self._decoder.getstate() == (b"", 0)
        )
        return events

    def lone_data(self, chunk: bytes) -> bytes | None:
        """The ``data`` of ``chunk`` (UTF-8 bytes) when it is exactly one ``data: {...}`` line and its blank
        line, LF-only, and nothing is pending; else None. Then :meth:`feed` would return one event with
        this data (decoded), and leave the decoder as it is: a caller may skip :meth:`feed` for it, as
        long as the bytes are valid UTF-8 (:func:`load_object` refuses what is not)."""
        if (
            self._clean
            and not self._closed
            and chunk.startswith(b"data: {")
            and chunk.endswith(b"\n\n")
            and chunk.count(b"\n") == 2
            and b"\r" not in chunk
        ):
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
