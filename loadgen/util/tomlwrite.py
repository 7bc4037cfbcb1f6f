"""A small TOML writer for the documents loadgen itself reads (strings, integers, floats, booleans,
lists and tables), so that a generated pair file reads back to the same document with ``tomllib``
(TOML 1.0, https://toml.io/en/v1.0.0)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

_BARE = re.compile(r"[A-Za-z0-9_-]+")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _char(ch: str) -> str:
    code = ord(ch)
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if 0x20 <= code < 0x7F:
        return ch
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _string(text: str) -> str:
    """A TOML basic string in ASCII: the quote, backslash and control characters escaped (U+007F too), every
    other non-ASCII character as ``\\uXXXX``, or ``\\UXXXXXXXX`` beyond U+FFFF (TOML 1.0, "Basic strings")."""
    return '"' + "".join(map(_char, text)) + '"'


def _key(key: str) -> str:
    return key if _BARE.fullmatch(key) else _string(key)


def _value(v: Any) -> str:
    """One TOML value; a mapping inside a list is an inline table. Raises ValueError for other types."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return ("-" if v < 0 else "") + ("inf" if math.isinf(v) else "nan")
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise ValueError(f"cannot write {type(v).__name__} as TOML")


def to_toml(doc: Mapping[str, Any], prefix: str = "") -> str:
    """``doc`` as TOML text: plain keys first, then one ``[section]`` per nested mapping (in order)."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in doc.items() if not isinstance(v, Mapping)]
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in doc.items():
        if isinstance(v, Mapping):
            name = f"{prefix}.{_key(k)}" if prefix else _key(k)
            out += f"\n[{name}]\n" + to_toml(v, name)
    return out
