"""The fleet's pure parts: the fleet file, node naming and selection from ``ray.nodes()`` entries, the
task plan and state file, the node task's ports and failure line; and one node task run for real
(``loadgen compare`` in a subprocess against the scripted engine) without Ray."""

from __future__ import annotations

import dataclasses
import io
import sys
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import BadInput, CriteriaFailed, ProfileError, RunFailed
from loadgen.fleet import tasks as taskfile
from loadgen.fleet.fleetflow import FleetOutcome, _resume_plan, fleet_exit
from loadgen.fleet.nodes import select
from loadgen.fleet.nodetask import TaskSpec, reason_of, run_on_node, with_ports
from loadgen.profile.fleetfile import NodeSelector, load_fleet
from loadgen.records.raynodes import alive_nodes, node_of
from tests.support.scripted_engine import PAIR, REPO, WORKLOAD


def _raw(
    node_id: str, address: str, resources: dict[str, float], labels: dict[str, str] | None = None, alive: bool = True
) -> dict[str, Any]:
    return {
        "NodeID": node_id,
        "Alive": alive,
        "NodeManagerAddress": address,
        "NodeManagerHostname": f"h-{node_id}",
        "Resources": resources,
        "Labels": labels or {},
    }


NODES = alive_nodes(
    [
        _raw("aa", "10.0.0.1", {"CPU": 8, "GPU": 8, "accelerator_type:H200": 1}),
        _raw("bb", "10.0.0.2", {"CPU": 8, "GPU": 1}, {"loadgen.io/node": "stg-b", "loadgen.io/gpu-type": "L4"}),
        _raw("cc", "10.0.0.3", {"CPU": 8}),
        _raw("dd", "10.0.0.4", {"CPU": 8, "GPU": 1}, alive=False),
    ]
)


def _fleet(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    return path


def test_fleet_file_reads_every_selector(tmp_path: Path) -> None:
    fleet = load_fleet(
        _fleet(
            tmp_path,
            'name = "stg"\n[[measure]]\npairs = ["a"]\nnodes = "every-gpu-node"\n'
            '[[measure]]\nsweeps = ["s"]\nnodes = ["stg-b", "10.0.0.1"]\n'
            '[[measure]]\npairs = ["b"]\nlabels = { "loadgen.io/gpu-type" = "L4" }\n',
        )
    )
    assert fleet.name == "stg" and fleet.gpu_resource == "GPU" and fleet.workdir is None
    assert [m.nodes for m in fleet.measures] == [
        NodeSelector(every_gpu_node=True),
        NodeSelector(names=("stg-b", "10.0.0.1")),
        NodeSelector(labels=(("loadgen.io/gpu-type", "L4"),)),
    ]
    assert fleet.measures[1].sweeps == ("s",) and fleet.measures[1].pairs == ()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('name = "x"\n[[measure]]\nnodes = "every-gpu-node"\n', "names no pair and no sweep"),
        ('name = "x"\n[[measure]]\npairs = ["a"]\nnodes = "all"\n', 'write "every-gpu-node"'),
        ('name = "x"\n[[measure]]\npairs = ["a"]\n', "needs exactly one of nodes"),
        ('name = "x"\n[[measure]]\npairs = ["a"]\nnodes = []\n', "non-empty list"),
        ('name = "x y"\n[[measure]]\npairs = ["a"]\nnodes = "every-gpu-node"\n', "names the fleet folder"),
        ('name = "x"\n[[measure]]\npairs = ["a"]\nnodes = "every-gpu-node"\ngpus = 2\n', "unknown key 'gpus'"),
        ('name = "x"\n', "missing key measure"),
        ('name = "x"\n[[measure]]\npair = ["a"]\nnodes = "every-gpu-node"\n', "unknown key 'pair'"),
        (
            'name = "x"\nworkdir = "opt/lg"\n[[measure]]\npairs = ["a"]\nnodes = "every-gpu-node"\n',
            "must be an absolute",
        ),
    ],
)
def test_fleet_file_errors_name_the_key_and_the_fix(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ProfileError, match=message):
        load_fleet(_fleet(tmp_path, body))


def test_nodes_are_named_by_label_else_address_and_typed_by_label_else_accelerator() -> None:
    assert [(n.name, n.gpu_type) for n in NODES] == [("10.0.0.1", "H200"), ("10.0.0.3", None), ("stg-b", "L4")]
    assert node_of(_raw("ee", "10.0.0.5", {"GPU": 1})).gpu_type is None


def test_select_every_gpu_node_names_and_labels() -> None:
    names = [n.name for n in select(NODES, NodeSelector(every_gpu_node=True), "GPU")]
    assert names == ["10.0.0.1", "stg-b"]
    assert [n.id for n in select(NODES, NodeSelector(names=("bb", "10.0.0.1")), "GPU")] == ["bb", "aa"]
    assert [n.name for n in select(NODES, NodeSelector(labels=(("loadgen.io/gpu-type", "L4"),)), "GPU")] == ["stg-b"]


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (NodeSelector(names=("10.0.0.9",)), "'10.0.0.9' is not in the Ray cluster; its alive nodes: 10.0.0.1"),
        (NodeSelector(names=("10.0.0.3",)), "has no 'GPU' resource"),
        (NodeSelector(labels=(("zone", "b"),)), "labels zone=b matches no node"),
    ],
)
def test_select_refuses_what_it_cannot_run_on(selector: NodeSelector, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        select(NODES, selector, "GPU")


def test_selected_nodes_sharing_a_name_are_refused() -> None:
    twins = alive_nodes([_raw("a1", "10.0.0.1", {"GPU": 1}), _raw("a2", "10.0.0.1", {"GPU": 1})])
    with pytest.raises(BadInput, match="both named '10.0.0.1'"):
        select(twins, NodeSelector(every_gpu_node=True), "GPU")


def test_plan_save_load_and_what_resume_reruns(tmp_path: Path) -> None:
    gpu = select(NODES, NodeSelector(every_gpu_node=True), "GPU")
    tasks = taskfile.plan([("p", "compare", gpu), ("s", "sweep", gpu[:1])])
    assert [t.id for t in tasks] == ["p__10.0.0.1", "p__stg-b", "s__10.0.0.1"]
    with pytest.raises(BadInput, match="listed twice for node 'stg-b'"):
        taskfile.plan([("p", "compare", gpu), ("p", "compare", gpu[1:])])
    (tmp_path / "runs" / "p__10.0.0.1").mkdir(parents=True)
    tasks[0] = tasks[0].__class__(**{**tasks[0].__dict__, "status": "done", "run_dir": "runs/p__10.0.0.1"})
    tasks[1] = tasks[1].__class__(**{**tasks[1].__dict__, "status": "done", "run_dir": "runs/gone"})
    taskfile.save(tmp_path, "stg", tasks)
    name, loaded = taskfile.load(tmp_path)
    assert name == "stg" and loaded == tasks
    assert [t.id for t in taskfile.to_rerun(tmp_path, loaded)] == ["p__stg-b", "s__10.0.0.1"]
    (tmp_path / "tasks.json").write_text('{"schema": "other"}')
    with pytest.raises(BadInput, match=r"tasks.json: schema: expected one of loadgen.fleet-tasks/1, got 'other'"):
        taskfile.load(tmp_path)


def test_ports_are_replaced_unless_both_servers_are_attached() -> None:
    text, ports = with_ports('[engine]\nport = 8300\n[servers.speculative]\nport = 9000\nargs = ["--x"]\n')
    assert ports is not None and ports[1] == ports[0] + 1
    doc = tomllib.loads(text)
    assert doc["engine"]["port"] == ports[0] and doc["servers"]["speculative"] == {"args": ["--x"]}
    attached = '[servers.plain]\nurl = "http://a:1"\n[servers.speculative]\nurl = "http://a:2"\n'
    assert with_ports(attached) == (attached, None)


def test_reason_is_the_error_line_else_the_last_line() -> None:
    assert reason_of(0, "x") is None and reason_of(3, "verdict FAIL") is None
    failed = "a\nloadgen: error: plain server not ready\nb\n"
    assert reason_of(1, failed) == "exit 1: loadgen: error: plain server not ready"
    assert reason_of(137, "starting\nKilled\n") == "exit 137: Killed"


@pytest.mark.slow
def test_a_node_task_runs_compare_and_ships_its_run_folder(tmp_path: Path) -> None:
    (tmp_path / "profiles" / "workloads").mkdir(parents=True)
    (tmp_path / "profiles" / "workloads" / "w.toml").write_text(WORKLOAD)
    text = PAIR.format(name="k2", k=2, python=sys.executable, repo=REPO)
    result = run_on_node(TaskSpec("k2__here", "compare", "k2", text, str(tmp_path)))
    assert result.exit_code == 0, result.output
    assert result.archive is not None and result.ports is not None and result.wall_s > 0
    with tarfile.open(fileobj=io.BytesIO(result.archive), mode="r:gz") as tar:
        names = set(tar.getnames())
        pair_toml = tar.extractfile("./pair.toml")
        assert pair_toml is not None
        assert tomllib.loads(pair_toml.read().decode())["engine"]["port"] == result.ports[0]
    assert {"./card.json", "./protocol.json", "./requests.jsonl"} <= names
    failed = run_on_node(TaskSpec("k2__here", "compare", "k2", text, str(tmp_path / "nowhere")))
    assert failed.exit_code == 2 and failed.archive is None and "cannot run loadgen in" in failed.output


@pytest.mark.slow
def test_a_node_task_runs_a_sweep_and_ships_the_sweep_folder(tmp_path: Path) -> None:
    (tmp_path / "profiles" / "workloads").mkdir(parents=True)
    (tmp_path / "profiles" / "workloads" / "w.toml").write_text(WORKLOAD)
    text = PAIR.format(name="ks", k="[1, 2]", python=sys.executable, repo=REPO)
    result = run_on_node(TaskSpec("ks__here", "sweep", "ks", text, str(tmp_path)))
    assert result.exit_code == 0, result.output
    assert result.archive is not None
    with tarfile.open(fileobj=io.BytesIO(result.archive), mode="r:gz") as tar:
        names = set(tar.getnames())
    # one sweep folder: the interleaved blocks of every arm, then each candidate's own compare folder cut out
    assert {
        "./sweep.json",
        "./protocol.json",
        "./requests.jsonl",
        "./ngram-k1/card.json",
        "./ngram-k2/protocol.json",
        "./servers/placebo.log",
    } <= names, sorted(names)[:20]


def _done(task: taskfile.Task, code: int) -> taskfile.Task:
    return dataclasses.replace(
        task,
        status="done" if code in (0, 3) else "failed",
        exit_code=code,
        reason=None if code in (0, 3) else "exit 1: x",
        run_dir=f"runs/{task.id}",
    )


def test_the_fleet_exit_is_1_on_a_failed_task_else_3_on_a_failed_verdict(tmp_path: Path) -> None:
    gpu = select(NODES, NodeSelector(every_gpu_node=True), "GPU")
    a, b = taskfile.plan([("p", "compare", gpu)])
    fleet_exit(FleetOutcome(tmp_path, tmp_path / "fleet.md", [_done(a, 0), _done(b, 0)]))  # exit 0: returns
    with pytest.raises(CriteriaFailed, match="1 of 2 failed their declared criteria \\(p__stg-b\\)"):
        fleet_exit(FleetOutcome(tmp_path, tmp_path / "fleet.md", [_done(a, 0), _done(b, 3)]))
    with pytest.raises(RunFailed, match="1 of 2 fleet tasks failed .*--reload-pairs"):
        fleet_exit(FleetOutcome(tmp_path, tmp_path / "fleet.md", [_done(a, 1), _done(b, 3)]))


def test_resume_with_reload_pairs_reruns_every_task_of_a_changed_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    pairs_dir = tmp_path / "profiles" / "pairs"
    pairs_dir.mkdir(parents=True)
    (tmp_path / "profiles" / "workloads").mkdir()
    (tmp_path / "profiles" / "workloads" / "w.toml").write_text(WORKLOAD)
    for name in ("p", "q"):
        (pairs_dir / f"{name}.toml").write_text(PAIR.format(name=name, k=1, python=sys.executable, repo=REPO))
    fleet_dir = tmp_path / "fleet"
    (fleet_dir / "pairs").mkdir(parents=True)
    (fleet_dir / "fleet.toml").write_text('name = "f"\n[[measure]]\npairs = ["p", "q"]\nnodes = "every-gpu-node"\n')
    gpu = select(NODES, NodeSelector(every_gpu_node=True), "GPU")
    tasks = [_done(t, 0) for t in taskfile.plan([("p", "compare", gpu), ("q", "compare", gpu)])]
    for t in tasks:
        (fleet_dir / t.run_dir).mkdir(parents=True)
    tasks[3] = _done(tasks[3], 1)
    taskfile.save(fleet_dir, "f", tasks)
    for name in ("p", "q"):
        (fleet_dir / "pairs" / f"{name}.toml").write_text((pairs_dir / f"{name}.toml").read_text())
    lines: list[str] = []
    _, _, todo, changed = _resume_plan(fleet_dir, False, lines.append)
    assert [t.id for t in todo] == ["q__stg-b"] and todo[0].status == "pending"
    (pairs_dir / "p.toml").write_text((pairs_dir / "p.toml").read_text() + "# fixed\n")
    assert changed == {}
    _, _, todo, changed = _resume_plan(fleet_dir, True, lines.append)
    assert [t.id for t in todo] == ["p__10.0.0.1", "p__stg-b", "q__stg-b"]
    assert lines == ["pair p: its file changed since the fleet ran; all 2 of its tasks run again"]
    # nothing is written before the tasks are reset (run_fleet writes it after tasks.json)
    assert list(changed) == ["p"] and not (fleet_dir / "pairs" / "p.toml").read_text().endswith("# fixed\n")
    (pairs_dir / "q.toml").write_text((pairs_dir / "q.toml").read_text().replace('name = "q"', 'name = "q2"'))
    with pytest.raises(BadInput, match="is now named 'q2'"):
        _resume_plan(fleet_dir, True, lines.append)
