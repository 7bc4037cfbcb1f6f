"""``loadgen fleet run`` on a real local Ray cluster of three nodes (ray.cluster_utils.Cluster: one raylet
per node, one custom resource ``test_gpu`` per node standing for its GPU, the node's name and GPU type as
Ray labels), two pairs, scripted engines launched by the ordinary compare on each node
(tests/support/scripted_engine.py). Node C's engine cannot start (its raylet's environment), so its two
tasks fail with their node and reason while the four others finish; after node C is replaced by a
healthy node of the same name, ``--resume`` runs only those two."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from click.testing import CliRunner

from loadgen.cli import main
from tests.support.scripted_engine import PAIR, REPO, WORKLOAD

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.slow  # a local Ray cluster of three nodes

FLEET = """name = "three"
gpu_resource = "test_gpu"
workdir = "{workdir}"
[[measure]]
pairs = ["k1", "k3"]
nodes = "every-gpu-node"
"""


def _node_args(name: str, gpu_type: str, fail: bool = False) -> dict[str, Any]:
    args: dict[str, Any] = {
        "num_cpus": 1,
        "resources": {"test_gpu": 1},
        "labels": {"loadgen.io/node": name, "loadgen.io/gpu-type": gpu_type},
    }
    return args | ({"env_vars": {"SCRIPTED_ENGINE_FAIL": "1"}} if fail else {})


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Cluster, dict[str, Any]]]:
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    nodes = {
        "node-a": c.add_node(**_node_args("node-a", "T1")),
        "node-b": c.add_node(**_node_args("node-b", "T1")),
        "node-c": c.add_node(**_node_args("node-c", "T2", fail=True)),
    }
    c.wait_for_nodes()
    try:
        yield c, nodes
    finally:
        c.shutdown()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "profiles" / "workloads").mkdir(parents=True)
    (tmp_path / "profiles" / "pairs").mkdir()
    (tmp_path / "profiles" / "workloads" / "w.toml").write_text(WORKLOAD)
    for name, k in (("k1", 1), ("k3", 3)):
        (tmp_path / "profiles" / "pairs" / f"{name}.toml").write_text(
            PAIR.format(name=name, k=k, python=sys.executable, repo=REPO)
        )
    (tmp_path / "fleet.toml").write_text(FLEET.format(workdir=tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _tasks(fleet_dir: Path) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in json.loads((fleet_dir / "tasks.json").read_text())["tasks"]}


def test_fleet_runs_every_pair_on_every_node_reports_the_failed_node_and_resumes_it(
    cluster: tuple[Cluster, dict[str, Any]], workdir: Path
) -> None:
    c, nodes = cluster
    out = workdir / "fleet"
    first = CliRunner().invoke(main, ["fleet", "run", "fleet.toml", "--ray-address", c.address, "--out", str(out)])
    assert first.exit_code == 1, (first.output, first.exception)
    ids = {f"{p}__{n}" for p in ("k1", "k3") for n in ("node-a", "node-b", "node-c")}
    tasks = _tasks(out)
    assert set(tasks) == ids
    # six run folders came back: four finished cards, and node C's two partial folders (server never ready)
    assert {p.name for p in (out / "runs").iterdir()} == ids
    done = {i for i, t in tasks.items() if t["status"] == "done"}
    assert done == {i for i in ids if not i.endswith("node-c")}
    for i in done:
        card = json.loads((out / "runs" / i / "card.json").read_text())
        assert card["complete"] is True and tasks[i]["exit_code"] == 0
        assert tasks[i]["node"]["gpu_type"] == "T1" and (out / "logs" / f"{i}.log").is_file()
        # K draft tokens all accepted (the scripted engine's perfect draft): TPOT ratio near 1 / (K + 1)
        k = 1 if i.startswith("k1") else 3
        tpot = card["cells"][0]["ratios"]["tpot_p50"]["value"]
        assert abs(tpot - 1 / (k + 1)) < 0.2, (i, tpot)
    for i in ids - done:
        assert tasks[i]["status"] == "failed" and tasks[i]["node"]["name"] == "node-c"
        assert tasks[i]["exit_code"] == 1 and "exited with code 1" in tasks[i]["reason"], tasks[i]["reason"]
    assert "2 of 6 fleet tasks failed" in first.output and "--resume" in first.output
    # after each task, the tasks finished of 6 and, until the last, the time left at the rate so far
    counted = [line for line in first.output.splitlines() if line.startswith("fleet: ")]
    assert [line.split()[1] for line in counted] == [f"{n}/6" for n in range(1, 7)], counted
    assert all(re.fullmatch(r"fleet: \d/6 tasks finished, about \d+ (s|min \d\d s) left", x) for x in counted[:-1])
    assert counted[-1] == "fleet: 6/6 tasks finished"
    card_md = (out / "fleet.md").read_text()
    for i in ids:
        assert i.split("__")[1] in card_md
    assert "node-c" in card_md and "exited with code 1" in card_md
    before = {i: (out / "runs" / i / "card.json").read_bytes() for i in done}

    c.remove_node(nodes["node-c"])
    nodes["node-c"] = c.add_node(**_node_args("node-c", "T2"))
    c.wait_for_nodes()
    again = CliRunner().invoke(
        main, ["fleet", "run", "--resume", str(out), "--ray-address", c.address, "--no-progress"]
    )
    assert again.exit_code == 0, again.output
    assert "tasks finished" not in again.output
    assert again.output.count("submitted:") == 2 and "on node-c" in again.output
    tasks = _tasks(out)
    assert all(t["status"] == "done" for t in tasks.values())
    assert {i: (out / "runs" / i / "card.json").read_bytes() for i in done} == before
    fleet_card = json.loads((out / "fleet.json").read_text())
    assert fleet_card["schema"] == "loadgen.fleet/1"


def test_a_node_lost_mid_task_is_reported_and_leaves_no_server_behind(
    cluster: tuple[Cluster, dict[str, Any]], workdir: Path
) -> None:
    c, _ = cluster
    slow = _node_args("node-d", "T1")
    slow["env_vars"] = {"SCRIPTED_ENGINE_STEP_S": "0.5"}  # the compare would take minutes
    node_d = c.add_node(**slow)
    c.wait_for_nodes()
    (workdir / "lost.toml").write_text(
        FLEET.format(workdir=workdir).replace('nodes = "every-gpu-node"', 'nodes = ["node-d"]')
    )
    killer = threading.Timer(8.0, c.remove_node, args=(node_d,))
    killer.start()
    try:
        result = CliRunner().invoke(
            main, ["fleet", "run", "lost.toml", "--ray-address", c.address, "--out", str(workdir / "lost")]
        )
    finally:
        killer.join()
    assert result.exit_code == 1, (result.output, result.exception)
    tasks = _tasks(workdir / "lost")
    assert set(tasks) == {"k1__node-d", "k3__node-d"}
    for t in tasks.values():
        assert t["status"] == "failed" and t["node"]["name"] == "node-d" and t["exit_code"] is None
        assert "Error" in t["reason"], t["reason"]
    assert "k1__node-d" in (workdir / "lost" / "fleet.md").read_text()
    deadline = time.monotonic() + 20
    while _engines(workdir) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _engines(workdir) == []


def _engines(workdir: Path) -> list[int]:
    """Scripted engines still running that this test's tasks started (their working directory is the test's
    ``workdir``, where each node task runs loadgen): another test's engines, beside it, are not counted."""
    out = []
    for p in psutil.process_iter(["cmdline", "cwd"]):
        if "tests.support.scripted_engine" in " ".join(p.info["cmdline"] or []):
            cwd = p.info.get("cwd") or ""
            if cwd == str(workdir) or cwd.startswith(f"{workdir}/"):
                out.append(p.pid)
    return out
