"""ShareGPT conversations by their opening turn: a system turn stays the system message of the chat
request; a conversation that opens with the assistant is skipped with its reason and counted, never sent in
another shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loadgen.profile.promptfile import read_prompt_file

SYSTEM = [
    {"from": "system", "value": "be brief"},
    {"from": "human", "value": "the cat"},
    {"from": "gpt", "value": "sat"},
]
ASSISTANT_FIRST = [
    {"from": "gpt", "value": "hello, how can I help?"},
    {"from": "human", "value": "the dog"},
    {"from": "gpt", "value": "ran"},
]
PLAIN = [{"from": "human", "value": "a bird"}, {"from": "gpt", "value": "flew"}]


def _file(tmp_path: Path, *convs: list[dict[str, Any]]) -> Path:
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"conversations": c}) + "\n" for c in convs))
    return path


def test_an_opening_system_turn_is_kept_as_the_system_message(tmp_path: Path) -> None:
    pf = read_prompt_file(_file(tmp_path, SYSTEM, PLAIN))
    assert pf.endpoint == "chat" and pf.skipped == ()
    assert [e.messages for e in pf.entries] == [
        ({"role": "system", "content": "be brief"}, {"role": "user", "content": "the cat"}),
        ({"role": "user", "content": "a bird"},),
    ]
    assert pf.entries[0].reply == "sat"


def test_a_conversation_opening_with_the_assistant_is_skipped_and_counted(tmp_path: Path) -> None:
    pf = read_prompt_file(_file(tmp_path, ASSISTANT_FIRST, PLAIN))
    assert (pf.lines, len(pf.entries)) == (2, 1)
    assert pf.skipped == (
        "line 1: opens with a 'gpt' turn, not a human one (a request cannot start with the assistant's words)",
    )
    assert pf.entries[0].messages == ({"role": "user", "content": "a bird"},)


def test_a_system_turn_on_a_completions_file_is_skipped_with_its_reason(tmp_path: Path) -> None:
    pf = read_prompt_file(_file(tmp_path, SYSTEM, PLAIN), "completions")
    assert [e.text for e in pf.entries] == ["a bird"]
    assert pf.skipped == (
        'line 1: opens with a system turn, which a completions prompt cannot carry; use endpoint = "chat"',
    )
