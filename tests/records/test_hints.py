"""records/hints.py: a field's type hint read into its whole kind (name, check, schema), and a long list of scalars
checked in one pass by the set of its items' types, with the item still named when one is wrong (both ways of
naming a mismatch: records/cardwire.py ``Wire`` and ``Whole``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pytest

from loadgen.errors import BadInput
from loadgen.records.cardwire import FIX, Whole
from loadgen.records.cellparts import ServerHistogram
from loadgen.records.hints import kind_of
from loadgen.records.request import RequestRecord
from loadgen.records.wire import RESTORE


@dataclass(frozen=True)
class Leaf(Whole):
    name: str
    TITLE: ClassVar[str] = "leaf"


@pytest.mark.parametrize(
    ("hint", "name", "schema"),
    [
        (float, "a number", {"type": "number"}),
        (float | None, "a number or null", {"anyOf": [{"type": "number"}, {"type": "null"}]}),
        (list[float], "a list of numbers", {"type": "array", "items": {"type": "number"}}),
        (tuple[int, ...], "a list of integers", {"type": "array", "items": {"type": "integer"}}),
        (list[Any], "a list", {"type": "array"}),
        (Mapping[str, int], "an object of integers", {"type": "object", "additionalProperties": {"type": "integer"}}),
        (Mapping[str, Any], "an object", {"type": "object"}),
        (Literal["a", "b"], "one of a, b", {"enum": ["a", "b"]}),
        (float | str | None, "any value", {}),
        (Leaf, "an object (leaf)", Leaf.json_schema()),
        (list[Leaf], "a list of objects (leaf)", {"type": "array", "items": Leaf.json_schema()}),
    ],
)
def test_a_hint_reads_into_its_whole_kind(hint: Any, name: str, schema: dict[str, Any]) -> None:
    kind = kind_of(hint)
    assert (kind.name, dict(kind.schema)) == (name, schema)


def test_a_long_list_of_numbers_reads_in_one_pass_and_keeps_ints_as_ints() -> None:
    counts = [float(i) for i in range(10_000)] + [3]
    hist = ServerHistogram.from_json({"upper_bounds": [0.5, "+Inf", None], "cumulative_counts": counts}, source="h")
    assert hist.cumulative_counts == tuple(counts) and type(hist.cumulative_counts[-1]) is int
    assert hist.upper_bounds == (0.5, "+Inf", None)
    assert hist.to_json()["cumulative_counts"] == counts


def test_a_bad_item_at_the_end_of_a_long_list_is_named_by_its_index() -> None:
    counts: list[Any] = [float(i) for i in range(10_000)] + [True]  # a bool is never a number
    with pytest.raises(BadInput) as caught:
        ServerHistogram.from_json({"cumulative_counts": counts}, source="h.json")
    assert str(caught.value) == f"h.json: cumulative_counts[10000]: expected a number, got True; {FIX}"


def test_float_subclasses_built_in_code_take_the_item_by_item_path_and_read_the_same() -> None:
    counts = [np.float64(1.5), np.float64(2.5)]
    assert ServerHistogram.from_json({"cumulative_counts": counts}, source="h").cumulative_counts == (1.5, 2.5)


def test_a_whole_record_names_the_list_and_its_kind_when_one_item_of_thousands_is_wrong() -> None:
    arrivals: list[Any] = [0.001 * i for i in range(5_000)] + ["x"]
    line = {"prompt_id": "p", "role": "plain", "workload": "w", "concurrency": 1, "phase": "measured"}
    with pytest.raises(BadInput) as caught:
        RequestRecord.from_json({**line, "scheduled_s": 0.0, "chunk_arrivals_s": arrivals}, source="r line 1")
    shown = repr(arrivals)[:57] + "..."
    assert str(caught.value) == f"r line 1: chunk_arrivals_s: expected a list of numbers, got {shown}; {RESTORE}"


def test_a_request_line_writes_a_copy_of_its_lists() -> None:
    record = RequestRecord("p", "plain", "w", 1, "measured", 0.0, chunk_arrivals_s=[0.1, 0.2], chunk_tokens=[1, 1])
    out = record.to_json()
    assert out["chunk_arrivals_s"] == [0.1, 0.2] and out["chunk_arrivals_s"] is not record.chunk_arrivals_s
    assert list(out)[:6] == ["prompt_id", "role", "workload", "concurrency", "phase", "scheduled_s"]
    assert "resent" not in out and "keys" not in out and "extra" not in out
