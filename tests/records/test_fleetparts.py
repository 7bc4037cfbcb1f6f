"""records/fleetparts.py inside a fleet card (the hand-built card of tests/fleet/test_fleetmd.py, with one flag):
it reads back typed and byte-identical, a ratio may be null per metric (``MAPPED``), and a part of the wrong shape
is one BadInput line naming its field path, which the generated schema refuses too."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from loadgen.errors import BadInput
from loadgen.records.fleet import FIX, FleetCard
from loadgen.records.fleetparts import Flag, FlagSide, FleetRatio, NodeGpu, NodeHardware, NodeVerdict
from tests.fleet.test_fleetmd import _card

FLAG = Flag(
    "ratio",
    "p",
    "H200",
    "tpot_p50",
    [FlagSide("a", 0.7, 0.68, 0.72), FlagSide("b", 0.95, 0.92, 0.98)],
    "p on H200: ...",
    workload="w",
    level="c1",
)


def _doc() -> dict[str, Any]:
    return _card([FLAG]).to_json()


def test_the_parts_read_back_typed_and_write_back_the_same_bytes() -> None:
    text = json.dumps(_doc(), indent=2)
    card = FleetCard.from_json(json.loads(text), source="fleet.json")
    assert json.dumps(card.to_json(), indent=2) == text
    assert card == _card([FLAG]) and card.flags == [FLAG]
    assert card.nodes[0].hardware == NodeHardware("Xeon", 64, 2 * 2**30, [NodeGpu("NVIDIA H200", 141 * 2**30, index=0)])
    assert card.pairs[0].nodes[0].verdict == NodeVerdict(True, True, "PASS: every check")
    c1, c4 = (cell.nodes[0] for cell in card.pairs[0].cells)
    assert c1.ratios == {"tpot_p50": FleetRatio(0.8, 0.75, 0.85, 32), "ttft_p99": FleetRatio(1.25, None, None, 0)}
    assert c4.ratios["ttft_p99"] is None and c4.to_json()["ratios"] == {
        "tpot_p50": {"value": 0.9, "ci_low": None, "ci_high": None, "pairs": None},
        "ttft_p99": None,
    }
    jsonschema.Draft202012Validator(FleetCard.json_schema()).validate(json.loads(text))


def _set(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        *head, last = path.split(".")
        target: Any = doc
        for key in head:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value

    return change


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "pairs.0.cells.0.nodes.0.ratios.tpot_p50.ci_low",
            "0.7",
            "pairs[0].cells[0].nodes[0].ratios.tpot_p50.ci_low: expected a number or null, got '0.7'",
        ),
        (
            "pairs.0.cells.0.nodes.0.ratios.tpot_p50",
            0.8,
            "pairs[0].cells[0].nodes[0].ratios: expected an object of ratios (each an object or null), "
            "got {'tpot_p50': 0.8",
        ),
        ("flags.0.nodes.1.value", True, "flags[0].nodes[1].value: expected a number or null, got True"),
        (
            "nodes.0.hardware.gpus.0.memory_bytes",
            "big",
            "nodes[0].hardware.gpus[0].memory_bytes: expected a number or null, got 'big'",
        ),
        (
            "pairs.0.nodes.0.verdict.passed",
            "yes",
            "pairs[0].nodes[0].verdict.passed: expected true or false or null, got 'yes'",
        ),
        (
            "sweeps.0.cells.0.nodes.0.entries.0.candidate",
            None,
            "sweeps[0].cells[0].nodes[0].entries[0].candidate: expected a string, got None",
        ),
    ],
)
def test_a_part_of_the_wrong_shape_is_one_line_naming_its_path(path: str, value: object, message: str) -> None:
    doc = copy.deepcopy(_doc())
    _set(path, value)(doc)
    with pytest.raises(BadInput) as caught:
        FleetCard.from_json(doc, source="fleet.json")
    assert str(caught.value).startswith(f"fleet.json: {message}") and str(caught.value).endswith(f"; {FIX}")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, FleetCard.json_schema())
