"""One server's saved files as the pair card copies them (records/runparts.py ``ServerFiles``), each read back as a
typed record whatever loadgen version wrote it: :class:`UsageMoments` (``servers/<server>-resources.json``: the
records/usage.py ``ServerUsage`` when the server was ready and after its load) and :class:`TeardownFile`
(``servers/<server>-teardown.json``: records/usage.py ``Teardown`` of a launched server, ``AttachedTeardown`` of
an attached one, or ``{}`` when the stop left no report). Written by run/bench.py through store/serverfiles.py.

Each is a :class:`~loadgen.records.cardwire.Wire` record: ``from_json`` checks every field (a value of another kind
is one line naming the file and the field, exit 2) and keeps the keys it read in their order, with any key the type
does not name, so ``to_json`` gives the file (and the card's copy of it) back byte for byte. A field is optional
where the file's writer leaves it out (a server stopped before its load has no ``after_load``) or where a file of
older code lacks it (a teardown of older code is ``{}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loadgen.records.cardwire import Wire
from loadgen.records.usage import GpuMemory, GpuSettle, ServerUsage


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

    survivors: tuple[int, ...] | None = None
    gpu_memory_after: GpuMemory | None = None
    gpu_settle: GpuSettle | None = None
    attached: bool | None = None
    stopped: bool | None = None
    reason: str | None = None
