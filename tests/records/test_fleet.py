"""The fleet's task list (records/fleettasks.py): tasks.json reads and writes back byte-identically, its JSON
Schema is generated from the type (committed as records/fleet-tasks.schema.json) and refuses what the reader
refuses, and a tasks.json that does not read is one line naming the file, the field and the fix (exit 2),
from ``loadgen fleet report`` too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import BadInput
from loadgen.fleet import tasks as taskfile
from loadgen.records.fleet import FleetCard
from loadgen.records.fleettasks import FIX, FleetNode, Task, TaskList

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "loadgen" / "records" / "fleet-tasks.schema.json"
CARD_SCHEMA = ROOT / "loadgen" / "records" / "fleet.schema.json"
NODE = {
    "id": "ab12",
    "name": "stg-a",
    "address": "10.0.0.1",
    "hostname": "gpu-a",
    "gpu_type": "H200",
    "resources": {"GPU": 8.0, "accelerator_type:H200": 1.0},
    "labels": {"loadgen.io/node": "stg-a"},
}


def _doc() -> dict[str, Any]:
    """A tasks.json as `loadgen fleet run` writes it: one done compare task, one pending sweep task."""
    return json.loads(
        json.dumps(
            {
                "schema": "loadgen.fleet-tasks/1",
                "name": "staging",
                "tasks": [
                    {
                        "id": "p__stg-a",
                        "pair": "p",
                        "kind": "compare",
                        "node": NODE,
                        "status": "done",
                        "reason": None,
                        "exit_code": 0,
                        "run_dir": "runs/p__stg-a",
                        "log": "logs/p__stg-a.log",
                        "started": "2026-01-01T00:00:00+00:00",
                        "finished": "2026-01-01T00:10:00+00:00",
                        "wall_s": 600.5,
                    },
                    {
                        "id": "s__stg-a",
                        "pair": "s",
                        "kind": "sweep",
                        "node": NODE,
                        "status": "pending",
                        "reason": None,
                        "exit_code": None,
                        "run_dir": None,
                        "log": "logs/s__stg-a.log",
                        "started": None,
                        "finished": None,
                        "wall_s": None,
                    },
                ],
            }
        )
    )


def test_a_task_list_reads_typed_and_writes_back_byte_identically() -> None:
    text = json.dumps(_doc(), indent=2) + "\n"
    tasks = TaskList.from_json(json.loads(text), source="tasks.json")
    assert json.dumps(tasks.to_json(), indent=2) + "\n" == text
    done = tasks.tasks[0]
    assert isinstance(done, Task) and isinstance(done.node, FleetNode)
    assert (done.status, done.exit_code, done.wall_s, done.node.gpu_type, done.node.resources["GPU"]) == (
        "done",
        0,
        600.5,
        "H200",
        8.0,
    )


def test_save_writes_what_load_reads_and_the_file_a_fleet_wrote_before(tmp_path: Path) -> None:
    tasks = TaskList.from_json(_doc(), source="tasks.json").tasks
    built = [
        Task(
            t.id,
            t.pair,
            t.kind,
            FleetNode(**{k: getattr(t.node, k) for k in NODE}),
            t.status,
            t.reason,
            t.exit_code,
            t.run_dir,
            t.log,
            t.started,
            t.finished,
            t.wall_s,
        )
        for t in tasks
    ]
    taskfile.save(tmp_path, "staging", built)
    assert (tmp_path / "tasks.json").read_text() == json.dumps(_doc(), indent=2) + "\n"
    assert taskfile.load(tmp_path) == ("staging", tasks)


def test_the_committed_schema_is_the_one_the_type_generates_and_takes_a_task_list() -> None:
    assert SCHEMA.read_text() == json.dumps(TaskList.json_schema(), indent=2) + "\n"
    jsonschema.Draft202012Validator(TaskList.json_schema()).validate(_doc())


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda d: d["tasks"][1].update(kind="bench"), "tasks[1].kind", "expected one of compare, sweep, got 'bench'"),
        (lambda d: d["tasks"][0].update(exit_code="0"), "tasks[0].exit_code", "expected an integer or null, got '0'"),
        (
            lambda d: d["tasks"][0]["node"].update(resources={"GPU": "8"}),
            "tasks[0].node.resources",
            "expected an object of numbers, got {'GPU': '8'}",
        ),
        (
            lambda d: d["tasks"][0].update(run_dir="/etc"),
            "tasks[0].run_dir",
            "expected a folder under runs/ of the fleet folder, or null, got '/etc'",
        ),
        (lambda d: d["tasks"][1].pop("node"), "tasks[1].node", "missing (expected an object (node))"),
        (lambda d: d.update(name=3), "name", "expected a string, got 3"),
    ],
)
def test_a_bad_field_is_one_line_and_the_schema_refuses_it_too(
    tmp_path: Path, change: object, field: str, message: str
) -> None:
    data = _doc()
    change(data)  # type: ignore[operator]
    (tmp_path / "tasks.json").write_text(json.dumps(data))
    with pytest.raises(BadInput) as caught:
        taskfile.load(tmp_path)
    assert str(caught.value) == f"{tmp_path / 'tasks.json'}: {field}: {message}; {FIX}"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, TaskList.json_schema())


def test_loadgen_fleet_report_on_a_bad_task_list_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    data = _doc()
    data["tasks"][0]["status"] = "running"
    (tmp_path / "tasks.json").write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["fleet", "report", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-1] == (
        f"loadgen: error: {tmp_path / 'tasks.json'}: tasks[0].status: expected "
        f"one of done, failed, pending, got 'running'; {FIX}"
    )


def test_the_committed_fleet_card_schema_is_the_one_the_type_generates() -> None:
    assert CARD_SCHEMA.read_text() == json.dumps(FleetCard.json_schema(), indent=2) + "\n"
    row = FleetCard.json_schema()["properties"]["pairs"]["items"]["properties"]["cells"]["items"]
    assert row["properties"]["nodes"]["items"]["required"] == ["node", "status"]
