"""The fleet's tasks, one per (pair x node), and their state file ``DIR/tasks.json`` (schema
``loadgen.fleet-tasks/1``, docs/fleet/README.md; its records: records/fleettasks.py): planned from the fleet
file and the cluster's nodes, updated as each task comes back, read again by ``--resume`` and by the fleet card.

A task is ``done`` when its compare or sweep finished (exit 0, or 3: its verdict failed the declared
criteria, still a finished measurement), ``failed`` with a one-line ``reason`` otherwise, ``pending`` until
it comes back. ``--resume`` keeps the done tasks whose run folder is on disk and runs the rest again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from loadgen.errors import BadInput
from loadgen.records.fleettasks import FleetNode, Task, TaskList
from loadgen.store.rundir import read_json, write_json


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
    write_json(fleet_dir / "tasks.json", TaskList(name, list(tasks)).to_json())


def load(fleet_dir: Path) -> tuple[str, list[Task]]:
    """The fleet's name and tasks from ``DIR/tasks.json``.

    Raises BadInput (one line naming the file, the field and the fix) when the file is missing, is not
    JSON or is not a ``loadgen.fleet-tasks/1`` task list (records/fleettasks.py)."""
    path = fleet_dir / "tasks.json"
    if not path.is_file():
        raise BadInput(f"{fleet_dir} holds no tasks.json: not a fleet folder (loadgen fleet run writes one)")
    parsed = read_tasks(path)
    return parsed.name, list(parsed.tasks)


def read_tasks(path: Path) -> TaskList:
    """The task list in ``path``, checked (records/fleettasks.py): BadInput, one line naming the file, the
    field and the fix, when it is not JSON or not a task list."""
    return TaskList.from_json(read_json(path), source=str(path))


def reset(task: Task) -> Task:
    """``task`` pending again, its outcome cleared."""
    return dataclasses.replace(
        task, status="pending", reason=None, exit_code=None, started=None, finished=None, wall_s=None
    )


def to_rerun(fleet_dir: Path, tasks: Sequence[Task]) -> list[Task]:
    """The tasks ``--resume`` runs again: every task not done, and every done one whose run folder is
    gone, reset to pending."""
    return [reset(t) for t in tasks if t.status != "done" or not t.run_dir or not (fleet_dir / t.run_dir).is_dir()]
