"""Every record made of records (records/cardwire.py ``Whole``: the sweep card, the fleet's task list and the fleet
card with their parts), by property: any document its own JSON Schema takes reads and writes back to the same
bytes (its key order and unknown keys kept), a field of the wrong kind or a required field left out is one
BadInput line naming the file, the field and the record's fix (and the schema refuses it too), and
``with_fields`` writes a new key after the record's own."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadgen.errors import BadInput
from loadgen.records import fleet, fleetparts, fleettasks, sweep, sweepchoice
from loadgen.records.cardwire import Whole, kinds, required
from loadgen.records.fleettasks import FIX, FleetNode, Task, TaskList
from tests.records.jsongen import UNKNOWN, from_schema, refused

MODULES = (sweep, sweepchoice, fleettasks, fleet, fleetparts)


def _parts() -> list[type[Whole]]:
    out = []
    for module in MODULES:
        out += [
            v
            for n, v in vars(module).items()
            if isinstance(v, type) and issubclass(v, Whole) and v.__module__ == module.__name__ and n[0] != "_"
        ]
    return sorted(set(out), key=lambda c: (c.__module__, c.__name__))


PARTS = _parts()
IDS = [f"{c.__module__.rsplit('.', 1)[1]}.{c.__name__}" for c in PARTS]
FAST = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_records_under_test_are_the_known_ones() -> None:
    assert len(PARTS) == 33 and "sweepchoice.KSchedule" in IDS
    assert "sweep.SweepCard" in IDS and "fleet.FleetCard" in IDS and "fleettasks.Task" in IDS


def _unique_ids(doc: dict[str, Any]) -> bool:
    ids = [t["id"] for t in doc["tasks"]]
    return len(ids) == len(set(ids))


@pytest.mark.parametrize("cls", PARTS, ids=IDS)
@FAST
@given(data=st.data())
def test_a_document_the_schema_takes_reads_and_writes_back_the_same_bytes(
    cls: type[Whole], data: st.DataObject
) -> None:
    schema = cls.json_schema()
    doc = data.draw(from_schema(schema))
    jsonschema.Draft202012Validator(schema).validate(doc)  # the generator keeps to the schema
    if cls is TaskList and not _unique_ids(doc):
        with pytest.raises(BadInput, match=r"^t\.json: tasks\[\d+\]\.id: expected an id no other task has, got "):
            cls.from_json(doc, source="t.json")
        return
    record = cls.from_json(doc, source="t.json")
    assert json.dumps(record.to_json()) == json.dumps(doc)
    assert list(record.keys) == list(doc) and dict(record.extra) == ({UNKNOWN: doc[UNKNOWN]} if UNKNOWN in doc else {})
    for k in required(cls):  # the fields a file must hold are typed attributes of the record
        assert getattr(record, k) is not None or doc[k] is None


def _edits(cls: type[Whole]) -> list[tuple[str, Any]]:
    return [(k, v) for k, kind in kinds(cls).items() for v in refused(kind)]


@pytest.mark.parametrize("cls", PARTS, ids=IDS)
@FAST
@given(data=st.data())
def test_a_field_of_the_wrong_kind_is_one_line_naming_it_and_the_schema_refuses_it(
    cls: type[Whole], data: st.DataObject
) -> None:
    edits = _edits(cls)
    if not edits:
        return
    key, bad = data.draw(st.sampled_from(edits))
    doc = {**data.draw(from_schema(cls.json_schema())), key: bad}
    with pytest.raises(BadInput) as caught:
        cls.from_json(doc, source="runs/x/f.json")
    assert str(caught.value) == f"runs/x/f.json: {key}: expected {kinds(cls)[key].name}, got {bad!r}; {cls.FIX}"
    assert not jsonschema.Draft202012Validator(cls.json_schema()).is_valid(doc)


@pytest.mark.parametrize(
    "cls", [c for c in PARTS if required(c)], ids=[i for c, i in zip(PARTS, IDS, strict=True) if required(c)]
)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_required_field_left_out_is_named_with_what_it_expects(cls: type[Whole], data: st.DataObject) -> None:
    doc = data.draw(from_schema(cls.json_schema()))
    for key in required(cls):
        without = {k: v for k, v in doc.items() if k != key}
        with pytest.raises(BadInput) as caught:
            cls.from_json(without, source="f.json")
        assert str(caught.value) == f"f.json: {key}: missing (expected {kinds(cls)[key].name}); {cls.FIX}"
        assert not jsonschema.Draft202012Validator(cls.json_schema()).is_valid(without)


@pytest.mark.parametrize("cls", PARTS, ids=IDS)
def test_a_file_that_is_no_object_is_one_line(cls: type[Whole]) -> None:
    with pytest.raises(BadInput) as caught:
        cls.from_json([1], source="f.json")
    assert str(caught.value) == f"f.json: expected an object, got [1]; {cls.FIX}"


NODE = FleetNode("n1", "node-a", address="10.0.0.1", resources={"GPU": 1.0})


def test_a_task_built_anew_writes_every_field_in_declared_order_and_with_fields_adds_last() -> None:
    task = Task("t1", "pair-a", "compare", NODE)
    assert list(task.to_json()) == list(kinds(Task))
    assert task.to_json()["node"] == {
        "id": "n1",
        "name": "node-a",
        "address": "10.0.0.1",
        "hostname": None,
        "gpu_type": None,
        "resources": {"GPU": 1.0},
        "labels": {},
    }
    read = Task.from_json(
        {"node": {"name": "node-a", "id": "n1"}, "kind": "sweep", "status": "done", "pair": "p", "id": "t2"},
        source="f.json",
    )
    done = read.with_fields(exit_code=0, status="failed")
    assert list(done.to_json()) == ["node", "kind", "status", "pair", "id", "exit_code"]  # status stays in place
    assert (done.status, done.exit_code, read.status) == ("failed", 0, "done")
    assert done.to_json()["node"] == {"name": "node-a", "id": "n1"}  # the nested part keeps the file's keys


def test_with_fields_keeps_an_unknown_key_where_the_file_had_it() -> None:
    doc = {"name": "f", UNKNOWN: {"x": [1]}, "tasks": [], "schema": fleettasks.SCHEMA}
    tasks = TaskList.from_json(doc, source="tasks.json").with_fields(name="g")
    assert json.dumps(tasks.to_json()) == json.dumps({**doc, "name": "g"})


@pytest.mark.parametrize(
    ("run_dir", "ok"),
    [
        ("runs/a", True),
        ("runs/a/b", True),
        (None, True),
        ("runs/../etc", False),
        ("runs/a/../../x", False),
        ("run/a", False),
        ("/runs/a", False),
        ("", False),
    ],
)
def test_a_run_dir_must_stay_under_runs(run_dir: str | None, ok: bool) -> None:
    doc = {**Task("t", "p", "compare", NODE).to_json(), "run_dir": run_dir}
    if ok:
        assert Task.from_json(doc, source="tasks.json").run_dir == run_dir
        return
    with pytest.raises(BadInput) as caught:
        Task.from_json(doc, source="tasks.json")
    assert str(caught.value) == (
        f"tasks.json: run_dir: expected a folder under runs/ of the fleet folder, or null, got {run_dir!r}; {FIX}"
    )
    # the schema checks the prefix only; the reader also refuses a ".." (records/fleettasks.py docstring)
    schema_ok = jsonschema.Draft202012Validator(Task.json_schema()).is_valid(doc)
    assert schema_ok == run_dir.startswith("runs/")


def test_a_bad_field_deep_in_a_task_list_names_its_path() -> None:
    doc = {
        "schema": fleettasks.SCHEMA,
        "name": "f",
        "tasks": [
            Task("a", "p", "compare", NODE).to_json(),
            {**Task("b", "p", "sweep", NODE).to_json(), "node": {**NODE.to_json(), "resources": {"GPU": "1"}}},
        ],
    }
    with pytest.raises(BadInput) as caught:
        TaskList.from_json(doc, source="tasks.json")
    assert str(caught.value) == (
        f"tasks.json: tasks[1].node.resources: expected an object of numbers, got {{'GPU': '1'}}; {FIX}"
    )


@pytest.mark.parametrize(
    ("field", "value", "name"),
    [("schema", "loadgen.fleet-tasks/2", "one of loadgen.fleet-tasks/1"), ("name", 3, "a string")],
)
def test_a_task_list_of_another_schema_or_with_a_bad_name_is_refused(field: str, value: object, name: str) -> None:
    doc = {**TaskList("f", []).to_json(), field: value}
    with pytest.raises(BadInput) as caught:
        TaskList.from_json(doc, source="tasks.json")
    assert str(caught.value) == f"tasks.json: {field}: expected {name}, got {value!r}; {FIX}"


@pytest.mark.parametrize(
    "cls",
    [c for c in PARTS if not required(c)],
    ids=[i for c, i in zip(PARTS, IDS, strict=True) if not required(c)],
)
def test_a_part_read_from_an_empty_object_writes_an_empty_object(cls: type[Whole]) -> None:
    read = cls.from_json({}, source="f.json")
    assert read.to_json() == {} and read.keys == ()
    built = cls()
    assert list(built.to_json()) == list(kinds(cls)) and built == read  # built anew: every field, declared order


def test_a_fleet_node_row_with_an_empty_hardware_object_writes_back_as_read() -> None:
    doc = {"name": "node-a", "hardware": {}, "tasks": {"done": 2}}
    row = fleet.NodeRow.from_json(doc, source="fleet.json")
    assert row.hardware == fleetparts.NodeHardware() and json.dumps(row.to_json()) == json.dumps(doc)
    grown = row.with_fields(hardware=row.hardware.with_fields(cpu_cores=8))
    assert grown.to_json()["hardware"] == {"cpu_cores": 8}
