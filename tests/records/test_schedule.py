"""records/schedule.py: a K schedule's text and family, the schedule check's counts and file object, and the
sweep document that measures the schedules in place of a sweep's candidates (closed forms, and by property)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loadgen.records.schedule import (
    SCHEDULE_CHECK_SCHEMA,
    DeployedSchedule,
    ScheduleCell,
    ScheduleCheck,
    schedule_sweep_doc,
)

DRAFT = {"method": "draft_model", "model": "smollm2-135m", "num_speculative_tokens": 4}
SCHEDULED = {**DRAFT, "num_speculative_tokens_per_batch_size": [[1, 8, 4], [9, 64, 2], [65, 512, 0]]}
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}


def test_the_text_is_the_speculative_config_as_sorted_json() -> None:
    schedule = DeployedSchedule("short", {"num_speculative_tokens": 4, "method": "ngram"})
    assert schedule.text == '{"method": "ngram", "num_speculative_tokens": 4}'
    assert json.loads(DeployedSchedule("x", SCHEDULED).text) == SCHEDULED
    # equal configs in another key order give equal texts; a different K gives another
    assert DeployedSchedule("a", dict(reversed(list(SCHEDULED.items())))).text == DeployedSchedule("b", SCHEDULED).text
    assert DeployedSchedule("a", {**DRAFT, "num_speculative_tokens": 2}).text != DeployedSchedule("b", DRAFT).text


def test_the_family_is_everything_but_k_and_the_schedule() -> None:
    assert (
        DeployedSchedule.family_of(SCHEDULED)
        == DeployedSchedule.family_of(DRAFT)
        == ('{"method": "draft_model", "model": "smollm2-135m"}')
    )
    assert DeployedSchedule.family_of(NGRAM) == '{"method": "ngram", "prompt_lookup_max": 4}'
    assert DeployedSchedule.family_of({"num_speculative_tokens": 1}) == "{}"


def _cell(status: str, k: int = 2, measured: float | None = 1.2) -> ScheduleCell:
    return ScheduleCell("short", "c8", 8, k, "draft-k2", 1.25, 1.1, 1.4, measured, 1.05, 1.3, status)


def test_the_check_counts_its_cells_by_status_and_writes_every_field() -> None:
    check = ScheduleCheck(
        "runs/sweep-1",
        {"short": "schedule"},
        (_cell("confirmed"), _cell("confirmed", k=0), _cell("worse", measured=None)),
    )
    assert (check.count("confirmed"), check.count("worse"), check.count("unmeasured")) == (2, 1, 0)
    doc = check.to_json()
    assert list(doc) == ["schema", "sweep_dir", "candidates", "cells"] and doc["schema"] == SCHEDULE_CHECK_SCHEMA
    assert doc["cells"][2] == {
        "workload": "short",
        "level": "c8",
        "concurrency": 8,
        "k": 2,
        "predicted_from": "draft-k2",
        "predicted": 1.25,
        "predicted_low": 1.1,
        "predicted_high": 1.4,
        "measured": None,
        "measured_low": 1.05,
        "measured_high": 1.3,
        "status": "worse",
    }
    assert json.loads(json.dumps(doc)) == doc  # a JSON file as it is
    assert ScheduleCheck("d", {}, ()).to_json() == {
        "schema": SCHEDULE_CHECK_SCHEMA,
        "sweep_dir": "d",
        "candidates": {},
        "cells": [],
    }


DOC = {
    "name": "smollm2",
    "pair": "pair.toml",
    "workloads": ["short", "long"],
    "speculative": {"name": "k1", **DRAFT},
    "candidates": [{"name": "k2", **DRAFT}, {"name": "ng", **NGRAM}],
}


def test_one_schedule_for_every_workload_is_the_one_speculative_table() -> None:
    same = [DeployedSchedule("short", SCHEDULED), DeployedSchedule("long", dict(SCHEDULED))]
    out, index = schedule_sweep_doc(DOC, same)
    assert out == {
        "name": "smollm2-schedule",
        "pair": "pair.toml",
        "workloads": ["short", "long"],
        "speculative": {"name": "schedule", **SCHEDULED},
    }
    assert index == {"short": 0, "long": 0}
    assert DOC["name"] == "smollm2" and len(DOC["candidates"]) == 2  # the document given is left as it was


def test_distinct_schedules_are_numbered_in_first_seen_order() -> None:
    schedules = [
        DeployedSchedule("a", NGRAM),
        DeployedSchedule("b", SCHEDULED),
        DeployedSchedule("c", NGRAM),
        DeployedSchedule("d", DRAFT),
    ]
    out, index = schedule_sweep_doc({"workloads": ["a"]}, schedules)
    assert out["name"] == "sweep-schedule"  # a document without a name
    assert out["speculative"] == {"name": "schedule1", **NGRAM}
    assert out["candidates"] == [{"name": "schedule2", **SCHEDULED}, {"name": "schedule3", **DRAFT}]
    assert index == {"a": 0, "b": 1, "c": 0, "d": 2}
    assert list(out["speculative"]) == ["name", "method", "num_speculative_tokens", "prompt_lookup_max"]


CONFIGS = st.fixed_dictionaries(
    {"method": st.sampled_from(["ngram", "draft_model", "eagle"]), "num_speculative_tokens": st.integers(1, 8)},
    optional={
        "model": st.sampled_from(["d1", "d2"]),
        "num_speculative_tokens_per_batch_size": st.lists(
            st.tuples(st.integers(1, 9), st.integers(10, 99), st.integers(0, 8)).map(list), min_size=1, max_size=3
        ),
    },
)


@settings(max_examples=40, deadline=None)
@given(configs=st.lists(CONFIGS, min_size=1, max_size=6))
def test_every_workload_is_measured_by_a_candidate_with_its_own_config(configs: list[dict[str, Any]]) -> None:
    schedules = [DeployedSchedule(f"w{i}", c) for i, c in enumerate(configs)]
    out, index = schedule_sweep_doc(DOC, schedules)
    tables = [out["speculative"], *out.get("candidates", [])]
    assert len(tables) == len({s.text for s in schedules})  # one candidate per distinct config
    assert len({t["name"] for t in tables}) == len(tables)
    for s in schedules:
        table = dict(tables[index[s.workload]])
        table.pop("name")
        assert table == s.config
    assert ("candidates" in out) == (len(tables) > 1)
    assert {k: out[k] for k in ("pair", "workloads")} == {"pair": "pair.toml", "workloads": ["short", "long"]}


@settings(max_examples=40, deadline=None)
@given(config=CONFIGS, k=st.integers(1, 8))
def test_the_family_does_not_change_with_k_and_the_text_reads_back(config: dict[str, Any], k: int) -> None:
    other = {**config, "num_speculative_tokens": k, "num_speculative_tokens_per_batch_size": [[1, 2, k]]}
    assert DeployedSchedule.family_of(other) == DeployedSchedule.family_of(config)
    assert json.loads(DeployedSchedule("w", config).text) == config
    assert (DeployedSchedule("w", other).text == DeployedSchedule("w", config).text) == (other == config)
