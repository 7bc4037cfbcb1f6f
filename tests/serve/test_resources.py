"""serve/resources.py: a server's process tree, RSS and liveness read from real processes; GPU memory, hardware,
free share and foreign holders through a scripted NVML (tests/support/fakenvml.py); the draft's cost and the
lines written from it, against closed forms."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from loadgen.records.usage import GpuDevice, GpuHolder, GpuMemory, GpuSettle, ServerUsage, UsageFigures
from loadgen.serve import resources
from tests.support.cards import USAGE, usage
from tests.support.fakenvml import FakeDevice, GiB, install

MiB = 2**20
CHILD = (
    "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
    "print('ready', flush=True); time.sleep(60)"
)


@pytest.fixture
def tree() -> Iterator[subprocess.Popen[bytes]]:
    """A server-like tree in its own session: a parent that started one child."""
    with subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, start_new_session=True) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        yield proc
        for pid in resources.group_members(proc.pid):
            os.kill(pid, 9)
        proc.kill()  # leaving the block closes its stdout and waits for it


def test_the_process_tree_its_rss_and_its_group(tree: subprocess.Popen[bytes]) -> None:
    procs = resources.process_tree(tree.pid)
    assert len(procs) == 2 and procs[0].pid == tree.pid and procs[1].ppid() == tree.pid
    pids = [p.pid for p in procs]
    assert sorted(resources.group_members(tree.pid)) == sorted(pids)  # both in the session the launch made
    assert resources.alive([*pids, 2**22 + 1]) == pids  # a PID that never ran is not alive
    rss = resources.cpu_rss_bytes(procs)
    assert rss == pytest.approx(sum(p.memory_info().rss for p in procs), rel=0.2) and rss > 5 * MiB
    child = procs[1].pid
    os.kill(child, 9)
    deadline = time.monotonic() + 5
    while child in resources.alive([child]) and time.monotonic() < deadline:  # its parent never reaps it
        time.sleep(0.05)
    assert resources.alive([child]) == []  # a zombie counts as gone
    assert resources.cpu_rss_bytes(procs) < rss  # the killed child counts 0


def test_a_gone_pid_has_no_tree() -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert resources.process_tree(proc.pid) == [] and resources.alive([proc.pid]) == []
    # every figure unknown, in the saved order (tests/support/cards.py USAGE), with no process
    assert list(resources.usage(None, {}, None).to_json().items()) == list((USAGE | {"processes": 0}).items())


def test_usage_reads_the_kv_cache_labels() -> None:
    info = {"num_gpu_blocks": "1000", "block_size": "16", "gpu_memory_utilization": "0.5"}
    got = resources.usage(None, info, 16_000)
    assert (
        got.kv_cache_tokens,
        got.kv_cache_tokens_log,
        got.num_gpu_blocks,
        got.block_size,
        got.gpu_memory_utilization,
    ) == (16_000, 16_000, "1000", "16", "0.5")
    assert resources.kv_capacity_tokens({"num_gpu_blocks": "x", "block_size": "16"}) is None
    assert resources.kv_capacity_tokens({"block_size": "16"}) is None


DEVICES = [
    FakeDevice("NVIDIA H200", 141 * GiB, 100 * GiB, ((10, 3 * GiB), (99, 1 * GiB))),
    FakeDevice("NVIDIA H200", 141 * GiB, 20 * GiB, ((11, 2 * GiB), (12, None))),
]


def test_gpu_memory_is_the_sum_over_our_pids_per_device(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = install(monkeypatch, DEVICES)
    found = resources.gpu_memory([10, 11, 12])
    assert found == GpuMemory(
        5 * GiB, (GpuDevice(0, "NVIDIA H200", 141 * GiB, 3 * GiB), GpuDevice(1, "NVIDIA H200", 141 * GiB, 2 * GiB))
    )
    assert found.to_json() == {
        "bytes": 5 * GiB,
        "devices": [
            {"index": 0, "name": "NVIDIA H200", "total_bytes": 141 * GiB, "used_by_pids_bytes": 3 * GiB},
            {"index": 1, "name": "NVIDIA H200", "total_bytes": 141 * GiB, "used_by_pids_bytes": 2 * GiB},
        ],
    }
    assert resources.gpu_memory([4242]) is None  # NVML lists processes but none of ours: another PID namespace
    assert calls == ["init", "shutdown", "init", "shutdown"]
    install(monkeypatch, [FakeDevice("idle", 80 * GiB, 0)])
    assert resources.gpu_memory([10]) == GpuMemory(0, ())


def test_without_nvml_every_reading_is_none_or_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = install(monkeypatch, DEVICES, init_fails=True)
    assert resources.gpu_memory([10]) is None and resources.gpu_used() is None
    assert resources.gpu_free_share() is None and resources.gpu_holders([]) == [] and resources.hardware().gpus == ()
    assert resources.settle(None, []).to_json() == {"measured": False, "note": resources.NOT_MEASURED}
    assert calls == ["init"] * 5
    calls = install(monkeypatch, [FakeDevice("broken", 1, 0, refused=frozenset({"memory"}))])
    assert resources.gpu_used() is None and calls == ["init", "shutdown"]  # an NVML error mid-read: not read


def test_hardware_free_share_and_used_per_device(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, DEVICES)
    found = resources.hardware()
    assert found.to_json()["gpus"] == [
        {"index": 0, "name": "NVIDIA H200", "memory_bytes": 141 * GiB},
        {"index": 1, "name": "NVIDIA H200", "memory_bytes": 141 * GiB},
    ]
    assert list(found.to_json()) == ["cpu_model", "cpu_cores", "memory_bytes", "gpus"]
    assert found.cpu_cores == psutil.cpu_count(logical=True)
    assert found.memory_bytes == psutil.virtual_memory().total
    assert resources.gpu_free_share() == pytest.approx(41 / 141)  # the fuller device
    assert resources.gpu_used() == [100 * GiB, 20 * GiB]
    assert 0 < resources.host_available_bytes() <= psutil.virtual_memory().total


def test_gpu_holders_are_the_processes_loadgen_did_not_start(monkeypatch: pytest.MonkeyPatch) -> None:
    install(
        monkeypatch,
        [FakeDevice("g", 80 * GiB, 0, ((1, 5 * MiB), (os.getpid(), 7 * MiB), (2**22 + 3, None), (55, 9 * MiB)))],
    )
    assert [h.to_json() for h in resources.gpu_holders([55])] == [
        {"pid": 1, "device": 0, "used_bytes": 5 * MiB, "name": psutil.Process(1).name()},
        {"pid": 2**22 + 3, "device": 0, "used_bytes": 0, "name": None},
    ]  # not visible here


def test_settle_returns_at_once_when_memory_is_back(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, [FakeDevice("g", 80 * GiB, 10 * GiB + 32 * MiB)])
    got = resources.settle([10 * GiB], [], timeout_s=5)
    assert got.to_json() == {
        "measured": True,
        "back": True,
        "waited_s": 0.0,
        "before_bytes": [10 * GiB],
        "after_bytes": [10 * GiB + 32 * MiB],
        "above_bytes": 32 * MiB,
        "foreign": [],
    }
    assert resources.settle([1, 2], [], timeout_s=0).measured is False  # the device count changed


def test_pid_listening_on_finds_this_process() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert resources.pid_listening_on(port) == os.getpid()
    assert resources.pid_listening_on(port) is None


PLAIN = usage(60 * GiB, cpu_rss_bytes=4 * GiB, kv_cache_tokens=100_000, gpu_memory_utilization="0.9")
SPEC = usage(60 * GiB + 512 * MiB, cpu_rss_bytes=5 * GiB, kv_cache_tokens=90_000, gpu_memory_utilization="0.9")


def _figures(saved: dict[str, Any]) -> UsageFigures | None:
    """A saved ``-resources.json`` entry's figures, read as the card reads them (records/usage.py)."""
    return UsageFigures.of(ServerUsage.from_json(saved, source="resources.json"))


def test_the_drafts_cost_and_the_budget_note() -> None:
    plain, spec = _figures(PLAIN), _figures(SPEC)
    assert plain == UsageFigures(4 * GiB, 60 * GiB, 100_000, "0.9")
    diff = resources.difference(plain, spec)
    assert diff.to_json() == {
        "extra_cpu_rss_bytes": GiB,
        "extra_gpu_memory_bytes": 512 * MiB,
        "kv_cache_tokens_lost": 10_000,
        "kv_capacity_loss": pytest.approx(0.1),
        "same_memory_budget": True,
    }
    assert resources.budget_note(plain, diff) == (
        "both servers ran under gpu_memory_utilization 0.9: vLLM fills that budget on each, so their GPU memory "
        "differs by +512 MiB, the budget's slack, not the draft's cost, which is 10.0% of the KV-cache capacity"
    )
    other = resources.difference(plain, _figures(SPEC | {"gpu_memory_utilization": "0.8", "kv_cache_tokens": None}))
    assert other.same_memory_budget is False and other.kv_capacity_loss is None
    assert resources.budget_note(plain, other) is None
    assert resources.difference(None, None).to_json() == {
        "extra_cpu_rss_bytes": None,
        "extra_gpu_memory_bytes": None,
        "kv_cache_tokens_lost": None,
        "kv_capacity_loss": None,
        "same_memory_budget": False,
    }


def test_settle_lines() -> None:
    assert resources.settle_line(GpuSettle(False, note="x")) is None and resources.settle_line(None) is None
    assert resources.settle_line(GpuSettle(True, back=True, foreign=())) is None
    record = GpuSettle(
        True, back=False, above_bytes=1536 * MiB, waited_s=30.0, foreign=(GpuHolder(7, 1, 2 * GiB, None),)
    )
    assert resources.settle_line(record) == (
        "accelerator memory still 1,536 MiB above its level before the launch after 30 s; processes loadgen did "
        "not start hold the accelerator: pid 7 (not visible here) (2,048 MiB on GPU 1)"
    )
