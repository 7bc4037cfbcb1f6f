"""util/strictjson.py on its own: non-finite floats become null at any depth, the fast path leaves finite
documents as ``json.dumps`` writes them, and a request body with a non-finite number is refused."""

from __future__ import annotations

import json
import math

import pytest

from loadgen.util.strictjson import body, dumps_strict, finite

NAN, INF = math.nan, math.inf


def test_finite_replaces_every_non_finite_float_recursively() -> None:
    doc = {"a": NAN, "b": [1.5, INF, (-INF, 2)], "c": {"d": {"e": NAN}, "f": "nan"}, "g": 3, "h": None, "i": True}
    assert finite(doc) == {
        "a": None,
        "b": [1.5, None, [None, 2]],
        "c": {"d": {"e": None}, "f": "nan"},
        "g": 3,
        "h": None,
        "i": True,
    }
    assert finite(NAN) is None and finite(0.0) == 0.0 and finite("x") == "x"


def test_dumps_writes_null_for_non_finite_and_keeps_json_dumps_options() -> None:
    assert dumps_strict({"ratio": NAN, "p99": INF, "n": 1}) == '{"ratio": null, "p99": null, "n": 1}'
    assert dumps_strict([NAN, {"x": -INF}], separators=(",", ":")) == '[null,{"x":null}]'
    assert dumps_strict({"b": 1, "a": NAN}, sort_keys=True, indent=1) == '{\n "a": null,\n "b": 1\n}'
    finite_doc = {"p50": 0.1 + 0.2, "é": "ü", "list": [1, 2.5]}
    assert dumps_strict(finite_doc) == json.dumps(finite_doc)
    assert dumps_strict(finite_doc, ensure_ascii=False) == '{"p50": 0.30000000000000004, "é": "ü", "list": [1, 2.5]}'
    deep = dumps_strict({"deep": [[[NAN]]]})
    assert "NaN" not in deep and json.loads(deep) == {"deep": [[[None]]]}


def test_body_is_compact_utf8_and_refuses_non_finite_numbers() -> None:
    assert body({"prompt": "héllo", "max_tokens": 8, "temperature": 0.0}) == (
        '{"prompt":"héllo","max_tokens":8,"temperature":0.0}'.encode()
    )
    for bad in ({"temperature": NAN}, {"logit_bias": {"1": INF}}, [-INF]):
        with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
            body(bad)
