"""Replicas behind one URL told from what the URL said in order (measure/replicas.py), on sequences whose answer
is known: a restart gives one later process start time, replicas alternate; a counter reset once is a restart,
a counter that drops, climbs back and drops again is replicas; answers with two fingerprints are replicas."""

from __future__ import annotations

from loadgen.measure.replicas import REPLICAS, replica_signs, spread
from loadgen.records.cell import CellEntry
from loadgen.records.serverfacts import Sighting


def starts(*values: float) -> list[Sighting]:
    return [Sighting(process_start_s=v) for v in values]


def totals(*values: float) -> list[Sighting]:
    return [Sighting(requests_total=v) for v in values]


def test_a_process_start_time_that_comes_back_or_goes_back_is_replicas() -> None:
    assert replica_signs(starts(100.0, 100.0, 250.5, 100.0)) == [
        "process_start_time_seconds alternated between 100.000 and 250.500"
    ]
    assert replica_signs(starts(250.0, 100.0)) == ["process_start_time_seconds alternated between 100.000 and 250.000"]


def test_one_later_start_time_is_a_restart_not_replicas() -> None:
    assert replica_signs(starts(100.0, 100.0, 250.0, 250.0)) == []


def test_counters_back_and_forth_without_start_times_are_replicas_a_single_reset_is_not() -> None:
    assert replica_signs(totals(10, 14, 3, 16, 5)) == [
        "vllm:request_success_total went back and forth without a restart (10, 14, 3, 16, 5)"
    ]
    assert replica_signs(totals(10, 14, 3, 5, 9)) == []  # reset once, grows from there: a restart
    assert replica_signs(starts(1.0, 1.0) + totals(10, 3, 12, 4)) == []  # start times say one process


def test_two_fingerprints_are_replicas_and_the_sign_names_them() -> None:
    seen = [Sighting(fingerprint="vllm-0.32.0-aaaa"), Sighting(fingerprint="vllm-0.32.0-bbbb")]
    assert replica_signs(seen) == ["system_fingerprint differed between answers (vllm-0.32.0-aaaa, vllm-0.32.0-bbbb)"]
    assert replica_signs(seen[:1] * 3) == []


def test_replicas_seen_once_mark_every_entry_of_that_role_and_drop_its_restart_evidence() -> None:
    def entry(role: str, rep: int, **more: list[str]) -> CellEntry:
        return CellEntry(role, "w", 1, "c1", repetition=rep, **more)  # type: ignore[arg-type]

    lines = [
        entry("speculative", 0, restart_evidence=["process_start_time_seconds changed 1 → 2"]),
        entry("speculative", 1, replica_evidence=["sign"]),
        entry("plain", 0, restart_evidence=["x"]),
    ]
    out = spread(lines, {"plain": ()})
    assert [(e.role, e.replica_evidence, e.restart_evidence) for e in out] == [
        ("speculative", ["sign"], []),
        ("speculative", ["sign"], []),
        ("plain", [], ["x"]),
    ]
    assert REPLICAS.startswith("more than one server answered at one URL")
