"""records/cardwire.py, the reader of records from their type hints, on small made-up records: every field type it
understands read, checked and written back, the one-line message of a mismatch (the same as records/wire.py's
for a cells.jsonl line), the key order, unknown keys, defaults, and the JSON Schema generated from the types;
then the card cell's readers by attribute (records/cardcell.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, make_dataclass, replace
from pathlib import Path
from typing import Any, Literal

import pytest

from loadgen.errors import BadInput
from loadgen.records.card import EngineVersion, PairCard, ResourceDifference, card_schema
from loadgen.records.cardcell import Acceptance, CardCell, CellNoiseFloor, Distribution, Ratio, ServerVsClient
from loadgen.records.cardwire import FIX, SCALARS, Wire, dump, json_schema, wire_fields
from loadgen.records.protoparts import Slo
from loadgen.records.wire import NUM, Where
from loadgen.records.wire import field as read_field
from tests.support.cards import card_cell, card_record

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Inner(Wire):
    """An inner record."""

    n: int
    x: float = 0.0


@dataclass(frozen=True)
class Outer(Wire):
    """An outer record: one of each field type."""

    name: str
    kind: Literal["a", "b"]
    flag: bool
    inner: Inner
    maybe: float | None
    many: tuple[Inner, ...] = ()
    by_name: Mapping[str, float] = field(default_factory=dict)
    free: Any = None
    either: float | str | None = None
    label: str = field(default="", metadata={"doc": "a label", "pattern": "^[a-z]*$"})


GOOD: dict[str, Any] = {
    "kind": "a",
    "name": "o",
    "flag": True,
    "inner": {"n": 1, "x": 2},
    "maybe": None,
    "many": [{"n": 2}, {"x": 0.5, "n": 3}],
    "by_name": {"p": 1.5},
    "free": {"any": [1, "x"]},
    "either": "text",
    "newer": [1, 2],
}


def test_every_field_type_reads_into_its_python_value() -> None:
    o = Outer.from_json(GOOD, source="o.json")
    assert (o.name, o.kind, o.flag, o.maybe, o.either) == ("o", "a", True, None, "text")
    assert o.inner == Inner(n=1, x=2) and isinstance(o.inner.x, int)  # an integer where a number is expected
    assert o.many == (Inner(n=2), Inner(n=3, x=0.5)) and isinstance(o.many, tuple)
    assert o.by_name == {"p": 1.5} and o.free == {"any": [1, "x"]} and o.label == ""
    assert o.extra == {"newer": [1, 2]} and o.keys == tuple(GOOD)


def test_written_back_in_the_order_read_with_unknown_keys_and_without_absent_defaults() -> None:
    o = Outer.from_json(GOOD, source="o.json")
    assert o.to_json() == GOOD and list(o.to_json()) == list(GOOD)
    assert list(o.to_json()["many"][1]) == ["x", "n"]  # a nested record keeps its own order
    later = replace(o, label="set")  # a field set after reading goes after the keys read
    assert list(later.to_json()) == [*GOOD, "label"] and later.to_json()["label"] == "set"


def test_a_record_built_in_code_writes_its_required_fields_and_the_defaults_it_changed() -> None:
    assert Inner(n=4).to_json() == {"n": 4}
    assert Inner(n=4, x=1.5).to_json() == {"n": 4, "x": 1.5}
    built = Outer(name="p", kind="b", flag=False, inner=Inner(n=1), maybe=2.5, many=(Inner(n=2, x=1.0),))
    assert built.to_json() == {
        "name": "p",
        "kind": "b",
        "flag": False,
        "inner": {"n": 1},
        "maybe": 2.5,
        "many": [{"n": 2, "x": 1.0}],
    }
    assert Outer.from_json(built.to_json(), source="o.json") == built


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("name", 3, "o.json: name: expected a string, got 3"),
        ("kind", "c", "o.json: kind: expected 'a' or 'b', got 'c'"),
        ("flag", 1, "o.json: flag: expected true or false, got 1"),
        ("maybe", True, "o.json: maybe: expected a number, got True"),  # a bool is never a number
        ("maybe", "1.5", "o.json: maybe: expected a number, got '1.5'"),
        ("inner", [], "o.json: inner: expected an object, got []"),
        ("inner", {"n": 1.5}, "o.json: inner.n: expected an integer, got 1.5"),
        ("inner", {"x": 1}, "o.json: inner.n: missing (expected an integer)"),
        ("many", {"n": 1}, "o.json: many: expected a list, got {'n': 1}"),
        ("many", [{"n": 1}, {"n": "2"}], "o.json: many[1].n: expected an integer, got '2'"),
        ("by_name", {"p": "x"}, "o.json: by_name.p: expected a number, got 'x'"),
        ("by_name", [1], "o.json: by_name: expected an object, got [1]"),
    ],
)
def test_a_mismatch_is_one_line_naming_the_file_the_field_path_and_the_fix(key: str, value: Any, message: str) -> None:
    with pytest.raises(BadInput) as caught:
        Outer.from_json({**GOOD, key: value}, source="o.json")
    assert str(caught.value) == f"{message}; {FIX}"


def test_a_missing_field_names_what_it_expects_and_the_whole_file_must_be_an_object() -> None:
    for key, expected in [
        ("name", "a string"),
        ("kind", "'a' or 'b'"),
        ("inner", "an object"),
        ("maybe", "a number or null"),
    ]:
        with pytest.raises(BadInput) as caught:
            Outer.from_json({k: v for k, v in GOOD.items() if k != key}, source="o.json")
        assert str(caught.value) == f"o.json: {key}: missing (expected {expected}); {FIX}"
    with pytest.raises(BadInput) as caught:
        Outer.from_json([GOOD], source="o.json")
    assert str(caught.value).startswith("o.json: expected an object, got [{")


def test_the_message_is_the_one_records_wire_gives_a_cell_line() -> None:
    """One set of readers: the card's generic reader and a hand-declared field fail with the same line."""
    with pytest.raises(BadInput) as card_error:
        Inner.from_json({"n": 1, "x": "abc"}, source="f.json")
    with pytest.raises(BadInput) as line_error:
        read_field({"x": "abc"}, "x", NUM, Where("f.json", fix=FIX))
    assert str(card_error.value) == str(line_error.value) == f"f.json: x: expected a number, got 'abc'; {FIX}"
    assert {tp: kind.name for tp, kind in SCALARS.items()} == {
        str: "a string",
        bool: "true or false",
        int: "an integer",
        float: "a number",
    }


def test_a_union_of_two_types_besides_none_and_any_are_taken_as_they_are() -> None:
    for value in (1.5, "x", None):
        assert Outer.from_json({**GOOD, "either": value}, source="o.json").either == value
    assert Outer.from_json({**GOOD, "either": [1]}, source="o.json").either == [1]  # unchecked, by design
    assert Outer.from_json({**GOOD, "free": "anything"}, source="o.json").free == "anything"


def test_the_schema_comes_from_the_same_types() -> None:
    assert json_schema(Inner) == {
        "type": "object",
        "description": "An inner record.",
        "required": ["n"],
        "properties": {"n": {"type": "integer"}, "x": {"type": "number"}},
    }
    props = json_schema(Outer)["properties"]
    assert json_schema(Outer)["required"] == ["name", "kind", "flag", "inner", "maybe"]
    assert props["kind"] == {"enum": ["a", "b"]}
    assert props["maybe"] == {"type": ["number", "null"]}
    assert props["many"] == {"type": "array", "items": json_schema(Inner)}
    assert props["by_name"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["free"] == {} and props["either"] == {}
    assert props["label"] == {"description": "a label", "type": "string", "pattern": "^[a-z]*$"}
    assert json_schema(Literal["x"]) == {"const": "x"}
    assert json_schema(Literal["x"] | None) == {"enum": ["x", None]}
    assert json_schema(tuple[Any, ...]) == {"type": "array"}
    assert json_schema(Mapping[str, Any]) == {"type": "object"}


def test_a_ratio_reads_its_ci_and_writes_its_text() -> None:
    r = Ratio.from_json({"value": 0.8, "ci_low": 0.75, "ci_high": 0.85, "pairs": 40}, source="c")
    assert (r.value, r.ci_low, r.ci_high, r.pairs, r.block_ratios) == (0.8, 0.75, 0.85, 40, None)
    assert r.text() == "0.800 [0.750, 0.850]" and r.text(2) == "0.80 [0.75, 0.85]"
    assert Ratio(value=0.8).text() == "0.800" and Ratio(value=None).text() == "–"
    with pytest.raises(BadInput, match=r"^c: block_ratios\[1\]: expected a number, got 'x'"):
        Ratio.from_json({"value": 1.0, "block_ratios": [1.0, "x"]}, source="c")


def test_a_card_cell_gives_each_server_and_each_ratio_by_name() -> None:
    cell = card_cell(
        {"workload": "w", "concurrency": 4, "plain": {"requests": 10}, "ratios": {"tpot_p50": {"value": 0.9}}}
    )
    assert isinstance(cell, CardCell) and cell.level == "c4"
    plain = cell.role("plain")
    assert plain is not None and plain.requests == 10
    assert cell.role("speculative") is None and cell.role("placebo") is None
    tpot = cell.ratio("tpot_p50")
    assert tpot is not None and tpot.value == 0.9 and cell.ratio("ttft_p50") is None


def _committed() -> PairCard:
    path = next(p for p in sorted((ROOT / "docs").rglob("card.json")) if p.parent.name == "h200-1b-draft")
    return PairCard.from_json(json.loads(path.read_text()), source=str(path))


def test_the_pair_card_finds_a_cell_by_workload_and_level() -> None:
    card = card_record(
        {
            "cells": [
                {"workload": "w", "level": "c1", "concurrency": 1},
                {"workload": "w", "level": "c4", "concurrency": 4},
                {"workload": "v", "level": "c4", "concurrency": 4},
            ]
        }
    )
    found = card.cell("w", "c4")
    assert found is not None and (found.workload, found.concurrency) == ("w", 4)
    assert card.cell("v", "c1") is None and card.cell("x", "c4") is None
    committed = _committed()
    assert [(c.workload, c.level) for c in committed.cells] == [
        (c["workload"], c["level"]) for c in committed.to_json()["cells"]
    ]


def test_the_card_records_name_their_parts() -> None:
    card = card_record(
        {
            "engine_version": {"plain": "0.11.0", "speculative": None},
            "crossover": {
                "w": {
                    "levels": [1, 4],
                    "ratios": [0.8, 1.2],
                    "crossover_concurrency": 2.5,
                    "metric": "tpot_p50",
                    "ratio_cis": [[0.7, 0.9], None],
                }
            },
            "slo": {"percentile": 99, "ttft_s": 0.5},
            "capacity": {"w": {"plain": {"levels": [1, 4], "holds": [True, False], "capacity_concurrency": 1}}},
            "resources": {"difference": {"kv_cache_tokens_lost": 2000, "kv_capacity_loss": 0.2}, "notes": ["n"]},
            "verdict": {
                "passed": False,
                "summary": "FAIL: 1 cell",
                "declared": True,
                "cells": [
                    {
                        "workload": "w",
                        "concurrency": 4,
                        "status": "fail",
                        "checks": [
                            {
                                "name": "tpot_p50",
                                "kind": "ratio",
                                "status": "fail",
                                "judged": 1.2,
                                "threshold": 1.0,
                                "reason": "above 1.0",
                            }
                        ],
                    }
                ],
            },
        }
    )
    assert card.engine_version == EngineVersion(plain="0.11.0", speculative=None)
    cross = card.crossover["w"]
    assert (cross.levels, cross.ratios, cross.crossover_concurrency) == ((1, 4), (0.8, 1.2), 2.5)
    assert cross.ratio_cis == ((0.7, 0.9), None) and cross.crossover_range is None
    assert card.slo == Slo(percentile=99, ttft_s=0.5)
    plain = card.capacity["w"]["plain"]
    assert (plain.holds, plain.capacity_concurrency, plain.goodput_rps) == ((True, False), 1, None)
    diff = card.resources.difference
    assert diff == ResourceDifference(kv_cache_tokens_lost=2000, kv_capacity_loss=0.2)
    assert card.resources.notes == ("n",) and card.resources.plain is None
    [cell] = card.verdict.cells
    assert (card.verdict.passed, card.verdict.declared, cell.status, cell.reasons) == (False, True, "fail", ())
    assert cell.checks[0].judged == 1.2 and cell.checks[0].threshold == 1.0


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (
            {"crossover": {"w": {"levels": [1], "ratios": [1.0], "crossover_concurrency": None}}},
            "crossover.w.metric: missing (expected a string)",
        ),
        (
            {"capacity": {"w": {"plain": {"holds": ["yes"]}}}},
            "capacity.w.plain.holds[0]: expected true or false, got 'yes'",
        ),
        (
            {"resources": {"difference": {"kv_capacity_loss": "20%"}}},
            "resources.difference.kv_capacity_loss: expected a number, got '20%'",
        ),
        ({"engine_version": {"plain": 11}}, "engine_version.plain: expected a string, got 11"),
        (
            {
                "verdict": {
                    "passed": None,
                    "summary": "x",
                    "declared": True,
                    "cells": [{"workload": "w", "status": "pass"}],
                }
            },
            "verdict.cells[0].concurrency: missing (expected an integer)",
        ),
    ],
)
def test_a_card_part_that_does_not_match_names_its_path(part: dict[str, Any], message: str) -> None:
    with pytest.raises(BadInput) as caught:
        card_record(part)
    assert str(caught.value) == f"test card: {message}; {FIX}"


def test_the_card_schema_has_the_generated_head_and_requires_what_the_type_requires() -> None:
    schema = card_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "loadgen pair card (card.json), schema loadgen.card/1"
    assert schema["description"].startswith("Generated from loadgen/records/card.py")
    required = [
        f.name
        for f in fields(PairCard)
        if f.metadata.get("wire", True) and f.default is MISSING and f.default_factory is MISSING
    ]
    assert schema["required"] == required and "trace" not in required and "verdict" in required
    assert schema["properties"]["schema"] == {"const": "loadgen.card/1"}
    assert schema["properties"]["statistics_from"] == {
        "description": "card.json when re-derived without requests.jsonl",
        "enum": ["card.json", None],
    }
    assert schema["properties"]["verdict"]["required"] == ["passed", "summary", "declared"]


def test_a_server_of_the_committed_card_reads_as_its_statistics() -> None:
    """The plain server of the first committed cell, field by field as card.json holds it."""
    cell = _committed().cells[0]
    raw = _committed().to_json()["cells"][0]["plain"]
    plain = cell.role("plain")
    assert plain is not None and (cell.workload, cell.level) == ("short-homogeneous-gpu", "c1")
    assert (plain.requests, plain.errors, plain.output_tokens) == (raw["requests"], raw["errors"], raw["output_tokens"])
    assert plain.ttft_s is not None and plain.ttft_s == Distribution.from_json(raw["ttft_s"], source="c")
    assert (plain.ttft_s.count, plain.ttft_s.p50, plain.ttft_s.p99) == (
        raw["ttft_s"]["count"],
        raw["ttft_s"]["p50"],
        raw["ttft_s"]["p99"],
    )
    assert plain.tpot_p50_per_repetition_s == tuple(raw["tpot_p50_per_repetition_s"])
    assert plain.server_vs_client is not None
    ttft = plain.server_vs_client["ttft_s"]
    assert (ttft.metric, ttft.agrees) == ("vllm:time_to_first_token_seconds", True)
    assert ttft.bucket_bounds == tuple(raw["server_vs_client"]["ttft_s"]["bucket_bounds"])


def test_acceptance_server_vs_client_and_the_noise_floor_read_their_parts() -> None:
    acc = Acceptance.from_json(
        {"acceptance_rate": 0.6, "mean_acceptance_length": 2.8, "per_position": [0.8, None], "num_drafts": 10},
        source="c",
    )
    assert (acc.acceptance_rate, acc.per_position, acc.num_drafts, acc.num_accepted_tokens) == (
        0.6,
        (0.8, None),
        10,
        None,
    )
    bounds = ServerVsClient.from_json({"bucket_bounds": [0.5, "+Inf"], "server_above_bound": False}, source="c")
    assert bounds.bucket_bounds == (0.5, "+Inf") and bounds.server_above_bound is False
    floor = CellNoiseFloor.from_json(
        {
            "ratios": {"tpot_p50": {"value": 1.01, "ci_low": 0.98, "ci_high": 1.04}},
            "holds": {"tpot_p50": True, "ttft_p50": None},
        },
        source="c",
    )
    assert floor.ratios is not None and floor.ratios["tpot_p50"].text(2) == "1.01 [0.98, 1.04]"
    assert floor.holds == {"tpot_p50": True, "ttft_p50": None}
    with pytest.raises(BadInput) as caught:
        Acceptance.from_json({"per_position": [0.8, "x"]}, source="c")
    assert str(caught.value) == f"c: per_position[1]: expected a number, got 'x'; {FIX}"
    with pytest.raises(BadInput) as caught:
        CellNoiseFloor.from_json({"holds": {"tpot_p50": "yes"}}, source="c")
    assert str(caught.value) == f"c: holds.tpot_p50: expected true or false, got 'yes'; {FIX}"
    with pytest.raises(BadInput) as caught:
        Distribution.from_json({"count": 1, "p50": 0.1}, source="c")
    assert str(caught.value) == f"c: p99: missing (expected a number or null); {FIX}"


def test_the_record_bookkeeping_is_no_wire_key_and_no_part_of_equality() -> None:
    assert list(wire_fields(Inner)) == ["n", "x"] and "keys" not in wire_fields(Outer)
    reordered = Outer.from_json(dict(reversed(list(GOOD.items()))), source="o.json")
    original = Outer.from_json(GOOD, source="o.json")
    assert reordered == original and reordered.keys != original.keys  # the order is kept, not compared
    assert list(reordered.to_json()) == list(reversed(list(GOOD)))
    assert Inner.from_json({"n": 1, "note": "x"}, source="i") == Inner(n=1)  # unknown keys: kept, not compared


def test_dump_turns_records_tuples_and_mappings_into_json_values() -> None:
    value = {"a": (Inner(n=1), Inner(n=2, x=0.5)), "b": [Inner(n=3)], "c": 4, "d": None}
    assert dump(value) == {"a": [{"n": 1}, {"n": 2, "x": 0.5}], "b": [{"n": 3}], "c": 4, "d": None}
    assert dump((1, (2, 3))) == [1, [2, 3]] and dump("s") == "s"


def test_a_default_set_back_after_reading_is_written_as_read() -> None:
    """A key the file had stays in the file even when the value set since equals the default."""
    read = Inner.from_json({"n": 1, "x": 2.5}, source="i")
    assert replace(read, x=0.0).to_json() == {"n": 1, "x": 0.0}
    assert replace(Inner(n=1, x=2.5), x=0.0).to_json() == {"n": 1}  # built in code: a default is not written


def test_a_record_built_in_code_from_tuples_reads_like_one_from_a_file() -> None:
    """report/carddata.py hands the card over with tuples where the file has lists."""
    from_code = Outer.from_json({**GOOD, "many": (Inner(n=2).to_json(),)}, source="built")
    from_file = Outer.from_json({**GOOD, "many": [{"n": 2}]}, source="o.json")
    assert from_code == from_file and from_code.to_json()["many"] == [{"n": 2}]


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (int, "an integer"),
        (float | None, "a number or null"),
        (Literal["x", "y"], "'x' or 'y'"),
        (tuple[int, ...], "a list"),
        (Mapping[str, int], "an object"),
        (Inner, "an object"),
        (float | str | None, "any value"),
        (Any, "any value"),
    ],
)
def test_what_a_missing_field_of_each_type_is_said_to_expect(tp: Any, expected: str) -> None:
    one = make_dataclass("One", [("value", tp)], bases=(Wire,), frozen=True)
    with pytest.raises(BadInput) as caught:
        one.from_json({}, source="one.json")
    assert str(caught.value) == f"one.json: value: missing (expected {expected}); {FIX}"


def test_a_list_of_records_inside_a_mapping_names_every_step_of_the_path() -> None:
    @dataclass(frozen=True)
    class Deep(Wire):
        """Records under a mapping, in a list."""

        by_name: Mapping[str, tuple[Inner, ...]]

    deep = Deep.from_json({"by_name": {"a": [{"n": 1}], "b": []}}, source="d.json")
    assert deep.by_name == {"a": (Inner(n=1),), "b": ()}
    assert deep.to_json() == {"by_name": {"a": [{"n": 1}], "b": []}}
    with pytest.raises(BadInput) as caught:
        Deep.from_json({"by_name": {"a": [{"n": 1}, {"n": 2, "x": "far"}]}}, source="d.json")
    assert str(caught.value) == f"d.json: by_name.a[1].x: expected a number, got 'far'; {FIX}"
    assert json_schema(Deep)["properties"]["by_name"] == {
        "type": "object",
        "additionalProperties": {"type": "array", "items": json_schema(Inner)},
    }
