"""Between launches: a stopped server's teardown waits until the accelerator's memory used is back to its reading
before the launch (NVML, polled), or records by how much it is not; it lists the processes on the accelerator that
loadgen did not start; without NVML it records "not measured". NVML is a fake ``pynvml`` module with scripted
readings (no GPU here)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from loadgen.serve import resources, servers

MiB = 2**20


def fake_nvml(monkeypatch: pytest.MonkeyPatch, used: list[int], procs: list[tuple[int, int]]) -> list[int]:
    """Install a fake pynvml with one device: each read of ``.used`` takes the next of ``used`` (the last one
    repeats); ``procs`` are its compute processes (pid, bytes). Returns the list of readings not yet taken."""
    left = list(used)

    class NVMLError(Exception):
        pass

    class Info:
        total, free = 80 * 1024 * MiB, 0

        @property
        def used(self) -> int:
            return left.pop(0) if len(left) > 1 else left[0]

    mod: Any = types.ModuleType("pynvml")
    mod.NVMLError = NVMLError
    mod.nvmlInit = mod.nvmlShutdown = lambda: None
    mod.nvmlDeviceGetCount = lambda: 1
    mod.nvmlDeviceGetHandleByIndex = lambda i: i
    mod.nvmlDeviceGetName = lambda h: b"Fake H200"
    mod.nvmlDeviceGetMemoryInfo = lambda h: Info()
    mod.nvmlDeviceGetComputeRunningProcesses = lambda h: [
        types.SimpleNamespace(pid=p, usedGpuMemory=b) for p, b in procs
    ]
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    monkeypatch.setattr(resources, "SETTLE_POLL_S", 0.01)
    return left


def test_teardown_waits_until_the_memory_is_back_and_names_a_process_it_did_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    procs: list[tuple[int, int]] = []
    left = fake_nvml(monkeypatch, [1024 * MiB, 9000 * MiB, 5000 * MiB, 1030 * MiB], procs)
    spec = servers.LaunchSpec("plain", ["sleep", "30"], {}, "127.0.0.1", 1, "m", 5.0, tmp_path / "plain.log")
    server = servers.launch(spec)
    assert server.gpu_before == [1024 * MiB] and server.process is not None
    procs += [(server.process.pid, 8000 * MiB), (4242, 512 * MiB)]  # the server's own and one loadgen did not start
    report = server.stop(grace_s=5.0)
    assert report is not None
    settle = report.to_json()["gpu_settle"]  # as -teardown.json holds it
    assert report.survivors == () and left == [1030 * MiB]  # polled until the third reading after the stop
    assert settle["measured"] is True and settle["back"] is True
    assert settle["before_bytes"] == [1024 * MiB] and settle["after_bytes"] == [1030 * MiB]
    assert settle["above_bytes"] == 6 * MiB  # within the slack: back
    assert [(h["pid"], h["device"], h["used_bytes"]) for h in settle["foreign"]] == [(4242, 0, 512 * MiB)]
    name = settle["foreign"][0]["name"] or "(not visible here)"  # pid 4242 may exist on this machine
    assert resources.settle_line(report.gpu_settle) == (
        f"processes loadgen did not start hold the accelerator: pid 4242 {name} (512 MiB on GPU 0)"
    )


def test_memory_that_does_not_come_back_is_said_with_how_much(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvml(monkeypatch, [3072 * MiB], [])
    settle = resources.settle([1024 * MiB], [], timeout_s=0.1)
    assert settle.measured is True and settle.back is False and settle.above_bytes == 2048 * MiB
    assert settle.foreign == () and settle.waited_s is not None and 0.1 <= settle.waited_s < 1.0
    assert resources.settle_line(settle) == (
        f"accelerator memory still 2,048 MiB above its level before the launch after {settle.waited_s:g} s"
    )


def test_without_nvml_teardown_records_not_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    spec = servers.LaunchSpec("plain", ["sleep", "30"], {}, "127.0.0.1", 1, "m", 5.0, tmp_path / "plain.log")
    server = servers.launch(spec)
    report = server.stop(grace_s=5.0)
    assert server.gpu_before is None
    assert report is not None and report.to_json()["gpu_settle"] == {"measured": False, "note": resources.NOT_MEASURED}
    assert resources.settle_line(report.gpu_settle) is None
    assert servers.attach(spec).stop() is None  # an attached server is not loadgen's to stop or to wait for
