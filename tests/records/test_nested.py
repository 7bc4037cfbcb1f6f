"""A record made of records (records/cardwire.py ``Whole``): the generic reader checks every field once with its
path, keeps a file's key order and unknown keys, and the schema comes from the fields' type hints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import jsonschema
import pytest

from loadgen.errors import BadInput
from loadgen.records.cardwire import Whole


@dataclass(frozen=True)
class Leaf(Whole):
    name: str
    value: float | None = None
    TITLE: ClassVar[str] = "leaf"


@dataclass(frozen=True)
class Tree(Whole):
    size: int
    leaves: list[Leaf] = field(default_factory=list)
    top: Leaf | None = None
    FIX: ClassVar[str] = "fix it"


def test_a_tree_reads_typed_and_writes_back_in_its_own_key_order_with_unknown_keys() -> None:
    doc = {"leaves": [{"value": 2, "name": "a", "color": "red"}], "later": [1], "size": 3, "top": None}
    tree = Tree.from_json(doc, source="t.json")
    assert tree.size == 3 and tree.leaves == [Leaf("a", 2)] and tree.top is None
    assert tree.leaves[0].extra == {"color": "red"} and tree.extra == {"later": [1]}
    assert list(tree.to_json()) == ["leaves", "later", "size", "top"] and tree.to_json() == doc


def test_one_built_anew_writes_every_field_in_declared_order_and_new_keys_go_last() -> None:
    tree = Tree(1, [Leaf("a")])
    assert tree.to_json() == {"size": 1, "leaves": [{"name": "a", "value": None}], "top": None}
    read = Tree.from_json({"size": 1}, source="t.json").with_fields(top=Leaf("b", 0.5))
    assert list(read.to_json()) == ["size", "top"] and read.to_json()["top"] == {"name": "b", "value": 0.5}


@pytest.mark.parametrize(
    ("doc", "line"),
    [
        (
            {"size": 1, "leaves": [{"name": "a"}, {"name": "b", "value": "x"}]},
            "t.json: leaves[1].value: expected a number or null, got 'x'; fix it",
        ),
        ({"size": 1, "top": {"value": 1}}, "t.json: top.name: missing (expected a string); fix it"),
        ({"size": 1.5}, "t.json: size: expected an integer, got 1.5; fix it"),
        ([], "t.json: expected an object, got []; fix it"),
    ],
)
def test_a_bad_field_deep_inside_is_one_line_with_its_path(doc: object, line: str) -> None:
    with pytest.raises(BadInput) as caught:
        Tree.from_json(doc, source="t.json")
    assert str(caught.value) == line
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, Tree.json_schema())


def test_the_schema_is_the_hints_nested() -> None:
    schema = Tree.json_schema()
    assert schema["required"] == ["size"]
    assert schema["properties"]["leaves"] == {"type": "array", "items": Leaf.json_schema()}
    assert Leaf.json_schema() == {
        "title": "leaf",
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "value": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
    }


@dataclass(frozen=True)
class Grove(Whole):
    by_name: dict[str, Leaf | None] = field(default_factory=dict)
    FIX: ClassVar[str] = "fix it"


def test_a_mapped_field_holds_a_part_or_null_per_key_and_names_the_key_when_wrong() -> None:
    doc = {"by_name": {"a": {"name": "a", "value": 1.5}, "b": None}}
    grove = Grove.from_json(doc, source="g.json")
    assert grove.by_name == {"a": Leaf("a", 1.5), "b": None} and grove.to_json() == doc
    assert Grove({"c": Leaf("c")}).to_json() == {"by_name": {"c": {"name": "c", "value": None}}}
    with pytest.raises(BadInput) as caught:
        Grove.from_json({"by_name": {"a": {"value": 1}}}, source="g.json")
    assert str(caught.value) == "g.json: by_name.a.name: missing (expected a string); fix it"
