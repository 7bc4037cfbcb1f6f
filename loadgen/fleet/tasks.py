"""The fleet's tasks, one per (pair x node), and their state file ``DIR/tasks.json`` (schema
``loadgen.fleet-tasks/1``, docs/fleet/README.md): planned from the fleet file and the cluster's nodes,
updated as each task comes back, read again by ``--resume`` and by the fleet card.

A task is ``done`` when its compare or sweep finished (exit 0, or 3: its verdict failed the declared
criteria, still a finished measurement), ``failed`` with a one-line ``reason`` otherwise, ``pending`` until
it comes back. ``--resume`` keeps the done tasks whose run folder is on disk and runs the rest again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgen.errors import BadInput, LoadgenError
from loadgen.fleet.nodes import FleetNode
from loadgen.report.rundir import read_json, write_json

TASKS_SCHEMA = "loadgen.fleet-tasks/1"
#: Exit codes of ``loadgen compare`` / ``loadgen sweep`` that mean the measurement finished.
FINISHED_EXITS = (0, 3)


@dataclass(frozen=True)
class Task:
    """One (pair x node) task and its outcome; ``run_dir`` and ``log`` are relative to the fleet folder."""

    id: str
    pair: str
    kind: str  # "compare" | "sweep"
    node: FleetNode
    status: str = "pending"  # "pending" | "done" | "failed"
    reason: str | None = None
    exit_code: int | None = None
    run_dir: str | None = None
    log: str | None = None
    started: str | None = None
    finished: str | None = None
    wall_s: float | None = None

    def as_json(self) -> dict[str, Any]:
        doc = dataclasses.asdict(self)
        doc["node"] = self.node.as_json()
        return doc

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Task:
        fields = {f.name for f in dataclasses.fields(Task)} - {"node"}
        return Task(node=FleetNode.from_json(doc["node"]), **{k: doc.get(k) for k in fields})


def task_id(pair: str, node: FleetNode) -> str:
    """``<pair>__<node name>``: the task's folder name under ``runs/`` and ``logs/``."""
    return f"{pair}__{node.name}".replace("/", "_")


def plan(entries: Sequence[tuple[str, str, Sequence[FleetNode]]]) -> list[Task]:
    """One pending task per (pair, kind, node) of ``entries`` (pair name, ``compare``/``sweep``, nodes).

    Raises BadInput when the same pair is listed twice for one node."""
    tasks: dict[str, Task] = {}
    for pair, kind, nodes in entries:
        for node in nodes:
            tid = task_id(pair, node)
            if tid in tasks:
                raise BadInput(f"pair {pair!r} is listed twice for node {node.name!r} in the fleet file; list it once")
            tasks[tid] = Task(tid, pair, kind, node, log=f"logs/{tid}.log")
    return list(tasks.values())


def save(fleet_dir: Path, name: str, tasks: Sequence[Task]) -> None:
    """Write ``tasks.json`` (atomically: a reader never sees half a file)."""
    write_json(fleet_dir / "tasks.json", {"schema": TASKS_SCHEMA, "name": name,
                                          "tasks": [t.as_json() for t in tasks]})


def load(fleet_dir: Path) -> tuple[str, list[Task]]:
    """The fleet's name and tasks from ``DIR/tasks.json``.

    Raises BadInput when the file is missing or is not a fleet's task list."""
    path = fleet_dir / "tasks.json"
    if not path.is_file():
        raise BadInput(f"{fleet_dir} holds no tasks.json: not a fleet folder (loadgen fleet run writes one)")
    try:
        doc = read_json(path)
        if doc.get("schema") != TASKS_SCHEMA:
            raise ValueError(f"schema {doc.get('schema')!r}")
        return str(doc["name"]), [Task.from_json(t) for t in doc["tasks"]]
    except (LoadgenError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BadInput(f"{path} is not a fleet task list ({exc}); run the fleet again into a new folder") from None


def to_rerun(fleet_dir: Path, tasks: Sequence[Task]) -> list[Task]:
    """The tasks ``--resume`` runs again: every task not done, and every done one whose run folder is
    gone, reset to pending."""
    return [dataclasses.replace(t, status="pending", reason=None, exit_code=None, started=None, finished=None,
                                wall_s=None)
            for t in tasks if t.status != "done" or not t.run_dir or not (fleet_dir / t.run_dir).is_dir()]
