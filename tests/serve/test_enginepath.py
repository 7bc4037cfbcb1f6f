"""The engine path from a startup log (enginepath.py): excerpts of real vLLM 0.24.0 logs (one NVIDIA H200,
tests/data/vllm024_h200_*_startup.log, lines verbatim) and vLLM 0.32's wordings."""

from __future__ import annotations

from pathlib import Path

from loadgen.serve.enginepath import EnginePath, engine_path_line, parse_engine_path

DATA = Path(__file__).resolve().parents[1] / "data"
DRAFT_ASYNC = "Async scheduling not supported with draft_model-based speculative decoding and will be disabled."
DRAFT_RUNNER = (
    "Model Runner V2 does not yet support speculative method 'draft_model'; using the V1 model runner instead."
)


def _log(name: str) -> str:
    return (DATA / f"vllm024_h200_{name}_startup.log").read_text()


def test_a_plain_0_24_server_runs_async_scheduling_on_model_runner_v2() -> None:
    assert parse_engine_path(_log("plain")) == EnginePath(True, "V2", ())


def test_a_draft_model_0_24_server_falls_back_to_sync_scheduling_and_the_v1_runner() -> None:
    # the runner warning is printed by the APIServer and again by the EngineCore: one reason
    assert parse_engine_path(_log("draft")) == EnginePath(False, "V1", (DRAFT_ASYNC, DRAFT_RUNNER))


def test_an_ngram_0_24_server_falls_back_too() -> None:
    assert parse_engine_path(_log("ngram")) == EnginePath(
        False,
        "V1",
        (
            "Async scheduling not supported with ngram-based speculative decoding and will be disabled.",
            "Model Runner V2 does not yet support ngram/ngram_gpu speculative decoding; "
            "using the V1 model runner instead.",
        ),
    )


def test_a_log_that_says_nothing_is_unknown() -> None:
    assert parse_engine_path("") == EnginePath(None, None, ())
    assert parse_engine_path(
        "(EngineCore pid=1) INFO 12-01 23:19:26 [gpu_model_runner.py:5160] Starting to load "
        "model m...\nKV cache size: 10,000 tokens"
    ) == EnginePath(None, None, ())


def test_later_lines_win() -> None:
    log = (
        "(APIServer pid=1) INFO 12-01 23:14:28 [vllm.py:1006] Asynchronous scheduling is enabled.\n"
        "(EngineCore pid=2) INFO 12-01 23:14:49 [gpu_worker.py:331] Using V2 Model Runner\n"
        f"(EngineCore pid=2) WARNING 12-01 23:19:25 [vllm.py:541] {DRAFT_RUNNER}\n"
        "(EngineCore pid=2) INFO 12-01 23:19:27 [vllm.py:1006] Asynchronous scheduling is disabled.\n"
    )
    assert parse_engine_path(log) == EnginePath(False, "V1", (DRAFT_RUNNER,))


# vLLM 0.32 (vllm/config/vllm.py, vllm/v1/worker/cpu_worker.py): the messages its logger formats, with its
# prefix (vllm/logger.py); 0.32 prints no "Asynchronous scheduling is enabled/disabled." line.
def test_the_0_32_wordings() -> None:
    pre = "(EngineCore pid=7) WARNING 05-02 10:00:01 [vllm.py:1600] "
    padded = "Async scheduling is not compatible with disable_padded_drafter_batch=True and will be disabled."
    triton = "Model Runner V2 requires Triton; using the V1 model runner instead."
    assert parse_engine_path(f"{pre}{padded}\n{pre}{triton}\n") == EnginePath(False, "V1", (padded, triton))
    pp = "Async scheduling is disabled because the V1 model runner does not support it with pipeline parallelism."
    assert parse_engine_path(pre + pp) == EnginePath(False, None, (pp,))
    v2 = "(EngineCore pid=7) INFO 05-02 10:00:09 [cpu_worker.py:162] Using V2 Model Runner"
    assert parse_engine_path(v2) == EnginePath(None, "V2", ())
    # a line without vLLM's prefix (another log format): the message from the known phrase on
    assert parse_engine_path(f"2026 WARNING vllm {triton}") == EnginePath(None, "V1", (triton,))


def test_the_record_round_trips_through_json_and_older_records_read_unknown() -> None:
    path = parse_engine_path(_log("draft"))
    assert EnginePath.from_json(path.to_json(), source="x-effective.json") == path == EnginePath.of(path.to_json())
    unknown = EnginePath(None, None, ())
    assert EnginePath.of(None) == EnginePath.of({"model_runner": 2, "fallback_reasons": "x"}) == unknown
    assert path.to_json() == {
        "async_scheduling": False,
        "model_runner": "V1",
        "fallback_reasons": [DRAFT_ASYNC, DRAFT_RUNNER],
    }
    assert (
        engine_path_line(EnginePath.of(None))
        == "engine path (startup log): async scheduling unknown, model runner unknown"
    )
    assert engine_path_line(EnginePath.of(path.to_json())) == (
        f'engine path (startup log): async scheduling off, model runner V1 (vLLM: "{DRAFT_ASYNC}"; "{DRAFT_RUNNER}")'
    )
