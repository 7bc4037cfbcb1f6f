"""records/requestbody.py: the body sent for one prompt, for both endpoints, with its keys in their order."""

from __future__ import annotations

import json

from loadgen.records.requestbody import CompletionBody


def test_a_chat_body_asks_for_a_fixed_length_and_carries_the_seed_and_salt() -> None:
    body = CompletionBody(
        "m",
        0.0,
        1.0,
        True,
        64,
        seed=7,
        messages=({"role": "user", "content": "hi"},),
        cache_salt="loadgen-plain-w-c1-b0",
    )
    assert json.dumps(body.to_json()) == (
        '{"model": "m", "stream": true, "stream_options": {"include_usage": true}, "return_token_ids": true, '
        '"temperature": 0.0, "top_p": 1.0, "ignore_eos": true, "seed": 7, '
        '"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 64, "min_tokens": 64, '
        '"cache_salt": "loadgen-plain-w-c1-b0"}'
    )


def test_a_completions_body_without_ignore_eos_has_no_min_tokens_seed_or_salt() -> None:
    got = CompletionBody("m", 0.7, 0.9, False, 8, prompt="Once").to_json()
    assert got == {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "return_token_ids": True,
        "temperature": 0.7,
        "top_p": 0.9,
        "ignore_eos": False,
        "prompt": "Once",
        "max_tokens": 8,
    }
