"""One server's saved files as the pair card copies them (records/runparts.py ``ServerFiles``), each read back as a
typed record whatever loadgen version wrote it: :class:`EffectiveFile` (``servers/<server>-effective.json``, the
flat records/server.py ``StartupRecord``), :class:`UsageMoments` (``servers/<server>-resources.json``: the
records/usage.py ``ServerUsage`` when the server was ready and after its load) and :class:`TeardownFile`
(``servers/<server>-teardown.json``: records/usage.py ``Teardown`` of a launched server, ``AttachedTeardown`` of
an attached one, or ``{}`` when the stop left no report). Written by run/bench.py through store/serverfiles.py.

Each is a :class:`~loadgen.records.cardwire.Wire` record: ``from_json`` checks every field (a value of another kind
is one line naming the file and the field, exit 2) and keeps the keys it read in their order, with any key the type
does not name, so ``to_json`` gives the file (and the card's copy of it) back byte for byte. A field is optional
where the file's writer leaves it out (a server stopped before its load has no ``after_load``) or where a file of
older code lacks it (an effective file of older code has no ``engine_path``, a teardown of older code is ``{}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from loadgen.records.cardwire import Wire
from loadgen.records.server import EnginePath
from loadgen.records.serverfacts import ServerFacts
from loadgen.records.usage import GpuMemory, GpuSettle, ServerUsage


def _doc(text: str) -> dict[str, str]:
    return {"doc": text}


@dataclass(frozen=True, kw_only=True)
class EffectiveFile(Wire):
    """``servers/<server>-effective.json`` as saved (records/server.py ``StartupRecord``, flat): what the server says
    it runs (``EffectiveConfig``'s keys), the proof of its mode (``ModeProof``'s), ``ready_s`` and
    ``cache_config_info``. ``engine_path`` and ``cudagraph_ceiling`` are optional because files of older code lack
    them, ``version``, ``server_facts``, ``replicas``, ``model_card``, ``unread`` and the proof without ``/metrics``
    because the writer leaves them out when it has none."""

    base_url: str = field(metadata=_doc("the server's API URL, credentials redacted"))
    version: str | None = field(default=None, metadata=_doc("vLLM's GET /version; absent when it did not answer"))
    speculative_config_log: str | None = field(
        metadata=_doc("the startup log's speculative_config=...; null: not in the log, or no log")
    )
    kv_cache_tokens_log: int | None = field(metadata=_doc("the KV-cache size in tokens the startup log states"))
    engine_path: EnginePath | None = field(
        default=None, metadata=_doc("async scheduling and model runner (serve/enginepath.py); absent in older files")
    )
    cudagraph_ceiling: int | None = field(
        default=None,
        metadata=_doc("the largest batch captured in a CUDA graph, from the startup log; absent in older files"),
    )
    server_facts: ServerFacts | None = field(
        default=None, metadata=_doc("the launch line's and startup log's configuration facts (records/serverfacts.py)")
    )
    replicas: tuple[str, ...] = field(
        default=(), metadata=_doc("signs of more than one server at its URL at start-up (measure/replicas.py)")
    )
    model_card: Mapping[str, str | int] | None = field(
        default=None, metadata=_doc("its GET /v1/models entry's root, owned_by and max_model_len, as sent")
    )
    unread: tuple[str, ...] = field(default=(), metadata=_doc("facts not read for want of a startup log"))
    spec_decode_metrics: bool | None = field(metadata=_doc("whether /metrics has the vllm:spec_decode_* series"))
    spec_positions: int | None = field(metadata=_doc("the number of position labels on vllm:spec_decode_* (K)"))
    metric_families: tuple[str, ...] = field(metadata=_doc("every metric family /metrics exposed at start-up"))
    metrics_unavailable: str | None = field(default=None, metadata=_doc("why /metrics was not read, when it was not"))
    mode_evidence: tuple[str, ...] | None = field(
        default=None, metadata=_doc("without /metrics: the lines that show the mode")
    )
    mode_proof: str | None = field(default=None, metadata=_doc("without /metrics: weaker or unproven"))
    ready_s: float | None = field(metadata=_doc("seconds from launch to ready"))
    cache_config_info: Mapping[str, str] = field(
        metadata=_doc("the labels of vllm:cache_config_info, strings; empty without /metrics")
    )


@dataclass(frozen=True)
class UsageMoments(Wire):
    """``servers/<server>-resources.json``: the server's usage (processes, CPU RSS and GPU memory in bytes, KV-cache
    capacity in tokens from ``vllm:cache_config_info`` and the startup log) when it answered ready, and after its
    load (absent when the server stopped before it; serve/resources.py ``usage``)."""

    ready: ServerUsage = field(metadata={"doc": "when the server answered ready (run/bench.py open)"})
    after_load: ServerUsage | None = field(
        default=None, metadata={"doc": "after its load, before the stop; absent when it stopped before"}
    )

    def latest(self) -> ServerUsage:
        """The usage after load, else when ready (what the card's ``resources`` shows)."""
        return self.after_load or self.ready


@dataclass(frozen=True, kw_only=True)
class TeardownFile(Wire):
    """``servers/<server>-teardown.json`` whichever server it was: a launched one's (records/usage.py ``Teardown``:
    the PIDs that survived SIGKILL, its GPU memory after the stop from NVML, bytes, and whether the devices' memory
    came back), an attached one's (``AttachedTeardown``: ``attached`` True, ``stopped`` False and why), or ``{}``
    (no report; files of older code). Every field is optional: each kind of file holds only its own."""

    survivors: tuple[int, ...] | None = field(default=None, metadata=_doc("launched: PIDs alive after SIGKILL"))
    gpu_memory_after: GpuMemory | None = field(
        default=None, metadata=_doc("launched: its processes' GPU memory after the stop (NVML, bytes); null without")
    )
    gpu_settle: GpuSettle | None = field(
        default=None, metadata=_doc("launched: whether the devices' memory came back (serve/resources.py settle)")
    )
    attached: bool | None = field(default=None, metadata=_doc("attached: true"))
    stopped: bool | None = field(default=None, metadata=_doc("attached: false, loadgen did not stop it"))
    reason: str | None = field(default=None, metadata=_doc("attached: why it was not stopped"))
