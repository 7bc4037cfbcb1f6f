"""Ground truth on real vLLM (CPU): the target as its own draft at temperature 0 accepts every draft token."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loadgen.store.files import load_records

K = 3


def test_compare_completes_and_the_verdict_fails_its_declared_criteria(selfdraft_run: dict[str, Any]) -> None:
    proc = selfdraft_run["proc"]
    # the pair declares a 100x speedup that no run can reach: the run completes and exits 3
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert f"card: {selfdraft_run['run_dir'] / 'card.md'}" in proc.stdout
    assert "verdict: FAIL" in proc.stdout
    # a finished run is no crash: it ends with the verdict, the card's path and the exit-3 line, no error line
    assert proc.stdout.strip().splitlines()[-1] == (
        "exit 3: the run finished and its verdict failed the criteria declared in the pair file"
    )
    assert "loadgen: error" not in proc.stderr
    card = selfdraft_run["card"]
    assert card["complete"] is True and card["failure"] is None
    verdict = card["verdict"]
    assert verdict["passed"] is False and verdict["criteria"]["min_speedup"] == 100.0
    # each cell fails (slower, or short of 100x), is not distinguishable (inside the floor, below the bar) or
    # inconclusive (measure/decision.py); none passes
    words = (": fail: ", ": inconclusive: ", ": not distinguishable: ")
    assert all("tpot_p50" in line and any(w in line for w in words) for line in verdict["lines"])
    assert any(": fail: " in line for line in verdict["lines"]) and verdict["status"] == "fail"
    assert [(c["workload"], c["level"]) for c in card["cells"]] == [
        ("short-homogeneous", "c1"),
        ("short-homogeneous", "c3"),
        ("long-diverse", "c1"),
        ("long-diverse", "c3"),
    ]


def test_selfdraft_is_lossless_and_its_cost_is_decomposed(selfdraft_run: dict[str, Any]) -> None:
    for cell in selfdraft_run["card"]["cells"]:
        # greedy, fp32 on CPU: the speculative server generates exactly the plain server's tokens
        assert cell["lossless"]["pairs"] == 6 and cell["lossless"]["identical"] == 6  # 3 prompts x 2 blocks
        assert cell["lossless"]["match_rate"] == 1.0
        cost = cell["cost"]
        assert cost["acceptance_length"] == K + 1
        assert cost["step_time_ratio"] == cost["spec_step_s"] / cost["plain_step_s"]
        assert cost["predicted_speedup"] == (K + 1) / cost["step_time_ratio"]
        assert cost["agrees"] or cost["why"]
    card_md = (selfdraft_run["run_dir"] / "card.md").read_text()
    assert card_md.count("lossless check (greedy): 6/6 requests identical (100%)") == 4


def test_selfdraft_acceptance_is_exactly_one(selfdraft_run: dict[str, Any]) -> None:
    for cell in selfdraft_run["card"]["cells"]:
        # on the client: K + 1 tokens a decode chunk, 1 on the plain server, unless the engine merged steps
        # that the client had not read yet (test_every_request_has_its_exact_length_and_multi_token_chunks)
        assert K + 1 <= cell["speculative"]["mean_tokens_per_decode_chunk"] <= 1.1 * (K + 1)
        assert 1 <= cell["plain"]["mean_tokens_per_decode_chunk"] <= 1.1
        acc = cell["speculative"]["acceptance"]
        assert acc["num_drafts"] > 0
        assert acc["num_draft_tokens"] == K * acc["num_drafts"]
        assert acc["acceptance_rate"] == 1.0
        assert acc["mean_acceptance_length"] == K + 1
        assert acc["per_position"] == [1.0] * K
        assert cell["plain"]["acceptance"] is None


def test_plain_server_has_no_spec_decode_series(selfdraft_run: dict[str, Any]) -> None:
    run_dir: Path = selfdraft_run["run_dir"]
    plain = json.loads((run_dir / "servers" / "plain-effective.json").read_text())
    spec = json.loads((run_dir / "servers" / "speculative-effective.json").read_text())
    assert plain["spec_decode_metrics"] is False and plain["spec_positions"] == 0
    assert plain["speculative_config_log"] == "None"
    assert spec["spec_decode_metrics"] is True and spec["spec_positions"] == K
    assert "method='draft_model'" in spec["speculative_config_log"]
    assert plain["version"] == spec["version"] == "0.32.0"
    for snap in (run_dir / "metrics").glob("plain__*.prom"):
        assert "vllm:spec_decode" not in snap.read_text()


def _merged_steps_only(chunks: list[int], steps: list[int]) -> bool:
    """Whether a stream's chunks are the engine's steps, some of them merged: vLLM's output collector
    (vllm/v1/engine/output_processor.py, RequestOutputCollector) merges the deltas that the client has not
    read yet into one SSE chunk, so each chunk boundary must be a step boundary, and the tokens add up."""
    bounds = {sum(steps[: i + 1]) for i in range(len(steps))}
    return sum(chunks) == sum(steps) and all(sum(chunks[: i + 1]) in bounds for i in range(len(chunks)))


def test_every_request_has_its_exact_length_and_multi_token_chunks(selfdraft_run: dict[str, Any]) -> None:
    records = [r for r in load_records(selfdraft_run["run_dir"]) if not r.warmup]
    assert len(records) == 3 * 2 * (3 + 3 + 3 + 3)  # plain, placebo, speculative; 2 blocks; 4 cells
    assert {r.role for r in records} == {"plain", "placebo", "speculative"}
    # the prefill step emits 1 token; a plain decode step emits 1; a verify step emits its K accepted tokens
    # plus the bonus token (every draft token is accepted: the target is its own draft at temperature 0)
    steps = {"plain": [1] * 33, "placebo": [1] * 33, "speculative": [1] + [K + 1] * 8}
    exact = {"plain": 0, "placebo": 0, "speculative": 0}
    for r in records:
        assert r.error is None
        assert r.output_tokens == r.requested_output_tokens == r.usage_completion_tokens == 33
        assert len(r.token_ids) == r.output_tokens
        assert _merged_steps_only(r.chunk_tokens, steps[r.role]), (r.role, r.chunk_tokens)
        exact[r.role] += r.chunk_tokens == steps[r.role]
        if r.workload == "short-homogeneous":
            assert r.usage_prompt_tokens == 16  # exact input length, measured with the target's tokenizer
    # merging needs a client slower than a step: rare on an idle machine, but not impossible on a busy one
    assert all(n >= 0.75 * 24 for n in exact.values()), exact
    chat_prompt_tokens = {r.usage_prompt_tokens for r in records if r.workload == "long-diverse"}
    assert len(chat_prompt_tokens) == 1  # 32-token user messages inside the same chat template


def test_merged_chunks_are_told_from_steps_that_never_were() -> None:
    assert _merged_steps_only([1, 4, 8, 4, 4, 4, 4, 4], [1] + [4] * 8)  # two verify steps in one chunk
    assert _merged_steps_only([5] + [4] * 7, [1] + [4] * 8)  # the prefill token with the first verify step
    assert not _merged_steps_only([1, 3, 5] + [4] * 6, [1] + [4] * 8)  # a boundary inside a verify step
    assert not _merged_steps_only([1] + [4] * 7, [1] + [4] * 8)  # a token short


def test_identical_prompts_and_files_on_both_sides(selfdraft_run: dict[str, Any]) -> None:
    run_dir: Path = selfdraft_run["run_dir"]
    records = [r for r in load_records(run_dir) if not r.warmup]
    plain = sorted(r.prompt_id for r in records if r.role == "plain")
    spec = sorted(r.prompt_id for r in records if r.role == "speculative")
    assert plain == spec
    for name in (
        "card.md",
        "card.json",
        "protocol.json",
        "prompts.jsonl",
        "requests.jsonl",
        "cells.jsonl",
        "servers/plain.log",
        "servers/speculative.log",
        "servers/plain-minimal.json",
        "servers/speculative-launch.json",
    ):
        assert (run_dir / name).is_file(), name
    minimal = json.loads((run_dir / "servers" / "plain-minimal.json").read_text())
    assert minimal["response"]["choices"][0]["text"]
    card_md = (run_dir / "card.md").read_text()
    assert "Conclusions hold for the workloads tested only" in card_md
    assert "| TPOT (ms/token) |" in card_md
