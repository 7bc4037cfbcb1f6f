"""util/argv.py at its edges: values that look like flags, a flag given last without a value, short flags,
and the human-readable ints vLLM accepts or refuses."""

from __future__ import annotations

import pytest

from loadgen.util.argv import flag_name, flag_value, flags, vllm_int


def test_a_flag_given_last_without_a_value_has_none_and_an_inline_empty_value_is_empty() -> None:
    assert flag_value(["--max-model-len", "2048", "--max-model-len"], "--max-model-len") is None
    assert flag_value(["--max-model-len="], "--max-model-len") == ""
    assert flag_value(["--seed", "-1"], "--seed") == "-1"  # the next word is the value, even a negative number


def test_names_are_canonical_only_for_long_flags() -> None:
    assert [flag_name(a) for a in ("--a_b_c=1", "-tp", "-t_p", "--x", "serve")] == [
        "--a-b-c",
        "-tp",
        "-t_p",
        "--x",
        "serve",
    ]


def test_flags_skip_positionals_and_keep_short_flags() -> None:
    args = ["serve", "model", "-tp", "2", "--speculative_config", '{"k": 2}', "--port", "--enforce-eager"]
    assert flags(args, lambda n: n in ("--speculative-config", "--port")) == [
        ("-tp", None),
        ("--speculative-config", '{"k": 2}'),
        ("--port", None),
        ("--enforce-eager", None),
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("16k", 16_000),
        ("16K", 16_384),
        ("k", None),
        ("1.5k", None),
        ("-2", None),
        ("2g", None),
        ("", None),
        ("2kk", None),
    ],
)
def test_human_readable_ints(text: str, value: int | None) -> None:
    assert vllm_int(text) == value
