"""HTTP/1.1 response framing for the streaming client (pure: no I/O): the chunked transfer coding
(RFC 9112 section 7.1, :class:`ChunkedDecoder`), the response head and its framing (RFC 9112 section 6.3,
:func:`_parse_head`), and :class:`TransportError`, the one error of the transport (transport.py's docstring
lists its messages).
"""

from __future__ import annotations

import re

_MAX_LINE = 65536  # bytes: the longest chunk-size or trailer line, and the longest response head
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_STATUS = re.compile(r"HTTP/1\.([01]) (\d{3})(?: (.*))?")
_SIZE, _DATA, _DATA_END, _TRAILER = range(4)
Head = tuple[int, str, dict[str, str], str, int, bool]  # status, reason, headers, framing, length, keep-alive


class TransportError(Exception):
    """A request failed in the transport; ``str(err)`` is a short message (module docstring)."""


class _Stale(TransportError):
    """The connection was closed before any byte of the response came."""


class ChunkedDecoder:
    """Incremental decoder of the chunked transfer coding (RFC 9112 section 7.1); pure, no I/O. :meth:`feed`
    takes the body split anywhere and returns the chunk data completed (``b""`` if none), the same for any
    split. Extensions and trailers are discarded; a bare LF ends a line too (section 2.2). ``done`` after the
    trailer section; later bytes go to ``tail``. Bad size line, data without CRLF: TransportError."""

    def __init__(self) -> None:
        self._state, self._left, self._buf = _SIZE, 0, b""  # _left: chunk data to come; _buf: partial line
        self.done, self.tail = False, b""

    @property
    def at_rest(self) -> bool:
        """True when the body cannot end unless a later piece starts with ``0`` or holds ``\\n0``: the
        last-chunk line (``0``, section 7.1) begins at a line start, and no size line is half read."""
        return self._state in (_DATA, _DATA_END) or (self._state == _SIZE and not self._buf)

    def feed(self, data: bytes) -> bytes:
        """Decode the next piece; returns the chunk data it completed, in order."""
        if self.done:
            self.tail += data
            return b""
        if self._state == _SIZE and not self._buf and (nl := data.find(b"\r\n", 0, 18)) > 0:
            size = data[:nl]  # fast path: the piece is one whole non-empty chunk, as servers write them
            if (
                _HEX.fullmatch(size)
                and len(data) == (stop := nl + 2 + int(size, 16)) + 2
                and stop > nl + 2
                and data.endswith(b"\r\n")
            ):
                return data[nl + 2 : stop]
        buf, self._buf = (self._buf + data if self._buf else data), b""
        out: list[bytes] = []
        pos, end = 0, len(buf)
        while pos < end:
            if self._state == _DATA:
                take = min(self._left, end - pos)
                out.append(buf[pos : pos + take])
                pos, self._left = pos + take, self._left - take
                self._state = _DATA if self._left else _DATA_END
                continue
            nl = buf.find(b"\n", pos, pos + _MAX_LINE + 1)
            if nl < 0:
                if end - pos > _MAX_LINE:
                    raise TransportError("chunked body: line too long")
                self._buf = buf[pos:]
                break
            line = buf[pos : nl - 1] if nl > pos and buf[nl - 1] == 13 else buf[pos:nl]  # 13: CR
            pos = nl + 1
            if self._state == _SIZE:
                size = line.split(b";", 1)[0].strip(b" \t")
                if not _HEX.fullmatch(size):
                    raise TransportError(f"chunked body: bad chunk-size line {line[:40]!r}")
                self._left = int(size, 16)
                self._state = _DATA if self._left else _TRAILER
            elif self._state == _DATA_END:
                if line:
                    raise TransportError("chunked body: chunk data not followed by CRLF")
                self._state = _SIZE
            elif not line:  # the blank line that ends the trailer section
                self.done, self.tail = True, buf[pos:]
                break
        return out[0] if len(out) == 1 else b"".join(out)


def _parse_head(head: bytes) -> Head | None:
    """Status line and fields of a response head; None for a 1xx (interim) response. Framing per RFC 9112
    section 6.3: "none" (204, 304), "chunked", "length" (Content-Length), else "close"."""
    lines = head.decode("latin-1").split("\r\n")
    if (match := _STATUS.fullmatch(lines[0])) is None:
        raise TransportError(f"bad status line: {lines[0][:60]!r}")
    status, headers = int(match.group(2)), dict[str, str]()
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise TransportError(f"bad header line: {line[:60]!r}")
        key, value = name.lower(), value.strip(" \t")
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if status < 200:  # 101 cannot come: no Upgrade is ever sent (RFC 9110 section 15.2.2)
        return None
    framing, length = "close", 0
    if status in (204, 304):
        framing = "none"
    elif (coding := headers.get("transfer-encoding")) is not None:
        framing = "chunked" if coding.rsplit(",", 1)[-1].strip().lower() == "chunked" else "close"
    elif "content-length" in headers:
        if not re.fullmatch(r"[0-9]{1,18}", value := headers["content-length"].strip()):
            raise TransportError(f"bad Content-Length: {value[:40]!r}")
        framing, length = "length", int(value)
    tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    keep = match.group(1) == "1" and framing != "close" and "close" not in tokens
    return status, match.group(3) or "", headers, framing, length, keep
