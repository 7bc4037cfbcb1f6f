"""What a server says about itself at start-up, as the run folder's ``servers/`` files hold it (README.md, "The run
folder"): :class:`EffectiveConfig` (``<server>-effective.json``, with its :class:`EnginePath` and the
:class:`ModeProof`; the whole file is :class:`StartupRecord`), the minimal completion's :class:`MinimalRequest`
and :class:`MinimalResponse` (``<server>-minimal.json``).

Built by serve/servers.py (``Server.effective_config``, ``wait_ready``), serve/enginepath.py
(``parse_engine_path``), serve/modeproof.py and serve/readiness.py; written by run/bench.py. Each is a frozen
:class:`~loadgen.records.cardwire.Wire`: ``to_json`` writes the keys in declared order, a field with a default
only when it differs from it (so a proof without ``/metrics`` has ``metrics_unavailable`` and one with it has
not), and ``from_json`` reads a file back checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from loadgen.records.cardwire import FIX, Wire
from loadgen.records.serverfacts import ServerFacts
from loadgen.records.wire import NUM, STR, Where, map_of, maybe, obj
from loadgen.records.wire import field as read


@dataclass(frozen=True)
class EnginePath(Wire):
    """What a startup log says of the engine path: ``async_scheduling`` True/False (None: not said),
    ``model_runner`` "V1"/"V2" (None: not said), ``fallback_reasons`` the messages (log prefix removed)
    in which vLLM turned async scheduling off or fell back to the V1 model runner, first appearance first."""

    async_scheduling: bool | None
    model_runner: str | None
    fallback_reasons: tuple[str, ...]

    @classmethod
    def of(cls, data: object) -> EnginePath:
        """The engine path of an effective record's ``engine_path`` as read, unknown (all None) for None, a
        record of older code without it, or a value of the wrong shape."""
        d = data if isinstance(data, Mapping) else {}
        reasons = d.get("fallback_reasons")
        return cls(
            d.get("async_scheduling") if isinstance(d.get("async_scheduling"), bool) else None,
            d.get("model_runner") if isinstance(d.get("model_runner"), str) else None,
            tuple(str(r) for r in reasons) if isinstance(reasons, list | tuple) else (),
        )


@dataclass(frozen=True)
class EffectiveConfig(Wire):
    """What a server says it runs: ``base_url`` (credentials redacted), ``version`` (``/version``; absent when
    it did not answer), the startup log's ``speculative_config=...`` (None: not in the log, or no log for an
    attached server), its KV-cache size in tokens, the engine path, the CUDA-graph capture ceiling, the
    configuration facts of its launch line and startup log (records/serverfacts.py; absent in older files), the
    replicas seen at start-up, its ``/v1/models`` entry and what was not read for want of a startup log."""

    base_url: str
    speculative_config_log: str | None
    kv_cache_tokens_log: int | None
    engine_path: EnginePath
    cudagraph_ceiling: int | None
    version: str | None = None
    server_facts: ServerFacts | None = None
    #: Signs that more than one server answered at its URL at start-up (measure/replicas.py; written when found).
    replicas: tuple[str, ...] = ()
    #: Its ``/v1/models`` entry's ``root``, ``owned_by`` and ``max_model_len`` (vLLM's ``ModelCard``; absent when
    #: not listed) and the facts not read for want of a startup log (an attached server without one).
    model_card: Mapping[str, Any] | None = None
    unread: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The effective record's keys in the order the file has them (``version`` second when known)."""
        out = super().to_json()
        return {k: out[k] for k in ("base_url", "version", *out) if k in out}


@dataclass(frozen=True)
class ModeProof(Wire):
    """The proof of mode (docs/vllm-notes.md): from ``/metrics`` (``spec_decode_metrics`` whether the
    ``vllm:spec_decode_*`` series are there, ``spec_positions`` the number of ``position`` labels,
    ``metric_families`` every family's name), or without it (those None and []; ``metrics_unavailable`` the
    reason, ``mode_evidence`` the lines that show the mode, ``mode_proof`` "weaker" or "unproven")."""

    spec_decode_metrics: bool | None
    spec_positions: int | None
    metric_families: tuple[str, ...]
    metrics_unavailable: str | None = None
    mode_evidence: tuple[str, ...] | None = None
    mode_proof: str | None = None


@dataclass(frozen=True)
class MinimalRequest(Wire):
    """The body of the minimal completion (serve/readiness.py): greedy, streamed, with the usage chunk and the
    token ids of each chunk (``return_token_ids``, vLLM >= 0.10.2)."""

    model: str
    prompt: str
    max_tokens: int
    temperature: float
    stream: bool
    stream_options: Mapping[str, bool]
    return_token_ids: bool


@dataclass(frozen=True)
class CompletionText(Wire):
    """One choice of a completion: its text."""

    text: str


@dataclass(frozen=True)
class MinimalResponse(Wire):
    """A streamed minimal completion folded (serve/readiness.py ``read_stream``): its text as one choice, the
    server's ``usage`` as sent (free-form; None without the usage chunk), the tokens of each content chunk
    (``chunk_tokens_exact`` False when counted 1 per chunk for want of token ids) and the ``attempts`` it took
    (absent until it succeeded)."""

    choices: tuple[CompletionText, ...]
    usage: Mapping[str, Any] | None
    chunk_tokens: tuple[int, ...]
    chunk_tokens_exact: bool
    attempts: int = 0
    system_fingerprint: str | None = None  # the answer's, when it sent one (measure/replicas.py)

    @property
    def tokens(self) -> int:
        """Tokens returned: ``usage.completion_tokens`` if given, else the chunks' sum."""
        given = (self.usage or {}).get("completion_tokens")
        return int(given or sum(self.chunk_tokens))


@dataclass(frozen=True)
class StartupRecord:
    """``<server>-effective.json`` as run/bench.py writes it, flat: the :class:`EffectiveConfig`'s keys, then
    the :class:`ModeProof`'s, then ``ready_s`` (s from launch to ready; None in a file without it) and
    ``cache_config_info`` (the labels of ``vllm:cache_config_info``, strings; empty without ``/metrics``)."""

    config: EffectiveConfig
    proof: ModeProof
    ready_s: float | None
    cache_config_info: Mapping[str, str]

    def to_json(self) -> dict[str, Any]:
        """The file's object: the config's keys, the proof's, ``ready_s``, ``cache_config_info``."""
        return {
            **self.config.to_json(),
            **self.proof.to_json(),
            "ready_s": self.ready_s,
            "cache_config_info": dict(self.cache_config_info),
        }

    @classmethod
    def from_json(cls, data: object, *, source: str) -> StartupRecord:
        """The record of a parsed file, checked (BadInput naming ``source`` and the field); keys of neither part
        are not kept."""
        where = Where(source, fix=FIX)
        d = obj(data, where)
        config, proof = EffectiveConfig.from_json(d, source=source), ModeProof.from_json(d, source=source)
        return cls(
            replace(config, keys=(), extra={}),
            replace(proof, keys=(), extra={}),
            read(d, "ready_s", maybe(NUM), where, None),
            read(d, "cache_config_info", map_of(STR), where, {}),
        )


@dataclass(frozen=True)
class Placement(Wire):
    """Where a server ran (serve/placement.py, the pair card's ``placement``): attached or launched, its URL,
    the ``CUDA_VISIBLE_DEVICES`` it was given (None: not set), its tensor parallel size and memory fraction
    (a string as the server or its flag gives it; None when neither says)."""

    attached: bool
    base_url: str | None
    cuda_visible_devices: str | None
    tensor_parallel_size: int
    gpu_memory_utilization: str | None
