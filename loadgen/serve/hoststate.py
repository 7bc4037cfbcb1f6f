"""The machine's state beside every block (docs/metrics.md "The state beside every block"): the accelerator
through NVML (SM and memory clocks, power, temperature, throttle reasons of each GPU) and the host (the 1-minute
load average, and the CPU time stolen by the hypervisor from /proc/stat). :func:`sample` reads it once;
:func:`steal_share` turns two samples into the share of CPU time stolen between them. NVML's absence (no
driver, no GPU, no nvidia-ml-py) leaves ``gpus`` empty; a /proc without ``steal`` leaves it None.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from loadgen.records.usage import CpuTimes, GpuState, HostSample
from loadgen.serve.resources import with_nvml

#: NVML clock-event reasons (nvmlClocksEventReasons, formerly throttle reasons; nvml.h) by bit.
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def _device(pynvml: Any, index: int) -> GpuState:
    """One GPU's clocks, power, temperature and throttle reasons (None for a reading NVML refuses)."""
    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    reads = {
        "sm_clock_mhz": (pynvml.nvmlDeviceGetClockInfo, (h, pynvml.NVML_CLOCK_SM)),
        "mem_clock_mhz": (pynvml.nvmlDeviceGetClockInfo, (h, pynvml.NVML_CLOCK_MEM)),
        "power_mw": (pynvml.nvmlDeviceGetPowerUsage, (h,)),
        "temperature_c": (pynvml.nvmlDeviceGetTemperature, (h, pynvml.NVML_TEMPERATURE_GPU)),
        "reasons": (pynvml.nvmlDeviceGetCurrentClocksThrottleReasons, (h,)),
    }
    got: dict[str, int | None] = {}
    for key, (fn, args) in reads.items():
        try:
            got[key] = fn(*args)
        except pynvml.NVMLError:
            got[key] = None
    power, bits = got["power_mw"], got["reasons"]
    return GpuState(
        index,
        got["sm_clock_mhz"],
        got["mem_clock_mhz"],
        got["temperature_c"],
        None if power is None else power / 1000.0,
        None if bits is None else tuple(n for b, n in THROTTLE_REASONS.items() if bits & b),
    )


def _gpus() -> list[GpuState]:
    return with_nvml(lambda nv: [_device(nv, i) for i in range(nv.nvmlDeviceGetCount())]) or []


def _cpu_times() -> CpuTimes | None:
    """Aggregate CPU jiffies from /proc/stat's ``cpu`` line: ``total`` and ``steal`` (None where unreadable)."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 9:
        return None
    values = [float(x) for x in fields[1:]]
    return CpuTimes(sum(values[:8]), values[7])


def sample() -> HostSample:
    """The state now (records/usage.py ``HostSample``: the GPUs, the load average, the CPU times)."""
    load = None
    with contextlib.suppress(OSError, AttributeError):
        load = os.getloadavg()[0]
    return HostSample(tuple(_gpus()), load, _cpu_times())


def steal_share(before: HostSample | None, after: HostSample | None) -> float | None:
    """The share of CPU time stolen between two samples (0..1), None without both counts."""
    a, b = before and before.cpu_times, after and after.cpu_times
    if not a or not b or b.total <= a.total:
        return None
    return float((b.steal - a.steal) / (b.total - a.total))
