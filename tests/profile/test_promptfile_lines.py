"""promptfile: the line reasons test_promptfile.py leaves out (a JSON array that is not JSON, ShareGPT turns
without a usable human turn or reply, JSONL lines of a bad output_tokens, prompt or messages, a file mixing
layouts), the input tokens of a chat entry, and a ShareGPT file with no conversation fitting the context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.promptfile import FileEntry, fit_lengths, input_tokens, read_prompt_file, sample
from loadgen.profile.workload import load_tokenizer
from tests.support.tokfactory import trained_vocab, write_model


def _lines(tmp_path: Path, *records: object) -> Path:
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_json_array_that_does_not_parse_is_named(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('[{"conversations": []},\n')
    with pytest.raises(
        ProfileError,
        match=r"a.json: not a JSON array nor JSONL \(.*\); write one JSON object per "
        "line$",
    ):
        read_prompt_file(path)


HUMAN, GPT = {"from": "human", "value": "the cat"}, {"from": "gpt", "value": "a dog"}


@pytest.mark.parametrize(
    ("conversation", "reason"),
    [
        ([{"from": "system", "value": " "}, HUMAN, GPT], "an empty system turn"),
        ([GPT, {"from": "gpt", "value": "b"}], "no human turn"),
        ([{"from": "human", "value": "  "}, GPT], "no human turn"),
        ([{"from": "human", "value": 5}, GPT], "no human turn"),
        ([HUMAN], "no reply after the first human turn"),
        ([HUMAN, {"from": "human", "value": "again"}], "no reply after the first human turn"),
        ([HUMAN, {"from": "gpt", "value": ""}], "no reply after the first human turn"),
        ([{"from": "system", "value": "be brief"}, GPT, HUMAN], "opens after its system turn with a 'gpt' turn"),
        (["not a turn", {"from": "tool", "value": "x"}, HUMAN], "opens with a 'tool' turn, not a human one"),
    ],
)
def test_a_sharegpt_conversation_without_a_usable_opening_is_skipped_with_its_reason(
    tmp_path: Path, conversation: list[object], reason: str
) -> None:
    pf = read_prompt_file(_lines(tmp_path, {"conversations": [HUMAN, GPT]}, {"conversations": conversation}))
    assert pf.layout == "sharegpt" and pf.endpoint == "chat" and len(pf.entries) == 1
    assert len(pf.skipped) == 1 and pf.skipped[0].startswith(f"line 2: {reason}")


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"prompt": "a", "output_tokens": 0}, "line 2: output_tokens must be a positive integer, got 0"),
        ({"prompt": "a", "output_tokens": True}, "line 2: output_tokens must be a positive integer, got True"),
        ({"prompt": "a", "output_tokens": 2.5}, "line 2: output_tokens must be a positive integer, got 2.5"),
        ({"prompt": ""}, "line 2: prompt is not a non-empty string"),
        ({"prompt": ["the", "cat"]}, "line 2: prompt is not a non-empty string"),
        ({"messages": [{"role": "user", "content": "x"}]}, "line 2: a chat line in a completions file"),
        ({"conversations": [HUMAN, GPT]}, "line 2: mixes ShareGPT conversations and JSONL prompts"),
    ],
)
def test_a_jsonl_line_that_cannot_be_sent_is_skipped_with_its_reason(
    tmp_path: Path, record: object, reason: str
) -> None:
    pf = read_prompt_file(_lines(tmp_path, {"prompt": "the cat", "output_tokens": 3}, record))
    assert (pf.layout, pf.endpoint, pf.lines) == ("jsonl", "completions", 2)
    assert pf.entries == (FileEntry(1, "the cat", None, 3),) and pf.skipped == (reason,)


@pytest.mark.parametrize("messages", [[], [{"role": "user"}], [{"role": 1, "content": "x"}], "hello"])
def test_chat_messages_that_are_not_role_content_strings_are_skipped(tmp_path: Path, messages: object) -> None:
    ok = {"messages": [{"role": "user", "content": "the cat"}]}
    pf = read_prompt_file(_lines(tmp_path, ok, {"messages": messages}))
    assert pf.endpoint == "chat" and [e.line for e in pf.entries] == [1]
    assert pf.skipped == ('line 2: messages must be a non-empty list of {"role", "content"} strings',)


def test_a_chat_entry_counts_the_tokens_of_every_message(tmp_path: Path) -> None:
    tok = load_tokenizer(str(write_model(tmp_path / "m", trained_vocab())))
    msgs = ({"role": "system", "content": "the cat sat"}, {"role": "user", "content": "a dog ran to the park"})
    expected = len(tok.encode("the cat sat").ids) + len(tok.encode("a dog ran to the park").ids)
    assert input_tokens(FileEntry(1, None, msgs), tok) == expected
    assert input_tokens(FileEntry(1, None, None), tok) == 0


def test_a_sharegpt_file_whose_every_conversation_exceeds_the_context_is_refused(tmp_path: Path) -> None:
    tok = load_tokenizer(str(write_model(tmp_path / "m", trained_vocab())))
    long = {"from": "human", "value": "the cat sat on the mat " * 4}
    pf = read_prompt_file(_lines(tmp_path, {"conversations": [long, GPT]}, {"conversations": [long, GPT]}))
    n_in = len(tok.encode(long["value"]).ids)
    n_out = len(tok.encode("a dog", add_special_tokens=False).ids)
    entries, skipped = fit_lengths(pf, 9, tok, n_in + n_out)
    assert [(e.line, i, o) for e, i, o in entries] == [(1, n_in, n_out), (2, n_in, n_out)] and skipped == []
    with pytest.raises(ProfileError) as err:
        fit_lengths(pf, 9, tok, n_in + n_out - 1)
    assert str(err.value) == (
        f"{pf.path}: no line fits the serving context ({n_in + n_out - 1} tokens); first: "
        f"line 1: {n_in} prompt + {n_out} output tokens exceed the serving context "
        f"({n_in + n_out - 1} tokens, --max-model-len)"
    )


def test_sampling_more_than_the_file_holds_repeats_each_item_at_most_once_more() -> None:
    got = sample(list(range(4)), 10, seed=7)
    assert len(got) == 10 and sorted(got[:4]) == sorted(got[4:8]) == [0, 1, 2, 3]
    assert got == sample(list(range(4)), 10, seed=7) and got != sample(list(range(4)), 10, seed=8)
    assert max(got.count(i) for i in range(4)) - min(got.count(i) for i in range(4)) <= 1
