"""serve/readiness.py's pure parts: the minimal request's body, the fold of a recorded vLLM 0.32 stream
(tests/data/vllm032_completions_stream.txt: a speculative server, 24 tokens in 7 chunks) and of streams without
token ids or with errors, and the tokens a response returned."""

from __future__ import annotations

from pathlib import Path

from loadgen.records.server import CompletionText, MinimalResponse
from loadgen.serve import readiness
from loadgen.serve.enginepath import EnginePath, cudagraph_ceiling, engine_path_note

DATA = Path(__file__).resolve().parents[1] / "data"


def test_the_minimal_body_is_greedy_streamed_with_token_ids() -> None:
    assert readiness.minimal_body("m").to_json() == {
        "model": "m",
        "prompt": "Hello",
        "max_tokens": 16,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "return_token_ids": True,
    }
    assert readiness.minimal_body("x", "Hi", 2).max_tokens == 2


def test_a_recorded_speculative_stream() -> None:
    folded = readiness.read_stream((DATA / "vllm032_completions_stream.txt").read_text().splitlines())
    assert isinstance(folded, MinimalResponse)
    assert folded.to_json() == {
        "choices": [
            {
                "text": " Sir Isaac Newton discovered gravity in 1687. Since then, it has been used to study "
                "numerous phenomena,"
            }
        ],
        "usage": {"prompt_tokens": 7, "total_tokens": 31, "completion_tokens": 24},
        "chunk_tokens": [1, 4, 4, 4, 4, 4, 3],
        "chunk_tokens_exact": True,
        "system_fingerprint": "vllm-0.32.0-1ad8b7ed",  # on the usage chunk (measure/replicas.py reads it)
    }
    assert folded.tokens == 24 and folded.attempts == 0


def test_without_token_ids_each_text_chunk_counts_one_and_is_not_exact() -> None:
    lines = [
        'data: {"choices": [{"text": "a b"}]}',
        "",
        ": keep-alive",
        'data: {"choices": [{"text": ""}]}',
        'data: {"choices": [{"text": "c"}]}',
        "data: [DONE]",
    ]
    folded = readiness.read_stream(lines)
    assert folded == MinimalResponse((CompletionText("a bc"),), None, (1, 1), False)
    assert folded.tokens == 2  # no usage: the chunks' sum
    assert MinimalResponse((), {"completion_tokens": 0}, (3,), True).tokens == 3
    assert MinimalResponse((), None, (), True).tokens == 0


def test_broken_events_are_errors() -> None:
    assert readiness.read_stream(["data: {oops"]) == readiness.StreamError("not JSON: 'data: {oops'")
    assert readiness.read_stream(["data: [1, 2]"]) == readiness.StreamError("not an object: 'data: [1, 2]'")
    assert readiness.read_stream(
        ['data: {"choices": [{"text": "a", "token_ids": [1]}]}', 'data: {"error": "overloaded"}']
    ) == readiness.StreamError("overloaded")
    assert readiness.read_stream([]) == MinimalResponse((CompletionText(""),), None, (), True)


def _path(async_on: bool | None, runner: str | None, *reasons: str) -> EnginePath:
    """An effective record's engine path as the card reads it."""
    return EnginePath.of({"async_scheduling": async_on, "model_runner": runner, "fallback_reasons": list(reasons)})


def test_engine_path_notes() -> None:
    assert engine_path_note(_path(True, "V2"), _path(True, "V2")) is None
    assert engine_path_note(_path(False, "V1"), _path(False, "V1")) is None  # both off: no change to separate
    assert engine_path_note(_path(None, None), _path(None, "V2")) is None  # an unknown plain runner: only V1 counts
    assert engine_path_note(_path(True, "V2"), _path(False, "V1", "no async with draft_model")) == (
        'Engine path: the speculative server runs without async scheduling and on the V1 model runner (vLLM: "no '
        'async with draft_model"); the plain server: async scheduling on, model runner V2. The measured step-time '
        "ratio includes that engine-path change, not only the draft's work; compare against a plain server launched "
        "with `--no-async-scheduling` and `VLLM_USE_V2_MODEL_RUNNER=0` to separate the two."
    )
    assert engine_path_note(EnginePath.of(None), _path(None, "V1")) == (
        "Engine path: the speculative server runs on the V1 model runner; the plain server: async scheduling "
        "unknown, model runner unknown. The measured step-time ratio includes that engine-path change, not only the "
        "draft's work; compare against a plain server launched with `VLLM_USE_V2_MODEL_RUNNER=0` to separate the two."
    )


def test_cudagraph_ceiling() -> None:
    assert cudagraph_ceiling("compilation_config={'level': 3, 'max_cudagraph_capture_size': 512}") == 512
    assert cudagraph_ceiling('"max_cudagraph_capture_size": 64, enforce_eager=False') == 64
    assert cudagraph_ceiling("enforce_eager=True, 'max_cudagraph_capture_size': 512") is None
    assert cudagraph_ceiling("") is None
