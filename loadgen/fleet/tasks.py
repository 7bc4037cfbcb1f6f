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

from loadgen.errors import BadInput
from loadgen.fleet.nodes import FleetNode
from loadgen.report.rundir import read_json, write_json

TASKS_SCHEMA = "loadgen.fleet-tasks/1"
STATUSES = ("done", "failed", "pending")
KINDS = ("compare", "sweep")


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
        return Task(str(doc["id"]), str(doc["pair"]), str(doc["kind"]), FleetNode.from_json(doc["node"]),
                    str(doc.get("status") or "pending"), doc.get("reason"), doc.get("exit_code"), doc.get("run_dir"),
                    doc.get("log"), doc.get("started"), doc.get("finished"),
                    None if doc.get("wall_s") is None else float(doc["wall_s"]))


@dataclass(frozen=True)
class FleetTasks:
    """A whole task list: the fleet's name and its tasks in file order."""

    name: str
    tasks: tuple[Task, ...]


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


def _optional(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> str | None:
    value = obj.get(key)
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return None
    return f"'{key}' is {type(value).__name__}, not {getattr(kind, '__name__', 'a number')}"


def _required(obj: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` that ``obj`` lacks or holds as anything but a non-empty string, as a phrase."""
    key = next((k for k in keys if not isinstance(obj.get(k), str) or not obj[k]), None)
    return None if key is None else f"'{key}' is missing or not a string"


def _node_problem(node: Any) -> str | None:
    if not isinstance(node, dict):
        return "'node' is not an object"
    if (problem := _required(node, ("id", "name"))) is not None:
        return f"node {problem}"
    for key in ("address", "hostname", "gpu_type"):
        if (problem := _optional(node, key, str)) is not None:
            return f"node {problem}"
    for key in ("resources", "labels"):
        if not isinstance(node.get(key, {}), dict):
            return f"node '{key}' is not an object"
    return None


def _task_problem(task: Any) -> str | None:
    if not isinstance(task, dict):
        return "it is not an object"
    if (problem := _required(task, ("id", "pair"))) is not None:
        return problem
    if task.get("kind") not in KINDS:
        return f"'kind' is {task.get('kind')!r}, not one of {', '.join(KINDS)}"
    if task.get("status") not in STATUSES:
        return f"'status' is {task.get('status')!r}, not one of {', '.join(STATUSES)}"
    checks: list[tuple[str, type | tuple[type, ...]]] = [
        ("reason", str), ("run_dir", str), ("log", str), ("started", str), ("finished", str), ("exit_code", int),
        ("wall_s", (int, float))]
    for key, kind in checks:
        if (problem := _optional(task, key, kind)) is not None:
            return problem
    run_dir = task.get("run_dir")
    if run_dir is not None and (not run_dir.startswith("runs/") or ".." in Path(run_dir).parts):
        return f"'run_dir' {run_dir!r} is not a folder under runs/ of the fleet folder"
    return _node_problem(task.get("node"))


def tasks_problem(doc: Any) -> str | None:
    """What is wrong with a ``tasks.json`` document (one phrase), or None when it is a task list."""
    if not isinstance(doc, dict):
        return "it is not a JSON object"
    if doc.get("schema") != TASKS_SCHEMA:
        return f"its schema is {doc.get('schema')!r}, not {TASKS_SCHEMA!r}"
    if not isinstance(doc.get("name"), str):
        return "'name' is missing or not a string"
    tasks = doc.get("tasks")
    if not isinstance(tasks, list):
        return "'tasks' is missing or not a list"
    seen: set[str] = set()
    for n, task in enumerate(tasks, 1):
        if (problem := _task_problem(task)) is not None:
            return f"task {n}: {problem}"
        if task["id"] in seen:
            return f"task {n}: the id {task['id']!r} appears twice"
        seen.add(task["id"])
    return None


def parse_tasks(doc: Any) -> FleetTasks:
    """The typed task list of a ``tasks.json`` document.

    Raises BadInput (exit 2), one line, when the document is not a ``loadgen.fleet-tasks/1`` task list."""
    if (problem := tasks_problem(doc)) is not None:
        raise BadInput(f"tasks.json is not a fleet task list ({problem}); restore the tasks.json that "
                       "`loadgen fleet run` wrote in the fleet folder")
    return FleetTasks(name=doc["name"], tasks=tuple(Task.from_json(t) for t in doc["tasks"]))


def load(fleet_dir: Path) -> tuple[str, list[Task]]:
    """The fleet's name and tasks from ``DIR/tasks.json``.

    Raises BadInput (one line naming the file and the fix) when the file is missing or is not a
    ``loadgen.fleet-tasks/1`` task list."""
    path = fleet_dir / "tasks.json"
    if not path.is_file():
        raise BadInput(f"{fleet_dir} holds no tasks.json: not a fleet folder (loadgen fleet run writes one)")
    try:
        doc = read_json(path)
    except BadInput:
        raise BadInput(f"{path} is not readable JSON; restore the tasks.json that `loadgen fleet run` wrote, or "
                       "run the fleet again into a new folder") from None
    if (problem := tasks_problem(doc)) is not None:
        raise BadInput(f"{path} is not a fleet task list ({problem}); restore the tasks.json that "
                       "`loadgen fleet run` wrote, or run the fleet again into a new folder")
    parsed = parse_tasks(doc)
    return parsed.name, list(parsed.tasks)


def reset(task: Task) -> Task:
    """``task`` pending again, its outcome cleared."""
    return dataclasses.replace(task, status="pending", reason=None, exit_code=None, started=None, finished=None,
                               wall_s=None)


def to_rerun(fleet_dir: Path, tasks: Sequence[Task]) -> list[Task]:
    """The tasks ``--resume`` runs again: every task not done, and every done one whose run folder is
    gone, reset to pending."""
    return [reset(t) for t in tasks if t.status != "done" or not t.run_dir or not (fleet_dir / t.run_dir).is_dir()]
