"""trace: the refusals not covered by test_trace.py (a missing or empty file, bad prompt lines, no usable line,
a tokenizer without one-token words, nothing fitting the serving context, bad time scales), chat replay of a
Mooncake trace, the input length of chat prompt lines, and variant names."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from loadgen.errors import ProfileError
from loadgen.profile.trace import (
    WORDS,
    Replay,
    TraceEntry,
    mooncake_text,
    offsets_s,
    one_token_words,
    read_trace,
    trace_requests,
)
from loadgen.profile.traceworkload import scaled_name
from loadgen.profile.workload import load_tokenizer, load_workloads
from tests.support.tokfactory import trained_vocab, write_model


def _lines(tmp_path: Path, rows: list[object]) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _word_tokenizer(tmp_path: Path) -> Tokenizer:
    return load_tokenizer(str(write_model(tmp_path / "m", trained_vocab((" ".join(WORDS),)))))


def _letter_tokenizer() -> Tokenizer:
    """One token per letter: no word of the built-in list (none has one letter) is one token."""
    vocab = {c: i for i, c in enumerate(["<unk>", *string.ascii_letters])}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="<unk>", continuing_subword_prefix=""))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return tok


def test_a_missing_file_and_an_empty_one_are_named(tmp_path: Path) -> None:
    with pytest.raises(
        ProfileError,
        match=r"nope.jsonl: trace file not found; set path to a trace \(Mooncake JSONL, an Azure or BurstGPT CSV",
    ):
        read_trace(tmp_path / "nope.jsonl")
    (tmp_path / "e.jsonl").write_text("\n  \n")
    with pytest.raises(ProfileError, match=r"e.jsonl: the trace is empty; write one request per line$"):
        read_trace(tmp_path / "e.jsonl")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"timestamp": 0, "prompt": ""}, "line 1: prompt must be a non-empty string$"),
        ({"timestamp": 0, "prompt": 7}, "line 1: prompt must be a non-empty string$"),
        ({"timestamp": 0, "messages": []}, r"line 1: messages must be a non-empty list of \{\"role\", \"content\"\}$"),
        ({"timestamp": 0, "messages": [{"role": "user"}]}, "line 1: messages must be a non-empty list"),
        ({"timestamp": 0, "messages": ["hi"]}, "line 1: messages must be a non-empty list"),
        ({"timestamp": True, "prompt": "x"}, "line 1: timestamp must be a number of milliseconds >= 0, got True"),
        ({"timestamp": 0, "prompt": "x", "output_tokens": 0}, "line 1: output_tokens must be a positive integer"),
    ],
)
def test_a_bad_prompt_line_is_named(tmp_path: Path, row: object, message: str) -> None:
    with pytest.raises(ProfileError, match=message):
        read_trace(_lines(tmp_path, [row]))


def test_a_trace_whose_every_line_is_of_the_other_endpoint_is_refused(tmp_path: Path) -> None:
    path = _lines(tmp_path, [{"timestamp": 0, "prompt": "a"}, {"timestamp": 5, "prompt": "b"}])
    with pytest.raises(
        ProfileError,
        match=r"no usable line \(2 skipped; first: line 1: a completions line in a "
        r"chat trace\); fix the trace$",
    ):
        read_trace(path, "chat")


def test_a_first_chat_line_makes_a_chat_trace_and_its_input_is_its_messages(tmp_path: Path) -> None:
    msgs = [{"role": "system", "content": "the cat"}, {"role": "user", "content": "a dog ran"}]
    path = _lines(tmp_path, [{"timestamp": 0, "messages": msgs, "output_tokens": 2}, {"timestamp": 3, "prompt": "x"}])
    trace = read_trace(path)
    assert (trace.endpoint, trace.skipped) == ("chat", ("line 2: a completions line in a chat trace",))
    assert trace.entries[0].messages == tuple(msgs)
    tok = _word_tokenizer(tmp_path)
    per_message = len(tok.encode("the cat").ids) + len(tok.encode("a dog ran").ids)
    reqs, skipped = trace_requests(trace, Replay(context_tokens=per_message + 2), tok)
    assert [(r.line, r.messages, r.text, r.output_tokens) for r in reqs] == [(1, tuple(msgs), None, 2)] and not skipped
    with pytest.raises(
        ProfileError,
        match=rf"no line fits the serving context \({per_message + 1} tokens\); first: "
        rf"line 1: {per_message} prompt \+ 2 output tokens exceed",
    ):
        trace_requests(trace, Replay(context_tokens=per_message + 1), tok)


def test_a_mooncake_trace_replayed_as_chat_sends_its_text_as_the_user_message(tmp_path: Path) -> None:
    path = _lines(tmp_path, [{"timestamp": 0, "input_length": 12, "output_length": 3, "hash_ids": [4]}])
    tok = _word_tokenizer(tmp_path)
    (completion,), _ = trace_requests(read_trace(path), Replay(block_tokens=8), tok)
    (chat,), _ = trace_requests(read_trace(path, "chat"), Replay(block_tokens=8), tok)
    assert chat.text is None and chat.messages == ({"role": "user", "content": completion.text},)


def test_hash_blocks_past_the_input_length_are_not_used() -> None:
    words = tuple(WORDS[:20])
    one = mooncake_text(TraceEntry(1, 0.0, 6, 1, (1,)), 4, words, 0, 0)
    many = mooncake_text(TraceEntry(1, 0.0, 6, 1, (1, 2, 3, 4)), 4, words, 0, 0)
    assert one.split()[:4] == many.split()[:4] and len(many.split()) == len(one.split()) == 6
    assert many.split()[4:] == mooncake_text(TraceEntry(1, 0.0, 8, 1, (1, 2)), 4, words, 0, 0).split()[4:6]
    assert len(mooncake_text(TraceEntry(1, 0.0, 3, 1, (1,)), 4, words, 0, 5).split()) == 1  # at least one word


def test_a_tokenizer_without_sixteen_one_token_words_is_refused_for_mooncake(tmp_path: Path) -> None:
    with pytest.raises(
        ProfileError,
        match="encodes only 0 common English words as one token; a Mooncake trace "
        r"needs at least 16 \(use prompt lines with a timestamp instead\)",
    ):
        one_token_words(_letter_tokenizer())
    assert len(one_token_words(_word_tokenizer(tmp_path))) == len(set(WORDS))


def test_offsets_of_no_entries_are_empty() -> None:
    assert offsets_s([], 2.0) == ()
    assert offsets_s([TraceEntry(1, 250.0), TraceEntry(2, 1250.0)], 3.0) == (0.0, 3.0)


@pytest.mark.parametrize(
    ("scales", "message"),
    [
        (
            "[1.0, 1.0]",
            r"time_scale must be a number > 0 or a list of distinct ones \(0.5 replays twice as fast\), got "
            r"\[1.0, 1.0\]$",
        ),
        ("[]", r"time_scale must be a number > 0 or a list of distinct ones \(0.5 replays twice as fast\), got \[\]$"),
        ("[1.0, -2]", r"time_scale\[1\] must be a number > 0 and <= 1,000 \(trace offsets x time_scale\), got -2"),
        ('"fast"', r"time_scale must be a number > 0 and <= 1,000 \(trace offsets x time_scale\), got 'fast'"),
        ("[true]", r"time_scale\[0\] must be a number > 0 and <= 1,000 \(trace offsets x time_scale\), got True"),
    ],
)
def test_time_scales_that_are_not_distinct_positive_numbers_are_refused(
    tmp_path: Path, scales: str, message: str
) -> None:
    path = _lines(tmp_path, [{"timestamp": 0, "prompt": "the cat"}])
    (tmp_path / "tr.toml").write_text(f'kind = "trace"\npath = "{path}"\noutput_tokens = 4\ntime_scale = {scales}\n')
    with pytest.raises(ProfileError, match=message):
        load_workloads("tr", tmp_path)


@pytest.mark.parametrize("window", ["0", "-1", "604801"])
def test_window_s_out_of_its_domain_is_refused_and_a_chosen_one_is_kept(tmp_path: Path, window: str) -> None:
    path = _lines(tmp_path, [{"timestamp": 0, "prompt": "the cat"}])
    (tmp_path / "w.toml").write_text(f'kind = "trace"\npath = "{path}"\noutput_tokens = 4\nwindow_s = {window}\n')
    with pytest.raises(
        ProfileError,
        match=r"w.toml: window_s must be a number of seconds > 0 and <= 604,800 \(at "
        rf"most one week\), got {window} \(see profiles/README.md\)$",
    ):
        load_workloads("w", tmp_path)
    (tmp_path / "w.toml").write_text(f'kind = "trace"\npath = "{path}"\noutput_tokens = 4\nwindow_s = 5\n')
    (only,) = load_workloads("w", tmp_path)
    assert (only.name, only.window_s, only.time_scale, only.endpoint) == ("w", 5.0, 1.0, "completions")


def test_a_variant_is_named_by_its_scale_only_when_several_are_declared() -> None:
    assert scaled_name("prod", 0.5, (0.5,)) == "prod"
    assert [scaled_name("prod", s, (1.0, 0.25, 2.0)) for s in (1.0, 0.25, 2.0)] == [
        "prod@ts1",
        "prod@ts0.25",
        "prod@ts2",
    ]
