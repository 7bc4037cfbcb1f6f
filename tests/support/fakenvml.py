"""A scripted ``pynvml`` module (no GPU here): devices with fixed names, memory, clocks, power, temperature,
clock-event reasons and compute processes, installed in ``sys.modules`` for one test. A reading listed in
``refused`` raises the module's ``NVMLError``, as NVML does for a figure a device does not report."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import Any

import pytest

GiB = 2**30


@dataclass(frozen=True)
class FakeDevice:
    name: str
    total: int
    used: int
    procs: tuple[tuple[int, int | None], ...] = ()  # (pid, usedGpuMemory bytes or None)
    sm_mhz: int = 1980
    mem_mhz: int = 3201
    power_mw: int = 350_500
    temperature_c: int = 41
    reasons: int = 0
    refused: frozenset[str] = field(default_factory=frozenset)


def install(monkeypatch: pytest.MonkeyPatch, devices: list[FakeDevice], init_fails: bool = False) -> list[str]:
    """Install the fake; returns the log of calls to nvmlInit / nvmlShutdown (to check they pair up)."""
    calls: list[str] = []

    class NVMLError(Exception):
        pass

    def reading(name: str, value: Any) -> Any:
        def read(handle: int, *args: Any) -> Any:
            if name in devices[handle].refused:
                raise NVMLError(name)
            return value(devices[handle], *args)

        return read

    def init() -> None:
        calls.append("init")
        if init_fails:
            raise NVMLError("Driver Not Loaded")

    mod: Any = types.ModuleType("pynvml")
    mod.NVMLError, mod.NVML_CLOCK_SM, mod.NVML_CLOCK_MEM, mod.NVML_TEMPERATURE_GPU = NVMLError, 1, 2, 0
    mod.nvmlInit, mod.nvmlShutdown = init, lambda: calls.append("shutdown")
    mod.nvmlDeviceGetCount = lambda: len(devices)
    mod.nvmlDeviceGetHandleByIndex = lambda i: i
    mod.nvmlDeviceGetName = reading("name", lambda d: d.name.encode())
    mod.nvmlDeviceGetMemoryInfo = reading(
        "memory", lambda d: types.SimpleNamespace(total=d.total, used=d.used, free=d.total - d.used)
    )
    mod.nvmlDeviceGetComputeRunningProcesses = reading(
        "procs", lambda d: [types.SimpleNamespace(pid=p, usedGpuMemory=b) for p, b in d.procs]
    )
    mod.nvmlDeviceGetClockInfo = reading("clock", lambda d, kind: d.sm_mhz if kind == 1 else d.mem_mhz)
    mod.nvmlDeviceGetPowerUsage = reading("power", lambda d: d.power_mw)
    mod.nvmlDeviceGetTemperature = reading("temperature", lambda d, _sensor: d.temperature_c)
    mod.nvmlDeviceGetCurrentClocksThrottleReasons = reading("reasons", lambda d: d.reasons)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    return calls
