"""util/tomlwrite.py: the text it writes (exact, TOML 1.0) and that ``tomllib`` reads it back to the same document,
on hand-written documents and on generated ones (hypothesis)."""

from __future__ import annotations

import math
import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadgen.util.tomlwrite import to_toml


def test_plain_keys_first_then_one_section_per_table_in_order() -> None:
    doc = {
        "pair": "p",
        "target": {"model": "m", "args": ["--a", "1"]},
        "k": 3,
        "run": {"speeds": {"low": 0.5}, "on": True},
    }
    assert to_toml(doc) == (
        'pair = "p"\nk = 3\n'
        '\n[target]\nmodel = "m"\nargs = ["--a", "1"]\n'
        "\n[run]\non = true\n"
        "\n[run.speeds]\nlow = 0.5\n"
    )
    assert tomllib.loads(to_toml(doc)) == doc


def test_keys_that_are_not_bare_are_quoted_and_strings_escaped() -> None:
    doc = {"a b": 'say "hi"\n\ttab', "ü": "é", "sub": {"x.y": 1}}
    text = to_toml(doc)
    assert text.splitlines()[:2] == ['"a b" = "say \\"hi\\"\\n\\ttab"', '"\\u00fc" = "\\u00e9"']
    assert '[sub]\n"x.y" = 1' in text and tomllib.loads(text) == doc


def test_lists_of_tables_are_inline_tables_and_floats_keep_every_digit() -> None:
    doc = {
        "workloads": [{"name": "w", "k": 2}, {"name": "v", "on": False}],
        "f": 0.1 + 0.2,
        "big": 1e300,
        "ints": [1, -2, 3],
        "nested": [[1, 2], []],
        "t": (1, 2),
    }
    text = to_toml(doc)
    assert 'workloads = [{ name = "w", k = 2 }, { name = "v", on = false }]' in text
    assert "f = 0.30000000000000004" in text and "big = 1e+300" in text and "t = [1, 2]" in text
    assert tomllib.loads(text) == doc | {"t": [1, 2]}


def test_non_finite_floats_are_toml_inf_and_nan() -> None:
    text = to_toml({"a": math.inf, "b": -math.inf, "c": math.nan})
    assert text == "a = inf\nb = -inf\nc = nan\n"
    back = tomllib.loads(text)
    assert back["a"] == math.inf and back["b"] == -math.inf and math.isnan(back["c"])


@pytest.mark.parametrize("value", [None, b"x", {1, 2}, object()])
def test_a_value_toml_cannot_hold_is_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError, match=f"cannot write {type(value).__name__} as TOML"):
        to_toml({"x": value})
    with pytest.raises(ValueError, match="as TOML"):
        to_toml({"x": [1, value]})


def test_an_empty_document_is_empty_text() -> None:
    assert to_toml({}) == "" and to_toml({"t": {}}) == "\n[t]\n" and tomllib.loads(to_toml({"t": {}})) == {"t": {}}


def test_a_character_beyond_the_basic_plane_reads_back() -> None:
    assert tomllib.loads(to_toml({"k": "\U00010000"})) == {"k": "\U00010000"}
    doc = {"k": 'a\x7fb\x01c"d\\e\u00e9'}  # DEL and a control character escaped, the rest as itself
    assert tomllib.loads(to_toml(doc)) == doc


def test_a_key_ending_in_a_newline_reads_back() -> None:
    assert tomllib.loads(to_toml({"a\n": 1})) == {"a\n": 1}


# every Unicode scalar value (lone surrogates are not text TOML can hold), keys ending in a newline included
CHARS = st.characters(exclude_categories=("Cs",))
KEYS = st.text(CHARS, min_size=1, max_size=8)
SCALARS = st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(CHARS, max_size=12)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3), max_leaves=8
)
DOCS = st.recursive(
    st.dictionaries(KEYS, VALUES, max_size=4), lambda inner: st.dictionaries(KEYS, inner, max_size=3), max_leaves=6
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(DOCS)
def test_any_document_of_these_types_reads_back_the_same(doc: dict[str, Any]) -> None:
    assert tomllib.loads(to_toml(doc)) == doc
