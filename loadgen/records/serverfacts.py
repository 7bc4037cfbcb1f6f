"""The configuration facts of one vLLM server that change what a comparison measures (docs/vllm-notes.md, "What
loadgen reads of a server's configuration"): :class:`ServerFacts`, the ``server_facts`` of
``servers/<server>-effective.json``, and its two readers, :meth:`ServerFacts.from_args` (the launch line loadgen
built, or ``[engine].args`` before launch) and :meth:`ServerFacts.from_log` (a startup log: the config line of
``vllm/v1/engine/core.py`` ``... tensor_parallel_size=2, data_parallel_size=1, ... enforce_eager=False ...`` and the
``non-default args: {'max_num_seqs': 4, ...}`` line of ``vllm/entrypoints/utils.py`` ``log_non_default_args``).

Fields (None: not said, so vLLM's default applies): ``stream_interval`` (tokens buffered per streamed chunk,
``--stream-interval``, vLLM 0.12+, default 1), ``max_num_seqs`` (requests batched at once, ``--max-num-seqs``),
``max_num_batched_tokens`` (tokens per step), ``data_parallel_size`` / ``tensor_parallel_size``,
``api_server_count`` (``--api-server-count``; above 1 vLLM serves ``/metrics`` in Prometheus multiprocess mode,
``vllm/entrypoints/cli/serve.py``), ``enforce_eager`` (every step eager: no CUDA graphs), ``source`` where each
fact was read, by field name (``"launch line"``, ``"startup log"``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace

from loadgen.records.cardwire import Wire
from loadgen.util.argv import flag_value, vllm_int

#: Field -> the launch flags that set it (canonical first; vLLM's short aliases after).
FLAGS: Mapping[str, tuple[str, ...]] = {
    "stream_interval": ("--stream-interval",),
    "max_num_seqs": ("--max-num-seqs",),
    "max_num_batched_tokens": ("--max-num-batched-tokens",),
    "data_parallel_size": ("--data-parallel-size", "-dp"),
    "tensor_parallel_size": ("--tensor-parallel-size", "-tp"),
    "api_server_count": ("--api-server-count",),
}
_INT_FIELDS = tuple(FLAGS)


@dataclass(frozen=True)
class ServerFacts(Wire):
    """One server's configuration facts (module docstring); every field optional."""

    stream_interval: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    data_parallel_size: int | None = None
    tensor_parallel_size: int | None = None
    api_server_count: int | None = None
    enforce_eager: bool | None = None
    source: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_args(cls, args: Sequence[str]) -> ServerFacts:
        """The facts a launch line states (``--flag N`` or ``--flag=N``, the last one winning as in argparse;
        ``--enforce-eager``)."""
        found: dict[str, object] = {}
        for name, names in FLAGS.items():
            value = vllm_int(flag_value(args, *names))
            if value is not None:
                found[name] = value
        if "--enforce-eager" in args:
            found["enforce_eager"] = True
        return cls(**found, source={k: "launch line" for k in found})  # type: ignore[arg-type]

    @classmethod
    def from_log(cls, log: str) -> ServerFacts:
        """The facts a startup log states (module docstring): ``name=N`` in the engine's config line or
        ``'name': N`` in the non-default-args line; the last mention wins."""
        found: dict[str, object] = {}
        for name in _INT_FIELDS:
            for match in re.finditer(rf"\b{name}(?:=|'?\s*:\s*)(\d+)\b", log):
                found[name] = int(match.group(1))
        eager = re.findall(r"\benforce_eager(?:=|'?\s*:\s*)(True|False)\b", log)
        if eager:
            found["enforce_eager"] = eager[-1] == "True"
        return cls(**found, source={k: "startup log" for k in found})  # type: ignore[arg-type]

    def merged(self, other: ServerFacts) -> ServerFacts:
        """These facts, each one missing here taken from ``other`` (with its source)."""
        more = {
            f.name: getattr(other, f.name)
            for f in fields(self)
            if f.name in (*_INT_FIELDS, "enforce_eager")
            if getattr(self, f.name) is None and getattr(other, f.name) is not None
        }
        return replace(self, **more, source={**self.source, **{k: other.source.get(k, "") for k in more}})

    def said(self) -> bool:
        """True when any fact is known."""
        return bool(self.source)


_WORDS = {
    "stream_interval": "stream interval",
    "max_num_seqs": "max-num-seqs",
    "max_num_batched_tokens": "max-num-batched-tokens",
    "data_parallel_size": "data-parallel size",
    "tensor_parallel_size": "tensor-parallel size",
    "api_server_count": "API servers",
    "enforce_eager": "enforce eager",
}


def facts_line(facts: ServerFacts | None) -> str | None:
    """The card's line for one server's configuration facts (its effective record's ``server_facts``), each with
    where it was read, and what a multiprocess ``/metrics`` (``api_server_count`` above 1) leaves unchecked; None
    when the record has none."""
    if facts is None or not facts.to_json():
        return None
    shown = [
        f"{word} {getattr(facts, name)} ({facts.source.get(name, '?')})"
        for name, word in _WORDS.items()
        if getattr(facts, name) is not None
    ]
    line = "server configuration read: " + ", ".join(shown)
    if (facts.api_server_count or 1) > 1:
        line += (
            "; /metrics in Prometheus multiprocess mode (more than one API server): no process_start_time_seconds "
            "and no *_created series, so the restart and replica checks by process start time were unavailable "
            "(counter resets still count)"
        )
    return line


@dataclass(frozen=True)
class ServerView:
    """What the card's cause notes read of one server (measure/causes.py), from the card's ``servers[role]`` entry:
    its configuration ``facts``, the startup-log ``fallback_reasons`` of its engine path (records/server.py
    ``EnginePath``), ``log_read`` whether a startup log was read at all (its echoed speculative config or a model
    runner is known), and ``kv_cache_tokens`` (its resources ``after_load``, else ``ready``; None: unknown). Built
    by records/runparts.py ``ServerFiles.view``."""

    facts: ServerFacts = field(default_factory=ServerFacts)
    fallback_reasons: tuple[str, ...] = ()
    log_read: bool = False
    kv_cache_tokens: int | None = None


@dataclass(frozen=True)
class Sighting:
    """One thing the server at one URL said of who answered (measure/replicas.py reads them in order): a ``/metrics``
    scrape's ``process_start_time_seconds`` (Unix s) and ``vllm:request_success_total`` (requests, summed over its
    series), or an answer's ``system_fingerprint``; None where that answer did not say."""

    process_start_s: float | None = None
    requests_total: float | None = None
    fingerprint: str | None = None
