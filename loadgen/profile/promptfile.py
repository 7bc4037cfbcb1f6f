"""Prompt files: the user's own prompts, read strictly (pure apart from reading the one file).

Two layouts, told apart by their lines:

- **JSONL prompts**: one JSON object per line, ``{"prompt": "..."}`` (/v1/completions) or
  ``{"messages": [{"role": ..., "content": ...}, ...]}`` (/v1/chat/completions), each with an optional
  ``"output_tokens"`` (a positive integer; else the workload's ``output_tokens``).
- **ShareGPT-style conversations**: ``{"conversations": [{"from": "human", "value": ...},
  {"from": "gpt", "value": ...}, ...]}`` per line, or one JSON array of such objects (the layout of the
  public ShareGPT dumps that ``vllm bench serve --dataset-name sharegpt`` reads). The conversation's opening
  human turn is the prompt and the reply that follows it sets the output length, in the target's tokens. A
  conversation that opens with a ``system`` turn keeps it as the chat request's system message (a
  completions file cannot carry one: that line is skipped); one that opens with the assistant (or any turn
  other than system or human) is skipped with its reason, never sent in another shape.

A file that cannot serve as a workload raises ProfileError (exit 2) with one line: missing, empty, a line
that is not JSON, a line with no prompt, a JSONL prompt whose input plus output tokens exceed the serving
context (``--max-model-len``), or no usable line at all. Lines that cannot be used but do not make the
file wrong (a line of the other endpoint's shape, a conversation without a human turn or a reply, one that
opens with the assistant, a
ShareGPT conversation too long for the serving context, as ``vllm bench serve`` also drops them) are
skipped, counted and named (``line N: reason``), never dropped silently.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from loadgen.errors import ProfileError

_HUMAN, _REPLY = ("human", "user"), ("gpt", "assistant", "chatgpt", "bard", "model")
_SYSTEM = ("system",)


@dataclass(frozen=True)
class FileEntry:
    """One usable line: ``text`` (completions) or ``messages`` (chat); ``output_tokens`` None when the
    line gives none; ``reply`` the ShareGPT reply text (its token count becomes the output length);
    ``system`` the ShareGPT opening system turn (None without one)."""

    line: int
    text: str | None
    messages: tuple[dict[str, str], ...] | None
    output_tokens: int | None = None
    reply: str | None = None
    system: str | None = None


@dataclass(frozen=True)
class PromptFile:
    """A prompt file read and checked: ``layout`` ``jsonl`` or ``sharegpt``; ``lines`` the number of
    records in the file; ``skipped`` one ``line N: reason`` per unusable record."""

    path: str
    sha256: str
    lines: int
    layout: str
    endpoint: str
    entries: tuple[FileEntry, ...]
    skipped: tuple[str, ...]


def _records(path: Path, raw: bytes) -> list[tuple[int, Any]]:
    text = raw.decode("utf-8-sig", errors="replace")  # a byte-order mark is no part of the first line
    if text.lstrip().startswith("["):
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise ProfileError(f"{path}: not a JSON array nor JSONL ({exc}); write one JSON object per line") from None
        return [(i + 1, rec) for i, rec in enumerate(doc)]
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except ValueError:
            raise ProfileError(f"{path}: line {n} is not JSON, so the file is not JSONL; write one JSON object "
                               "per line, e.g. {\"prompt\": \"...\"}") from None
        _unicode(path, n, line, out[-1][1])
    return out


def _unicode(path: Path, n: int, line: str, rec: Any) -> None:
    """Raise ProfileError when line ``n`` decodes to text no tokenizer or request can carry (a lone
    surrogate such as ``\\ud800``)."""
    try:
        json.dumps(rec, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ProfileError(f"{path}: line {n} holds text that is not valid Unicode (a lone surrogate escape such "
                           "as \\ud800); fix or remove that line") from None


def _sharegpt(n: int, rec: dict[str, Any]) -> FileEntry | str:
    """The entry of a ShareGPT conversation (an optional opening system turn, then a human turn and its reply),
    or the reason it is skipped (``line N: ...``)."""
    turns = [t for t in rec["conversations"] if isinstance(t, dict)]
    system = turns[0].get("value") if turns and turns[0].get("from") in _SYSTEM else None
    first = 1 if system is not None else 0
    if system is not None and (not isinstance(system, str) or not system.strip()):
        return f"line {n}: an empty system turn"
    if not any(t.get("from") in _HUMAN for t in turns):
        return f"line {n}: no human turn"
    opener = turns[first].get("from") if first < len(turns) else None
    if opener not in _HUMAN:
        after = "after its system turn " if system is not None else ""
        return (f"line {n}: opens {after}with a {opener!r} turn, not a human one (a request cannot start with "
                "the assistant's words)")
    if not isinstance(turns[first].get("value"), str) or not turns[first]["value"].strip():
        return f"line {n}: no human turn"
    reply = turns[first + 1] if first + 1 < len(turns) else None
    if reply is None or reply.get("from") not in _REPLY or not str(reply.get("value") or "").strip():
        return f"line {n}: no reply after the first human turn"
    return FileEntry(n, turns[first]["value"], None, None, str(reply["value"]), system)


def _jsonl(path: Path, n: int, rec: dict[str, Any], endpoint: str) -> FileEntry | str:
    shape = "completions" if "prompt" in rec else "chat"
    if shape != endpoint:
        return f"line {n}: a {shape} line in a {endpoint} file"
    out = rec.get("output_tokens")
    if out is not None and (isinstance(out, bool) or not isinstance(out, int) or out < 1):
        return f"line {n}: output_tokens must be a positive integer, got {out!r}"
    if shape == "completions":
        if not isinstance(rec["prompt"], str) or not rec["prompt"]:
            return f"line {n}: prompt is not a non-empty string"
        return FileEntry(n, rec["prompt"], None, out)
    msgs = rec["messages"]
    if not (isinstance(msgs, list) and msgs and all(isinstance(m, dict) and isinstance(m.get("role"), str)
                                                     and isinstance(m.get("content"), str) for m in msgs)):
        return f"line {n}: messages must be a non-empty list of {{\"role\", \"content\"}} strings"
    return FileEntry(n, None, tuple({"role": m["role"], "content": m["content"]} for m in msgs), out)


def _shaped(got: FileEntry | str, endpoint: str) -> FileEntry | str:
    """A ShareGPT entry in ``endpoint``'s shape: chat messages (the system turn first, when there is one), or
    the completions text; a system turn on completions is skipped with its reason (no system message there)."""
    if isinstance(got, str):
        return got
    if endpoint == "chat":
        system = ({"role": "system", "content": got.system},) if got.system is not None else ()
        return FileEntry(got.line, None, (*system, {"role": "user", "content": got.text or ""}), None, got.reply,
                         got.system)
    if got.system is not None:
        return (f"line {got.line}: opens with a system turn, which a completions prompt cannot carry; use "
                "endpoint = \"chat\"")
    return got


def read_prompt_file(path: Path, endpoint: str | None = None) -> PromptFile:
    """Read ``path`` (JSONL prompts or ShareGPT-style conversations; see the module docstring).

    ``endpoint``: ``completions`` or ``chat`` (None: the shape of the first record; ShareGPT: chat).
    Raises ProfileError (one line) for a missing, empty or non-JSONL file, a record with no prompt, or a
    file with no usable line.
    """
    if not path.is_file():
        raise ProfileError(f"{path}: prompt file not found; set path to a JSONL file (relative to the "
                           "working directory), e.g. profiles/data/prompts-completions.jsonl")
    raw = path.read_bytes()
    records = _records(path, raw)
    if not records:
        raise ProfileError(f"{path}: the prompt file is empty; write one JSON object per line")
    for n, rec in records:
        if not isinstance(rec, dict) or not ({"prompt", "messages", "conversations"} & rec.keys()):
            raise ProfileError(f"{path}: line {n} has no prompt: each line needs \"prompt\", \"messages\" or "
                               "\"conversations\"")
    layout = "sharegpt" if "conversations" in records[0][1] else "jsonl"
    if endpoint is None:
        endpoint = "completions" if "prompt" in records[0][1] else "chat"
    entries: list[FileEntry] = []
    skipped: list[str] = []
    for n, rec in records:
        if ("conversations" in rec) != (layout == "sharegpt"):
            got: FileEntry | str = f"line {n}: mixes ShareGPT conversations and JSONL prompts"
        elif layout == "sharegpt":
            got = _shaped(_sharegpt(n, rec), endpoint)
        else:
            got = _jsonl(path, n, rec, endpoint)
        (skipped.append(got) if isinstance(got, str) else entries.append(got))
    if not entries:
        raise ProfileError(f"{path}: no usable line ({len(skipped)} skipped; first: {skipped[0]}); fix the file")
    return PromptFile(str(path), hashlib.sha256(raw).hexdigest(), len(records), layout, endpoint,
                      tuple(entries), tuple(skipped))


def input_tokens(entry: FileEntry, tokenizer: Tokenizer) -> int:
    """Tokens of ``entry``'s prompt with ``tokenizer``: the text, or for chat the sum over the messages'
    contents (the chat template adds a few more, which this count leaves out)."""
    if entry.text is not None:
        return len(tokenizer.encode(entry.text).ids)
    return sum(len(tokenizer.encode(m["content"]).ids) for m in entry.messages or ())


def fit_lengths(pf: PromptFile, default_output: int, tokenizer: Tokenizer,
                context: int | None) -> tuple[list[tuple[FileEntry, int, int]], list[str]]:
    """(entry, input tokens, output tokens) per usable entry, and the newly skipped lines.

    The output length is the line's ``output_tokens``, the ShareGPT reply's token count, or
    ``default_output``. With ``context`` (the serving context, ``--max-model-len``): a JSONL prompt whose
    input + output exceeds it raises ProfileError naming its line; a ShareGPT conversation is skipped.
    """
    out, skipped = [], []
    for e in pf.entries:
        n_in = input_tokens(e, tokenizer)
        n_out = (e.output_tokens if e.output_tokens is not None
                 else len(tokenizer.encode(e.reply, add_special_tokens=False).ids) if e.reply is not None
                 else default_output)
        if context is not None and n_in + max(n_out, 1) > context:
            why = (f"line {e.line}: {n_in} prompt + {n_out} output tokens exceed the serving context "
                   f"({context} tokens, --max-model-len)")
            if pf.layout == "sharegpt":
                skipped.append(why)
                continue
            raise ProfileError(f"{pf.path}: {why}; shorten the prompt or its output_tokens, or raise "
                               "--max-model-len in [engine].args")
        out.append((e, n_in, max(n_out, 1)))
    if not out:
        raise ProfileError(f"{pf.path}: no line fits the serving context ({context} tokens); first: {skipped[0]}")
    return out, skipped


def sample(items: list[Any], count: int, seed: int) -> list[Any]:
    """``count`` items, deterministic in ``seed``: a seeded sample without repeats when ``items`` has
    enough, else seeded shuffles of the whole list one after another (each item repeats at most once
    more than any other)."""
    rng = random.Random(f"file:{seed}")
    if count <= len(items):
        return rng.sample(items, count)
    out: list[Any] = []
    while len(out) < count:
        out += rng.sample(items, len(items))
    return out[:count]
