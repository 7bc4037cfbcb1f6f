"""records/wire.py: the field kinds (each checked against a table of JSON values written out here, and against
its own JSON Schema through jsonschema), the place a reader names (``Where``) and the one-line errors of
``field`` and ``obj``."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from loadgen.errors import BadInput
from loadgen.records.wire import (
    ANY,
    BOOL,
    INT,
    LIST,
    NUM,
    OBJ,
    RESTORE,
    STR,
    Kind,
    Where,
    field,
    list_of,
    map_of,
    maybe,
    obj,
    object_schema,
)

#: JSON values (as json.loads gives them); 1.0 is left out: JSON Schema counts it an integer, the reader not.
VALUES: list[Any] = [
    None,
    True,
    0,
    7,
    1.5,
    "x",
    [],
    [1, 2],
    [1, 2.5],
    [1, None],
    [1, True],
    ["a"],
    {},
    {"a": 1},
    {"a": 1.5},
    [{}],
]
#: Which of VALUES each kind accepts (by index into VALUES).
ACCEPTS: list[tuple[Kind, set[int]]] = [
    (STR, {5}),
    (INT, {2, 3}),
    (NUM, {2, 3, 4}),  # an integer is a number; a bool is neither
    (BOOL, {1}),
    (OBJ, {12, 13, 14}),
    (LIST, {6, 7, 8, 9, 10, 11, 15}),
    (ANY, set(range(len(VALUES)))),
    (maybe(NUM), {0, 2, 3, 4}),
    (maybe(list_of(NUM)), {0, 6, 7, 8}),
    (list_of(INT), {6, 7}),
    (list_of(NUM), {6, 7, 8}),
    (list_of(STR), {6, 11}),
    (list_of(maybe(NUM)), {6, 7, 8, 9}),
    (list_of(OBJ), {6, 15}),
    (map_of(INT), {12, 13}),
    (map_of(NUM), {12, 13, 14}),
]


@pytest.mark.parametrize(("kind", "accepted"), ACCEPTS, ids=[k.name for k, _ in ACCEPTS])
def test_each_kind_accepts_its_values_and_its_schema_agrees(kind: Kind, accepted: set[int]) -> None:
    assert {i for i, v in enumerate(VALUES) if kind.test(v)} == accepted
    validator = jsonschema.Draft202012Validator(dict(kind.schema))
    assert {i for i, v in enumerate(VALUES) if validator.is_valid(v)} == accepted


def test_the_kinds_names_read_in_a_message() -> None:
    assert [k.name for k in (maybe(NUM), list_of(STR), list_of(INT), map_of(INT), list_of(OBJ))] == [
        "a number or null",
        "a list of strings",
        "a list of integers",
        "an object of integers",
        "a list of objects",
    ]


def test_a_long_list_of_scalars_is_checked_by_its_items_types() -> None:
    many = [0.001 * i for i in range(100_000)]
    assert list_of(NUM).test(many) and list_of(NUM).test([*many, 3])
    assert not list_of(NUM).test([*many, True]) and not list_of(NUM).test([*many, "3"])
    assert not list_of(INT).test([1, 2, 3.0])  # 3.0 is a float on the way in: not an integer


def test_where_names_the_field_path() -> None:
    top = Where("runs/x/protocol.json")
    assert str(top) == "runs/x/protocol.json" and top.fix == RESTORE
    assert str(top.at("cells").at(3).at("rate_rps")) == "runs/x/protocol.json: cells[3].rate_rps"
    assert str(top.at(0).at("a")) == "runs/x/protocol.json: [0].a"
    assert Where("f", fix="do this").at("k").at(2).fix == "do this"


def test_a_long_value_is_cut_to_sixty_characters() -> None:
    with pytest.raises(BadInput) as caught:
        Where("f").at("k").fail("a number", "x" * 100)
    assert str(caught.value) == f"f: k: expected a number, got {repr('x' * 100)[:57]}...; {RESTORE}"
    shown = str(caught.value).split("got ")[1].split(";")[0]
    assert len(shown) == 60
    with pytest.raises(BadInput) as caught:
        Where("f").fail("a number", "y" * 58)  # repr: 60 characters, shown whole
    assert str(caught.value) == f"f: expected a number, got '{'y' * 58}'; {RESTORE}"


def test_field_reads_a_present_value_as_it_is() -> None:
    where = Where("f")
    data = {"n": 3, "x": 2.5, "s": None, "l": [1]}
    assert field(data, "n", NUM, where) == 3 and type(field(data, "n", NUM, where)) is int  # writes back as 3
    assert field(data, "x", NUM, where) == 2.5
    assert field(data, "s", maybe(STR), where, "default") is None  # present null: null, not the default
    assert field(data, "l", list_of(INT), where) is data["l"]
    assert field(data, "absent", INT, where, None) is None
    assert field(data, "absent", INT, where, 5) == 5


def test_field_refuses_a_missing_required_value_and_a_value_of_another_kind() -> None:
    where = Where("c.jsonl line 4", "state")
    with pytest.raises(BadInput) as caught:
        field({}, "host", OBJ, where)
    assert str(caught.value) == f"c.jsonl line 4: state.host: missing (expected an object); {RESTORE}"
    with pytest.raises(BadInput) as caught:
        field({"n": False}, "n", INT, Where("f", fix="fix it"))
    assert str(caught.value) == "f: n: expected an integer, got False; fix it"


def test_obj_takes_an_object_only() -> None:
    data = {"a": 1}
    assert obj(data, Where("f")) is data
    for value, shown in (([1], "[1]"), ("{}", "'{}'"), (None, "None")):
        with pytest.raises(BadInput) as caught:
            obj(value, Where("f line 2"))
        assert str(caught.value) == f"f line 2: expected an object, got {shown}; {RESTORE}"


def test_object_schema_requires_its_fields_and_allows_others() -> None:
    schema = object_schema({"a": INT, "b": maybe(STR)}, ["a"], "t")
    assert schema == {
        "title": "t",
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": "integer"}, "b": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    }
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"a": 1, "other": [1]}) and validator.is_valid({"a": 1, "b": None})
    assert not validator.is_valid({"b": "x"}) and not validator.is_valid({"a": 1, "b": 2})
