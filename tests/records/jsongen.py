"""Hypothesis strategies for the records' property tests: JSON documents drawn from a record's own JSON Schema
(records/wire.py kinds as JSON Schema, draft 2020-12), so a generated document is one the schema takes, and
values each kind refuses (to check the one-line BadInput of a reader)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from loadgen.records.wire import Kind

#: Short text keeps the examples small; any character may appear (JSON writes them all back the same).
TEXT = st.text(max_size=6)
#: Floats as JSON writes them back exactly (no NaN or infinity: not JSON), never one equal to an integer:
#: JSON Schema counts 2.0 an integer, the readers do not (tests/records/test_wire.py).
FLOATS = st.floats(-1e12, 1e12).map(lambda f: f + 0.5 if f.is_integer() else f)
INTS = st.integers(min_value=-(2**40), max_value=2**40)
SCALARS = st.none() | st.booleans() | INTS | FLOATS | TEXT
#: Any JSON value, small.
JSON: st.SearchStrategy[Any] = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6
)
#: Values that refuse some kind each (1.0 is left out for the reason of FLOATS; "" for a non-empty string).
CANDIDATES: list[Any] = [None, True, 0, 1.5, "", "x", [], [1, "x"], {}, {"a": "x"}]
#: A key no record has: an unknown key of a file of other code.
UNKNOWN = "zz_other_code"


def from_schema(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Documents ``schema`` takes, for the subset of JSON Schema records/wire.py and the pair card's schema
    (records/card.py ``card_schema``) use: type, enum,
    anyOf, items, additionalProperties, properties with required (optional ones present or not, in any order),
    minLength, const, a list of types and patterns (the ``^runs/`` of records/fleettasks.py ``RUN_DIR`` as a
    folder under runs/)."""
    if "anyOf" in schema:
        return st.one_of([from_schema(s) for s in schema["anyOf"]])
    if "enum" in schema or "const" in schema:
        return st.sampled_from(schema["enum"]) if "enum" in schema else st.just(schema["const"])
    kind = schema.get("type")
    if kind is None:
        return JSON
    if isinstance(kind, list):  # the pair card's ["number", "null"]...
        return st.one_of([from_schema({**schema, "type": k}) for k in kind])
    if kind == "string":
        if schema.get("pattern") == "^runs/":  # the reader also refuses a ".." part: none is drawn
            return st.text("abz-_0", min_size=1, max_size=6).map(lambda s: f"runs/{s}")
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        return st.text(min_size=schema.get("minLength", 0), max_size=6)
    if kind == "array":
        return st.lists(from_schema(schema["items"]) if "items" in schema else JSON, max_size=2)
    if kind == "object":
        if "properties" in schema:
            return _object(schema)
        values = from_schema(schema["additionalProperties"]) if "additionalProperties" in schema else JSON
        return st.dictionaries(TEXT, values, max_size=2)
    return {"integer": INTS, "number": INTS | FLOATS, "boolean": st.booleans(), "null": st.none()}[kind]


def _object(schema: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    props = schema["properties"]
    required = set(schema.get("required", ()))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        keys = [k for k in props if k in required or draw(st.booleans())]
        out = {k: draw(from_schema(props[k])) for k in draw(st.permutations(keys))}
        if draw(st.booleans()):
            out[UNKNOWN] = draw(JSON)
        return out

    return build()


def refused(kind: Kind) -> list[Any]:
    """The values of :data:`CANDIDATES` that ``kind`` refuses."""
    return [v for v in CANDIDATES if not kind.test(v)]
