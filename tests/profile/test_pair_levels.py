"""pair.py's records and rules: K per batch size (disable_by_batch_size, the per-batch-size schedule), whether
a level speculates and why not, the SLO limits, the stop rule's counts, level labels and order, planned blocks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import BadInput
from loadgen.profile.pair import (
    SCHEDULE_KEY,
    SLO,
    Level,
    Load,
    ModelRef,
    StopRule,
    k_at,
    off_reason,
    speculation_on_at,
)
from loadgen.profile.pairfile import load_pair
from loadgen.records.criteria import Criteria
from loadgen.records.design import Design
from loadgen.records.speculative import SpeculativeConfig


def spec_of(data: dict[str, Any]) -> SpeculativeConfig:
    return SpeculativeConfig.from_json(data, source="pair.toml")


SCHEDULE = spec_of({"num_speculative_tokens": 4, SCHEDULE_KEY: [[1, 2, 5], [3, 8, 2], [9, 16, 0]]})


def test_k_is_the_declared_one_without_a_limit_or_a_schedule() -> None:
    assert [k_at(spec_of({"num_speculative_tokens": 3}), b) for b in (1, 7, 512)] == [3, 3, 3]
    assert k_at(spec_of({}), 1) == 0 and k_at(spec_of({"num_speculative_tokens": None}), 4) == 0


def test_disable_by_batch_size_switches_speculation_off_from_that_batch_on() -> None:
    spec = spec_of({"num_speculative_tokens": 3, "disable_by_batch_size": 4})
    assert [k_at(spec, b) for b in range(1, 7)] == [3, 3, 3, 0, 0, 0]
    # a boolean or a string is no limit: the record refuses it, naming the field
    for bad in (True, "4"):
        with pytest.raises(BadInput, match=r"^pair.toml: disable_by_batch_size: expected an integer or null, got"):
            spec_of({"num_speculative_tokens": 3, "disable_by_batch_size": bad})


def test_the_per_batch_size_schedule_gives_the_k_of_the_range_holding_the_batch() -> None:
    assert [k_at(SCHEDULE, b) for b in (1, 2, 3, 8, 9, 16)] == [5, 5, 2, 2, 0, 0]
    assert k_at(SCHEDULE, 17) == 4  # no range holds it: the declared K


def test_malformed_schedule_rows_are_skipped() -> None:
    spec = spec_of({"num_speculative_tokens": 4, SCHEDULE_KEY: [[1, 4], "x", [1, 4, "0"], [1.0, 4, 0], [1, 4, 1]]})
    assert k_at(spec, 2) == 1  # only the last row is well formed
    assert k_at(spec_of({"num_speculative_tokens": 4, SCHEDULE_KEY: [(1, 4, 0)]}), 3) == 0  # a tuple row counts


def test_disable_by_batch_size_wins_over_the_schedule() -> None:
    spec = SCHEDULE.with_fields(disable_by_batch_size=2)
    assert [k_at(spec, b) for b in (1, 2, 3)] == [5, 0, 0]


def test_a_closed_loop_level_speculates_at_its_concurrency_an_open_loop_one_at_any_batch_up_to_its_cap() -> None:
    spec = spec_of({"num_speculative_tokens": 2, "disable_by_batch_size": 3})
    assert [speculation_on_at(spec, c) for c in (0, 1, 2, 3, 8)] == [True, True, True, False, False]
    assert speculation_on_at(spec, 8, open_loop=True)  # batches 1 and 2 still speculate
    late = spec_of({"num_speculative_tokens": 2, SCHEDULE_KEY: [[1, 4, 0]]})
    assert not speculation_on_at(late, 4, open_loop=True) and speculation_on_at(late, 5, open_loop=True)
    assert not speculation_on_at(late, 0, open_loop=True)  # a cap below 1 is read as 1


def test_the_off_reason_names_the_key_and_its_numbers() -> None:
    assert off_reason(spec_of({"num_speculative_tokens": 2, "disable_by_batch_size": 4}), 6) == (
        "disable_by_batch_size = 4 <= 6 running requests"
    )
    assert off_reason(SCHEDULE, 12) == f"{SCHEDULE_KEY} gives K = 0 for batch sizes 9-16"
    assert off_reason(spec_of({"num_speculative_tokens": 0}), 1) == "num_speculative_tokens = 0"


def test_slo_limits_hold_the_declared_objectives_only() -> None:
    assert SLO().limits() == {}
    assert SLO(ttft_s=0.5, e2e_s=3.0).limits() == {"ttft_s": 0.5, "e2e_s": 3.0}
    assert SLO(percentile=90.0, ttft_s=0.0, tpot_s=0.02, e2e_s=1.0).limits() == {
        "ttft_s": 0.0,
        "tpot_s": 0.02,
        "e2e_s": 1.0,
    }  # 0 is a limit, not "unset"


def test_the_stop_rule_counts_by_rounds_or_by_duration_and_the_cooldown_fillers() -> None:
    stop = StopRule(min_requests=8, rounds=2)
    assert [stop.measured_requests(c) for c in (1, 4, 5, 64)] == [8, 8, 10, 128]
    assert StopRule(duration_s=30.0, max_requests=250).measured_requests(64) == 250
    assert [stop.cooldown_requests(c) for c in (1, 2, 8)] == [0, 4, 28]
    assert StopRule(cooldown=False).cooldown_requests(8) == 0


def test_levels_put_closed_loop_first_then_rates_capped_at_max_concurrency() -> None:
    load = Load(concurrency=(1, 4), rates_rps=(2.5, 10.0), max_concurrency=32)
    assert load.levels() == (Level(1), Level(4), Level(32, 2.5), Level(32, 10.0))
    assert [level.label for level in load.levels()] == ["c1", "c4", "r2.5", "r10"]
    assert Load().levels() == ()


def test_a_pair_speculates_at_a_level_by_its_declared_config() -> None:
    pair = load_pair("demo-cpu")
    limited = replace(pair, speculative=pair.speculative.with_fields(disable_by_batch_size=2))
    assert [limited.speculates_at(Level(c)) for c in (1, 2)] == [True, False]
    assert limited.speculates_at(Level(16, 1.0))  # open loop: the batch may be 1
    assert pair.speculates_at(Level(64))


def test_planned_blocks_are_max_blocks_only_when_a_ci_half_width_is_asked_for() -> None:
    pair = replace(load_pair("demo-cpu"), design=Design(blocks=2, max_blocks=7))
    assert replace(pair, criteria=None).planned_blocks == 2
    assert replace(pair, criteria=Criteria()).planned_blocks == 2
    assert replace(pair, criteria=Criteria(ci_half_width=0.05)).planned_blocks == 7


def test_the_draft_carries_its_revision_and_lookup_methods_have_none() -> None:
    pair = load_pair("demo-cpu")
    with_rev = replace(pair, speculative=pair.speculative.with_fields(model="org/draft", revision="abc123"))
    assert with_rev.draft == ModelRef("org/draft", "abc123")
    assert replace(pair, speculative=spec_of({"method": "suffix", "num_speculative_tokens": 8})).draft is None


@pytest.mark.parametrize("name", ["demo-cpu", "demo-cpu-ngram"])
def test_a_shipped_pair_keeps_its_path_and_its_speculative_fields(name: str) -> None:
    pair = load_pair(name)
    assert pair.path.resolve() == Path(f"profiles/pairs/{name}.toml").resolve()
    assert pair.num_speculative_tokens == pair.speculative.num_speculative_tokens >= 1
