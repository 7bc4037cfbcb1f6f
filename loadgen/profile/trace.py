"""Trace files: the user's traffic as it arrived, one request per JSONL line (pure apart from reading the file).

Two line shapes, one per file:

- **Mooncake** (the trace format of Mooncake, https://github.com/kvcache-ai/Mooncake, FAST'25 traces, which
  AIPerf also replays): ``{"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids":
  [int, ...]}``; ``hash_ids`` (optional) names the request's prompt blocks of ``block_tokens`` tokens each
  (Mooncake's block is 512 tokens): two requests whose first ``n`` hashes agree share their first
  ``n * block_tokens`` prompt tokens, the prefix-cache sharing of production;
- **prompt lines** (loadgen's prompt-file lines, profile/promptfile.py, with a ``timestamp``):
  ``{"timestamp": ms, "prompt": "..."}`` or ``{"timestamp": ms, "messages": [...]}``, each with an optional
  ``output_tokens``.

``timestamp`` is in milliseconds (any origin); a request is due ``(timestamp - first timestamp) / 1000 *
time_scale`` seconds after the replay starts (``time_scale`` 0.5 replays twice as fast). Lines are sorted by
timestamp (stable). A line that cannot be read (not JSON, no or a negative timestamp, a length not an integer
in 1..MAX_TOKENS, ``hash_ids`` not integers, a line of the other shape), or a span over 30 days, raises ProfileError
naming it. Lines that are fine but cannot be sent here are skipped and named (``line N: reason``): a prompt
line of the other endpoint's shape, a request whose input plus output exceeds the serving context
(``--max-model-len``).

Mooncake prompts are natural words, never random token ids (profile/workload.py): every word is one token of
the target's tokenizer after a space, so a block of ``block_tokens`` words is exactly that many tokens and
blocks concatenate without merging; the same hash gives the same words, on every server and every run.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from loadgen.errors import ProfileError
from loadgen.profile import traceformats as formats
from loadgen.profile.domains import MAX_TOKENS
from loadgen.profile.promptfile import PROMPT_KEYS, UserFile, unknown_key
from loadgen.profile.texts import WORDS
from loadgen.profile.utf8 import utf8_text

#: Mooncake's prompt block (tokens per hash id): 512 (Mooncake's trace description, FAST'25 traces README).
MOONCAKE_BLOCK_TOKENS = 512
MOONCAKE, PROMPTS = "mooncake", "prompts"
KEYS = ("timestamp", "input_length", "output_length", "hash_ids", *PROMPT_KEYS)  # a line's keys, Mooncake's first
EXAMPLE = '{"timestamp": 0, "input_length": 512, "output_length": 64}'
#: The card's time window over a replay, s (docs/metrics.md "Trace replay").
WINDOW_S = 30.0
#: The longest trace, ms (30 days: longer is timestamps of two origins); a line's lengths: domains.MAX_TOKENS (10M).
MAX_SPAN_MS = 30 * 86_400_000


@dataclass(frozen=True)
class TraceEntry:
    """One request of a trace: its ``line``, ``timestamp_ms``; Mooncake: ``input_length``, ``output_length``
    (tokens) and ``hash_ids``; prompt lines: ``text`` (completions) or ``messages`` (chat) and an optional
    ``output_length``."""

    line: int
    timestamp_ms: float
    input_length: int | None = None
    output_length: int | None = None
    hash_ids: tuple[int, ...] = ()
    text: str | None = None
    messages: tuple[dict[str, str], ...] | None = None


@dataclass(frozen=True)
class TraceFile(UserFile):
    """A trace read and checked: ``layout`` ``mooncake`` or ``prompts``; ``lines`` the records in the file;
    ``entries`` sorted by timestamp; ``skipped`` one ``line N: reason`` per record left out; ``format`` the format
    it was read in (traceformats.FORMATS, never ``auto``: the declared one, or the one detected); ``floored`` one
    ``line N: reason`` per request of 0 output tokens sent with the declared floor (``zero_output = N``)."""

    entries: tuple[TraceEntry, ...]
    skipped: tuple[str, ...]
    format: str = MOONCAKE
    floored: tuple[str, ...] = ()


#: What a reader of one format returns: the entries, the bad lines, the skipped lines, the floored lines and the
#: number of records (each list of ``line N: reason``).
Read = tuple[list[TraceEntry], list[str], list[str], list[str], int]


def _positive(path: Path, n: int, value: object, key: str, required: bool) -> int | None:
    """Line ``n``'s ``key`` (its ``value``, None when absent): a positive token count; ProfileError otherwise."""
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKENS:
        raise ProfileError(
            f"{path}: line {n}: {key} must be a positive integer (tokens) up to {MAX_TOKENS:,}, got "
            f"{value!r}; fix or remove that line"
        )
    return value


def _entry(path: Path, n: int, rec: Any, layout: str) -> TraceEntry:
    """The entry of line ``n`` (a JSON value) of a ``layout`` trace; ProfileError naming the line otherwise."""
    if not isinstance(rec, dict):
        raise ProfileError(f"{path}: line {n} is not a JSON object; write one request per line")
    ts = rec.get("timestamp")
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts) or ts < 0:
        close = difflib.get_close_matches("timestamp", [str(k) for k in rec], n=1) if ts is None else []
        raise ProfileError(
            f"{path}: line {n}: timestamp must be a number of milliseconds >= 0, got {ts!r}"
            + "".join(f" (the line has {c!r}: did you mean 'timestamp'?)" for c in close)
        )
    shape = MOONCAKE if "input_length" in rec else PROMPTS if {"prompt", "messages"} & rec.keys() else None
    if shape != MOONCAKE and (typo := unknown_key(n, rec, ("timestamp", *PROMPT_KEYS) if shape else KEYS)):
        raise ProfileError(
            f"{path}: {typo}; a trace line has {', '.join(KEYS[:4])} (Mooncake) or timestamp, {', '.join(PROMPT_KEYS)}"
        )  # a Mooncake line may carry more
    if shape != layout:
        want = "input_length/output_length (Mooncake)" if layout == MOONCAKE else "prompt or messages"
        raise ProfileError(
            f"{path}: line {n} has no {want}"
            + (
                " like the first line; one trace holds one line shape"
                if shape
                else f"; write one request per line, e.g. {EXAMPLE}"
            )
        )
    if layout == PROMPTS:
        text, msgs = rec.get("prompt"), rec.get("messages")
        if text is not None and (not isinstance(text, str) or not text):
            raise ProfileError(f"{path}: line {n}: prompt must be a non-empty string")
        if msgs is not None and not (
            isinstance(msgs, list)
            and msgs
            and all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                for m in msgs
            )
        ):
            raise ProfileError(f'{path}: line {n}: messages must be a non-empty list of {{"role", "content"}}')
        messages = tuple({"role": m["role"], "content": m["content"]} for m in msgs) if msgs else None
        out = _positive(path, n, rec.get("output_tokens"), "output_tokens", False)
        return TraceEntry(n, float(ts), None, out, (), text, messages)
    hashes = rec.get("hash_ids", [])
    if not isinstance(hashes, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in hashes):
        raise ProfileError(f"{path}: line {n}: hash_ids must be a list of integers, got {hashes!r}")
    return TraceEntry(
        n,
        float(ts),
        _positive(path, n, rec.get("input_length"), "input_length", True),
        _positive(path, n, rec.get("output_length"), "output_length", True),
        tuple(hashes),
    )


def _jsonl(path: Path, text: str, fmt: str, zero: str | int) -> Read:
    """The entries of a JSONL trace, its bad, skipped and floored lines (``line N: reason``) and its records."""
    entries: list[TraceEntry] = []
    bad: list[str] = []
    skipped: list[str] = []
    floored: list[str] = []
    records = 0
    layout = MOONCAKE if fmt == MOONCAKE else PROMPTS
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        records += 1
        try:
            rec = json.loads(line)
            if layout == MOONCAKE and isinstance(rec, dict) and rec.get("output_length") == 0:
                if zero == "skip":
                    skipped.append(f'line {n}: 0 output tokens (zero_output = "skip")')
                    continue
                if zero == "refuse":
                    bad.append(formats.zero_line(n))
                    continue
                rec = {**rec, "output_length": zero}
                floored.append(formats.floor_line(n, int(zero)))
            entries.append(_entry(path, n, rec, layout))
        except (ValueError, ProfileError) as exc:  # not JSON, or a ProfileError naming the line
            why = str(exc).removeprefix(f"{path}: ")
            bad.append(why if isinstance(exc, ProfileError) else f"line {n} is not JSON (e.g. {EXAMPLE})")
    return entries, bad, skipped, floored, records


def _csv(path: Path, text: str, fmt: str, zero: str | int) -> Read:
    """The entries of a CSV trace (profile/traceformats.py), its bad, skipped and floored lines and its rows."""
    rows, bad, count = formats.csv_rows(str(path), text, fmt)
    entries, skipped, floored = [], [], []
    for line, ts, n_in, n_out in rows:
        if n_out == 0 and zero == "skip":
            skipped.append(f'line {line}: 0 output tokens (zero_output = "skip")')
        elif n_out == 0 and zero == "refuse":
            bad.append(formats.zero_line(line))
        else:
            entries.append(TraceEntry(line, ts, n_in, n_out if n_out else int(zero)))
            floored += [] if n_out else [formats.floor_line(line, int(zero))]
    return entries, sorted(bad, key=lambda b: int(b.split()[1].rstrip(":"))), skipped, floored, count


def read_trace(path: Path, endpoint: str | None = None, fmt: str = "auto", zero: str | int = "refuse") -> TraceFile:
    """Read ``path`` (module docstring) in format ``fmt`` (profile/traceformats.py ``FORMATS``; ``auto``: detected).
    ``endpoint``: ``completions`` or ``chat`` (None: chat for a first prompt line with messages, else
    completions); ``zero``: what a request of 0 output tokens becomes (traceformats ``zero_output``; each one sent
    with a floor is named in ``floored``). Raises
    ProfileError (one line) for a missing or empty file, bad lines (every one counted, the first few named), or
    a file whose every line is skipped."""
    if not path.is_file():
        raise ProfileError(
            f"{path}: trace file not found; set path to a trace (Mooncake JSONL, an Azure or BurstGPT CSV; relative "
            "to the working directory or the workload file), e.g. profiles/data/trace-example.jsonl"
        )
    raw = path.read_bytes()
    text = utf8_text(path, raw)
    if not text.strip():
        raise ProfileError(f"{path}: the trace is empty; write one request per line")
    fmt = formats.detect(str(path), text) if fmt == "auto" else fmt
    read = _csv if fmt in formats.COLUMNS else _jsonl
    entries, bad, skipped, floored, records = read(path, text, fmt, zero)
    if bad:
        raise formats.bad_lines(str(path), bad, records)
    layout = PROMPTS if fmt == PROMPTS else MOONCAKE
    endpoint = endpoint or (
        "chat" if layout == PROMPTS and entries and entries[0].messages is not None else "completions"
    )
    skipped += [
        f"line {e.line}: a {'chat' if e.messages else 'completions'} line in a {endpoint} trace"
        for e in entries
        if layout == PROMPTS and (e.messages is not None) != (endpoint == "chat")
    ]
    kept = [e for e in entries if layout == MOONCAKE or (e.messages is not None) == (endpoint == "chat")]
    if not kept:
        raise ProfileError(f"{path}: no usable line ({len(skipped)} skipped; first: {skipped[0]}); fix the trace")
    kept.sort(key=lambda e: e.timestamp_ms)
    if (span := kept[-1].timestamp_ms - kept[0].timestamp_ms) > MAX_SPAN_MS:
        raise ProfileError(
            f"{path}: the trace spans {span / 86_400_000:,.0f} days (line {kept[0].line} to line "
            f"{kept[-1].line}), over 30; give every timestamp in milliseconds from one origin"
        )
    sha = hashlib.sha256(raw).hexdigest()
    return TraceFile(str(path), sha, records, layout, endpoint, tuple(kept), tuple(skipped), fmt, tuple(floored))


def offsets_s(entries: tuple[TraceEntry, ...] | list[TraceEntry], time_scale: float) -> tuple[float, ...]:
    """Each entry's send offset in seconds after the first: ``(timestamp - first) / 1000 * time_scale``."""
    if not entries:
        return ()
    t0 = entries[0].timestamp_ms
    return tuple((e.timestamp_ms - t0) / 1000.0 * time_scale for e in entries)


def one_token_words(tokenizer: Tokenizer) -> tuple[str, ...]:
    """The words of the built-in list that encode to exactly one token after a space with ``tokenizer``.
    Raises ProfileError when fewer than 16 do (no natural text of exact length can be built)."""
    words = tuple(dict.fromkeys(w for w in WORDS if len(tokenizer.encode(" " + w, add_special_tokens=False).ids) == 1))
    if len(words) < 16:
        raise ProfileError(
            f"the target's tokenizer encodes only {len(words)} common English words as one token; "
            "a Mooncake trace needs at least 16 (use prompt lines with a timestamp instead)"
        )
    return words


def block_words(hash_id: int, block_tokens: int, words: tuple[str, ...], seed: int) -> list[str]:
    """The first ``block_tokens`` words of prompt block ``hash_id`` (seeded by ``seed`` and the hash alone: fewer
    words are a prefix of more)."""
    rng = random.Random(f"trace-block:{seed}:{hash_id}")
    return [rng.choice(words) for _ in range(block_tokens)]


def mooncake_text(entry: TraceEntry, block_tokens: int, words: tuple[str, ...], seed: int, n_special: int) -> str:
    """The prompt text of a Mooncake entry: its hash blocks' words in order, cut to ``input_length -
    n_special`` words (the tokenizer's special tokens complete the length), then words of its own (seeded
    by its line) up to that length. Each word is one token, so the text is exactly ``input_length`` tokens."""
    want = max((entry.input_length or 1) - n_special, 1)
    out: list[str] = []
    for h in entry.hash_ids:
        if len(out) >= want:
            break
        out += block_words(h, min(block_tokens, want - len(out)), words, seed)
    rng = random.Random(f"trace-tail:{seed}:{entry.line}")
    out = out[:want] + [rng.choice(words) for _ in range(want - len(out))]
    return "".join(" " + w for w in out)


def specials_added(tokenizer: Tokenizer) -> int:
    """Special tokens ``tokenizer`` adds around a text (a BOS, say), as the server counts them."""
    return len(tokenizer.encode("the").ids) - len(tokenizer.encode("the", add_special_tokens=False).ids)


@dataclass(frozen=True)
class TraceRequest:
    """One request ready to send: its trace ``line``, ``offset_s`` (s after the first, time-scaled), the
    ``text`` (completions) or ``messages`` (chat) and ``output_tokens``."""

    line: int
    offset_s: float
    text: str | None
    messages: tuple[dict[str, str], ...] | None
    output_tokens: int


@dataclass(frozen=True)
class Replay:
    """How a trace is replayed (the workload's keys): ``time_scale`` (offsets multiplied by it),
    ``block_tokens`` (tokens per hash id), ``seed`` (the words of blocks and tails), ``output_tokens`` (for
    prompt lines without one), ``context_tokens`` (the serving context, None: unchecked)."""

    time_scale: float = 1.0
    block_tokens: int = MOONCAKE_BLOCK_TOKENS
    seed: int = 0
    output_tokens: int = 1
    context_tokens: int | None = None


def _input_tokens(e: TraceEntry, tokenizer: Tokenizer) -> int:
    if e.input_length is not None:
        return e.input_length
    if e.text is not None:
        return len(tokenizer.encode(e.text).ids)
    return sum(len(tokenizer.encode(m["content"]).ids) for m in e.messages or ())


def trace_requests(trace: TraceFile, replay: Replay, tokenizer: Tokenizer) -> tuple[list[TraceRequest], list[str]]:
    """The requests of ``trace`` in send order with their offsets, and the lines skipped for the serving
    context (``line N: reason``). Mooncake lines become exact-length natural text (:func:`mooncake_text`);
    for chat, the text is the user message. Raises ProfileError when no line fits the serving context."""
    words = one_token_words(tokenizer) if trace.layout == MOONCAKE else ()
    n_special = specials_added(tokenizer)
    out, skipped = [], []
    for e, offset in zip(trace.entries, offsets_s(trace.entries, replay.time_scale), strict=True):
        n_out = e.output_length or replay.output_tokens
        n_in = _input_tokens(e, tokenizer)
        if replay.context_tokens is not None and n_in + n_out > replay.context_tokens:
            skipped.append(
                f"line {e.line}: {n_in} prompt + {n_out} output tokens exceed the serving context "
                f"({replay.context_tokens} tokens, --max-model-len)"
            )
            continue
        text, messages = e.text, e.messages
        if trace.layout == MOONCAKE:
            body = mooncake_text(e, replay.block_tokens, words, replay.seed, n_special)
            text, messages = (None, ({"role": "user", "content": body},)) if trace.endpoint == "chat" else (body, None)
        out.append(TraceRequest(e.line, offset, text, messages, n_out))
    if not out:
        raise ProfileError(
            f"{trace.path}: no line fits the serving context ({replay.context_tokens} tokens); first: {skipped[0]}"
        )
    return out, skipped
