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


def test_a_scrape_and_the_answers_are_sighted_in_order() -> None:
    from loadgen.measure.replicas import answered_by, sighting
    from loadgen.prom.exposition import parse_metrics
    from loadgen.records.request import RequestRecord

    snap = parse_metrics(
        "process_start_time_seconds 1700000000.5\n"
        'vllm:request_success_total{engine="0",finished_reason="length"} 7\n'
        'vllm:request_success_total{engine="0",finished_reason="stop"} 2\n'
    )
    assert sighting(snap) == Sighting(1700000000.5, 9.0)
    answers = [
        RequestRecord("p", "speculative", "w", 1, "measured", 0.0, system_fingerprint=f)
        for f in ("vllm-a", "vllm-a", None, "vllm-b", "vllm-b", "vllm-a")
    ]
    assert [s.fingerprint for s in answered_by(answers)] == ["vllm-a", "vllm-b", "vllm-a"]  # each change once


def test_replica_evidence_refuses_the_acceptance_and_is_one_note_per_role() -> None:
    from loadgen.measure.counterchecks import cell_notes, usable_counters
    from loadgen.records.speculative import SpeculativeConfig

    sd = {"num_drafts": 4.0, "num_draft_tokens": 4.0, "num_accepted_tokens": 4.0, "accepted_per_position": [4.0]}
    lines = [
        CellEntry.of(
            {
                "role": "speculative",
                "workload": "w",
                "concurrency": 1,
                "level": "c1",
                "repetition": r,
                "spec_decode": sd,
            }
        ).with_fields(replica_evidence=["sign"])
        for r in (0, 1)
    ]
    counters, why = usable_counters(lines)
    assert counters is None and why == f"{REPLICAS}: sign"
    notes = cell_notes({"speculative": lines}, SpeculativeConfig(method="mtp", num_speculative_tokens=1))
    assert len(notes) == 1 and notes[0].startswith(f"speculative: {REPLICAS}: sign; its counters mix replicas")
    one = CellEntry.of({"role": "speculative", "workload": "w", "concurrency": 1, "level": "c1", "spec_decode": sd})
    assert usable_counters([one])[0] is not None


def test_a_grammar_reason_lets_k_vary_where_the_method_holds_it() -> None:
    from loadgen.measure.counterchecks import verification_depth
    from loadgen.prom.deltas import SpecDecodeCounters
    from loadgen.records.speculative import SpeculativeConfig

    mtp = SpeculativeConfig(method="mtp", num_speculative_tokens=2)
    c = SpecDecodeCounters(4.0, 4.0, 2.0, (2.0, 0.0), False, ("0",), ())
    assert verification_depth(c, mtp).k_fixed is True
    depth = verification_depth(c, mtp, "the workload is grammar-constrained (x)")
    assert (depth.k_fixed, depth.k_variable_reason, depth.mean_verified_tokens_per_step) == (
        False,
        "the workload is grammar-constrained (x)",
        1.0,
    )
