"""Records built in code (records/cardwire.py ``keyed``, ``with_fields``, ``in_full``) write the keys a file of
them names, null included, in their order; the block state (records/blockstate.py) and the trace section
(records/trace.py) read back what they write and name the field of a line that does not read."""

from __future__ import annotations

import json

import pytest

from loadgen.errors import BadInput
from loadgen.measure.blockstate import block_state
from loadgen.records.blockstate import BlockState
from loadgen.records.cardcell import Ratio
from loadgen.records.cell import CellEntry
from loadgen.records.cellparts import GaugeSummary, ServerHistogram
from loadgen.records.trace import Attainment, Shares, TraceArm, TraceChoice, TraceRow, TraceSection, TraceServer
from loadgen.records.usage import GpuState, HostSample


def test_a_record_built_in_code_writes_its_set_fields_and_the_keys_it_names() -> None:
    r = Ratio(0.5, ci_method="blocks")
    assert r.to_json() == {"value": 0.5, "ci_method": "blocks"}  # defaults left out
    assert list(r.keyed("value", "ci_low", "ci_high").to_json().items()) == [
        ("value", 0.5),
        ("ci_low", None),
        ("ci_high", None),
        ("ci_method", "blocks"),
    ]
    full = Ratio(0.5).in_full().to_json()
    assert list(full)[:5] == ["value", "ci_low", "ci_high", "pairs", "unavailable"] and full["block_ratios"] is None
    read = Ratio.from_json({"ci_high": 2.0, "value": 1.5, "ci_low": 1.0}, source="card.json")
    assert list(read.with_fields(effect="faster", ci_low=1.1).to_json().items()) == [
        ("ci_high", 2.0),
        ("value", 1.5),
        ("ci_low", 1.1),
        ("effect", "faster"),
    ]  # the file's order, then the new


def test_the_block_state_reads_back_what_it_writes_and_names_a_bad_field() -> None:
    gpu = GpuState(0, 1900, None, None, None, ("gpu_idle", "sw_power_cap"))
    host = HostSample((gpu,), 0.25, None)
    entry = CellEntry(
        "plain",
        "w",
        4,
        gauges={"vllm:num_requests_waiting": GaugeSummary(None, 2, 1.0, "vllm:num_requests_waiting")},
        server_histograms={"icl_s": ServerHistogram(count=250.0, sum=1.0)},
    )
    state = block_state((host, host), (None, None), entry, 20, 16, 0.01)
    line = json.loads(json.dumps(state.to_json()))
    assert line == {
        "gpu": [
            {
                "index": 0,
                "sm_clock_mhz": 1900.0,
                "mem_clock_mhz": None,
                "power_w": None,
                "temperature_c": None,
                "throttle_reasons": ["sw_power_cap"],
            }
        ],
        "host": {"loadavg_1m": 0.25, "cpu_steal_share": 0.01},
        "engine": {"prefix_cache_hit_share": None, "preemptions": None, "step_time_s": 0.004, "waiting_max": 2},
        "graphs": {"batch_tokens": 20, "ceiling": 16, "eager": True},
    }
    assert BlockState.from_json(line, source="cells.jsonl line 1").to_json() == line
    line["graphs"]["eager"] = "yes"
    with pytest.raises(BadInput, match=r"cells.jsonl line 1: graphs.eager: expected true or false, got 'yes'"):
        BlockState.from_json(line, source="cells.jsonl line 1")


def test_a_trace_section_reads_back_what_it_writes_and_names_a_missing_field() -> None:
    slo = Attainment(10, {"tpot_s": 0.9}, 0.9, True)
    server = TraceServer(slo=slo, lag_p50_s=0.001, lag_p99_s=None, behind=False, tpot_p50_s=0.02)
    arm = TraceArm(1.2, 1.1, 1.3, (), Shares({"pays": 1.0}, {"pays": 1.0}))
    row = TraceRow("tr@ts0.5", "tr", 0.5, 5.0, 10, 9.5, {"plain": server}, {"k2": arm}, None)
    section = TraceSection((row,), {"tr": {"plain": 2.0}}, {"tr": TraceChoice("plain", 0.02, 0.5), "other": None})
    data = json.loads(json.dumps(section.to_json()))
    assert data["workloads"][0]["schedule"] is None and data["recommendation"]["other"] is None
    assert data["workloads"][0]["servers"]["plain"]["lag_p99_s"] is None  # every field written, null included
    assert TraceSection.from_json(data, source="card.json trace") == section
    del data["workloads"][0]["servers"]["plain"]["behind"]
    with pytest.raises(BadInput, match=r"card.json trace: workloads\[0\].servers.plain.behind: missing"):
        TraceSection.from_json(data, source="card.json trace")
