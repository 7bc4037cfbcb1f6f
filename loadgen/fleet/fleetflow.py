"""The fleet flow (``loadgen fleet run FLEET.toml`` and ``--resume DIR``): plan the (pair x node) tasks,
submit each as a Ray task pinned to its node, record each result as it comes back (a failed task is
reported with its node and reason and does not stop the others), then write the fleet card.

The pair and sweep files are saved in ``DIR/pairs/`` on the first run: ``--resume`` runs the same text
again, on the nodes of the same names (their Ray node ids may have changed), and only for the tasks that
are not done (fleet/tasks.py ``to_rerun``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from loadgen import __version__
from loadgen.errors import BadInput, CriteriaFailed, RunFailed
from loadgen.fleet import taskrun
from loadgen.fleet import tasks as taskfile
from loadgen.fleet.fleetwrite import write_fleet_card
from loadgen.fleet.nodes import has_gpu
from loadgen.fleet.nodetask import TaskSpec, run_on_node
from loadgen.measure.timeleft import rate_left_s
from loadgen.profile.fleetfile import FleetFile, load_fleet, resolve_fleet_path
from loadgen.records.fleettasks import FleetNode, Task
from loadgen.records.raynodes import alive_nodes
from loadgen.store.rundir import write_text
from loadgen.store.runlock import locked
from loadgen.util.numbers import clock

Log = Callable[[str], None]


@dataclass(frozen=True)
class FleetOutcome:
    """Where the fleet folder and its card are, and the tasks as they ended."""

    fleet_dir: Path
    card: Path
    tasks: list[Task]
    ray_address: str | None = None

    @property
    def resume_command(self) -> str:
        return resume_command(self.fleet_dir, self.ray_address)

    @property
    def failed(self) -> list[Task]:
        return [t for t in self.tasks if t.status != "done"]


def resume_command(fleet_dir: Path, ray_address: str | None) -> str:
    """The command that runs what is not done of ``fleet_dir`` again, on the same cluster."""
    where = f" --ray-address {ray_address}" if ray_address not in (None, "auto") else ""
    return f"loadgen fleet run --resume {fleet_dir}{where}"


def _new_fleet_dir(fleet: FleetFile, out: Path | None, runs_dir: Path, held: contextlib.ExitStack, log: Log) -> Path:
    """Create the fleet folder and take its lock (``held`` keeps it) before anything is written in it."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    fleet_dir = out if out is not None else runs_dir / f"fleet-{fleet.name}-{stamp}"
    fleet_dir.mkdir(parents=True, exist_ok=True)
    held.enter_context(locked(fleet_dir, log))
    if (fleet_dir / "tasks.json").exists():
        raise BadInput(f"{fleet_dir} already holds a fleet; continue it with --resume {fleet_dir} or pick a new --out")
    for sub in ("pairs", "runs", "logs"):
        (fleet_dir / sub).mkdir(parents=True, exist_ok=True)
    write_text(fleet_dir / "fleet.toml", fleet.text)
    return fleet_dir


def _save_sources(fleet_dir: Path, sources: dict[tuple[str, str], taskrun.PairSource]) -> None:
    for src in sources.values():
        write_text(fleet_dir / "pairs" / f"{src.name}.toml", src.text)


def _on_current_nodes(tasks: list[Task], nodes: list[FleetNode], gpu_resource: str) -> list[Task]:
    """Resumed tasks bound to the alive node of the same name, or failed when there is none."""
    by_name = {n.name: n for n in nodes if has_gpu(n, gpu_resource)}
    return [
        dataclasses.replace(t, node=by_name[t.node.name])
        if t.node.name in by_name
        else taskrun.failed(t, f"node {t.node.name!r} is not in the Ray cluster (or has no {gpu_resource!r} resource)")
        for t in tasks
    ]


def _options(ray: Any, node: FleetNode, gpu_resource: str) -> dict[str, Any]:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    gpu: dict[str, Any] = {"num_gpus": 1} if gpu_resource == "GPU" else {"resources": {gpu_resource: 1}}
    return {
        "num_cpus": 0,
        "max_retries": 0,
        "retry_exceptions": False,
        "scheduling_strategy": NodeAffinitySchedulingStrategy(node.id, soft=False),
        **gpu,
    }


def _submit_all(
    ray: Any,
    fleet: FleetFile,
    fleet_dir: Path,
    state: dict[str, Task],
    todo: list[Task],
    log: Log,
    again: str,
    progress: bool = True,
) -> None:
    """Submit ``todo`` and record each result in ``state`` (saved after every one) as it comes back; with
    ``progress``, a line after each: the tasks finished (done or failed) of those submitted and the time left
    at the rate so far (the tasks run side by side: measure/timeleft.py ``rate_left_s``)."""
    remote = ray.remote(run_on_node)
    workdir = fleet.workdir or str(Path.cwd())
    refs = {}
    for t in todo:
        spec = TaskSpec(t.id, t.kind, t.pair, (fleet_dir / "pairs" / f"{t.pair}.toml").read_text(), workdir)
        refs[remote.options(**_options(ray, t.node, fleet.gpu_resource)).remote(spec)] = t
        log(f"[{t.id}] submitted: {t.kind} {t.pair} on {t.node.name} ({t.node.address})")
    pending, t0 = list(refs), time.monotonic()
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            task = refs[ready[0]]
            try:
                result = ray.get(ready[0])
                if result.loadgen_version != __version__:
                    log(
                        f"[{task.id}] warning: {task.node.name} runs loadgen {result.loadgen_version}, this driver "
                        f"{__version__}: install the same loadgen on every node (docs/fleet/README.md)"
                    )
                task = taskrun.keep_result(fleet_dir, task, result)
            except ray.exceptions.RayError as exc:
                task = taskrun.failed(task, taskrun.error_line(exc))
            state[task.id] = task
            taskfile.save(fleet_dir, fleet.name, list(state.values()))
            log(
                f"[{task.id}] {task.status}"
                + (f" in {task.wall_s:.0f} s" if task.wall_s is not None else "")
                + (f": {task.reason}" if task.reason else "")
            )
            if progress:
                log(_progress_line(len(refs) - len(pending), len(refs), time.monotonic() - t0))
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise KeyboardInterrupt(
            f"fleet interrupted; finished tasks are in {fleet_dir}; run the rest with: {again}"
        ) from None


def _progress_line(done: int, total: int, elapsed_s: float) -> str:
    """``fleet: 3/6 tasks finished, about 12 min 00 s left`` (done or failed; the time left at the rate so far)."""
    left = rate_left_s(done, total, elapsed_s)
    return f"fleet: {done}/{total} tasks finished" + (f", about {clock(left)} left" if left and done < total else "")


def _sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _resume_plan(
    fleet_dir: Path, reload_pairs: bool, log: Log
) -> tuple[FleetFile, list[Task], list[Task], dict[str, str]]:
    """The fleet, its tasks, those to run again, and the changed pair files to save (name -> text, written
    only once their tasks are reset in tasks.json, so an aborted resume never mixes two versions); with
    ``reload_pairs`` the pair files are read again from the fleet file's references and every task of a
    pair whose text changed runs again. Raises BadInput when a reloaded file names a pair the fleet has
    no task for (renamed: run a new fleet)."""
    _, tasks = taskfile.load(fleet_dir)
    fleet = load_fleet(fleet_dir / "fleet.toml")
    rerun = {t.id for t in taskfile.to_rerun(fleet_dir, tasks)}
    changed: dict[str, str] = {}
    if reload_pairs:
        known = {t.pair for t in tasks}
        for src in taskrun.read_sources(fleet).values():
            if src.name not in known:
                raise BadInput(
                    f"a pair file of {fleet_dir / 'fleet.toml'} is now named {src.name!r}, which no task of "
                    f"this fleet measured ({', '.join(sorted(known))}); run it as a new fleet"
                )
            saved = fleet_dir / "pairs" / f"{src.name}.toml"
            if not saved.is_file() or saved.read_text() != src.text:
                ids = [t.id for t in tasks if t.pair == src.name]
                log(f"pair {src.name}: its file changed since the fleet ran; all {len(ids)} of its tasks run again")
                rerun |= set(ids)
                changed[src.name] = src.text
    todo = [taskfile.reset(t) for t in tasks if t.id in rerun]
    return fleet, tasks, todo, changed


def run_fleet(
    fleet_file: Path | None,
    ray_address: str | None,
    log: Log,
    *,
    out: Path | None = None,
    runs_dir: Path = Path("runs"),
    resume: Path | None = None,
    reload_pairs: bool = False,
    progress: bool = True,
) -> FleetOutcome:
    """Run the fleet file (or continue the fleet folder ``resume``) on the Ray cluster at ``ray_address``
    and write the fleet card. Raises BadInput for a bad fleet file, unknown nodes or no cluster, FolderBusy
    (exit 2) when another process holds the fleet folder (store/runlock.py); a resume
    with nothing left to run only writes the card again (no cluster needed). ``progress``: a line of tasks
    done and time left after each task, and each task's ``loadgen`` run without its progress line."""
    if (fleet_file is None) == (resume is None):
        raise BadInput("give exactly one of FLEET.toml or --resume FLEET_DIR")
    with contextlib.ExitStack() as held:  # the fleet folder's lock (store/runlock.py), to the card
        if resume is not None:
            held.enter_context(locked(resume, log))
        return _run_held(fleet_file, ray_address, log, held, (out, runs_dir, resume, reload_pairs, progress))


def _run_held(
    fleet_file: Path | None,
    ray_address: str | None,
    log: Log,
    held: contextlib.ExitStack,
    where: tuple[Path | None, Path, Path | None, bool, bool],
) -> FleetOutcome:
    out, runs_dir, resume, reload_pairs, progress = where
    if resume is not None:
        fleet, tasks, todo, changed = _resume_plan(resume, reload_pairs, log)
        fleet_dir, sources = resume, {}
        if not todo:
            log(f"fleet folder: {fleet_dir}: every task is done; nothing to run")
            return FleetOutcome(fleet_dir, write_fleet_card(fleet_dir), tasks)
    else:
        fleet, changed = load_fleet(resolve_fleet_path(str(fleet_file))), {}
        sources = taskrun.read_sources(fleet)
    ray = taskrun.connect(ray_address)
    signal.signal(signal.SIGTERM, _sigterm)  # ray.init installs its own; a stopped fleet keeps what came back
    try:
        nodes = alive_nodes(ray.nodes())
        if resume is None:
            tasks = todo = taskrun.plan_fleet(fleet, nodes, sources)
            fleet_dir = _new_fleet_dir(fleet, out, runs_dir, held, log)
            _save_sources(fleet_dir, sources)
        else:
            todo = _on_current_nodes(todo, nodes, fleet.gpu_resource)
        state = {t.id: t for t in tasks} | {t.id: t for t in todo}
        taskfile.save(fleet_dir, fleet.name, list(state.values()))
        for name, text in changed.items():
            write_text(fleet_dir / "pairs" / f"{name}.toml", text)
        log(f"fleet folder: {fleet_dir} ({len(todo)} of {len(state)} tasks to run)")
        for t in todo:
            if t.status == "failed":
                log(f"[{t.id}] failed: {t.reason}")
        _submit_all(
            ray,
            fleet,
            fleet_dir,
            state,
            [t for t in todo if t.status == "pending"],
            log,
            resume_command(fleet_dir, ray_address),
            progress,
        )
    finally:
        ray.shutdown()
    return FleetOutcome(fleet_dir, write_fleet_card(fleet_dir), list(state.values()), ray_address)


def fleet_exit(outcome: FleetOutcome) -> None:
    """Exit 1 (RunFailed) when a task failed, naming the first with its node and reason and the resume
    command; else exit 3 (CriteriaFailed) when a finished task's verdict failed its declared criteria (a
    compare's exit 3, a sweep's: no candidate met them); else return (exit 0)."""
    if outcome.failed:
        first = outcome.failed[0]
        raise RunFailed(
            f"{len(outcome.failed)} of {len(outcome.tasks)} fleet tasks failed (first: {first.id} on "
            f"{first.node.name}: {first.reason}); the others' results are in {outcome.fleet_dir}; "
            f"fix the cause and run only those again with: {outcome.resume_command} (add "
            "--reload-pairs after fixing a pair file)"
        )
    judged = [t for t in outcome.tasks if t.exit_code == 3]
    if judged:
        raise CriteriaFailed(
            f"every task finished; {len(judged)} of {len(outcome.tasks)} failed their declared "
            f"criteria ({', '.join(t.id for t in judged)}): see {outcome.card}"
        )
