"""records/usage.py's machine records: every committed protocol.json's ``hardware`` reads as :class:`Hardware` and
writes back identically (and one built anew writes the same keys), and two :class:`HostSample` records, as
run/cell.py hands them to measure/blockstate.py, give the block state's closed-form means and steal share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.errors import BadInput
from loadgen.measure.blockstate import block_state
from loadgen.records.cell import CellEntry
from loadgen.records.usage import CpuTimes, GpuState, Hardware, HardwareGpu, HostSample, ServerUsage, UsageFigures
from loadgen.serve.hoststate import steal_share
from tests.support.cards import USAGE, usage

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = sorted(p for p in (ROOT / "docs").rglob("protocol.json") if "hardware" in json.loads(p.read_text()))


def test_there_are_committed_protocols_with_hardware() -> None:
    assert len(PROTOCOLS) >= 5


@pytest.mark.parametrize("path", PROTOCOLS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_committed_hardware_record_reads_and_writes_back(path: Path) -> None:
    doc = json.loads(path.read_text())["hardware"]
    record = Hardware.from_json(doc, source=str(path))
    assert json.dumps(record.to_json()) == json.dumps(doc)
    assert all(g.memory_bytes > 0 and g.name for g in record.gpus)


def test_the_h200_machine_built_anew_writes_the_file_it_was_read_from() -> None:
    doc = json.loads((ROOT / "docs/examples/h200/h200-1b-draft/protocol.json").read_text())["hardware"]
    built = Hardware("Intel(R) Xeon(R) Processor", 16, 135148564480, (HardwareGpu(0, "NVIDIA H200", 150754820096),))
    assert json.dumps(built.to_json()) == json.dumps(doc)
    with pytest.raises(BadInput) as caught:
        Hardware.from_json({**doc, "gpus": [{"index": 0, "name": "NVIDIA H200"}]}, source="protocol.json hardware")
    assert str(caught.value).startswith("protocol.json hardware: gpus[0].memory_bytes: missing (expected an integer)")


def test_two_host_samples_give_the_block_state() -> None:
    before = HostSample(
        (GpuState(0, 2000, 3200, 40, 400.0, ("gpu_idle",)), GpuState(1, 1980, 3200, 50, None, ())),
        0.5,
        CpuTimes(1000.0, 10.0),
    )
    after = HostSample((GpuState(0, 1800, 3000, 44, 300.0, ("sw_power_cap",)),), 1.25, CpuTimes(1400.0, 14.0))
    steal = steal_share(before, after)
    assert steal == pytest.approx(4 / 400)  # 4 jiffies stolen of 400
    entry = CellEntry("plain", "w", 8)
    state = block_state((before, after), (None, None), entry, 12, 512, steal).to_json()
    assert state["gpu"] == [
        {
            "index": 0,
            "sm_clock_mhz": 1900.0,
            "mem_clock_mhz": 3100.0,
            "power_w": 350.0,
            "temperature_c": 42.0,
            "throttle_reasons": ["sw_power_cap"],
        }
    ]  # GPU 1 gone after
    assert state["host"] == {"loadavg_1m": 1.25, "cpu_steal_share": pytest.approx(0.01)}
    assert list(after.to_json()) == ["gpus", "loadavg_1m", "cpu_times"]
    assert after.to_json()["gpus"][0] == {
        "index": 0,
        "sm_clock_mhz": 1800,
        "mem_clock_mhz": 3000,
        "temperature_c": 44,
        "power_w": 300.0,
        "throttle_reasons": ["sw_power_cap"],
    }


def test_usage_figures_of_a_saved_entry() -> None:
    saved = usage(2**30, processes=2, cpu_rss_bytes=4096, kv_cache_tokens=9)
    read = ServerUsage.from_json(saved | {"gpu_memory_utilization": "0.45"}, source="resources.json")
    assert UsageFigures.of(read) == UsageFigures(4096, 2**30, 9, "0.45")
    assert UsageFigures.of(ServerUsage.from_json(USAGE, source="resources.json")) == UsageFigures()
    assert UsageFigures.of(None) is None
    # a saved entry is read whole, as its record: a figure of the wrong kind is refused, not read as unknown
    with pytest.raises(BadInput, match="cpu_rss_bytes"):
        ServerUsage.from_json(USAGE | {"cpu_rss_bytes": "4096"}, source="resources.json")
