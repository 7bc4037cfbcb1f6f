"""serve/hoststate.py: each GPU's clocks, power, temperature and clock-event reasons through a scripted NVML
(bits decoded as nvml.h names them), the host's steal share from two /proc/stat samples (closed form), and the
real /proc/stat and load average of this machine."""

from __future__ import annotations

import os

import pytest

from loadgen.records.usage import CpuTimes, GpuState, HostSample
from loadgen.serve import hoststate
from tests.support.fakenvml import FakeDevice, GiB, install


def test_each_gpu_reading_and_the_throttle_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    install(
        monkeypatch,
        [
            FakeDevice("a", 141 * GiB, 0, reasons=0x4 | 0x40 | 0x100),
            FakeDevice(
                "b",
                141 * GiB,
                0,
                sm_mhz=345,
                power_mw=75_250,
                temperature_c=30,
                reasons=0x1,
                refused=frozenset({"clock"}),
            ),
        ],
    )
    gpus = hoststate.sample().gpus
    reasons = ("sw_power_cap", "hw_thermal_slowdown", "display_clock_setting")
    assert gpus == (GpuState(0, 1980, 3201, 41, 350.5, reasons), GpuState(1, None, None, 30, 75.25, ("gpu_idle",)))
    assert [g.to_json() for g in gpus] == [
        {
            "index": 0,
            "sm_clock_mhz": 1980,
            "mem_clock_mhz": 3201,
            "temperature_c": 41,
            "power_w": 350.5,
            "throttle_reasons": ["sw_power_cap", "hw_thermal_slowdown", "display_clock_setting"],
        },
        {
            "index": 1,
            "sm_clock_mhz": None,
            "mem_clock_mhz": None,
            "temperature_c": 30,
            "power_w": 75.25,
            "throttle_reasons": ["gpu_idle"],
        },
    ]


def test_a_refused_power_or_reason_reading_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, [FakeDevice("a", GiB, 0, refused=frozenset({"power", "reasons", "temperature"}))])
    (gpu,) = hoststate.sample().gpus
    assert (gpu.power_w, gpu.throttle_reasons, gpu.temperature_c) == (None, None, None)
    assert gpu.sm_clock_mhz == 1980


def test_without_nvml_no_gpus_but_the_host_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, [], init_fails=True)
    state = hoststate.sample()
    assert state.gpus == ()
    assert state.loadavg_1m == pytest.approx(os.getloadavg()[0], abs=2.0)
    times = state.cpu_times
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [float(x) for x in fh.readline().split()[1:9]]
    assert times is not None and times.total <= sum(fields) and times.steal <= fields[7]
    assert times.total > 0 and 0 <= times.steal <= times.total


def test_steal_share_between_two_samples() -> None:
    before = HostSample((), None, CpuTimes(1000.0, 10.0))
    after = HostSample((), None, CpuTimes(1400.0, 110.0))
    assert hoststate.steal_share(before, after) == pytest.approx(0.25)  # 100 stolen of 400 jiffies
    assert hoststate.steal_share(before, before) is None  # no time passed
    assert hoststate.steal_share(HostSample((), None, None), after) is None
    assert hoststate.steal_share(None, None) is None


def test_a_proc_stat_without_the_cpu_line_is_none(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    real_open = open

    def fake_open(path: str, *args: object, **kwargs: object) -> object:
        if path == "/proc/stat":
            raise PermissionError(path)
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", fake_open)
    assert hoststate._cpu_times() is None
