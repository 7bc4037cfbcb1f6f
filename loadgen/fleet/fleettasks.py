"""A fleet folder's task list (``DIR/tasks.json``, schema ``loadgen.fleet-tasks/1``) as typed records,
checked strictly (pure; docs/fleet/README.md, "The fleet folder").

One task is one (pair x node): the ordinary ``loadgen compare`` (kind ``compare``) or ``loadgen sweep``
(kind ``sweep``) run on that node, with its status ``done`` (the run finished: exit 0, or 3 when its
verdict failed the declared criteria), ``failed`` or ``pending``, its run folder ``runs/<id>`` relative to
the fleet folder, and the facts of the Ray node it ran on.

The GPU type of a node: the Ray node label ``loadgen.io/gpu-type``, else Ray's ``accelerator_type:<type>``
resource, else the first GPU name of the card's ``hardware`` written the way Ray writes an accelerator
type (``NVIDIA H200`` -> ``H200``), else unknown (None).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loadgen.errors import BadInput

TASKS_SCHEMA = "loadgen.fleet-tasks/1"
STATUSES = ("done", "failed", "pending")
KINDS = ("compare", "sweep")
NODE_LABEL = "loadgen.io/node"
GPU_TYPE_LABEL = "loadgen.io/gpu-type"
ACCELERATOR_RESOURCE = "accelerator_type:"
#: Ray's accelerator type from an NVIDIA device name: ``NVIDIA_GPU_NAME_PATTERN`` and its fallback in
#: ``NvidiaGPUAcceleratorManager._gpu_name_to_accelerator_type`` (ray-project/ray,
#: python/ray/_private/accelerators/nvidia_gpu.py): "NVIDIA H200" -> "H200", "NVIDIA A100-SXM4-80GB" ->
#: "A100", "NVIDIA GeForce RTX 5090" -> "GeForce-RTX-5090".
_RAY_GPU_NAME = re.compile(r"\w+\s+((?:[A-Z]+\s+)*[A-Z0-9]*\d[A-Z0-9]*)")


@dataclass(frozen=True)
class FleetNode:
    """The Ray node a task ran on: its id (hex), name (label ``loadgen.io/node``, else its address),
    IP address, hostname, GPU type as the runner saw it (None: unknown), Ray resources and labels."""

    id: str
    name: str
    address: str | None = None
    hostname: str | None = None
    gpu_type: str | None = None
    resources: Mapping[str, float] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FleetTask:
    """One (pair x node) task of ``tasks.json``; times are ISO UTC strings, ``wall_s`` seconds."""

    id: str
    pair: str
    kind: str
    node: FleetNode
    status: str
    reason: str | None = None
    exit_code: int | None = None
    run_dir: str | None = None
    log: str | None = None
    started: str | None = None
    finished: str | None = None
    wall_s: float | None = None


@dataclass(frozen=True)
class FleetTasks:
    """The whole task list: the fleet's name and its tasks in file order."""

    name: str
    tasks: tuple[FleetTask, ...]


def _optional(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> str | None:
    value = obj.get(key)
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return None
    return f"'{key}' is {type(value).__name__}, not {getattr(kind, '__name__', 'a number')}"


def _node_problem(node: Any) -> str | None:
    if not isinstance(node, dict):
        return "'node' is not an object"
    for key in ("id", "name"):
        if not isinstance(node.get(key), str) or not node[key]:
            return f"node '{key}' is missing or not a string"
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
    for key in ("id", "pair"):
        if not isinstance(task.get(key), str) or not task[key]:
            return f"'{key}' is missing or not a string"
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


def _node(d: Mapping[str, Any]) -> FleetNode:
    return FleetNode(id=d["id"], name=d["name"], address=d.get("address"), hostname=d.get("hostname"),
                     gpu_type=d.get("gpu_type"), resources=dict(d.get("resources") or {}),
                     labels=dict(d.get("labels") or {}))


def parse_tasks(doc: Any) -> FleetTasks:
    """The typed task list of a ``tasks.json`` document.

    Raises BadInput (exit 2), one line, when the document is not a ``loadgen.fleet-tasks/1`` task list."""
    if (problem := tasks_problem(doc)) is not None:
        raise BadInput(f"tasks.json is not a fleet task list ({problem}); restore the tasks.json that "
                       "`loadgen fleet run` wrote in the fleet folder")
    tasks = tuple(FleetTask(id=t["id"], pair=t["pair"], kind=t["kind"], node=_node(t["node"]), status=t["status"],
                            reason=t.get("reason"), exit_code=t.get("exit_code"), run_dir=t.get("run_dir"),
                            log=t.get("log"), started=t.get("started"), finished=t.get("finished"),
                            wall_s=None if t.get("wall_s") is None else float(t["wall_s"]))
                  for t in doc["tasks"])
    return FleetTasks(name=doc["name"], tasks=tasks)


def ray_accelerator_type(device_name: str | None) -> str | None:
    """An NVIDIA device name (``nvidia-smi``/NVML, as in the card's ``hardware.gpus[].name``) written as
    Ray's ``accelerator_type`` (see ``_RAY_GPU_NAME``); None for None or an empty name."""
    if not device_name:
        return None
    match = _RAY_GPU_NAME.match(device_name)
    result = match.group(1).replace(" ", "-") if match else None
    if result and len(result) > 1:
        return result
    cleaned = re.sub(r"^NVIDIA\s+", "", device_name).strip()
    return cleaned.replace(" ", "-") or None


def gpu_type_of(node: FleetNode, hardware: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """(GPU type, where it came from) of ``node``: the runner's ``gpu_type`` (named by the label or
    resource it matches), the label ``loadgen.io/gpu-type``, the ``accelerator_type:<type>`` resource, the
    first GPU of a card's ``hardware``; (None, None) when none says."""
    label = node.labels.get(GPU_TYPE_LABEL)
    accel = next((k[len(ACCELERATOR_RESOURCE):] for k in sorted(node.resources) if k.startswith(ACCELERATOR_RESOURCE)),
                 None)
    by_label, by_resource = f"label {GPU_TYPE_LABEL}", f"Ray resource {ACCELERATOR_RESOURCE}<type>"
    if node.gpu_type:
        source = by_label if node.gpu_type == label else by_resource if node.gpu_type == accel else "tasks.json"
        return node.gpu_type, source
    if label:
        return label, by_label
    if accel:
        return accel, by_resource
    gpus: Sequence[Any] = (hardware or {}).get("gpus") or []
    first = gpus[0].get("name") if gpus and isinstance(gpus[0], dict) else None
    found = ray_accelerator_type(first) if isinstance(first, str) else None
    return (found, "card hardware (first GPU)") if found else (None, None)
