"""The ``trace`` section (records/trace.py) with every part filled (windows, arms, a K schedule, a recommendation of
none): it writes every field in declared order, null included, reads back equal, a card.json holding it reads and
writes back the same bytes (keys a newer card adds kept), its schema requires every field, and a part that does
not match is one BadInput line naming the field's path. No committed run replays a trace yet, so the section is
built here with the values report/tracedata.py would give it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import BadInput
from loadgen.records.card import PairCard
from loadgen.records.cardwire import json_schema, wire_fields
from loadgen.records.trace import (
    ArmWindow,
    Attainment,
    ScheduleEstimate,
    ScheduleWindow,
    Shares,
    TraceArm,
    TraceChoice,
    TraceRow,
    TraceSection,
    TraceServer,
    TraceWindow,
)
from loadgen.util.strictjson import dumps_strict

CARD = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-1b-draft" / "card.json"
PARTS = (
    Attainment,
    ArmWindow,
    TraceWindow,
    Shares,
    TraceServer,
    TraceArm,
    ScheduleWindow,
    ScheduleEstimate,
    TraceRow,
    TraceChoice,
    TraceSection,
)


def _section() -> TraceSection:
    slo = Attainment(requests=40, shares={"ttft_s": 1.0, "tpot_s": 0.95}, every=0.95, hold=True)
    arm_w = ArmWindow(
        requests=20,
        in_flight_mean=3.5,
        in_flight_max=6,
        tpot_p50_s=0.012,
        tpot_p90_s=0.015,
        ttft_p50_s=None,
        ttft_p90_s=None,
    )
    plain_w = ArmWindow(20, 3.0, 5, 0.018, 0.02, 0.05, 0.07)
    window = TraceWindow(
        start_s=0.0,
        end_s=10.0,
        requests=20,
        arms={"plain": plain_w, "k2": arm_w},
        speedup=1.5,
        ci_low=1.2,
        ci_high=1.8,
        ci="blocks",
        outcome="pays",
    )
    arm = TraceArm(
        speedup=1.5,
        ci_low=1.2,
        ci_high=1.8,
        windows=(window,),
        shares=Shares(time={"pays": 1.0}, requests={"pays": 1.0}),
    )
    schedule = ScheduleEstimate(
        tpot_p50_s=0.011,
        slo=slo,
        windows=(ScheduleWindow(0.0, 4, 2, "k2"),),
        from_workload="chat",
        config={"method": "ngram", "num_speculative_tokens": 2},
    )
    server = TraceServer(slo=slo, lag_p50_s=0.0004, lag_p99_s=0.002, behind=False, tpot_p50_s=0.018)
    row = TraceRow(
        workload="bursty@ts0.5",
        base="bursty",
        time_scale=0.5,
        window_s=10.0,
        requests=40,
        span_s=19.5,
        servers={"plain": server, "k2": server},
        arms={"k2": arm},
        schedule=schedule,
    )
    return TraceSection(
        workloads=(row,),
        capacity={"bursty": {"plain": 0.5, "k2": None}},
        recommendation={"bursty": TraceChoice("k2", 0.011, 0.5), "steady": None},
    )


def test_every_part_writes_every_field_in_declared_order_null_included() -> None:
    data = json.loads(json.dumps(_section().to_json()))
    row = data["workloads"][0]
    assert list(row) == list(wire_fields(TraceRow))
    window = row["arms"]["k2"]["windows"][0]
    assert list(window) == list(wire_fields(TraceWindow)) and window["arms"]["k2"]["ttft_p50_s"] is None
    assert list(window["arms"]["plain"].values()) == [20, 3.0, 5, 0.018, 0.02, 0.05, 0.07]
    assert row["schedule"]["windows"] == [{"start_s": 0.0, "batch": 4, "k": 2, "arm": "k2"}]
    assert row["schedule"]["config"] == {"method": "ngram", "num_speculative_tokens": 2}
    assert data["capacity"] == {"bursty": {"plain": 0.5, "k2": None}}
    choice = {"server": "k2", "tpot_p50_s": 0.011, "time_scale": 0.5}
    assert data["recommendation"] == {"bursty": choice, "steady": None}


def test_the_section_reads_back_equal_and_its_text_writes_back_the_same_bytes() -> None:
    section = _section()
    text = dumps_strict(section.to_json(), indent=2, sort_keys=False)
    again = TraceSection.from_json(json.loads(text), source="card.json trace")
    assert again == section
    assert again.workloads[0].arms["k2"].windows[0].arms["plain"].tpot_p50_s == 0.018
    assert again.recommendation["steady"] is None and again.workloads[0].schedule is not None
    assert dumps_strict(again.to_json(), indent=2, sort_keys=False) == text


def test_a_file_in_its_own_key_order_with_newer_keys_writes_back_as_it_was() -> None:
    data = json.loads(json.dumps(_section().to_json()))
    server = data["workloads"][0]["servers"]["plain"]
    data["workloads"][0]["servers"]["plain"] = {"note": "newer code", **dict(reversed(list(server.items())))}
    section = TraceSection.from_json(data, source="card.json trace")
    assert section.workloads[0].servers["plain"].extra == {"note": "newer code"}
    assert json.dumps(section.to_json()) == json.dumps(data)


def test_a_card_with_a_trace_section_reads_and_writes_back_byte_identically() -> None:
    data = json.loads(CARD.read_text())
    assert "trace" not in data
    data["trace"] = _section().to_json()
    text = dumps_strict(data, indent=2, sort_keys=False) + "\n"
    card = PairCard.from_json(json.loads(text), source="card.json")
    assert card.trace == _section()
    assert dumps_strict(card.to_json(), indent=2, sort_keys=False) + "\n" == text


def test_the_schema_requires_every_field_of_every_part() -> None:
    for part in PARTS:
        schema = json_schema(part)
        assert schema["required"] == list(wire_fields(part)) == list(schema["properties"]), part.__name__
    row = json_schema(TraceRow)["properties"]
    assert row["schedule"]["type"] == ["object", "null"] and row["time_scale"]["type"] == "number"
    section = json_schema(TraceSection)["properties"]
    assert section["capacity"]["additionalProperties"]["additionalProperties"]["type"] == ["number", "null"]
    assert section["recommendation"]["additionalProperties"]["type"] == ["object", "null"]


def _bad(data: dict[str, Any], path: str, value: Any) -> None:
    """``data`` with the value at the dotted ``path`` (list indexes as numbers) set to ``value``, or dropped for
    the string ``"DROP"``."""
    *head, last = path.split(".")
    here: Any = data
    for key in head:
        here = here[int(key)] if isinstance(here, list) else here[key]
    if value == "DROP":
        del here[last]
    else:
        here[last] = value


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("workloads.0.time_scale", "0.5", r"workloads\[0\].time_scale: expected a number, got '0.5'"),
        ("workloads.0.arms.k2.windows", {}, r"workloads\[0\].arms.k2.windows: expected a list, got \{\}"),
        (
            "workloads.0.arms.k2.windows.0.arms.plain.in_flight_max",
            5.5,
            r"workloads\[0\].arms.k2.windows\[0\].arms.plain.in_flight_max: expected an integer, got 5.5",
        ),
        ("workloads.0.arms.k2.shares.time", [], r"workloads\[0\].arms.k2.shares.time: expected an object, got \[\]"),
        ("workloads.0.servers.plain.slo.hold", "yes", r"workloads\[0\].servers.plain.slo.hold: expected true or false"),
        ("workloads.0.servers.k2.behind", None, r"workloads\[0\].servers.k2.behind: expected true or false, got None"),
        ("workloads.0.schedule.windows.0.k", "2", r"workloads\[0\].schedule.windows\[0\].k: expected an integer"),
        ("workloads.0.schedule.from_workload", "DROP", r"workloads\[0\].schedule.from_workload: missing"),
        ("capacity.bursty.plain", "fast", r"capacity.bursty.plain: expected a number, got 'fast'"),
        ("recommendation.bursty.server", 1, r"recommendation.bursty.server: expected a string, got 1"),
        ("workloads", "all", r"workloads: expected a list, got 'all'"),
    ],
)
def test_a_trace_that_does_not_match_is_one_line_naming_the_field(path: str, value: Any, message: str) -> None:
    data = copy.deepcopy(_section().to_json())
    _bad(data, path, value)
    with pytest.raises(BadInput, match=r"^card.json trace: " + message) as caught:
        TraceSection.from_json(data, source="card.json trace")
    assert "\n" not in str(caught.value) and str(caught.value).endswith(
        "re-render with `loadgen report` or restore the file"
    )
