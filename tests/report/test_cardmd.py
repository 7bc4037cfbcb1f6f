"""cardmd.render_markdown (report/cardmd.py) on small hand-written card dicts: the exact header, table rows,
ratio with its CI, "–" and "n/a" cases, notes, verdict, capacity and crossover lines."""

from __future__ import annotations

import copy
from typing import Any

from tests.support.cards import effective, launch, markdown, usage


def _dist(
    p50: float | None, p90: float | None = None, p99: float | None = None, p95: float | None = None
) -> dict[str, Any]:
    return {"count": 4, "mean": p50, "p50": p50, "p90": p90, "p95": p95, "p99": p99}


def _side(tpot: float, **extra: Any) -> dict[str, Any]:
    return {
        "ttft_s": _dist(0.25, 0.37, 0.397, 0.381),
        "tpot_s": _dist(tpot, tpot, tpot, tpot),
        "itl_s": _dist(tpot),
        "icl_s": _dist(None),
        "e2e_s": _dist(1.5, 2.0, 2.25, 2.125),
        "output_throughput_tps": 100.0,
        "peak_output_throughput_tps": 120.0,
        "request_throughput_rps": 2.5,
        "errors": 0,
        "mean_tokens_per_chunk": 2.5,
        "mean_tokens_per_decode_chunk": 2.75,
        "acceptance": None,
    } | extra


ACC = {
    "acceptance_rate": 0.5,
    "mean_acceptance_length": 2.5,
    "per_position": [0.7, 0.5, 0.3],
    "num_accepted_tokens": 150.0,
    "num_draft_tokens": 300.0,
    "num_drafts": 100.0,
}


FILES = {"config.json": "c0"}


def _place(attached: bool, url: str | None = None, devices: str | None = None, share: str | None = None) -> Any:
    """A server's placement on the card (records/server.py ``Placement``), tensor parallel size 1."""
    keys = ("attached", "base_url", "cuda_visible_devices", "tensor_parallel_size", "gpu_memory_utilization")
    return dict(zip(keys, (attached, url, devices, 1, share), strict=True))


def card(**over: Any) -> dict[str, Any]:
    """A one-cell card (workload ``w`` at concurrency 2) with ``over`` replacing top-level keys."""
    base: dict[str, Any] = {
        "schema": "loadgen.card/1",
        "pair": "t",
        "generated_utc": "2026-01-01T00:00:00+00:00",
        "complete": True,
        "target": {"model": "org/target", "revision": None, "local": True, "content_sha256": "aa", "files": FILES},
        "draft": {"model": "org/draft", "revision": "r1", "local": False},
        "speculative_config": {"num_speculative_tokens": 3, "method": "draft_model"},
        "engine_version": {"plain": "0.11.0", "speculative": "0.11.0"},
        "sampling": {"temperature": 0},
        "concurrency": [2],
        "stop_rule": {"min_requests": 4},
        "prompts_sha256": "ff",
        "hardware": {
            "cpu_model": "X",
            "cpu_cores": 8,
            "memory_bytes": 2 * 2**30,
            "gpus": [{"index": 0, "name": "H", "memory_bytes": 2**30}],
        },
        "workloads_statement": "Conclusions hold for the workloads tested only: w.",
        "servers": {
            "plain": {
                "launch": launch(argv=["vllm", "serve", "t"], attached=False),
                "effective": effective(ready_s=12.4),
            },
            "speculative": {"launch": None, "effective": None},
        },
        "placement": {"plain": _place(False, None, "0", "0.4"), "speculative": _place(True, "http://127.0.0.1:8001")},
        "cells": [
            {
                "workload": "w",
                "level": "c2",
                "concurrency": 2,
                "rate_rps": None,
                "plain": _side(0.02, finish_reasons={"length": 4}),
                "speculative": _side(0.01, acceptance=ACC, goodput_rps=1.25),
                "ratios": {
                    "tpot_p50": {"value": 0.5, "ci_low": 0.45, "ci_high": 0.55},
                    "ttft_p50": {"value": 1.0, "ci_low": None, "ci_high": None},
                    "e2e_p50": {"value": None},
                    "itl_p50": {"value": None, "unavailable": "bursts"},
                    "output_throughput": {"value": 1.25},
                },
                "notes": ["a note naming 3 numbers"],
            }
        ],
        "crossover": {
            "w": {"metric": "tpot_p50", "levels": [1, 2], "ratios": [0.5, None], "crossover_concurrency": None}
        },
        "verdict": None,
        "capacity": {},
        "resources": {},
    }
    return base | over


def lines(c: dict[str, Any]) -> list[str]:
    return markdown(c).splitlines()


def test_the_header_names_pair_status_schema_and_what_was_compared() -> None:
    out = lines(card())
    assert out[:3] == [
        "# Pair card: t",
        "",
        "Status: **complete** · generated 2026-01-01T00:00:00+00:00 · schema `loadgen.card/1`",
    ]
    assert "- **target**: `org/target` (content sha256 `aa`)" in out
    assert "- **draft**: `org/draft` (content sha256 `r1`)" in out
    assert '- **speculative config**: `{"method": "draft_model", "num_speculative_tokens": 3}`' in out
    assert "- **engine version**: plain 0.11.0, speculative 0.11.0" in out
    assert "- **hardware**: X, 8 cores, 2.00 GiB memory; H (1.00 GiB)" in out
    assert "> Conclusions hold for the workloads tested only: w." in out


def test_an_incomplete_card_says_why_and_a_missing_draft_reads_none() -> None:
    out = lines(card(complete=False, failure="cell w c2 failed", draft=None))
    assert "Status: **INCOMPLETE: cell w c2 failed**" in out[2]
    assert "- **draft**: none" in out
    assert "Status: **INCOMPLETE: run did not finish**" in lines(card(complete=False))[2]


def test_servers_show_placement_launch_and_readiness() -> None:
    out = lines(card())
    assert (
        "- placement: launched by loadgen; CUDA_VISIBLE_DEVICES=0, tensor parallel size 1, memory fraction 0.4" in out
    )
    assert "- launch: `vllm serve t`" in out and "- launch: `not launched`" in out
    assert "- KV-cache capacity (startup log): – tokens; ready after 12 s" in out
    assert "- placement: attached to http://127.0.0.1:8001" in out
    # the servers' subsections follow their own heading, in the provenance after "What was compared"
    headings = [line for line in out if line.startswith("## ") or line.startswith("### ")]
    servers = headings.index("## Servers")
    assert headings[servers - 1] == "## What was compared" and headings[servers + 1].startswith("### ")


def test_the_cell_table_scales_units_and_shows_the_ratio_with_its_ci() -> None:
    out = lines(card())
    assert "### w · concurrency 2" in out
    assert (
        "| metric | plain p50 | plain p90 | plain p95 | plain p99 | spec p50 | spec p90 | spec p95 | spec p99 "
        "| spec/plain p50 [95% CI] |"
    ) in out
    assert "| TTFT (ms) | 250.00 | 370.00 | 381.00 | 397.00 | 250.00 | 370.00 | 381.00 | 397.00 | 1.000 |" in out
    assert (
        "| TPOT (ms/token) | 20.00 | 20.00 | 20.00 | 20.00 | 10.00 | 10.00 | 10.00 | 10.00 | 0.500 [0.450, 0.550] |"
        in out
    )
    assert "| ITL (ms/token) | 20.00 | – | – | – | 10.00 | – | – | – | n/a (bursts) |" in out
    assert "| inter-chunk latency (ms) | – | – | – | – | – | – | – | – | – |" in out
    assert "| E2E latency (s) | 1.50 | 2.00 | 2.12 | 2.25 | 1.50 | 2.00 | 2.12 | 2.25 | – |" in out  # seconds
    assert "| output throughput (tokens/s) | 100.00 | | | | 100.00 | | | | 1.250 |" in out
    assert "| request throughput (req/s) | 2.50 | | | | 2.50 | | | | – |" in out


def test_notes_goodput_and_finish_reasons_follow_the_table() -> None:
    out = lines(card())
    assert "- a note naming 3 numbers" in out
    assert "- goodput (requests meeting every SLO): speculative 1.25 req/s" in out
    assert "- finish reasons: plain length 4" in out


def test_the_acceptance_row_and_an_unmeasurable_one() -> None:
    out = lines(card())
    assert ("| w | concurrency 2 | 0.500 | 2.500 | 0.700, 0.500, 0.300 | 150 / 300 | 100 | 2.500 | 2.750 |") in out
    c = card()
    c["cells"][0]["speculative"] |= {"acceptance": None, "acceptance_unmeasurable": "counters reset"}
    assert "| w | concurrency 2 | not measurable: counters reset | | | | | | |" in lines(c)


def test_an_open_loop_cell_reads_its_rate_and_cap() -> None:
    c = card()
    c["cells"][0]["rate_rps"] = 2.5
    assert "### w · 2.5 req/s (cap 2)" in lines(c)


def test_a_cell_with_no_server_is_not_measured_and_a_failed_side_is_shown() -> None:
    c = card()
    failed = copy.deepcopy(c["cells"][0])
    failed["plain"]["failure"] = "server died"
    c["cells"] = [{"workload": "w", "level": "c1", "concurrency": 1, "rate_rps": None}, failed]
    out = lines(c)
    i = out.index("### w · concurrency 1")
    assert out[i + 2] == "Not measured."
    assert "- **plain cell FAILED**: server died" in out


def test_the_crossover_line_with_and_without_a_crossing() -> None:
    assert "- w: c=1: 0.500, c=2: –; crossover: none within the tested levels" in lines(card())
    c = card(
        crossover={"w": {"metric": "tpot_p50", "levels": [1, 2], "ratios": [0.5, 1.5], "crossover_concurrency": 1.5}}
    )
    assert (
        "- w: c=1: 0.500, c=2: 1.500; crossover: concurrency ≈ 1.5 (interpolated; the CIs do not bracket it)"
        in lines(c)
    )
    # with the ratios' CIs: the crossover is the range between the last faster and the first slower level
    c = card(
        crossover={
            "w": {
                "metric": "tpot_p50",
                "levels": [1, 4, 16],
                "ratios": [0.5, 0.98, 1.5],
                "crossover_concurrency": 4.1,
                "ratio_cis": [[0.45, 0.55], [0.9, 1.05], [1.4, 1.6]],
                "crossover_range": [1, 16],
            }
        }
    )
    assert (
        "- w: c=1: 0.500 [0.450, 0.550], c=4: 0.980 [0.900, 1.050], c=16: 1.500 [1.400, 1.600]; crossover: "
        "between concurrency 1 and 16 (interpolated ≈ 4.1)"
    ) in lines(c)


def test_an_undeclared_verdict_says_how_to_judge() -> None:
    out = lines(card(verdict={"declared": False, "summary": "no criteria declared: not judged"}))
    assert "**no criteria declared: not judged** (add a [criteria] table to the pair file to judge)" in out
    assert "## Verdict" in out


def test_a_declared_verdict_lists_declared_keys_defaults_and_lines() -> None:
    verdict = {
        "declared": True,
        "passed": False,
        "summary": "FAIL: 1 failed check(s)",
        "criteria": {"primary": ["tpot_p50"], "min_speedup": 1.0, "max_regression": {}},
        "declared_keys": ["primary"],
        "lines": ["w c=2: fail: because"],
        "resources": [
            {
                "name": "kv_capacity_loss",
                "kind": "resource",
                "status": "pass",
                "judged": 0.05,
                "threshold": 0.2,
                "reason": "0.05 <= 0.2",
            }
        ],
    }
    out = lines(card(verdict=verdict))
    i = out.index("## Verdict against the criteria declared before the run")
    assert out[i + 2] == "**FAIL: 1 failed check(s)**"
    assert out[i + 4] == 'Declared: primary = ["tpot_p50"]; defaults: min_speedup = 1.0'
    assert out[i + 6 : i + 8] == ["- w c=2: fail: because", "- resource kv_capacity_loss: pass: 0.05 <= 0.2"]


def test_capacity_rows_name_the_slo_and_that_no_tested_level_held() -> None:
    cap = {
        "w": {
            "plain": {"capacity_concurrency": 2, "goodput_rps": 1.5},
            "speculative": {"capacity_concurrency": None, "goodput_rps": None},
        }
    }
    slo = {"percentile": 99.0, "ttft_s": 0.5, "tpot_s": None, "e2e_s": 2.0}
    out = lines(card(capacity=cap, slo=slo, concurrency=[1, 2]))
    assert "SLOs judged at p99: ttft ≤ 0.5 s, e2e ≤ 2 s." in out
    # both levels were tested and neither held for the speculative server: said so, not "none tested"
    assert "| w | plain | 2 | 1.50 |" in out and "| w | speculative | none: no tested level (1, 2) held | – |" in out


def test_resource_rows_in_gib_with_the_kv_loss_percentage() -> None:
    res = {
        "plain": usage(4 * 2**30, kv_cache_tokens=1000),
        "speculative": usage(5 * 2**30, kv_cache_tokens=800),
        "difference": {"extra_gpu_memory_bytes": 2**30, "kv_cache_tokens_lost": 200, "kv_capacity_loss": 0.2},
        "notes": ["KV note"],
    }
    out = lines(card(resources=res))
    assert "| GPU memory (NVML, process tree) | 4.00 GiB | 5.00 GiB | 1.00 GiB |" in out
    assert "| CPU RSS (process tree) | – | – | – |" in out
    assert "| KV-cache capacity (tokens, cache_config_info) | 1000 | 800 | 200 lost (20.0 %) |" in out
    assert "- KV note" in out


def test_a_cpu_card_has_no_gpu_row_nor_gpu_placement() -> None:
    # no GPU visible: the GPU memory row and CUDA_VISIBLE_DEVICES / memory fraction would only read "-" and None
    res = {"plain": usage(cpu_rss_bytes=2**30, kv_cache_tokens=1000), "speculative": usage(cpu_rss_bytes=2 * 2**30)}
    cpu = {"cpu_model": "X", "cpu_cores": 2, "memory_bytes": 2**33, "gpus": []}
    place = {"plain": _place(False)}
    out = lines(card(resources=res, hardware=cpu, placement=place))
    assert not [line for line in out if line.startswith("| GPU memory")]
    assert "| CPU RSS (process tree) | 1.00 GiB | 2.00 GiB | – |" in out
    assert "- placement: launched by loadgen on the CPU (no GPU visible)" in out
    assert not [line for line in out if "memory fraction" in line or "CUDA_VISIBLE_DEVICES" in line]


def test_files_table_lists_pinned_files() -> None:
    assert lines(card())[-5:] == [
        "## Files",
        "",
        "| model | file | sha256 |",
        "|---|---|---|",
        "| target | config.json | `c0` |",
    ]
    assert markdown(card()).endswith("| target | config.json | `c0` |\n")


def test_lossless_and_cost_decomposition_lines() -> None:
    c = card()
    c["cells"][0] |= {
        "lossless": {"identical": 3, "pairs": 4, "match_rate": 0.75, "first_difference": [2]},
        "cost": {
            "predicted_speedup": 1.25,
            "agrees": True,
            "step_source": "server",
            "plain_step_s": 0.02,
            "spec_step_s": 0.04,
            "step_time_ratio": 2.0,
            "acceptance_length": 2.5,
            "measured_tpot_speedup": 2.0,
        },
    }
    out = lines(c)
    assert "- lossless check (greedy): 3/4 requests identical (75%)" in out
    assert (
        "- cost decomposition: step time (server `vllm:inter_token_latency_seconds` mean) plain 20.00 ms, "
        "speculative 40.00 ms (ratio 2.00: drafting + verification); mean acceptance length 2.50 predicts a "
        "speedup of 1.25x; measured TPOT speedup 2.00x (agree within 15%)"
    ) in out
    c["cells"][0]["cost"] = {"unavailable": "no acceptance"}
    assert "- cost decomposition: not given: no acceptance" in lines(c)


def test_server_histogram_rows_say_whether_they_agree() -> None:
    c = card()
    c["cells"][0]["plain"]["server_vs_client"] = {
        "ttft_s": {"agrees": True, "client_p50": 0.25, "server_p50": 0.3, "metric": "vllm:time_to_first_token_seconds"}
    }
    assert (
        "- plain TTFT: client p50 250.00 ms, server `vllm:time_to_first_token_seconds` p50 300.00 ms (agree "
        "within the histogram's bucket resolution)"
    ) in lines(c)


def test_plots_are_linked() -> None:
    out = lines(card(plots=["plots/tpot.png"]))
    assert out[out.index("## Plots") + 2] == "![plots/tpot.png](plots/tpot.png)"
