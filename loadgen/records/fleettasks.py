"""The fleet's task list: :class:`TaskList`, ``DIR/tasks.json`` (``loadgen.fleet-tasks/1``), one :class:`Task`
per (pair x node) with the :class:`FleetNode` it runs on (docs/fleet/README.md), and what a task's node sends
back (:class:`TaskResult`).

Planned by fleet/tasks.py (``plan``, from the fleet file and the cluster's nodes: records/raynodes.py
``node_of``), updated by fleet/taskrun.py as each task comes back, written by fleet/tasks.py ``save``, read
back by ``loadgen fleet run --resume`` and ``loadgen fleet report`` (fleet/tasks.py ``load``,
fleet/fleetwrite.py), always through :meth:`TaskList.from_json`, which checks every field once: a wrong
type, a status or kind outside its set, a ``run_dir`` outside ``runs/`` or an id listed twice is one
BadInput line (exit 2) naming the file, the field path and the fix. Its JSON Schema is generated from the
fields' type hints (:meth:`TaskList.json_schema`, committed as records/fleet-tasks.schema.json; the schema's
``run_dir`` pattern checks the ``runs/`` prefix, the reader also refuses a ``..`` in it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, ClassVar, Self

from loadgen import __version__
from loadgen.records.cardwire import Whole
from loadgen.records.wire import Kind, Where, one_of

SCHEMA = "loadgen.fleet-tasks/1"
STATUSES = ("done", "failed", "pending")
KINDS = ("compare", "sweep")
#: The fix a tasks.json that does not read gets.
FIX = "restore the tasks.json that `loadgen fleet run` wrote, or run the fleet again into a new folder"


#: A string with at least one character (an id, a name).
NAME = Kind("a non-empty string", lambda v: isinstance(v, str) and bool(v), {"type": "string", "minLength": 1})


def _under_runs(v: object) -> bool:
    return v is None or (isinstance(v, str) and v.startswith("runs/") and ".." not in PurePosixPath(v).parts)


RUN_DIR = Kind(
    "a folder under runs/ of the fleet folder, or null",
    _under_runs,
    {"anyOf": [{"type": "string", "pattern": "^runs/"}, {"type": "null"}]},
)


@dataclass(frozen=True)
class FleetNode(Whole):
    """One Ray node: ``id`` (Ray node id, hex), ``name``, ``address`` (IP), ``hostname``, ``gpu_type``, its
    ``resources`` (Ray resource name -> amount) and ``labels`` (records/raynodes.py says where each comes from)."""

    id: str = field(metadata={"kind": NAME})
    name: str = field(metadata={"kind": NAME})
    address: str = ""
    hostname: str | None = None
    gpu_type: str | None = None
    resources: Mapping[str, float] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    FIX: ClassVar[str] = FIX
    TITLE: ClassVar[str] = "node"


@dataclass(frozen=True)
class Task(Whole):
    """One (pair x node) task and its outcome; ``run_dir`` and ``log`` are relative to the fleet folder,
    ``started`` and ``finished`` UTC ISO 8601, ``wall_s`` in s."""

    id: str = field(metadata={"kind": NAME})
    pair: str = field(metadata={"kind": NAME})
    kind: str = field(metadata={"kind": one_of(KINDS)})
    node: FleetNode
    status: str = field(default="pending", metadata={"kind": one_of(STATUSES), "required": True})
    reason: str | None = None
    exit_code: int | None = None
    run_dir: str | None = field(default=None, metadata={"kind": RUN_DIR})
    log: str | None = None
    started: str | None = None
    finished: str | None = None
    wall_s: float | None = None
    FIX: ClassVar[str] = FIX
    TITLE: ClassVar[str] = "task"


@dataclass(frozen=True)
class TaskList(Whole):
    """``tasks.json`` (module docstring): the fleet's name and its tasks in file order."""

    schema: str = field(default=SCHEMA, kw_only=True, metadata={"kind": one_of((SCHEMA,)), "required": True})
    name: str
    tasks: list[Task]
    FIX: ClassVar[str] = FIX
    TITLE: ClassVar[str] = f"loadgen tasks.json ({SCHEMA})"

    @classmethod
    def read_at(cls, data: object, where: Where) -> Self:
        """:meth:`from_json` at ``where``; also BadInput when two tasks have one id."""
        out = super().read_at(data, where)
        seen: set[str] = set()
        for i, task in enumerate(out.tasks):
            if task.id in seen:
                where.at("tasks").at(i).at("id").fail("an id no other task has", task.id)
            seen.add(task.id)
        return out

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """tasks.json's JSON Schema (draft 2020-12), generated from the fields' kinds."""
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **super().json_schema()}


@dataclass(frozen=True)
class TaskResult:
    """What comes back from a task's node (fleet/nodetask.py ``run_on_node``, through Ray, never the disk: the
    runner records it into tasks.json and the fleet folder, fleet/taskrun.py ``keep_result``): the exit code of the
    command, its output, the run folder as a gzipped tar (None when no run folder was made), the node's
    hostname, the ports used, and the UTC start and end (ISO 8601) with the wall time in seconds; ``run_path``
    is where the run folder was on the node (gone now: the fleet folder's copy replaces it in messages)."""

    exit_code: int
    output: str
    archive: bytes | None
    hostname: str
    ports: tuple[int, int] | None
    started: str
    finished: str
    wall_s: float
    run_path: str | None = None
    loadgen_version: str = __version__
