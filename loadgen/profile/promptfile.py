"""Prompt files: the user's own prompts, read strictly (pure apart from reading the one file).

Two layouts, told apart by their lines:

- **JSONL prompts**: one JSON object per line, ``{"prompt": "..."}`` (/v1/completions) or
  ``{"messages": [{"role": ..., "content": ...}, ...]}`` (/v1/chat/completions), each with an optional
  ``"output_tokens"`` (a positive integer; else the workload's ``output_tokens``) and an optional
  ``"response_format"`` or ``"structured_outputs"`` (the line's grammar, profile/structured.py; a bad shape is a
  bad line).
- **ShareGPT-style conversations**: ``{"conversations": [{"from": "human", "value": ...},
  {"from": "gpt", "value": ...}, ...]}`` per line, or one JSON array of such objects (the layout of the
  public ShareGPT dumps that ``vllm bench serve --dataset-name sharegpt`` reads). The conversation's opening
  human turn is the prompt and the reply that follows it sets the output length, in the target's tokens. A
  conversation that opens with a ``system`` turn keeps it as the chat request's system message (a
  completions file cannot carry one: that line is skipped); one that opens with the assistant (or any turn
  other than system or human) is skipped with its reason, never sent in another shape.

A file that cannot serve as a workload raises ProfileError (exit 2) with one line naming every bad line
(:data:`MAX_NAMED` of them, then their count): missing, empty, a line that is not JSON, a line with no
prompt, a JSONL line with a key other than ``prompt``, ``messages`` and ``output_tokens`` (with the closest
known key, difflib: ``"output_token"`` is a typo, never a line silently given the workload's length), a
JSONL prompt whose input plus output tokens exceed the serving context (``--max-model-len``), or no usable
line at all. ShareGPT records may carry other keys (the public dumps have ``id``). Lines that cannot be used
but do not make the file wrong (a line of the other endpoint's shape, a conversation without a human turn or
a reply, one that opens with the assistant, a
ShareGPT conversation too long for the serving context, as ``vllm bench serve`` also drops them) are
skipped, counted and named (``line N: reason``), never dropped silently; the pair check refuses them unless
the pair allows skipping (``[run].allow_skipped_lines``, check/validate.py).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from loadgen.errors import ProfileError
from loadgen.profile.structured import FIELDS, constraint_of, constraint_problem
from loadgen.profile.utf8 import utf8_text

_HUMAN, _REPLY = ("human", "user"), ("gpt", "assistant", "chatgpt", "bard", "model")
_SYSTEM = ("system",)
#: The keys of a request a line describes (a prompt file's, a trace's).
PROMPT_KEYS = ("prompt", "messages", "output_tokens")
#: The keys of a JSONL line; any other is a bad line (a typo such as ``output_token`` would otherwise be ignored).
JSONL_KEYS = (*PROMPT_KEYS, *FIELDS)
#: The most bad lines one error names; the rest are counted.
MAX_NAMED = 20
_FIX = {
    "json": 'write one JSON object per line, e.g. {"prompt": "..."}',
    "prompt": 'each line needs "prompt", "messages" or "conversations"',
    "unicode": "fix or remove that line",
    "key": f"a JSONL line has only the keys {', '.join(JSONL_KEYS)}",
    "structured": "fix its structured-output field (profiles/README.md, Structured outputs)",
}


@dataclass(frozen=True)
class FileEntry:
    """One usable line: ``text`` (completions) or ``messages`` (chat); ``output_tokens`` None when the
    line gives none; ``reply`` the ShareGPT reply text (its token count becomes the output length);
    ``system`` the ShareGPT opening system turn (None without one); ``constraint`` the line's own
    ``response_format`` / ``structured_outputs`` (profile/structured.py; canonical JSON, None without)."""

    line: int
    text: str | None
    messages: tuple[dict[str, str], ...] | None
    output_tokens: int | None = None
    reply: str | None = None
    system: str | None = None
    constraint: str | None = None  # the line's own grammar (structured.py), canonical JSON


@dataclass(frozen=True)
class UserFile:
    """A file of the user's prompts or requests, read and checked: its path, the sha256 of its bytes, the
    records in it (``lines``), its ``layout`` and the ``endpoint`` its requests go to."""

    path: str
    sha256: str
    lines: int
    layout: str
    endpoint: str


@dataclass(frozen=True)
class PromptFile(UserFile):
    """A prompt file read and checked: ``layout`` ``jsonl`` or ``sharegpt``; ``skipped`` one ``line N:
    reason`` per unusable record."""

    entries: tuple[FileEntry, ...]
    skipped: tuple[str, ...]


def _records(path: Path, raw: bytes) -> tuple[list[tuple[int, Any]], list[tuple[str, str]]]:
    """The records of the file with their line numbers, and its bad lines (text, kind of fix)."""
    text = utf8_text(path, raw)  # a byte-order mark is no part of the first line
    if text.lstrip().startswith("["):
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise ProfileError(f"{path}: not a JSON array nor JSONL ({exc}); write one JSON object per line") from None
        return [(i + 1, rec) for i, rec in enumerate(doc)], []
    out: list[tuple[int, Any]] = []
    bad: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            bad.append((f"line {n} is not JSON, so the file is not JSONL", "json"))
            continue
        try:  # text no tokenizer or request can carry (a lone surrogate such as \\ud800)
            json.dumps(rec, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            bad.append(
                (f"line {n} holds text that is not valid Unicode (a lone surrogate escape such as \\ud800)", "unicode")
            )
            continue
        out.append((n, rec))
    return out, bad


def unknown_key(n: int, keys: Iterable[str], known: tuple[str, ...] = JSONL_KEYS) -> str | None:
    """``line N has an unknown key 'k' (did you mean 'k2'?)`` for the first of a JSONL record's ``keys`` outside
    ``known`` (the suggestion from difflib.get_close_matches); None when every key is known."""
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            return f"line {n} has an unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
    return None


def bad_lines_error(path: Path | str, bad: list[tuple[str, str]], fixes: dict[str, str] | None = None) -> ProfileError:
    """One ProfileError line naming the bad lines of ``path`` (text, kind of fix; :data:`MAX_NAMED` named, the rest
    counted) and each kind's fix (``fixes`` adds kinds to the module's own)."""
    fix = {**_FIX, **(fixes or {})}
    named = "; ".join(text for text, _ in bad[:MAX_NAMED])
    more = f"; and {len(bad) - MAX_NAMED} more" if len(bad) > MAX_NAMED else ""
    head = f"{path}: " if len(bad) == 1 else f"{path}: {len(bad)} bad lines: "
    how = "; ".join(dict.fromkeys(fix[kind] for _, kind in bad))
    return ProfileError(f"{head}{named}{more}; {how}")


def _sharegpt(n: int, conversation: Iterable[object]) -> FileEntry | str:
    """The entry of a ShareGPT line's ``conversations`` (an optional opening system turn, then a human turn and
    its reply), or the reason it is skipped (``line N: ...``)."""
    turns = [t for t in conversation if isinstance(t, dict)]
    system = turns[0].get("value") if turns and turns[0].get("from") in _SYSTEM else None
    first = 1 if system is not None else 0
    if system is not None and (not isinstance(system, str) or not system.strip()):
        return f"line {n}: an empty system turn"
    if not any(t.get("from") in _HUMAN for t in turns):
        return f"line {n}: no human turn"
    opener = turns[first].get("from") if first < len(turns) else None
    if opener not in _HUMAN:
        after = "after its system turn " if system is not None else ""
        return (
            f"line {n}: opens {after}with a {opener!r} turn, not a human one (a request cannot start with "
            "the assistant's words)"
        )
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
    grammar = json.dumps(found, sort_keys=True) if (found := constraint_of(rec)) else None
    if shape == "completions":
        if not isinstance(rec["prompt"], str) or not rec["prompt"]:
            return f"line {n}: prompt is not a non-empty string"
        return FileEntry(n, rec["prompt"], None, out, constraint=grammar)
    msgs = rec["messages"]
    if not (
        isinstance(msgs, list)
        and msgs
        and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in msgs
        )
    ):
        return f'line {n}: messages must be a non-empty list of {{"role", "content"}} strings'
    return FileEntry(
        n, None, tuple({"role": m["role"], "content": m["content"]} for m in msgs), out, constraint=grammar
    )


def _shaped(got: FileEntry | str, endpoint: str) -> FileEntry | str:
    """A ShareGPT entry in ``endpoint``'s shape: chat messages (the system turn first, when there is one), or
    the completions text; a system turn on completions is skipped with its reason (no system message there)."""
    if isinstance(got, str):
        return got
    if endpoint == "chat":
        system = ({"role": "system", "content": got.system},) if got.system is not None else ()
        return FileEntry(
            got.line, None, (*system, {"role": "user", "content": got.text or ""}), None, got.reply, got.system
        )
    if got.system is not None:
        return (
            f'line {got.line}: opens with a system turn, which a completions prompt cannot carry; use endpoint = "chat"'
        )
    return got


def read_prompt_file(path: Path, endpoint: str | None = None, beside: Path | None = None) -> PromptFile:
    """Read ``path`` (JSONL prompts or ShareGPT-style conversations; see the module docstring).

    ``endpoint``: ``completions`` or ``chat`` (None: the shape of the first record; ShareGPT: chat).
    ``beside``: the workload file's folder, named in the not-found line (profile/locate.py). Raises
    ProfileError (one line naming every bad line) for a missing, empty or non-JSONL file, records with no prompt
    or an unknown key, or a file with no usable line.
    """
    if not path.is_file():
        where = f" nor {(beside / path).absolute()}" if beside is not None and not path.is_absolute() else ""
        raise ProfileError(
            f"{path}: prompt file not found{where}; set path to a JSONL file (absolute, or relative to "
            "the working directory or the workload file's folder), e.g. "
            "profiles/data/prompts-completions.jsonl"
        )
    raw = path.read_bytes()
    records, bad = _records(path, raw)
    if not records and not bad:
        raise ProfileError(f"{path}: the prompt file is empty; write one JSON object per line")
    for n, rec in records:
        if not isinstance(rec, dict) or not ({"prompt", "messages", "conversations"} & rec.keys()):
            typo = unknown_key(n, rec, (*JSONL_KEYS, "conversations")) if isinstance(rec, dict) else None
            hint = f" ({typo.split(' has an ', 1)[1]})" if typo and "did you mean" in typo else ""
            bad.append((f"line {n} has no prompt{hint}", "prompt"))
        elif "conversations" not in rec and (problem := constraint_problem(rec)) is not None:
            bad.append((f"line {n}: {problem}", "structured"))
        elif "conversations" not in rec and (typo := unknown_key(n, rec)) is not None:
            bad.append((typo, "key"))
    if bad:
        raise bad_lines_error(path, sorted(bad, key=lambda b: int(b[0].split()[1].rstrip(":"))))
    layout = "sharegpt" if "conversations" in records[0][1] else "jsonl"
    if endpoint is None:
        endpoint = "completions" if "prompt" in records[0][1] else "chat"
    entries: list[FileEntry] = []
    skipped: list[str] = []
    for n, rec in records:
        if ("conversations" in rec) != (layout == "sharegpt"):
            got: FileEntry | str = f"line {n}: mixes ShareGPT conversations and JSONL prompts"
        elif layout == "sharegpt":
            got = _shaped(_sharegpt(n, rec["conversations"]), endpoint)
        else:
            got = _jsonl(path, n, rec, endpoint)
        (skipped.append(got) if isinstance(got, str) else entries.append(got))
    if not entries:
        raise ProfileError(f"{path}: no usable line ({len(skipped)} skipped; first: {skipped[0]}); fix the file")
    return PromptFile(
        str(path), hashlib.sha256(raw).hexdigest(), len(records), layout, endpoint, tuple(entries), tuple(skipped)
    )


def input_tokens(entry: FileEntry, tokenizer: Tokenizer) -> int:
    """Tokens of ``entry``'s prompt with ``tokenizer``: the text, or for chat the sum over the messages'
    contents (the chat template adds a few more, which this count leaves out)."""
    if entry.text is not None:
        return len(tokenizer.encode(entry.text).ids)
    return sum(len(tokenizer.encode(m["content"]).ids) for m in entry.messages or ())


def fit_lengths(
    pf: PromptFile, default_output: int, tokenizer: Tokenizer, context: int | None
) -> tuple[list[tuple[FileEntry, int, int]], list[str]]:
    """(entry, input tokens, output tokens) per usable entry, and the newly skipped lines.

    The output length is the line's ``output_tokens``, the ShareGPT reply's token count, or
    ``default_output``. With ``context`` (the serving context, ``--max-model-len``): JSONL prompts whose
    input + output exceeds it raise one ProfileError naming every such line; a ShareGPT conversation is skipped.
    """
    out, skipped, too_long = [], [], []
    for e in pf.entries:
        n_in = input_tokens(e, tokenizer)
        n_out = (
            e.output_tokens
            if e.output_tokens is not None
            else len(tokenizer.encode(e.reply, add_special_tokens=False).ids)
            if e.reply is not None
            else default_output
        )
        if context is not None and n_in + max(n_out, 1) > context:
            why = (
                f"line {e.line}: {n_in} prompt + {n_out} output tokens exceed the serving context "
                f"({context} tokens, --max-model-len)"
            )
            if pf.layout == "sharegpt":
                skipped.append(why)
                continue
            too_long.append((why, "context"))
            continue
        out.append((e, n_in, max(n_out, 1)))
    if too_long:
        raise bad_lines_error(
            pf.path,
            too_long,
            {"context": "shorten the prompt or its output_tokens, or raise --max-model-len in [engine].args"},
        )
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
