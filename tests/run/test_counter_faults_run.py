"""A server whose /metrics counters read NaN, +Inf, a negative number, or go backwards without a restart costs
the run nothing but the acceptance (black box: ``loadgen compare`` in a subprocess against attached scripted
engines exposing vLLM's counters, the speculative one's spoiled from its 3rd scrape on). The user sees each
block's line name the faulty counter, the run end with exit 0 and a complete card holding every finished
request, the acceptance "not measurable" with the reason, and ``loadgen report`` re-render it (exit 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.faultrun import engines, loadgen, run_dir, write_pair
from tests.support.promstack import free_port_block

pytestmark = pytest.mark.slow

FAULTS = {
    "nan@3": "vllm:spec_decode_num_drafts_total (engine 0), vllm:spec_decode_num_draft_tokens_total (engine 0)",
    "inf:accepted@3": "vllm:spec_decode_num_accepted_tokens_total (engine 0)",
    "negative@3": "vllm:spec_decode_num_drafts_total (engine 0)",
    # from the first gauge sample of block 0 on (scrapes 1-5 are the attach check, the start-up proof and its three
    # scrapes for replicas, 6 block 0's before): block 0's after scrape reads half its before one
    "halve@7": "spec-decode counters went backwards while process_start_time_seconds held",
}


@pytest.mark.parametrize("fault", FAULTS)
def test_garbage_counters_refuse_the_acceptance_and_keep_the_card(tmp_path: Path, fault: str) -> None:
    port = free_port_block(4)
    ports = {"plain": port + 2, "speculative": port + 3}
    metrics = {"SCRIPTED_ENGINE_METRICS": "1"}
    faulty = {"plain": metrics, "speculative": metrics | {"SCRIPTED_ENGINE_FAULT": fault}}
    with engines(tmp_path, ports, faulty) as urls:
        pair = write_pair(tmp_path, port, "blocks")
        args = ["compare", str(pair), "--allow-unpinned", "--no-progress", "--runs-dir", str(tmp_path / "runs")]
        ran = loadgen(tmp_path, [*args, "--attach-plain", urls["plain"], "--attach-speculative", urls["speculative"]])
    assert ran.code == 0, ran.output
    assert "Traceback" not in ran.output
    flagged = [line for line in ran.output.splitlines() if "server counters cannot be trusted" in line]
    assert flagged and all(line.startswith("[speculative] w c1 block ") for line in flagged), ran.output
    run = run_dir(tmp_path)
    card = json.loads((run / "card.json").read_text())
    assert card["complete"] is True
    assert card["requests_on_disk"]["measured"] == 2 * 3 * 2  # 2 blocks x (plain, placebo, speculative) x 2
    (cell,) = card["cells"]
    assert cell["plain"]["requests"] == cell["speculative"]["requests"] == 4
    assert cell["speculative"]["acceptance"] is None
    why = cell["speculative"]["acceptance_unmeasurable"]
    assert why.startswith("the server's counters cannot be trusted: ") and FAULTS[fault] in why, why
    assert cell["plain"]["acceptance_unmeasurable"] is None
    again = loadgen(tmp_path, ["report", str(run)])
    assert again.code == 0 and "Traceback" not in again.output, again.output
