"""A cell's ``cells.jsonl`` entry from its two ``/metrics`` scrapes (pure): a missing request counter is
unavailable evidence, not "the server finished 0 requests"; one engine's reset is left out and named;
K and the mean verified tokens per step beside it."""

from __future__ import annotations

import dataclasses

from loadgen.measure.counterchecks import WindowTally
from loadgen.measure.metrics import ClientUse
from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level, Pair
from loadgen.profile.pairfile import load_pair
from loadgen.profile.workload import Prompt
from loadgen.prom.exposition import Snapshot, parse_metrics
from loadgen.records.request import RequestRecord
from loadgen.run.cellentry import CellRun, cell_entry


def scrape(engines: dict[str, tuple[int, int, int, int, int]], finished: bool = True) -> Snapshot:
    """K = 2 spec-decode counters per engine: (drafts, draft tokens, accepted, accepted at position 1,
    finished requests); position 0 holds accepted - position 1."""
    lines = ["# TYPE process_start_time_seconds gauge", "process_start_time_seconds 100"]
    for e, (drafts, tokens, accepted, pos1, done) in engines.items():
        lab = f'engine="{e}",model_name="t"'
        lines += [
            f"vllm:spec_decode_num_drafts_total{{{lab}}} {drafts}",
            f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {tokens}",
            f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {accepted}",
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="0"}} {accepted - pos1}',
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="1"}} {pos1}',
        ]
        if finished:
            lines.append(f'vllm:request_success_total{{{lab},finished_reason="length"}} {done}')
    return parse_metrics("\n".join(lines) + "\n")


def run_of(before: Snapshot, after: Snapshot, requests: int = 4) -> CellRun:
    prompts = tuple(Prompt(f"p{i}", "w", "completions", "x", None, 2) for i in range(requests))
    records = [
        RequestRecord(
            p.prompt_id,
            "speculative",
            "w",
            2,
            "measured",
            0.0,
            send_s=0.0,
            chunk_arrivals_s=[0.1],
            chunk_tokens=[2],
            requested_output_tokens=2,
        )
        for p in prompts
    ]
    window = WindowTally()
    for r in records:
        window.add(r)
    cell = CellSpec("w", "completions", Level(2), 0, (), prompts, (), None)
    return CellRun(
        "speculative",
        cell,
        records,
        "2026-01-01T00:00:00+00:00",
        1.0,
        before,
        after,
        {},
        (),
        requests,
        window,
        ClientUse.of(0.1, 1.0, []),
        False,
    )


def pair_with(**speculative: object) -> Pair:
    base = load_pair("demo-cpu")  # draft_model, num_speculative_tokens = 2
    return dataclasses.replace(base, speculative=base.speculative.with_fields(**speculative))


def test_a_missing_request_counter_keeps_the_acceptance() -> None:
    # no vllm:request_success_total in either scrape: 4 completed requests, no restart
    before, after = scrape({"0": (10, 20, 8, 3, 0)}, False), scrape({"0": (30, 60, 28, 11, 0)}, False)
    entry = cell_entry(run_of(before, after), pair_with())
    assert entry.server_finished_requests is None  # was 0.0: "server finished 0 requests, loadgen completed 4"
    assert entry.restart_evidence == [] and entry.foreign_traffic is False
    sd = entry.spec_decode
    assert sd is not None and (sd.num_drafts, sd.num_draft_tokens, sd.num_accepted_tokens) == (20, 40, 20)


def test_one_engine_reset_is_left_out_and_named() -> None:
    # engine 0 grows by 20 drafts, 40 draft tokens, 20 accepted (12 + 8), 4 requests; engine 1 went back
    before = scrape({"0": (10, 20, 8, 3, 5), "1": (50, 100, 40, 15, 9)})
    after = scrape({"0": (30, 60, 28, 11, 9), "1": (4, 8, 3, 1, 1)})
    entry = cell_entry(run_of(before, after), pair_with())
    sd = entry.spec_decode
    assert sd is not None
    assert (sd.num_drafts, sd.num_draft_tokens, sd.num_accepted_tokens) == (20.0, 40.0, 20.0)
    assert sd.accepted_per_position == (12.0, 8.0) and sd.reset is False
    assert (sd.engines, sd.reset_engines) == (("0", "1"), ("1",))
    assert entry.server_finished_requests == 4.0 and entry.server_reset_engines == ["1"]
    assert entry.restart_evidence == []


def test_k_and_the_mean_verified_tokens_per_step() -> None:
    # 20 drafts, 30 draft tokens: 1.5 verified tokens per step of K = 2
    before, after = scrape({"0": (10, 20, 8, 3, 0)}), scrape({"0": (30, 50, 20, 5, 4)})
    fixed = cell_entry(run_of(before, after), pair_with()).spec_decode
    assert fixed is not None
    assert (fixed.k, fixed.k_fixed, fixed.mean_verified_tokens_per_step) == (2, True, 1.5)
    adaptive = cell_entry(run_of(before, after), pair_with(enable_adaptive_verification=True)).spec_decode
    assert adaptive is not None
    assert (adaptive.k_fixed, adaptive.k_variable_reason) == (False, "enable_adaptive_verification = true")
