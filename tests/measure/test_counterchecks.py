"""Server-side figures that cannot mislead: restarts inside a cell, quantiles past the last finite bucket,
older vLLM metric names, spec-decode counter invariants, server/client token counts, KV-capacity loss.

Recorded vLLM 0.32.0 ``/metrics`` texts (tests/data) between t0 and t1: 10 requests finished, 500 tokens
generated, 100 drafts of K = 3 (300 draft tokens), 150 accepted (70, 50, 30 per position).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from loadgen.measure.counterchecks import (
    WindowTally,
    cell_notes,
    depth_note,
    invariant_violations,
    k_variable,
    kv_capacity_note,
    restart_evidence,
    server_counters,
    token_mismatch,
    usable_counters,
    verification_depth,
)
from loadgen.measure.serverside import agreement, compare
from loadgen.prom import deltas
from loadgen.prom import exposition as prom
from loadgen.prom.deltas import SpecDecodeCounters
from loadgen.prom.metricnames import resolve
from loadgen.prom.scrape import read_gauges, server_histograms, summarize_gauges
from loadgen.records.card import ResourceDifference
from loadgen.records.cell import CellEntry
from loadgen.records.cellparts import GaugeSample, ServerHistogram
from loadgen.records.request import RequestRecord
from loadgen.records.speculative import SpeculativeConfig

DATA = Path(__file__).parents[1] / "data"


def spec_of(data: Mapping[str, Any]) -> SpeculativeConfig:
    """A speculative config record of ``data`` (as a pair file or protocol.json gives it)."""
    return SpeculativeConfig.from_json(dict(data), source="pair.toml")


def text(name: str) -> str:
    return (DATA / f"vllm032_{name}.prom").read_text()


def started(exposition: str, at: float) -> prom.Snapshot:
    """The exposition plus the process gauge the Prometheus Python client adds."""
    gauge = f"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {at}\n"
    return prom.parse_metrics(exposition + gauge)


def entry_of(before: prom.Snapshot, after: prom.Snapshot, sent: int, failed: int = 0) -> dict[str, Any]:
    """The fields cell.py records for these two scrapes and ``sent`` measured + cooldown requests."""
    counters = deltas.spec_decode_delta(before, after)
    assert counters is not None
    return {
        "spec_decode": {**counters.__dict__, "accepted_per_position": list(counters.accepted_per_position)},
        "server_finished_requests": deltas.counter_delta(before, after, "vllm:request_success_total").value,
        "client_sent_requests": sent,
        "client_window_failed": failed,
        **server_counters(before, after).to_json(),
    }


def _e(fields: Mapping[str, Any]) -> CellEntry:
    """A cells.jsonl line of these fields (role, workload and concurrency filled in)."""
    return CellEntry.from_json({"role": "speculative", "workload": "w", "concurrency": 1, **fields}, source="test")


def _es(lines: Sequence[Mapping[str, Any]]) -> list[CellEntry]:
    return [_e(x) for x in lines]


def _roles(by_role: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, list[CellEntry]]:
    return {role: _es(lines) for role, lines in by_role.items()}


# --- 1. a restart inside a cell ------------------------------------------------------------------------


def test_counters_going_backwards_are_a_restart() -> None:
    before = prom.parse_metrics(text("spec_t1"))
    after = prom.parse_metrics(text("spec_t2_engine1_restarted"))
    entry = entry_of(before, after, sent=3)
    assert restart_evidence(_e(entry)) == ["spec-decode counters went backwards"]
    counters, why = usable_counters(_es([entry]))
    assert counters is None
    assert why == "server restarted inside the cell: spec-decode counters went backwards"


def test_a_changed_process_start_time_is_a_restart_the_counters_miss() -> None:
    # counters zeroed at the restart and grown past their earlier values: no series went down
    before, after = started(text("spec_t0"), 1795982598.0), started(text("spec_t1"), 1795982700.0)
    entry = entry_of(before, after, sent=10)
    assert entry["spec_decode"]["reset"] is False
    assert restart_evidence(_e(entry)) == ["process_start_time_seconds changed 1795982598 → 1795982700"]
    assert usable_counters(_es([entry]))[0] is None
    same = entry_of(started(text("spec_t0"), 1795982598.0), started(text("spec_t1"), 1795982598.0), sent=10)
    assert restart_evidence(_e(same)) == []
    assert usable_counters(_es([same]))[0] == SpecDecodeCounters(100.0, 300.0, 150.0, (70.0, 50.0, 30.0), False)


def test_fewer_finished_requests_than_loadgen_completed_is_a_restart() -> None:
    before, after = prom.parse_metrics(text("spec_t0")), prom.parse_metrics(text("spec_t1"))
    assert restart_evidence(_e(entry_of(before, after, sent=10))) == []
    # 2 of 12 failed on the client: the server need not have finished them
    assert restart_evidence(_e(entry_of(before, after, sent=12, failed=2))) == []
    assert restart_evidence(_e(entry_of(before, after, sent=11))) == [
        "server finished 10 requests, loadgen completed 11"
    ]


def test_a_restarted_repetition_is_left_out_of_the_cells_acceptance() -> None:
    before, after = started(text("spec_t0"), 1.0), started(text("spec_t1"), 1.0)
    good = entry_of(before, after, sent=10) | {"repetition": 0}
    bad = entry_of(before, started(text("spec_t1"), 2.0), sent=10) | {"repetition": 1}
    counters, why = usable_counters(_es([good, bad]))
    assert counters == SpecDecodeCounters(100.0, 300.0, 150.0, (70.0, 50.0, 30.0), False) and why is None
    notes = cell_notes(
        _roles({"speculative": [good, bad]}), spec_of({"method": "draft_model", "num_speculative_tokens": 3})
    )
    assert notes == [
        "speculative rep 1: acceptance not measurable, the server restarted inside the cell "
        "(process_start_time_seconds changed 1 → 2)"
    ]


# --- 2. quantiles past the last finite bucket ----------------------------------------------------------

BOUNDS = (1.0, 10.0, 60.0)


def e2e_text(counts: tuple[int, int, int, int], total: float) -> str:
    lines = ["# TYPE vllm:e2e_request_latency_seconds histogram"]
    for le, c in zip((*(f"{b}" for b in BOUNDS), "+Inf"), counts, strict=True):
        lines.append(f'vllm:e2e_request_latency_seconds_bucket{{engine="0",le="{le}",model_name="m"}} {c}')
    lines += [
        f'vllm:e2e_request_latency_seconds_count{{engine="0",model_name="m"}} {counts[-1]}',
        f'vllm:e2e_request_latency_seconds_sum{{engine="0",model_name="m"}} {total}',
    ]
    return "\n".join(lines) + "\n"


def test_a_quantile_in_the_inf_bucket_is_above_the_bound_and_never_agrees() -> None:
    empty = prom.parse_metrics(e2e_text((0, 0, 0, 0), 0.0))
    # 4 requests of 200 s, 1 of 5 s: p50 lies in +Inf, p50 read as the top finite bound 60 s
    hist = server_histograms(empty, prom.parse_metrics(e2e_text((0, 1, 1, 5), 805.0)))["e2e_s"]
    assert hist.p50 == 60.0 and hist.p50_above_bound is True and hist.p90_above_bound is True
    # a client p50 of 200 s: both beyond the buckets, nothing to compare (was: "agree")
    row = compare(200.0, hist)
    assert row.server_above_bound is True and row.agrees is None
    # a client p50 of 30 s against a server p50 above 60 s: they disagree
    assert compare(30.0, hist).agrees is False
    # an entry of an older run without the field: recomputed from the stored buckets
    older = {k: v for k, v in hist.to_json().items() if not k.endswith("_above_bound")}
    assert compare(200.0, ServerHistogram.from_json(older, source="older")).server_above_bound is True
    # p50 inside the buckets: 4 of 5 at most 10 s
    inside = server_histograms(empty, prom.parse_metrics(e2e_text((0, 4, 4, 5), 220.0)))["e2e_s"]
    assert inside.p50_above_bound is False and inside.p99_above_bound is True
    assert compare(8.0, inside).agrees is True


def test_agreement_closed_form() -> None:
    bounds = [*BOUNDS, math.inf]
    assert agreement(5.0, 6.0, bounds, server_above=False) is True
    assert agreement(0.5, 60.0, bounds, server_above=False) is False
    assert agreement(59.0, 60.0, bounds, server_above=True) is False
    assert agreement(61.0, 60.0, bounds, server_above=True) is None
    assert agreement(None, 60.0, bounds, server_above=True) is None


# --- 3. older metric names -----------------------------------------------------------------------------

OLD_SERVER = """# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:gpu_cache_usage_perc{engine="1",model_name="m"} 0.5
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{engine="0",le="0.01",model_name="m"} %d
vllm:time_per_output_token_seconds_bucket{engine="0",le="0.1",model_name="m"} %d
vllm:time_per_output_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} %d
vllm:time_per_output_token_seconds_count{engine="0",model_name="m"} %d
vllm:time_per_output_token_seconds_sum{engine="0",model_name="m"} %f
"""


def test_older_names_give_the_same_figures_and_say_so() -> None:
    before = prom.parse_metrics(OLD_SERVER % (0, 0, 0, 0, 0.0))
    after = prom.parse_metrics(OLD_SERVER % (10, 20, 20, 20, 0.9))
    assert resolve(after, "vllm:kv_cache_usage_perc") == "vllm:gpu_cache_usage_perc"
    assert resolve(after, "vllm:prefix_cache_hits_total") is None
    sample = read_gauges(after)
    assert sample == {
        "vllm:gpu_cache_usage_perc": 0.75,
        "vllm:num_requests_running": 3.0,
        "vllm:num_requests_waiting": None,
    }
    summary = {
        k: g.to_json()
        for k, g in summarize_gauges(
            [GaugeSample(values=sample), GaugeSample(values=sample | {"vllm:gpu_cache_usage_perc": 0.25})]
        ).items()
    }
    assert summary["vllm:kv_cache_usage_perc"] == {
        "mean": 0.5,
        "max": 0.75,
        "samples": 2.0,
        "metric": "vllm:gpu_cache_usage_perc",
    }
    assert summary["vllm:num_requests_running"]["metric"] == "vllm:num_requests_running"
    icl = server_histograms(before, after)["icl_s"].to_json()
    assert icl["metric"] == "vllm:time_per_output_token_seconds" and icl["count"] == 20.0
    assert icl["p50"] == pytest.approx(0.01)
    notes = cell_notes(_roles({"plain": [{"gauges": summary, "server_histograms": {"icl_s": icl}}]}), spec_of({}))
    assert notes == [
        "plain: read older vLLM metric names: vllm:gpu_cache_usage_perc (for vllm:kv_cache_usage_perc), "
        "vllm:time_per_output_token_seconds (for vllm:inter_token_latency_seconds)"
    ]


def test_the_current_name_wins_when_both_are_shown() -> None:
    both = prom.parse_metrics(
        OLD_SERVER % (1, 1, 1, 1, 0.1) + "# TYPE vllm:kv_cache_usage_perc gauge\n"
        'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.1\n'
    )
    assert read_gauges(both)["vllm:kv_cache_usage_perc"] == 0.1


# --- 4. spec-decode counter invariants -----------------------------------------------------------------


def test_invariants_hold_on_consistent_counters() -> None:
    assert invariant_violations(SpecDecodeCounters(100, 300, 150, (70, 50, 30), False), 3) == []
    assert invariant_violations(SpecDecodeCounters(0, 0, 0, (0, 0, 0), False), 3) == []


def test_invariant_violations_name_the_numbers() -> None:
    assert invariant_violations(SpecDecodeCounters(100, 300, 160, (70, 50, 30), False), 3) == [
        "per-position accepted counts sum to 150, not the accepted count 160"
    ]
    assert invariant_violations(SpecDecodeCounters(100, 300, 150, (50, 70, 30), False), 3) == [
        "accepted at position 1 (70) exceeds position 0 (50)"
    ]
    assert invariant_violations(SpecDecodeCounters(100, 290, 150, (70, 50, 30), False), 3) == [
        "draft tokens 290 ≠ K × drafts = 3 × 100 = 300"
    ]
    # an adaptive method may propose fewer than K, never more
    assert invariant_violations(SpecDecodeCounters(100, 290, 150, (70, 50, 30), False), 3, adaptive=True) == []
    assert invariant_violations(SpecDecodeCounters(100, 310, 150, (70, 50, 30), False), 3, adaptive=True) == [
        "draft tokens 310 ≠ K × drafts = 3 × 100 = 300"
    ]


def test_an_invariant_violation_is_a_card_note() -> None:
    entry = {
        "spec_decode": {
            "num_drafts": 100,
            "num_draft_tokens": 290,
            "num_accepted_tokens": 150,
            "accepted_per_position": [70, 50, 30],
            "reset": False,
        }
    }
    assert cell_notes(
        _roles({"speculative": [entry]}), spec_of({"method": "draft_model", "num_speculative_tokens": 3})
    ) == ["speculative: spec-decode counters inconsistent: draft tokens 290 ≠ K × drafts = 3 × 100 = 300"]
    # ngram proposes only the matches it finds: no inconsistency, the mean depth beside K instead
    assert cell_notes(_roles({"speculative": [entry]}), spec_of({"method": "ngram", "num_speculative_tokens": 3})) == [
        "speculative: mean verified tokens per step 2.90 of K = 3 (ngram proposes only the matches it finds: "
        "fewer than K per step is by design)"
    ]


# --- 5. server against client token counts -------------------------------------------------------------


def record(phase: str, tokens: list[int], error: str | None = None) -> RequestRecord:
    return RequestRecord("p", "plain", "w", 1, phase, 0.0, chunk_tokens=tokens, error=error)


def test_window_tally_counts_measured_and_cooldown_only() -> None:
    tally = WindowTally()
    for r in (
        record("warmup", [1] * 50),
        record("measured", [1, 2, 3]),
        record("cooldown", [4]),
        record("measured", [1], error="ReadTimeout"),
    ):
        tally.add(r)
    assert (tally.sent, tally.to_json()) == (3, {"client_window_failed": 1, "client_window_output_tokens": 11})


def test_generation_tokens_against_the_clients_count() -> None:
    before, after = prom.parse_metrics(text("spec_t0")), prom.parse_metrics(text("spec_t1"))
    entry = entry_of(before, after, sent=10) | {"client_window_output_tokens": 500}
    assert entry["server_generation_tokens"] == 500.0
    assert token_mismatch(_e(entry)) is None
    assert token_mismatch(_e(entry | {"client_window_output_tokens": 496})) is None  # within 1%
    assert token_mismatch(_e(entry | {"client_window_output_tokens": 480})) == (
        "server generated 500 tokens (Δvllm:generation_tokens_total), loadgen received 480 (+4.2%)"
    )
    assert token_mismatch(_e(entry | {"client_window_output_tokens": 480, "foreign_traffic": True})) is None
    notes = cell_notes(
        _roles({"plain": [entry | {"client_window_output_tokens": 480, "spec_decode": None}]}), spec_of({})
    )
    assert notes == ["plain: server generated 500 tokens (Δvllm:generation_tokens_total), loadgen received 480 (+4.2%)"]


# --- 6. KV-capacity loss -------------------------------------------------------------------------------


def test_kv_capacity_loss_over_ten_percent_is_a_note() -> None:
    assert kv_capacity_note(ResourceDifference(kv_cache_tokens_lost=11000, kv_capacity_loss=0.11)) == (
        "KV-cache capacity: the speculative server holds 11000 tokens (11.0%) fewer than the plain one, so "
        "fewer requests fit at once"
    )
    assert kv_capacity_note(ResourceDifference(kv_cache_tokens_lost=10000, kv_capacity_loss=0.10)) is None
    assert kv_capacity_note(ResourceDifference(kv_cache_tokens_lost=None, kv_capacity_loss=None)) is None


def test_entries_of_older_runs_subtract_their_failed_requests() -> None:
    # no client_window_failed field: the entry's measured errors stand in for it
    older = {"server_finished_requests": 8.0, "client_sent_requests": 10, "errors": 2}
    assert restart_evidence(_e(older)) == []
    assert restart_evidence(_e(older | {"errors": 1})) == ["server finished 8 requests, loadgen completed 9"]


# --- 7. counters per engine (data parallel) ------------------------------------------------------------


def held_entry(before: prom.Snapshot, after: prom.Snapshot, sent: int) -> dict[str, Any]:
    """The fields cellentry.py records, spec-decode deltas from the engines whose counters held."""
    counters = deltas.spec_decode_held(before, after)
    assert counters is not None
    return {
        "spec_decode": {
            **counters.__dict__,
            "accepted_per_position": list(counters.accepted_per_position),
            "engines": list(counters.engines),
            "reset_engines": list(counters.reset_engines),
        },
        "client_sent_requests": sent,
        "client_window_failed": 0,
        **server_counters(before, after).to_json(),
    }


def test_one_engine_reset_keeps_the_other_engines_acceptance() -> None:
    # spec_t1 -> spec_t2: engine 1 restarted (its drafts 80 -> 10, finished requests and tokens went down);
    # engine 0 held: +30 drafts, +90 draft tokens, +45 accepted, +(20, 15, 10)
    entry = held_entry(started(text("spec_t1"), 5.0), started(text("spec_t2_engine1_restarted"), 5.0), sent=3)
    assert (entry["server_engines"], entry["server_reset_engines"]) == (["0", "1"], ["1"])
    assert entry["server_generation_tokens"] == 100.0  # engine 0's 800 - 700; engine 1 left out
    assert restart_evidence(_e(entry)) == []  # the finished-requests comparison skips a partly reset server
    counters, why = usable_counters(_es([entry]))
    assert why is None and counters == SpecDecodeCounters(
        30.0, 90.0, 45.0, (20.0, 15.0, 10.0), False, ("0", "1"), ("1",)
    )
    assert counters.num_accepted_tokens / counters.num_draft_tokens == 0.5  # acceptance rate of engine 0
    assert token_mismatch(_e(entry | {"client_window_output_tokens": 130})) is None  # engine 1's tokens uncounted
    notes = cell_notes(
        _roles({"speculative": [entry]}), spec_of({"method": "draft_model", "num_speculative_tokens": 3})
    )
    assert notes == [
        "speculative: counters of engine 1 went backwards inside the cell (reset), left out: "
        "acceptance from engine 0 whose counters held"
    ]


def test_every_engine_reset_is_a_whole_restart() -> None:
    entry = {
        "server_engines": ["0", "1"],
        "server_reset_engines": ["0", "1"],
        "server_finished_requests": 9.0,
        "client_sent_requests": 4,
        "spec_decode": {
            "num_drafts": 7,
            "num_draft_tokens": 14,
            "num_accepted_tokens": 6,
            "accepted_per_position": [4, 2],
            "reset": True,
            "engines": ["0", "1"],
            "reset_engines": ["0", "1"],
        },
    }
    assert restart_evidence(_e(entry)) == [
        "spec-decode counters went backwards on every engine (0, 1)",
        "request and token counters went backwards on every engine (0, 1)",
    ]
    assert usable_counters(_es([entry])) == (
        None,
        "server restarted inside the cell: spec-decode counters went "
        "backwards on every engine (0, 1); request and token counters "
        "went backwards on every engine (0, 1)",
    )


def test_a_missing_request_counter_is_no_restart_evidence() -> None:
    # a /metrics without vllm:request_success_total: unavailable (None), not "the server finished 0"
    before, after = prom.parse_metrics(text("spec_t0")), prom.parse_metrics(text("spec_t1"))
    strip = "vllm:request_success"
    cut = [prom.Snapshot(tuple(x for x in s.samples if not x.name.startswith(strip)), s.types) for s in (before, after)]
    entry = held_entry(cut[0], cut[1], sent=10)
    assert entry["server_finished_requests"] is None and entry["server_generation_tokens"] == 500.0
    assert restart_evidence(_e(entry)) == []
    assert usable_counters(_es([entry]))[0] is not None


# --- 8. K as declared: adaptive verification -----------------------------------------------------------


SHORT = {
    "spec_decode": {
        "num_drafts": 100,
        "num_draft_tokens": 290,
        "num_accepted_tokens": 150,
        "accepted_per_position": [70, 50, 30],
        "reset": False,
    }
}


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"enable_adaptive_verification": True}, "enable_adaptive_verification = true"),
        (
            {"num_speculative_tokens_per_batch_size": [[1, 3], [8, 1]]},
            "num_speculative_tokens_per_batch_size sets K per batch size",
        ),
        ({"method": "suffix"}, "suffix proposes only the matches it finds"),
        ({"method": "custom_class"}, "custom_class: the proposer decides its draft lengths"),
    ],
)
def test_a_declared_adaptive_config_has_no_fixed_k(extra: dict[str, Any], why: str) -> None:
    config = {"method": "eagle3", "num_speculative_tokens": 3} | extra
    assert k_variable(spec_of(config)) == why
    # 290 < 3 x 100 is by design here: no inconsistency, the mean depth beside K
    assert cell_notes(_roles({"speculative": [SHORT]}), spec_of(config)) == [
        f"speculative: mean verified tokens per step 2.90 of K = 3 ({why}: fewer than K per step is by design)"
    ]
    # never more than K per draft, adaptive or not
    over = {"spec_decode": SHORT["spec_decode"] | {"num_draft_tokens": 310}}
    assert cell_notes(_roles({"speculative": [over]}), spec_of(config))[0] == (
        "speculative: spec-decode counters inconsistent: draft tokens 310 ≠ K × drafts = 3 × 100 = 300"
    )


def test_adaptive_verification_off_keeps_k_fixed() -> None:
    config = {"method": "eagle3", "num_speculative_tokens": 3, "enable_adaptive_verification": False}
    assert k_variable(spec_of(config)) is None
    assert cell_notes(_roles({"speculative": [SHORT]}), spec_of(config)) == [
        "speculative: spec-decode counters inconsistent: draft tokens 290 ≠ K × drafts = 3 × 100 = 300"
    ]


def test_mean_verified_tokens_per_step_beside_k() -> None:
    c = SpecDecodeCounters(100.0, 290.0, 150.0, (70.0, 50.0, 30.0), False)
    adaptive = {"method": "eagle3", "num_speculative_tokens": 3, "enable_adaptive_verification": True}
    assert verification_depth(c, spec_of(adaptive)).to_json() == {
        "k": 3,
        "k_fixed": False,
        "mean_verified_tokens_per_step": 2.9,
        "k_variable_reason": "enable_adaptive_verification = true",
    }
    assert depth_note("speculative", c, spec_of(adaptive)) == (
        "speculative: mean verified tokens per step 2.90 of K = 3 (enable_adaptive_verification = true: fewer "
        "than K per step is by design)"
    )
    fixed = {"method": "eagle3", "num_speculative_tokens": 3}
    assert (
        verification_depth(c, spec_of(fixed)).k_fixed is True and depth_note("speculative", c, spec_of(fixed)) is None
    )
    assert (
        verification_depth(
            SpecDecodeCounters(0.0, 0.0, 0.0, (0.0,) * 3, False), spec_of(adaptive)
        ).mean_verified_tokens_per_step
        is None
    )
