"""The measured causes a card cell names (measure/causes.py), on cells.jsonl lines of known values and the real
vLLM 0.24 startup logs of tests/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.measure.causes import schedule_note, warming_note
from loadgen.measure.stepcause import DRAFT_FLOOR, abnormal_step_note, draft_cost, expected_step_ratio
from loadgen.records.cardcell import Cost
from loadgen.records.cell import CellEntry
from loadgen.records.cellparts import GaugeSummary
from loadgen.records.runparts import ServerFiles
from loadgen.records.serverfacts import ServerFacts, ServerView, facts_line
from loadgen.records.speculative import SpeculativeConfig
from loadgen.serve.enginepath import parse_engine_path
from tests.support.cards import effective_file

DATA = Path(__file__).resolve().parents[1] / "data"


def _block(rep: int, drafts: float, tokens: float, accepted: float) -> CellEntry:
    sd = {
        "num_drafts": drafts,
        "num_draft_tokens": tokens,
        "num_accepted_tokens": accepted,
        "accepted_per_position": [],
    }
    return CellEntry.of(
        {"role": "speculative", "workload": "w", "concurrency": 8, "repetition": rep, "spec_decode": sd}
    )


def _server(log: str | None, facts: ServerFacts | None = None) -> ServerView:
    """The card's view of a server whose startup log read ``log`` (None: no log was read)."""
    path = parse_engine_path(log or "")
    eff = effective_file(
        speculative_config_log="SpeculativeConfig(...)" if log is not None else None,
        engine_path=path.to_json(),
        **({"server_facts": facts.to_json()} if facts else {}),
    )
    return ServerFiles(effective=eff).view()


def test_a_warming_proposer_shows_its_per_block_acceptance() -> None:
    lines = [_block(2, 100, 300, 141), _block(0, 100, 300, 24), _block(1, 100, 300, 69)]
    note = warming_note(lines, "suffix")
    assert note is not None and note.startswith(
        "speculative: acceptance rose block by block (0.08, 0.23, 0.47): the proposer was warming (suffix"
    )
    assert warming_note([_block(0, 1, 3, 2), _block(1, 1, 3, 1), _block(2, 1, 3, 2)], "suffix") is None
    assert warming_note(lines[:2], "suffix") is None  # two blocks are no trend


def test_a_falling_acceptance_is_shown_too() -> None:
    lines = [_block(0, 100, 300, 150), _block(1, 100, 300, 90), _block(2, 100, 300, 30)]
    note = warming_note(lines, "eagle3")
    assert note is not None and note.startswith("speculative: acceptance fell block by block (0.50, 0.30, 0.10): ")
    flat = [_block(0, 100, 300, 150), _block(1, 100, 300, 140), _block(2, 100, 300, 120)]
    assert warming_note(flat, "eagle3") is None  # 0.50 to 0.40: less than 1.5x


def test_a_k_schedule_under_data_parallelism_did_not_apply() -> None:
    spec = SpeculativeConfig(
        method="ngram", num_speculative_tokens=3, num_speculative_tokens_per_batch_size=[[1, 4, 3], [5, 64, 1]]
    )
    dp2 = ServerFacts.from_args(["--data-parallel-size", "2"])
    note = schedule_note(spec, dp2, [_block(0, 100, 300, 50)], 8)
    assert note is not None
    assert "did not apply: the server runs data-parallel size 2 (launch line)" in note
    assert "(the schedule gives K = 1 at concurrency 8); measured 3.00 draft tokens per verify step" in note
    assert schedule_note(spec, ServerFacts(), [_block(0, 100, 300, 50)], 8) is None


def test_an_abnormal_draft_model_step_quotes_the_v1_runner_fallback() -> None:
    """The H200 sweep: SmolLM2-135M at K = 4 cost about 16 plain steps; the server log says why."""
    spec = SpeculativeConfig(method="draft_model", num_speculative_tokens=4)
    servers = {
        "plain": _server((DATA / "vllm024_h200_plain_startup.log").read_text()),
        "speculative": _server((DATA / "vllm024_h200_draft_startup.log").read_text()),
    }
    note = abnormal_step_note(Cost(plain_step_s=0.002, spec_step_s=0.032), spec, servers, [])
    assert note is not None and note.startswith(
        "abnormal step: the speculative step costs 16.00 plain steps, more than 2x the 5.00 that method draft_model "
        "at K = 4 predicts"
    )
    assert (
        "\"Model Runner V2 does not yet support speculative method 'draft_model'; using the V1 model runner "
        'instead."' in note
    )
    assert '"Async scheduling not supported with draft_model-based speculative decoding' in note
    assert abnormal_step_note(Cost(plain_step_s=0.002, spec_step_s=0.019), spec, servers, []) is None  # 9.5 < 10


def test_a_small_draft_is_expected_to_cost_its_weight_share_so_a_6x_step_is_abnormal() -> None:
    """A 135M draft (270 MB in bf16) on a 7.2B-parameter target (14.4 GB): each draft step should cost about a
    fiftieth of a target step, floored at DRAFT_FLOOR (launch-bound): K = 4 predicts 1 + 4 x 0.1 = 1.4 plain
    steps, so a measured 6x is abnormal where the size-blind ceiling (1 + 4 x 1 = 5) called it normal."""
    spec = SpeculativeConfig(method="draft_model", num_speculative_tokens=4)
    quiet = {"plain": _server(""), "speculative": _server("")}
    cost = draft_cost(270_000_000, 14_400_000_000)
    assert cost == pytest.approx(0.01875)
    assert expected_step_ratio("draft_model", 4, cost) == pytest.approx(1 + 4 * DRAFT_FLOOR)
    assert expected_step_ratio("draft_model", 4, 0.5) == pytest.approx(3.0)  # a draft half the target's bytes
    assert expected_step_ratio("draft_model", 4, 2.0) == 5.0 and expected_step_ratio("draft_model", 4) == 5.0
    six = Cost(plain_step_s=0.005, spec_step_s=0.030)
    assert abnormal_step_note(six, spec, quiet, []) is None  # without sizes: 6 < 2 x 5
    note = abnormal_step_note(six, spec, quiet, [], cost) or ""
    assert note.startswith(
        "abnormal step: the speculative step costs 6.00 plain steps, more than 2x the 1.40 that method draft_model "
        "at K = 4 predicts (1 + K x draft cost, the draft 0.019 of the target's weight bytes)"
    )
    assert abnormal_step_note(Cost(plain_step_s=0.005, spec_step_s=0.013), spec, quiet, [], cost) is None  # 2.6
    assert draft_cost(None, 10) is None and draft_cost(10, 0) is None


def test_an_abnormal_step_without_an_explaining_line_says_none_was_found() -> None:
    spec = SpeculativeConfig(method="ngram", num_speculative_tokens=3)
    quiet = {"plain": _server(""), "speculative": _server("")}
    note = abnormal_step_note(Cost(plain_step_s=0.01, spec_step_s=0.03), spec, quiet, [])
    assert note is not None and note.endswith(
        "no line of the speculative server's startup log explains it (looked for: V1 model-runner fallback, async "
        "scheduling off, eager mode, CUDA-graph capture-size ceiling)"
    )
    eager = {"plain": _server(""), "speculative": _server("", ServerFacts.from_log("enforce_eager=True"))}
    assert "enforce_eager=True (startup log): every step runs eager" in (
        abnormal_step_note(Cost(plain_step_s=0.01, spec_step_s=0.03), spec, eager, []) or ""
    )
    unread = {"plain": _server(None), "speculative": _server(None)}
    assert "its startup log was not read" in (
        abnormal_step_note(Cost(plain_step_s=0.01, spec_step_s=0.03), spec, unread, []) or ""
    )
    assert expected_step_ratio("eagle3", 2) == 2.0 and expected_step_ratio("suffix", 8) == 1.0


def test_facts_from_a_startup_log_and_the_multiprocess_line() -> None:
    log = (
        "INFO 12-01 23:19:03 [utils.py:253] non-default args: {'model': 'm', 'max_num_seqs': 4, "
        "'api_server_count': 4}\n"
        "INFO 12-01 23:19:25 [core.py:93] Initializing a V1 LLM engine (v0.24.0) with config: model='m', "
        "tensor_parallel_size=2, data_parallel_size=1, enforce_eager=False"
    )
    facts = ServerFacts.from_args(["--max-num-seqs", "8"]).merged(ServerFacts.from_log(log))
    assert (facts.max_num_seqs, facts.tensor_parallel_size, facts.api_server_count) == (8, 2, 4)
    line = facts_line(facts) or ""
    assert line.startswith(
        "server configuration read: max-num-seqs 8 (launch line), data-parallel size 1 (startup log)"
    )
    assert "the restart and replica checks by process start time were unavailable" in line


def test_the_schedule_note_replaces_by_design_and_a_named_cause_replaces_the_generic_hint() -> None:
    from loadgen.measure.causes import GENERIC_HINT, cause_notes
    from loadgen.records.cardcell import Ratio
    from loadgen.records.protocol import ProtocolCell

    spec = SpeculativeConfig(
        method="ngram", num_speculative_tokens=3, num_speculative_tokens_per_batch_size=[[1, 4, 3], [5, 64, 1]]
    )
    by_design = (
        "speculative: mean verified tokens per step 3.00 of K = 3 (K schedule: fewer than K per step is by design)"
    )
    views = {
        "plain": ServerFiles(
            effective=effective_file(server_facts=ServerFacts.from_args(["--max-num-seqs", "4"]).to_json())
        ).view(),
        "speculative": ServerFiles(
            effective=effective_file(server_facts=ServerFacts.from_args(["-dp", "2"]).to_json())
        ).view(),
    }
    lines = {"plain": [], "speculative": [_block(0, 100, 300, 200)]}
    ratio = Ratio.from_json({"value": 1.4}, source="test")
    notes = cause_notes([by_design, GENERIC_HINT], views, lines, {"tpot_p50": ratio}, ProtocolCell("w", 8), spec)
    assert by_design not in notes and GENERIC_HINT not in notes  # the queueing above max-num-seqs is the cause
    assert notes[0].startswith("plain: concurrency 8 is above its max-num-seqs 4 (launch line)")
    assert notes[1].startswith("speculative: the K schedule (num_speculative_tokens_per_batch_size) did not apply")
    unexplained = cause_notes([GENERIC_HINT], {}, {}, {"tpot_p50": ratio}, ProtocolCell("w", 2), spec)
    assert unexplained == [GENERIC_HINT]


def test_facts_of_a_real_vllm_032_startup_log() -> None:
    """The non-default-args line and the engine's config line as vLLM 0.32.0 (CPU build) printed them."""
    facts = ServerFacts.from_log((DATA / "vllm032_cpu_startup_lines.log").read_text())
    assert (facts.tensor_parallel_size, facts.data_parallel_size, facts.enforce_eager) == (1, 1, True)
    assert facts.stream_interval is None and facts.source["enforce_eager"] == "startup log"


def test_multiprocess_metrics_say_the_process_start_check_was_unavailable() -> None:
    from loadgen.measure.causes import multiprocess_notes

    gauges = {"vllm:num_requests_running": GaugeSummary(1.0, 1.0, 1.0)}
    mp = CellEntry(role="plain", workload="w", concurrency=1, gauges=gauges, process_start_time_s=[None, None])
    single = CellEntry(
        role="speculative", workload="w", concurrency=1, gauges=gauges, process_start_time_s=[1.0e9, 1.0e9]
    )
    no_metrics = CellEntry(role="placebo", workload="w", concurrency=1, metrics_error="HTTP 404")
    notes = multiprocess_notes({"plain": [mp], "speculative": [single], "placebo": [no_metrics]})
    assert notes == [
        "plain: /metrics has no process_start_time_seconds (Prometheus multiprocess mode, as with "
        "--api-server-count above 1): unavailable were the restart check and the replica check by process start "
        "time; counter resets still count as restart evidence, and replicas are still told by counters that go "
        "back and forth and by the answers' system_fingerprint"
    ]
