"""How a run was measured, everything needed to repeat it: :class:`Protocol`, ``protocol.json``
(``loadgen.protocol/1``), with its cells (:class:`ProtocolCell`).

Written by run/plan.py (``protocol``) when a run or sweep folder is made, completed by run/flow.py and
run/sweep.py (``engine_version``, ``attach``, the design's arms and order, a sweep's ``candidates``),
rewritten by run/execute.py when blocks are added and cut per candidate by run/sweepsplit.py
(``sweep_candidate``); read back by ``loadgen compare --protocol`` / ``--resume`` (run/plan.py
``replay_protocol``), ``loadgen sweep --resume`` and ``loadgen report`` (store/runfiles.py, saveddata.py,
sweepdata.py, tracedata.py), always through store/rundir.py ``read_protocol``, which checks it here.

``target`` and ``draft`` are records/runparts.py :class:`~loadgen.records.runparts.ModelHashes` (check/hashes.py
``model_hashes``), ``client_host`` and ``hardware`` records/usage.py ``ClientHost`` and ``Hardware`` (run/plan.py
``probe_host``), each written back as read. The other parts a run passes on as declared or probed keep their
shape as documented mappings: ``engine``, ``sampling``, ``fairness``,
``load``, ``stop_rule``, ``slo`` (profile/pair.py dataclasses as dicts), ``criteria``
(records/criteria.py ``Criteria.to_json`` plus ``declared``), ``design`` (records/design.py plus
run/flow.py ``design_record``), ``command_line`` (profile/overrides.py), ``attach`` (serve/attached.py
``record``) and ``candidates``.
``speculative_config`` (the pair file's ``[speculative]`` table) is a records/speculative.py
:class:`~loadgen.records.speculative.SpeculativeConfig`, written back as read.
A protocol of older code lacks some fields; ``keys`` keeps a file's own keys in their order, so it writes
back byte-identically. Its JSON Schema is generated from the kinds below (:meth:`Protocol.json_schema`,
committed as records/protocol.schema.json).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Self

from loadgen.records.cardwire import Wire, json_schema, read_record
from loadgen.records.runparts import ModelHashes
from loadgen.records.speculative import SpeculativeConfig
from loadgen.records.usage import ClientHost, Hardware
from loadgen.records.wire import (
    INT,
    NUM,
    OBJ,
    STR,
    Kind,
    Where,
    list_of,
    maybe,
    obj,
    object_schema,
)
from loadgen.records.wire import field as read

SCHEMA = "loadgen.protocol/1"
#: The fix a protocol.json that does not read gets.
FIX = "restore protocol.json from the run folder's copy, or measure the run again"


@dataclass(frozen=True)
class ProtocolCell:
    """One planned block of one cell: its workload and level, the prompt ids of each phase, and the arrival
    offsets (s from the measured phase's start; None for a closed loop). Only ``workload`` is required: a card
    needs no more of a cell (its level label or concurrency names it)."""

    workload: str
    concurrency: int = 0
    level: str = ""
    rate_rps: float | None = None
    repetition: int = 0
    warmup: list[str] = field(default_factory=list)
    measured: list[str] = field(default_factory=list)
    cooldown: list[str] = field(default_factory=list)
    arrivals_s: list[float] | None = None
    #: The cell's keys in their order on disk.
    keys: tuple[str, ...] = field(default=(), compare=False)
    #: Keys this code does not know (a cell of other code), kept as read.
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> tuple[str, str]:
        """The cell's (workload, level label); ``c<concurrency>`` for a cell written before levels had labels."""
        return self.workload, self.level or f"c{self.concurrency}"

    def to_json(self) -> dict[str, Any]:
        """The cell as protocol.json lists it."""
        return {k: self.extra[k] if k in self.extra else getattr(self, k) for k in self.keys or _CELL_KINDS}

    @classmethod
    def from_json(cls, data: object, *, source: str) -> Self:
        """Inverse of :meth:`to_json`, checked (BadInput naming ``source`` and the field)."""
        return cls.read(data, Where(source, fix=FIX))

    @classmethod
    def read(cls, data: object, where: Where) -> Self:
        """:meth:`from_json` at ``where`` (a cell inside protocol.json)."""
        d = obj(data, where)
        return cls(
            **{k: read(d, k, kind, where) for k, kind in _CELL_KINDS.items() if k in d or k in _CELL_REQUIRED},
            keys=tuple(d),
            extra={k: v for k, v in d.items() if k not in _CELL_KINDS},
        )


_CELL_KINDS: dict[str, Kind] = {
    "workload": STR,
    "concurrency": INT,
    "level": STR,
    "rate_rps": maybe(NUM),
    "repetition": INT,
    "warmup": list_of(STR),
    "measured": list_of(STR),
    "cooldown": list_of(STR),
    "arrivals_s": maybe(list_of(NUM)),
}
_CELL_REQUIRED = ("workload",)
CELL = Kind("a cell object", lambda v: isinstance(v, dict), object_schema(_CELL_KINDS, _CELL_REQUIRED, "cell"))


@dataclass(frozen=True)
class Protocol:
    """``protocol.json`` (module docstring). ``workloads`` and ``cells`` are required."""

    workloads: list[Mapping[str, Any]]
    cells: list[ProtocolCell]
    schema: str = SCHEMA
    loadgen_version: str | None = None
    pair: str = ""
    pair_file: str | None = None
    target: ModelHashes | None = None
    draft: ModelHashes | None = None
    speculative_config: SpeculativeConfig | None = None
    engine: Mapping[str, Any] | None = None
    sampling: Mapping[str, Any] | None = None
    fairness: Mapping[str, Any] | None = None
    concurrency: list[int] = field(default_factory=list)
    load: Mapping[str, Any] | None = None
    stop_rule: Mapping[str, Any] | None = None
    prompts_file: str = "prompts.jsonl"
    prompts_sha256: str | None = None
    criteria: Mapping[str, Any] | None = None
    slo: Mapping[str, Any] | None = None
    design: Mapping[str, Any] | None = None
    client_host: ClientHost | None = None
    hardware: Hardware | None = None
    command_line: Mapping[str, Any] | None = None
    engine_version: str | None = None
    attach: Mapping[str, Any] | None = None
    candidates: Mapping[str, Mapping[str, Any]] | None = None
    sweep_candidate: str | None = None
    #: The file's keys in their order on disk.
    keys: tuple[str, ...] = field(default=(), compare=False)
    #: Keys this code does not know (a file of other code), kept as read.
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        """protocol.json: the file's keys in their order (:attr:`keys`; every field's for one built anew)."""
        return {k: self.extra[k] if k in self.extra else _dumped(getattr(self, k)) for k in self.keys or _KINDS}

    @classmethod
    def from_json(cls, data: object, *, source: str) -> Self:
        """Inverse of :meth:`to_json`, checked: a missing required field or a value of the wrong kind raises
        BadInput (exit 2) naming ``source``, the field path (``cells[3].rate_rps``) and the fix."""
        where = Where(source, fix=FIX)
        d = obj(data, where)
        values = {k: read(d, k, kind, where) for k, kind in _KINDS.items() if k in d or k in _REQUIRED}
        values["cells"] = [ProtocolCell.read(c, where.at("cells").at(i)) for i, c in enumerate(values["cells"])]
        if (spec := values.get("speculative_config")) is not None:
            values["speculative_config"] = SpeculativeConfig.from_json(
                spec, source=source, where=where.at("speculative_config")
            )
        for k, record in _RECORDS.items():
            if values.get(k) is not None:
                values[k] = read_record(record, values[k], where.at(k))
        return cls(**values, keys=tuple(d), extra={k: v for k, v in d.items() if k not in _KINDS})

    def with_fields(self, **values: Any) -> Self:
        """This protocol with ``values`` set, new keys written after the file's own."""
        own = self.keys or tuple(_KINDS)
        return replace(self, **values, keys=(*own, *(k for k in values if k not in own)))

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """protocol.json's JSON Schema (draft 2020-12), generated from the fields' kinds."""
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **object_schema(_KINDS, _REQUIRED, "loadgen protocol.json (loadgen.protocol/1)"),
        }


#: The fields read into a record (records/runparts.py, usage.py): their kind checks the object, the record its
#: fields, and the schema is the record's (records/cardwire.py ``json_schema``).
_RECORDS: dict[str, type[Wire]] = {
    "target": ModelHashes,
    "draft": ModelHashes,
    "client_host": ClientHost,
    "hardware": Hardware,
}


def _record_kind(record: type[Wire]) -> Kind:
    """The kind of a field read into ``record`` (or null)."""
    return maybe(Kind("an object", lambda v: isinstance(v, dict), json_schema(record)))


def _dumped(value: Any) -> Any:
    """A field's value as protocol.json holds it: a record (or list of records) by its ``to_json``."""
    if isinstance(value, list):
        return [_dumped(v) for v in value]
    return value.to_json() if isinstance(value, Wire | SpeculativeConfig | ProtocolCell) else value


_MAP = maybe(OBJ)
_KINDS: dict[str, Kind] = {
    "schema": STR,
    "loadgen_version": maybe(STR),
    "pair": STR,
    "pair_file": maybe(STR),
    "target": _record_kind(_RECORDS["target"]),
    "draft": _record_kind(_RECORDS["draft"]),
    "speculative_config": _MAP,
    "engine": _MAP,
    "sampling": _MAP,
    "fairness": _MAP,
    "workloads": list_of(OBJ),
    "concurrency": list_of(INT),
    "load": _MAP,
    "stop_rule": _MAP,
    "prompts_file": STR,
    "prompts_sha256": maybe(STR),
    "criteria": _MAP,
    "slo": _MAP,
    "design": _MAP,
    "cells": list_of(CELL),
    "client_host": _record_kind(_RECORDS["client_host"]),
    "hardware": _record_kind(_RECORDS["hardware"]),
    "command_line": _MAP,
    "engine_version": maybe(STR),
    "attach": _MAP,
    "candidates": _MAP,
    "sweep_candidate": maybe(STR),
}
_REQUIRED = ("workloads", "cells")
