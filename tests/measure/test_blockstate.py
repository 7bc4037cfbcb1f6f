"""The state recorded beside every block and the differences flagged between the blocks of a pair
(measure/blockstate.py)."""

from __future__ import annotations

from typing import Any

import pytest

from loadgen.measure import blockstate
from loadgen.measure.blockstate import state_notes
from loadgen.prom.exposition import Snapshot, parse_metrics
from loadgen.records.blockstate import BlockState
from loadgen.records.cell import CellEntry
from loadgen.records.usage import GpuState, HostSample

NAMES = ("plain", "speculative")


def gpu(
    index: int = 0,
    sm: float | None = 1980,
    mem: float | None = 2619,
    power: float | None = 400,
    temp: float | None = 50,
    reasons: list[str] | None = None,
) -> dict[str, Any]:
    """One GPU of a host sample (serve/hoststate.py)."""
    return {
        "index": index,
        "sm_clock_mhz": sm,
        "mem_clock_mhz": mem,
        "power_w": power,
        "temperature_c": temp,
        "throttle_reasons": reasons or [],
    }


def block_state(
    host: tuple[dict[str, Any], dict[str, Any]],
    snaps: tuple[Snapshot | None, Snapshot | None],
    gauges: dict[str, Any],
    histograms: dict[str, Any],
    batch: int,
    ceiling: int | None,
    steal: float | None,
) -> dict[str, Any]:
    """blockstate.block_state of a cells.jsonl line with ``gauges`` and ``histograms``, as the line writes it."""
    entry = CellEntry.of(
        {"role": "plain", "workload": "w", "concurrency": 8, "gauges": gauges, "server_histograms": histograms}
    )
    samples = (host_sample(host[0]), host_sample(host[1]))
    return blockstate.block_state(samples, snaps, entry, batch, ceiling, steal).to_json()


def host_sample(d: dict[str, Any]) -> HostSample:
    """A host sample (serve/hoststate.py) of its parts as its line holds them, any left out: no GPUs, no load."""
    gpus = tuple(GpuState.from_json(g, source="gpus") for g in d.get("gpus", []))
    return HostSample(gpus, d.get("loadavg_1m"), None)


def pair_flags(a: dict[str, Any] | None, b: dict[str, Any] | None, names: tuple[str, str]) -> list[str]:
    """blockstate.pair_flags of two states as cells.jsonl lines hold them."""
    return blockstate.pair_flags(
        *(None if x is None else BlockState.from_json(x, source="state") for x in (a, b)), names
    )


def state(
    gpus: list[dict[str, Any]] | None = None,
    load: float | None = 0.5,
    steal: float | None = 0.0,
    hit: float | None = 0.5,
    preempt: float | None = 0.0,
) -> dict[str, Any]:
    """A block's ``state`` as block_state writes it (GPU entries already averaged)."""
    return {
        "gpu": [gpu()] if gpus is None else gpus,
        "host": {"loadavg_1m": load, "cpu_steal_share": steal},
        "engine": {"prefix_cache_hit_share": hit, "preemptions": preempt, "step_time_s": 0.01, "waiting_max": 0},
        "graphs": {"batch_tokens": 8, "ceiling": 512, "eager": False},
    }


def metrics(hits: float, queries: float, preemptions: float | None) -> Snapshot:
    text = (
        "# TYPE vllm:prefix_cache_hits counter\n"
        f'vllm:prefix_cache_hits_total{{engine="0"}} {hits}\n'
        "# TYPE vllm:prefix_cache_queries counter\n"
        f'vllm:prefix_cache_queries_total{{engine="0"}} {queries}\n'
    )
    if preemptions is not None:
        text += f'# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total{{engine="0"}} {preemptions}\n'
    return parse_metrics(text)


# --- block_state ------------------------------------------------------------------------------------------


def test_block_state_averages_each_gpus_two_samples_and_merges_throttle_reasons() -> None:
    before = {"gpus": [gpu(0, 1980, 2619, 300, 50, ["gpu_idle"]), gpu(1, 1900, 2600, 200, 40)], "loadavg_1m": 0.2}
    after = {
        "gpus": [gpu(0, 1960, 2619, 500, 60, ["sw_power_cap"]), gpu(1, 1800, 2600, 250, 44, ["hw_slowdown"])],
        "loadavg_1m": 1.25,
    }
    s = block_state((before, after), (None, None), {}, {}, 8, 512, 0.01)
    assert s["gpu"] == [
        {
            "index": 0,
            "sm_clock_mhz": 1970.0,
            "mem_clock_mhz": 2619.0,
            "power_w": 400.0,
            "temperature_c": 55.0,
            "throttle_reasons": ["sw_power_cap"],
        },
        {
            "index": 1,
            "sm_clock_mhz": 1850.0,
            "mem_clock_mhz": 2600.0,
            "power_w": 225.0,
            "temperature_c": 42.0,
            "throttle_reasons": ["hw_slowdown"],
        },
    ]
    assert s["host"] == {"loadavg_1m": 1.25, "cpu_steal_share": 0.01}


def test_block_state_matches_gpus_by_index_and_uses_one_sample_where_the_other_is_missing() -> None:
    before = {"gpus": [gpu(1, sm=1000, temp=None), gpu(0, sm=2000)]}
    after = {"gpus": [gpu(0, sm=1800, power=None), gpu(2, sm=1500, reasons=["sw_thermal_slowdown", "gpu_idle"])]}
    out = block_state((before, after), (None, None), {}, {}, 8, None, None)["gpu"]
    assert [g["index"] for g in out] == [0, 2]
    # GPU 0: (2000 + 1800) / 2; its power only in the sample before
    assert out[0]["sm_clock_mhz"] == 1900.0 and out[0]["power_w"] == 400.0
    # GPU 2 only in the sample after: its own values; gpu_idle left out of the reasons
    assert out[1]["sm_clock_mhz"] == 1500.0
    assert out[1]["throttle_reasons"] == ["sw_thermal_slowdown"]


def test_block_state_of_empty_host_samples_has_no_gpus_and_no_load() -> None:
    s = block_state(({}, {}), (None, None), {}, {}, 8, 512, None)
    assert s["gpu"] == []
    assert s["host"] == {"loadavg_1m": None, "cpu_steal_share": None}


def test_engine_state_takes_the_hit_share_and_preemptions_from_the_counter_deltas() -> None:
    # hits 100 -> 400 over queries 400 -> 1000: 300 / 600 = 0.5; preemptions 2 -> 5: 3
    s = block_state(
        ({}, {}),
        (metrics(100, 400, 2), metrics(400, 1000, 5)),
        {"vllm:num_requests_waiting": {"mean": 2.0, "max": 7, "samples": 4.0}},
        {"icl_s": {"count": 250.0, "sum": 3.0}},  # as prom/scrape.py writes it: the mean is 3.0 / 250
        8,
        512,
        None,
    )
    assert s["engine"] == {"prefix_cache_hit_share": 0.5, "preemptions": 3.0, "step_time_s": 0.012, "waiting_max": 7}


def test_engine_state_without_snapshots_keeps_only_the_step_time_and_queue() -> None:
    s = block_state(
        ({}, {}),
        (None, metrics(1, 2, 0)),
        {"vllm:num_requests_waiting": {"mean": 1.0, "max": 3, "samples": 4.0}},
        {"icl_s": {"count": 50.0, "sum": 1.0}},
        8,
        512,
        None,
    )
    assert s["engine"] == {"prefix_cache_hit_share": None, "preemptions": None, "step_time_s": 0.02, "waiting_max": 3}
    empty = block_state(({}, {}), (None, None), {}, {"icl_s": {"count": 0.0, "sum": 0.0}}, 8, 512, None)
    assert empty["engine"]["step_time_s"] is None  # no observation: no mean
    assert block_state(({}, {}), (None, None), {}, {}, 8, 512, None)["engine"] == {
        "prefix_cache_hit_share": None,
        "preemptions": None,
        "step_time_s": None,
        "waiting_max": None,
    }


def test_engine_state_has_no_hit_share_without_new_queries_and_no_preemptions_without_the_counter() -> None:
    s = block_state(({}, {}), (metrics(10, 40, None), metrics(10, 40, None)), {}, {}, 8, 512, None)
    assert s["engine"]["prefix_cache_hit_share"] is None
    assert s["engine"]["preemptions"] is None


def test_a_decode_batch_above_the_capture_ceiling_runs_eager() -> None:
    assert block_state(({}, {}), (None, None), {}, {}, 640, 512, None)["graphs"] == {
        "batch_tokens": 640,
        "ceiling": 512,
        "eager": True,
    }


@pytest.mark.parametrize(("batch", "ceiling"), [(512, 512), (8, 512), (4096, None)])
def test_a_decode_batch_at_or_under_the_ceiling_or_with_no_known_ceiling_is_not_eager(
    batch: int, ceiling: int | None
) -> None:
    assert block_state(({}, {}), (None, None), {}, {}, batch, ceiling, None)["graphs"]["eager"] is False


# --- pair_flags -------------------------------------------------------------------------------------------


def test_matching_states_raise_no_flags() -> None:
    assert pair_flags(state(), state(), NAMES) == []


def test_a_missing_state_on_either_side_raises_no_flags() -> None:
    big = state(load=9.0)
    assert pair_flags(None, big, NAMES) == []
    assert pair_flags(big, None, NAMES) == []
    assert pair_flags({}, big, NAMES) == []


def test_sm_clocks_more_than_five_percent_apart_are_flagged() -> None:
    # |1980 - 1800| / 1980 = 9.1%
    out = pair_flags(state([gpu(sm=1980)]), state([gpu(sm=1800)]), NAMES)
    assert out == ["GPU 0 plain 1980 vs speculative 1800 MHz SM clock"]


def test_memory_clocks_more_than_five_percent_apart_are_flagged() -> None:
    # |2619 - 1593| / 2619 = 39%
    out = pair_flags(state([gpu(mem=2619)]), state([gpu(mem=1593)]), NAMES)
    assert out == ["GPU 0 plain 2619 vs speculative 1593 MHz memory clock"]


@pytest.mark.parametrize(("a", "b"), [(1980, 1900), (2000, 1900), (1900, 2000), (None, 1000), (0, 0)])
def test_clocks_within_five_percent_or_unknown_are_not_flagged(a: float | None, b: float | None) -> None:
    # 80 / 1980 = 4.0%; 100 / 2000 = exactly 5%, not above
    assert pair_flags(state([gpu(sm=a)]), state([gpu(sm=b)]), NAMES) == []


def test_different_throttle_reasons_are_flagged_with_none_for_an_empty_side() -> None:
    out = pair_flags(state([gpu(reasons=["sw_power_cap"])]), state([gpu()]), NAMES)
    assert len(out) == 1
    assert out[0].startswith("GPU 0 throttle reasons plain ")
    assert "sw_power_cap" in out[0] and out[0].endswith("vs speculative none")


def test_temperatures_more_than_ten_degrees_apart_are_flagged() -> None:
    assert pair_flags(state([gpu(temp=50)]), state([gpu(temp=61)]), NAMES) == [
        "GPU 0 temperature plain 50 vs speculative 61 C"
    ]
    assert pair_flags(state([gpu(temp=50)]), state([gpu(temp=60)]), NAMES) == []
    assert pair_flags(state([gpu(temp=None)]), state([gpu(temp=90)]), NAMES) == []


def test_a_gpu_only_on_one_side_is_not_compared() -> None:
    assert pair_flags(state([gpu(0), gpu(1, sm=500)]), state([gpu(0)]), NAMES) == []


def test_gpus_are_compared_by_index_and_each_flag_names_its_gpu() -> None:
    a = state([gpu(0), gpu(1, sm=1980)])
    b = state([gpu(1, sm=1500), gpu(0)])
    assert pair_flags(a, b, NAMES) == ["GPU 1 plain 1980 vs speculative 1500 MHz SM clock"]


def test_load_averages_more_than_one_apart_are_flagged() -> None:
    assert pair_flags(state(load=0.5), state(load=1.75), NAMES) == ["host load average plain 0.50 vs speculative 1.75"]
    assert pair_flags(state(load=0.5), state(load=1.5), NAMES) == []
    assert pair_flags(state(load=None), state(load=8.0), NAMES) == []


def test_cpu_steal_above_two_percent_on_one_side_only_is_flagged() -> None:
    assert pair_flags(state(steal=0.03), state(steal=0.0), NAMES) == ["CPU steal plain 3.0% vs speculative 0.0%"]
    assert pair_flags(state(steal=None), state(steal=0.05), NAMES) == ["CPU steal plain 0.0% vs speculative 5.0%"]


def test_cpu_steal_on_both_sides_or_neither_is_not_flagged() -> None:
    assert pair_flags(state(steal=0.03), state(steal=0.10), NAMES) == []
    assert pair_flags(state(steal=0.02), state(steal=0.0), NAMES) == []


def test_prefix_cache_hit_shares_more_than_five_points_apart_are_flagged() -> None:
    assert pair_flags(state(hit=0.5), state(hit=0.6), NAMES) == ["prefix-cache hit share plain 50% vs speculative 60%"]
    assert pair_flags(state(hit=0.5), state(hit=0.54), NAMES) == []
    assert pair_flags(state(hit=None), state(hit=0.9), NAMES) == []


def test_preemptions_on_one_side_only_are_flagged() -> None:
    assert pair_flags(state(preempt=0.0), state(preempt=3.0), NAMES) == ["preemptions plain 0 vs speculative 3"]
    assert pair_flags(state(preempt=2.0), state(preempt=5.0), NAMES) == []
    assert pair_flags(state(preempt=None), state(preempt=0.0), NAMES) == []


def test_every_difference_is_listed_in_order_with_the_given_names() -> None:
    a = state([gpu(sm=1980, temp=50)], load=0.1, steal=0.0, hit=0.1, preempt=0.0)
    b = state([gpu(sm=1500, temp=75)], load=3.1, steal=0.5, hit=0.9, preempt=4.0)
    assert pair_flags(a, b, ("plain", "placebo")) == [
        "GPU 0 plain 1980 vs placebo 1500 MHz SM clock",
        "GPU 0 temperature plain 50 vs placebo 75 C",
        "host load average plain 0.10 vs placebo 3.10",
        "CPU steal plain 0.0% vs placebo 50.0%",
        "prefix-cache hit share plain 10% vs placebo 90%",
        "preemptions plain 0 vs placebo 4",
    ]


# --- state_notes ------------------------------------------------------------------------------------------


def line(block: int, st: dict[str, Any] | None) -> CellEntry:
    """A cells.jsonl line of block ``block`` with its state."""
    return CellEntry.of({"role": "speculative", "workload": "w", "concurrency": 1, "repetition": block, "state": st})


def eager(st: dict[str, Any], batch: int, ceiling: int = 512) -> dict[str, Any]:
    return st | {"graphs": {"batch_tokens": batch, "ceiling": ceiling, "eager": batch > ceiling}}


def test_state_notes_pair_each_arms_block_with_plains_block_of_the_same_index() -> None:
    entries = {
        "plain": [line(0, state(load=0.5)), line(1, state(load=0.5))],
        "speculative": [line(0, state(load=0.5)), line(1, state(load=2.0))],
    }
    assert state_notes(entries) == [
        "block 1: the state differs between plain and speculative: host load average plain 0.50 vs speculative 2.00"
    ]


def test_state_notes_join_several_flags_of_one_block() -> None:
    entries = {"plain": [line(0, state(load=0.5, hit=0.1))], "placebo": [line(0, state(load=2.0, hit=0.5))]}
    assert state_notes(entries) == [
        "block 0: the state differs between plain and placebo: host load average plain 0.50 vs placebo 2.00; "
        "prefix-cache hit share plain 10% vs placebo 50%"
    ]


def test_state_notes_skip_a_block_that_plain_did_not_record() -> None:
    entries = {"plain": [line(0, state())], "speculative": [line(1, state(load=5.0)), line(0, None)]}
    assert state_notes(entries) == []


def test_state_notes_treat_a_line_without_repetition_as_block_zero() -> None:
    def unnumbered(role: str, load: float) -> CellEntry:  # a line with no repetition key
        return CellEntry.from_json(
            {"role": role, "workload": "w", "concurrency": 1, "state": state(load=load)}, source="test"
        )

    entries = {"plain": [unnumbered("plain", 0.0)], "speculative": [unnumbered("speculative", 4.0)]}
    assert state_notes(entries) == [
        "block 0: the state differs between plain and speculative: host load average plain 0.00 vs speculative 4.00"
    ]


def test_state_notes_without_plain_or_other_arms_are_empty() -> None:
    assert state_notes({}) == []
    assert state_notes({"plain": [line(0, state())]}) == []


def test_state_notes_flag_an_arm_whose_decode_batch_runs_eager_where_plains_does_not() -> None:
    entries = {
        "plain": [line(0, eager(state(), 64))],
        "speculative": [line(0, eager(state(), 320)), line(1, eager(state(), 640))],
    }
    assert state_notes(entries) == [
        "speculative: decode batch 640 tokens (concurrency x (1 + K)) is above the CUDA-graph capture ceiling 512: "
        "these steps run eager (that can fake a crossover)"
    ]


def test_state_notes_do_not_flag_eager_steps_when_plain_runs_eager_too() -> None:
    # concurrency 640: plain's batch 640 and the placebo's 640 are above 512 as much as the K = 2 arm's 1920
    entries = {
        "plain": [line(0, eager(state(), 640))],
        "placebo": [line(0, eager(state(), 640))],
        "speculative": [line(0, eager(state(), 1920))],
    }
    assert state_notes(entries) == []


def _line(role: str, block: int, waiting: float | None, rate: float | None = None) -> CellEntry:
    state = {"engine": {"waiting_max": waiting}}
    return CellEntry.of(
        {"role": role, "workload": "w", "concurrency": 64, "repetition": block, "rate_rps": rate, "state": state}
    )


def test_waiting_requests_in_closed_loop_blocks_are_named_with_their_count() -> None:
    notes = state_notes(
        {
            "plain": [_line("plain", 0, 0.0), _line("plain", 1, 0.0)],
            "speculative": [_line("speculative", 0, 3.0), _line("speculative", 1, 7.0)],
        }
    )
    assert notes == [
        "speculative: up to 7 requests waited in the engine's queue (vllm:num_requests_waiting) in "
        "2 of 2 blocks at concurrency 64: queueing, not decoding, is part of their TTFT"
    ]


def test_no_note_without_waiting_or_in_an_open_loop() -> None:
    assert state_notes({"plain": [_line("plain", 0, None)], "speculative": [_line("speculative", 0, 0.0)]}) == []
    assert state_notes({"plain": [_line("plain", 0, 5.0, rate=2.0)]}) == []
