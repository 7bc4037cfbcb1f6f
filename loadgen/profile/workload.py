"""Prompt sets: seeded synthetic ones (short homogeneous continuations, diverse long answers,
input-grounded answers) and the user's own prompt files.

Prompts are natural text, never random token ids: random ids make draft acceptance meaningless
(https://github.com/vllm-project/vllm/issues/52536). The same seed gives the same prompts on every
machine, and both servers receive the identical list.

- ``short-homogeneous``: raw-text continuations built from a few templates that share most of their
  words (similar prompts, short outputs): the case where a draft has the best chance.
- ``long-diverse``: chat questions across varied topics and answer formats (lists, code, letters,
  explanations), long outputs.
- ``grounded``: a passage and a task whose answer reuses it (grounded.py).
- ``file``: the prompts of a JSONL or ShareGPT-style file (promptfile.py), sampled with the seed.
- ``trace``: a request trace replayed at its recorded times (trace.py), one variant per ``time_scale``.
``input_tokens`` may list several lengths (``[128, 1024]``): the workload then expands into one variant
per length, named ``<workload>@<tokens>``, each its own cell row (the context-length axis).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from tokenizers import Tokenizer

from loadgen.errors import ProfileError
from loadgen.profile.domains import WORKLOAD_DOMAINS, check_document
from loadgen.profile.grounded import grounded_prompt
from loadgen.profile.locate import is_path, locate, looked_in
from loadgen.profile.promptfile import FileEntry, fit_lengths, read_prompt_file, sample
from loadgen.profile.structured import constraint_of, constraint_problem, describe
from loadgen.profile.texts import FILLER, long_text, short_text
from loadgen.profile.tomlread import Table, read_toml
from loadgen.profile.traceworkload import scaled_name, trace_fields
from loadgen.records.protoparts import WorkloadRecord

WORKLOADS_DIR = Path("profiles/workloads")
KINDS = ("short-homogeneous", "long-diverse", "grounded", "file", "trace")


@dataclass(frozen=True)
class Workload(WorkloadRecord):
    """A prompt set (``profiles/workloads/<name>.toml``): records/protoparts.py ``WorkloadRecord``, the item of
    protocol.json's ``workloads`` it is written as, its fields in the same order (their meaning there), with
    ``kind`` (one of KINDS), ``endpoint`` (``completions`` or ``chat``) and ``output_tokens`` required. Kinds
    ``file``, ``trace``: ``path``, ``source_sha256``, ``source_lines`` (records), ``skipped`` (``line N: reason``);
    trace.py: offsets x ``time_scale``, ``block_tokens`` per hash id, card windows of ``window_s`` s, the format as
    declared (``trace_format``, traceformats.py FORMATS) and as read, ``zero_output`` and ``floored``;
    structured.py: the grammar every request sends (``constraint``; a prompt line's own replaces it) and the
    card's words for what is constrained. ``context_tokens``: the serving context (--max-model-len) if set."""

    kind: str
    endpoint: str
    output_tokens: int


def load_workload(name: str, workloads_dir: Path = WORKLOADS_DIR) -> Workload:
    """Load ``workloads_dir/<name>.toml`` strictly (one input length). Raises ProfileError."""
    variants = load_workloads(name, workloads_dir)
    if len(variants) != 1:
        raise ProfileError(f"{workloads_dir / name}.toml lists several input_tokens; use load_workloads")
    return variants[0]


def load_workloads(name: str, workloads_dir: Path = WORKLOADS_DIR, beside: Path | None = None) -> tuple[Workload, ...]:
    """Load ``workloads_dir/<name>.toml``, or the workload file ``name`` is the path of (locate.py: absolute,
    relative to the current directory, else to ``beside``, the pair file's folder), strictly: one Workload, or
    with a list ``input_tokens`` one variant ``<name>@<tokens>`` per length. A ``file`` workload's file
    (relative: to the current directory, else to the workload file's folder) is read and checked here
    (promptfile.read_prompt_file). Raises ProfileError."""
    path = locate(name, beside) if is_path(name) else workloads_dir / f"{name}.toml"
    if is_path(name) and not path.is_file():
        raise ProfileError(
            f"workload file {name!r} not found: no {looked_in(name, beside)}; give its absolute path, "
            "or one relative to the current directory or to the pair file's folder"
        )
    if not path.is_file():
        names = sorted(p.stem for p in workloads_dir.glob("*.toml"))
        close = "".join(f"did you mean {c!r}? " for c in difflib.get_close_matches(name, names, n=1))
        known = ", ".join(names) or (
            f"none in {workloads_dir.resolve()} (workload names are read from the "
            "repository's profiles/workloads/: run loadgen from the repository root)"
        )
        raise ProfileError(
            f"unknown workload {name!r}: no {path}; {close}available workloads: {known} (or give a "
            "workload file's path)"
        )
    doc = read_toml(path)
    check_document(path, doc, WORKLOAD_DOMAINS)
    top = Table(path, "", doc)
    kind = top.get("kind", str)
    if kind not in KINDS:
        close = "".join(f" (did you mean {c!r}?)" for c in difflib.get_close_matches(str(kind), KINDS, n=1))
        raise ProfileError(f"{path}: kind must be one of {', '.join(KINDS)}, got {kind!r}{close}")
    endpoint = top.get("endpoint", str, None)
    if endpoint not in (None, "completions", "chat"):
        raise ProfileError(f"{path}: endpoint must be 'completions' or 'chat', got {endpoint!r}")
    lengths = top.get("input_tokens", (int, list), None, "a positive integer or a list of them")
    if isinstance(lengths, list) and (not lengths or len(set(lengths)) != len(lengths)):
        raise ProfileError(f"{path}: input_tokens must list distinct lengths, e.g. [128, 1024], got {lengths!r}")
    if kind in ("file", "trace") and lengths is not None:
        raise ProfileError(f"{path}: a {kind} workload sends its prompts as written; remove input_tokens")
    extra, scales = _constraint_fields(top, kind), tuple[float, ...]()
    if kind == "file":
        if lengths is not None:
            raise ProfileError(f"{path}: a file workload sends its prompts as written; remove input_tokens")
        file = read_prompt_file(locate(top.get("path", str), path.parent), endpoint, path.parent)
        endpoint = file.endpoint
        extra |= {"path": file.path, "source_sha256": file.sha256, "source_lines": file.lines, "skipped": file.skipped}
        extra["constrained"] = constrained_words(extra.get("constraint"), file.entries)
    elif kind == "trace":
        endpoint, extra, scales = trace_fields(top, endpoint, path.parent)
    workload = Workload(
        name=top.get("name", str, path.stem if is_path(name) else name),
        kind=kind,
        endpoint=endpoint or "completions",
        output_tokens=top.positive_int("output_tokens"),
        input_tokens=lengths if isinstance(lengths, int) else None,
        seed=top.get("seed", int, 0),
        description=top.get("description", str, ""),
        **extra,  # type: ignore[arg-type]
    )
    top.finish()
    if not isinstance(lengths, list):
        return tuple(replace(workload, name=scaled_name(workload.name, s, scales), time_scale=s) for s in scales) or (
            workload,
        )
    return tuple(replace(workload, name=f"{workload.name}@{n}", input_tokens=n) for n in lengths)


def _constraint_fields(top: Table, kind: str) -> dict[str, object]:
    """A workload file's structured-output keys (structured.py) as Workload fields; ProfileError (exit 2) naming
    the file for a bad shape, or for a trace workload (its requests are the trace's)."""
    if problem := constraint_problem(top.data):
        raise ProfileError(f"{top.path}: {problem} (see profiles/README.md, Structured outputs)")
    found = constraint_of(top.data)
    if found is None:
        return {}
    if kind == "trace":
        raise ProfileError(f"{top.path}: a trace workload replays its requests as traced; remove {', '.join(found)}")
    top.seen.update(found)
    return {"constraint": json.dumps(found, sort_keys=True), "constrained": f"{describe(found)} on every request"}


def constrained_words(constraint: object, entries: Sequence[FileEntry]) -> str | None:
    """The card's words for a prompt file's grammar: the workload's on every line, or its lines' own (how many,
    of which kinds); None when nothing is constrained."""
    own = [e.constraint for e in entries if e.constraint]
    kinds = ", ".join(sorted({describe(json.loads(c)) for c in own}))
    if not own:
        return f"{describe(json.loads(str(constraint)))} on every request" if constraint else None
    base = f"; the others {describe(json.loads(str(constraint)))}" if constraint else ""
    return f"{kinds} on {len(own)} of {len(entries)} lines{base}"


def needs_tokenizer(workload: Workload) -> bool:
    """Whether generating ``workload`` needs the target's tokenizer (exact lengths, file lengths)."""
    return workload.input_tokens is not None or workload.kind in ("file", "trace")


@dataclass(frozen=True)
class Prompt:
    """One request's input. ``text`` for /v1/completions; ``messages`` for /v1/chat/completions."""

    prompt_id: str
    workload: str
    endpoint: str
    text: str | None
    messages: tuple[dict[str, str], ...] | None
    output_tokens: int
    #: The grammar this request sends (structured.py; canonical JSON of its field), None: unconstrained.
    constraint: str | None = None

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (one line of prompts.jsonl; ``constraint``, as its object, only when set)."""
        out = asdict(self)
        out["messages"] = list(self.messages) if self.messages is not None else None
        if self.constraint is None:
            del out["constraint"]
        else:
            out["constraint"] = json.loads(self.constraint)
        return out


def fit_to_tokens(text: str, tokens: int, tokenizer: Tokenizer, rng: random.Random) -> str:
    """``text`` lengthened with natural filler sentences, then cut at a token boundary, so that it
    encodes to exactly ``tokens`` tokens with ``tokenizer`` (special tokens included, as the server
    counts them). Raises ValueError when no cut gives the exact length."""
    while len(tokenizer.encode(text).ids) < tokens:
        text = f"{text} {rng.choice(FILLER)}"
    enc = tokenizer.encode(text)
    offsets = [o for o, special in zip(enc.offsets, enc.special_tokens_mask, strict=True) if not special]
    n_special = len(enc.ids) - len(offsets)
    # cut right after the (tokens - n_special)-th text token; boundary merges can shift the count by
    # one, so try the neighbouring cuts too
    want = tokens - n_special
    for cut in (want, want - 1, want + 1, want - 2, want + 2):
        if 1 <= cut <= len(offsets):
            candidate = text[: offsets[cut - 1][1]]
            if len(tokenizer.encode(candidate).ids) == tokens:
                return candidate
    raise ValueError(f"cannot cut {text[:40]!r}... to exactly {tokens} tokens")


def load_tokenizer(model: str) -> Tokenizer:
    """The target's own tokenizer from ``<model>/tokenizer.json`` (a local model directory).

    Raises ProfileError when the file is missing (exact input lengths need the target's tokenizer).
    """
    path = Path(model) / "tokenizer.json"
    if not path.is_file():
        raise ProfileError(
            f"input_tokens and prompt files need the target's tokenizer, but {path} does not "
            "exist; use a local model directory or remove input_tokens"
        )
    return Tokenizer.from_file(str(path))


def _file_entries(workload: Workload, tokenizer: Tokenizer) -> tuple[list[tuple[FileEntry, int, int]], list[str]]:
    pf = read_prompt_file(Path(workload.path or ""), workload.endpoint)
    if pf.sha256 != workload.source_sha256:
        raise ProfileError(
            f"{pf.path} changed since the workload was loaded (sha256 {pf.sha256[:12]}, "
            f"expected {str(workload.source_sha256)[:12]}); load the pair again"
        )
    entries, skipped = fit_lengths(pf, workload.output_tokens, tokenizer, workload.context_tokens)
    return list(entries), skipped


def resolve_file(workload: Workload, tokenizer: Tokenizer) -> Workload:
    """``workload`` (kind ``file``) with the lines skipped for the serving context added to ``skipped``.
    Raises ProfileError for a JSONL prompt longer than the serving context (promptfile.fit_lengths)."""
    _, skipped = _file_entries(workload, tokenizer)
    return replace(workload, skipped=tuple(workload.skipped) + tuple(skipped))


def _body(workload: Workload, rng: random.Random, tokenizer: Tokenizer | None) -> str:
    if workload.kind == "grounded":
        try:
            return grounded_prompt(rng, workload.input_tokens, tokenizer)[0]
        except ValueError as exc:
            raise ProfileError(f"workload {workload.name}: {exc}; raise input_tokens") from None
    body = short_text(rng) if workload.kind == "short-homogeneous" else long_text(rng)
    if workload.input_tokens is not None and tokenizer is not None:
        body = fit_to_tokens(body, workload.input_tokens, tokenizer, rng)
    return body


def generate(workload: Workload, count: int, tokenizer: Tokenizer | None = None) -> list[Prompt]:
    """``count`` prompts for ``workload``, deterministic in ``workload.seed``.

    With ``workload.input_tokens`` set, each prompt's text (for chat: the user message) encodes to
    exactly that many tokens with ``tokenizer`` (the target's own; required then, and for kind
    ``file``, whose lines are sampled with the seed: promptfile.sample). Returns a list of length
    ``count``; prompt ids are ``<workload>-<index>`` (file: ``<workload>-<index>-line<N>``).
    """
    if needs_tokenizer(workload) and tokenizer is None:
        raise ValueError(f"workload {workload.name} needs the target's tokenizer")
    is_chat = workload.endpoint == "chat"
    if workload.kind == "file" and tokenizer is not None:
        picked = sample(_file_entries(workload, tokenizer)[0], count, workload.seed)
        return [
            Prompt(
                f"{workload.name}-{i:04d}-line{e.line}",
                workload.name,
                workload.endpoint,
                None if is_chat else e.text,
                e.messages if is_chat else None,
                n_out,
                e.constraint or workload.constraint,
            )
            for i, (e, _, n_out) in enumerate(picked)
        ]
    rng = random.Random(f"{workload.kind}:{workload.seed}")
    prompts = []
    for i in range(count):
        body = _body(workload, rng, tokenizer)
        prompts.append(
            Prompt(
                prompt_id=f"{workload.name}-{i:04d}",
                workload=workload.name,
                endpoint=workload.endpoint,
                text=None if is_chat else body,
                messages=({"role": "user", "content": body},) if is_chat else None,
                output_tokens=workload.output_tokens,
                constraint=workload.constraint,
            )
        )
    return prompts


def prompts_digest(prompts: Iterable[Prompt]) -> str:
    """sha256 (hex) of the canonical JSON lines of ``prompts``: the prompt file's identity."""
    h = hashlib.sha256()
    for p in prompts:
        h.update(json.dumps(p.to_json(), sort_keys=True).encode())
        h.update(b"\n")
    return h.hexdigest()
