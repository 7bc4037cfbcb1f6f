r"""Small records of a run folder: :class:`ModelHashes` (protocol.json ``target`` and ``draft``, written by
check/hashes.py ``model_hashes``), :class:`DesignRecord` with its :class:`ArmRecord`\ s (what a run adds to
protocol.json's ``design``: run/flow.py ``design_record``), :class:`StatusFile` (``status.json``, written by
run/closing.py when the run ends, read by ``loadgen runs`` and the card: store/files.py), :class:`ProgressFile`
(``progress.json``, rewritten by run/slotcount.py at every slot's start and end, read by ``loadgen runs`` for a
running folder), :class:`LaunchFile` (``servers/<server>-launch.json``, run/bench.py) and :class:`RecordedUrl`
(a server's URL as protocol.json's ``attach`` and ``metrics_urls`` record it, serve/attached.py ``attach_record``)
and :class:`ServerFiles` (one server's ``servers/`` files as the card copies them: store/runfiles.py ``read_run``).

Each is a :class:`~loadgen.records.cardwire.Wire` record: ``to_json`` writes the required fields and those set
away from their defaults, in declared order (the keys earlier code wrote, in its order), so a model without files
has no ``files`` and a run that measured every request record has no ``requests_not_written``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from loadgen.records.cardwire import Wire
from loadgen.records.serverfacts import ServerFacts, ServerView
from loadgen.records.serverparts import EffectiveFile, TeardownFile, UsageMoments
from loadgen.records.speculative import SpeculativeConfig
from loadgen.records.usage import ServerUsage
from loadgen.util.numbers import clock


@dataclass(frozen=True)
class ModelHashes(Wire):
    """A model as measured: its id or folder (``model``), the ``revision`` asked for, whether it is a local
    folder (``local``); for a local one the sha256 of every file (``files``: path in the folder -> hex, hidden
    files left out) and a digest over them (``content_sha256``), a reduced ``draft_vocab_size`` (tokens) an
    EAGLE-3 head's config.json declares, its build marker's ``build`` summary, and ``weight_bytes``: the bytes of
    its weight files (``*.safetensors``, ``*.bin``, ``*.pt``, ``*.gguf``), what a memory-bound decode step reads."""

    model: str
    revision: str | None
    local: bool
    files: Mapping[str, str] | None = None
    content_sha256: str | None = None
    draft_vocab_size: int | None = None
    build: str | None = None
    weight_bytes: int | None = None


@dataclass(frozen=True)
class RecordedUrl(Wire):
    """One server's URL as protocol.json's ``attach`` (the URL a server was attached at) and ``metrics_urls`` (its
    ``/metrics`` URL given apart from the API URL) record it, per role: the URL without credentials (util/redact.py
    ``redact_url``) and whether nothing was stripped (``complete``; False: ``--resume`` asks for the URL again)."""

    TITLE: ClassVar[str] = "recorded URL"

    url: str
    complete: bool


@dataclass(frozen=True)
class LaunchFile(Wire):
    """How a server was started (``servers/<server>-launch.json``, run/bench.py): its launch line (None for an
    attached server), its environment and URL (credentials redacted: util/redact.py) and whether it was
    attached, and its metrics URL when one was given apart from the API URL."""

    argv: tuple[str, ...] | None
    env: Mapping[str, str]
    base_url: str
    attached: bool
    metrics_url: str | None = None  # where its /metrics is read, when not at base_url (written only when set)


#: StatusFile.sizing_end when sizing stopped because nothing was left undecided (run/sizing.py).
SIZING_DECIDED = "every cell is decided"


@dataclass(frozen=True)
class StatusFile(Wire):
    """How a run ended: ``complete`` (every planned cell measured), ``failure`` (the one line it stopped with;
    None when complete or not yet known), ``sizing_end`` (why sizing stopped growing the cells, when the run
    sized them) and ``requests_not_written`` (request records lost to a write error)."""

    complete: bool
    failure: str | None
    sizing_end: str | None = None
    requests_not_written: int = 0


@dataclass(frozen=True)
class ProgressFile(Wire):
    """Where a measuring run is (``progress.json``): the slots done and planned (a slot is one arm's block of
    one cell, run/design.py), whether sizing may still add blocks (``sizing``: then ``slots_planned`` is a
    floor), the estimated seconds left (measure/timeleft.py; None before the first slot ends), the slot being
    measured (``[arm] workload level block N``; None between slots) and when the file was written (ISO 8601
    UTC, to the second)."""

    slots_done: int
    slots_planned: int
    sizing: bool
    left_s: float | None
    current: str | None
    updated_utc: str

    def counter(self) -> str:
        """``slot 9/18`` while slot 9 of 18 runs (``8/18 slots done`` between slots); ``18+`` while sizing
        may add blocks to the 18 planned so far."""
        total = f"{self.slots_planned}{'+' if self.sizing else ''}"
        if self.current is None:
            return f"{self.slots_done}/{total} slots done"
        return f"slot {self.slots_done + 1}/{total}"

    def line(self) -> str:
        """The counter and the time left: ``slot 9/18, about 4 min 10 s left``; while sizing may add blocks,
        ``slot 9/18+, at least 4 min 10 s left (sizing may add blocks)``; before a slot ended, ``time left
        not known yet``; every slot measured, ``18/18 slots done`` alone."""
        if self.current is None and self.slots_done >= self.slots_planned and not self.sizing:
            return self.counter()  # measured: the servers are closing, the card is being written
        if self.left_s is None:
            return f"{self.counter()}, time left not known yet"
        if self.sizing:
            return f"{self.counter()}, at least {clock(self.left_s)} left (sizing may add blocks)"
        return f"{self.counter()}, about {clock(self.left_s)} left"


@dataclass(frozen=True)
class ArmRecord(Wire):
    """One arm of the design (protocol.json ``design.arms[]``, run/arms.py ``describe``): its name (the records'
    role), the server it measures, its port, whether that server is attached, and the speculative config it
    runs (None for a plain arm)."""

    arm: str
    server: str
    port: int
    attached: bool
    speculative_config: SpeculativeConfig | None


@dataclass(frozen=True)
class DesignRecord(Wire):
    """What a run adds to protocol.json's ``design`` (run/flow.py ``design_record``): the arms, whether their
    servers are co-resident and why, how the placebo runs (``server``, ``blocks`` or ``off``), how many server
    starts the order makes, and the order itself (``[arm, workload, level, block]`` each)."""

    arms: tuple[ArmRecord, ...]
    co_resident: bool
    co_resident_reason: str
    placebo_effective: str
    server_starts: int
    order: tuple[tuple[str | int, ...], ...]


@dataclass(frozen=True)
class ServerFiles(Wire):
    """One server's files (``servers/<server>-<part>.json``, store/serverfiles.py ``SERVER_PARTS``) as the card
    copies them, each read back as saved (records/serverparts.py): ``launch`` (:class:`LaunchFile`),
    ``effective`` (``EffectiveFile``), ``resources`` (``UsageMoments``) and ``teardown`` (``TeardownFile``); None
    where the folder has no such file."""

    launch: LaunchFile | None = None
    effective: EffectiveFile | None = None
    resources: UsageMoments | None = None
    teardown: TeardownFile | None = None

    def usage(self) -> ServerUsage | None:
        """The server's usage after load, else when ready; None without a resources file."""
        return None if self.resources is None else self.resources.latest()

    def view(self) -> ServerView:
        """What the card's cause notes read of this server (records/serverfacts.py ``ServerView``): its effective
        file's configuration facts, engine-path fallback reasons and whether a startup log was read, and its
        KV-cache capacity (tokens, after load else when ready); unknown where the files do not say."""
        eff, usage = self.effective, self.usage()
        tokens = None if usage is None else usage.kv_cache_tokens
        if eff is None:
            return ServerView(kv_cache_tokens=tokens)
        path = eff.engine_path
        return ServerView(
            eff.server_facts or ServerFacts(),
            () if path is None else path.fallback_reasons,
            eff.speculative_config_log is not None or bool(path and path.model_runner),
            tokens,
        )

    def version(self) -> str | None:
        """The vLLM version the server reported (``effective.version``); None when it did not."""
        return None if self.effective is None else self.effective.version

    def replicas(self) -> tuple[str, ...]:
        """The signs of more than one replica its start-up check saw (``effective.replicas``); none when absent."""
        return () if self.effective is None else self.effective.replicas
