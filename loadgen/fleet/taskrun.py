"""``loadgen fleet run``: every (pair x node) of the fleet file as one Ray task pinned to its node
(``NodeAffinitySchedulingStrategy(node_id, soft=False)``, one unit of the GPU resource, no retry), the run
folders shipped back into the fleet folder as the tasks finish, then the fleet card.

Ray: https://docs.ray.io/en/latest/ray-core/scheduling/index.html (node affinity),
https://docs.ray.io/en/latest/ray-core/fault_tolerance/tasks.html (a task on a lost node fails with
``NodeDiedError`` / ``WorkerCrashedError`` when ``max_retries=0``).

The fleet folder: ``fleet.toml`` (the fleet file), ``tasks.json`` (fleet/tasks.py; rewritten as each task
comes back, so an interrupted fleet keeps what finished), ``runs/<task id>/``, ``logs/<task id>.log``,
and the fleet card (``fleet.json``, ``fleet.md``).
"""

from __future__ import annotations

import dataclasses
import io
import logging
import os
import shutil
import socket
import subprocess
import sys
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loadgen.errors import BadInput
from loadgen.fleet import tasks as taskfile
from loadgen.fleet.nodes import select
from loadgen.fleet.nodetask import reason_of
from loadgen.profile.fleetfile import FleetFile
from loadgen.profile.pairfile import load_pair, pair_name, resolve_pair_path
from loadgen.profile.tomlread import read_toml
from loadgen.records.candidates import is_sweep
from loadgen.records.fleettasks import FleetNode, Task, TaskResult
from loadgen.store.rundir import write_text


@dataclass(frozen=True)
class PairSource:
    """A pair or sweep file as the driver read it: its ``name`` key, kind and text."""

    name: str
    kind: str
    text: str


def read_sources(fleet: FleetFile) -> dict[tuple[str, str], PairSource]:
    """Every pair and sweep file of the fleet, read on the driver (so all nodes run the same text).

    Raises ProfileError for a missing or broken file, and BadInput for a sweep file listed under
    ``pairs`` or a pair file under ``sweeps``."""
    out: dict[tuple[str, str], PairSource] = {}
    for m in fleet.measures:
        for kind, names in (("compare", m.pairs), ("sweep", m.sweeps)):
            for ref in names:
                path = resolve_pair_path(ref)
                doc = read_toml(path)
                if is_sweep(doc) != (kind == "sweep"):
                    where, what, fix = (
                        ("pairs", "a sweep", "sweeps") if kind == "compare" else ("sweeps", "a pair", "pairs")
                    )
                    raise BadInput(f"{fleet.path}: {ref!r} under {where} is {what} file; list it under {fix}")
                if kind == "compare":
                    load_pair(str(path))  # the pair checks loadgen compare starts with: one line, exit 2
                src = PairSource(pair_name(str(doc.get("name") or path.stem), path), kind, path.read_text())
                same = [o for o in out.values() if o.name == src.name and o.text != src.text]
                if same:
                    raise BadInput(
                        f"{fleet.path}: two different pair files are both named {src.name!r} (the name key "
                        f"of {ref!r} and of another entry); give each its own name"
                    )
                out[(kind, ref)] = src
    return out


def plan_fleet(fleet: FleetFile, nodes: Sequence[FleetNode], sources: dict[tuple[str, str], PairSource]) -> list[Task]:
    """The fleet's tasks on ``nodes`` (fleet/tasks.py ``plan``). Raises BadInput as nodes.select does."""
    entries = []
    for m in fleet.measures:
        picked = select(nodes, m.nodes, fleet.gpu_resource)
        for kind, names in (("compare", m.pairs), ("sweep", m.sweeps)):
            entries += [(sources[(kind, ref)].name, kind, picked) for ref in names]
    return taskfile.plan(entries)


def _gcs_address(address: str) -> str:
    """``host:port`` that ``address`` names (``auto``: the cluster Ray finds from RAY_ADDRESS or the local
    node's session, through ray._private.services.canonicalize_bootstrap_address, Ray 2.x)."""
    if address.startswith("ray://"):
        raise BadInput(
            f"--ray-address {address}: Ray Client addresses are not supported (the driver ships whole run "
            "folders); run loadgen fleet on the head node with --ray-address auto, or give HOST:6379"
        )
    try:
        from ray._private.services import canonicalize_bootstrap_address
    except ImportError:
        return address
    try:
        return canonicalize_bootstrap_address(address) or address
    except ValueError:
        raise BadInput(
            f"--ray-address {address!r} is not a Ray address; give HOST:PORT of the head's GCS (HOST:6379), or auto"
        ) from None
    except ConnectionError:
        raise BadInput(
            f"no Ray cluster found for --ray-address {address} (no RAY_ADDRESS and no Ray started "
            "on this node); start one with `ray start --head` or pass --ray-address HOST:6379"
        ) from None


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast where ray.init would retry for minutes: nothing listens at the cluster's address."""
    target = _gcs_address(address)
    host, _, port = target.rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s).close()
    except (OSError, ValueError) as exc:
        raise BadInput(
            f"no Ray cluster answers at {target} (--ray-address {address}: "
            f"{getattr(exc, 'strerror', None) or exc}); check the address, or start the head with "
            "`ray start --head --port=6379`"
        ) from None


#: How long a Ray driver may take to connect in the probe (a Ray head answers in a few seconds).
PROBE_TIMEOUT_S = 60.0
_PROBE = "import sys, ray; ray.init(address=sys.argv[1], logging_level=40, log_to_driver=False); print('ok')"


def _probe(address: str) -> None:
    """Connect once in a child process that can be stopped: ray.init retries for many minutes against a
    port where something other than a Ray head listens (a dashboard, a web server)."""
    try:
        out = subprocess.run(
            [sys.executable, "-c", _PROBE, address],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise BadInput(
            f"no Ray cluster answered at --ray-address {address} within {PROBE_TIMEOUT_S:.0f} s (is it "
            "the head's GCS port, 6379 by default, and not the dashboard's 8265?)"
        ) from None
    if out.returncode != 0 or "ok" not in out.stdout:
        lines = [ln.strip() for ln in out.stderr.splitlines() if ln.strip()] or ["no output"]
        auth = [ln for ln in lines if "auth" in ln.lower() or "token" in ln.lower()]
        raise BadInput(
            f"cannot connect to a Ray cluster at {address} ({(auth or lines)[-1][:200]}); check "
            "--ray-address (the head's GCS port, 6379 by default)"
            + (
                "; the cluster uses token authentication: export RAY_AUTH_MODE=token and the head's "
                "token here (docs/fleet/README.md)"
                if auth
                else ""
            )
        )


def connect(address: str | None) -> Any:
    """``ray`` connected to the cluster at ``address`` (None: a new local single-node Ray).

    Raises BadInput when Ray is not installed or no cluster answers there (within seconds)."""
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")  # read at import: every task's lines, not "[repeated 5x ...]"
    try:
        import ray
    except ImportError:
        raise BadInput("loadgen fleet run needs Ray: pip install 'loadgen[fleet]'") from None
    if address is not None:
        _check_reachable(address)
        _probe(address)
    try:
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=True, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise BadInput(
            f"cannot connect to a Ray cluster at {address or 'auto'} ({str(exc).splitlines()[0]}); "
            "start one with `ray start --head` or pass --ray-address HOST:6379"
        ) from None
    return ray


def _unpack(archive: bytes, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        tar.extractall(dest, filter="data")


def keep_result(fleet_dir: Path, task: Task, result: TaskResult) -> Task:
    """Write a result's log and run folder into the fleet folder and return the task updated."""
    output = result.output
    if result.run_path:
        output = output.replace(result.run_path, str(fleet_dir.resolve() / "runs" / task.id))
    write_text(fleet_dir / f"logs/{task.id}.log", output)
    run_dir = None
    if result.archive is not None:
        _unpack(result.archive, fleet_dir / "runs" / task.id)
        run_dir = f"runs/{task.id}"
    node = dataclasses.replace(task.node, hostname=result.hostname or task.node.hostname)
    reason = reason_of(result.exit_code, output)
    return dataclasses.replace(
        task,
        node=node,
        status="done" if reason is None else "failed",
        reason=reason,
        exit_code=result.exit_code,
        run_dir=run_dir,
        started=result.started,
        finished=result.finished,
        wall_s=result.wall_s,
    )


def failed(task: Task, reason: str) -> Task:
    """``task`` failed before any result came back (node lost, worker crashed, never scheduled)."""
    return dataclasses.replace(
        task, status="failed", reason=reason, exit_code=None, finished=datetime.now(UTC).isoformat(timespec="seconds")
    )


def error_line(exc: BaseException) -> str:
    """One line for a Ray error: its class and the first line of its message."""
    text = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    return f"{type(exc).__name__}: {text}"[:300]
