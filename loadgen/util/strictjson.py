"""Strict JSON out (pure): no ``NaN`` or ``Infinity`` is ever written (RFC 8259 has neither; Python's
``json`` writes them by default, and strict readers such as ``jq``, browsers and Go refuse the file).

- :func:`dumps_strict` (run files: protocol.json, card.json, cells.jsonl, requests.jsonl, ...): a non-finite
  float (a statistic over nothing, a ratio over 0, a NaN gauge) is written as ``null``, the project's
  "not measured".
- :func:`body` (request bodies): a non-finite number is a bug upstream, never sent: ValueError.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float (in dicts, lists and tuples, recursively) replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


def dumps_strict(obj: Any, **kwargs: Any) -> str:
    """``json.dumps(obj, **kwargs)`` with non-finite floats as ``null`` (fast path: one strict dump, the
    copy only when it refuses)."""
    try:
        return json.dumps(obj, allow_nan=False, **kwargs)
    except ValueError:
        return json.dumps(finite(obj), allow_nan=False, **kwargs)


def body(obj: Any) -> bytes:
    """The compact UTF-8 JSON of a request body. Raises ValueError on a NaN or infinite number."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
