"""The text of a file the user brings (a prompt file, a trace), which must be UTF-8 (pure: bytes in).

JSON text exchanged between systems is UTF-8 (RFC 8259, section 8.1); a byte-order mark is dropped. A file with
bytes that are not UTF-8 (a Latin-1 export: ``caf\\xe9``) is refused rather than read with the bytes replaced, since
the prompts sent would then differ from the user's.
"""

from __future__ import annotations

from pathlib import Path

from loadgen.errors import ProfileError


def utf8_text(path: Path, raw: bytes) -> str:
    """``raw`` decoded as UTF-8 (a leading byte-order mark dropped). Raises ProfileError naming the first line
    and byte that are not UTF-8, how many lines hold such bytes, and the fix."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        at = _first_bad(raw)  # a byte-order mark is UTF-8 itself: positions in ``raw``
        line = raw.count(b"\n", 0, at) + 1
        column = at - (raw.rfind(b"\n", 0, at) + 1) + 1
        bad = sum(1 for chunk in raw.splitlines() if not _decodes(chunk))
        raise ProfileError(
            f"{path}: line {line} (byte {column}: 0x{raw[at]:02x}) is not UTF-8; {bad} line(s) hold such bytes; "
            "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
        ) from None


def _first_bad(raw: bytes) -> int:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return 0


def _decodes(chunk: bytes) -> bool:
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
