"""Every record at the disk boundary: a frozen dataclass subclassing :class:`Wire` declares its fields once, as
type hints (records/hints.py says which), and gets ``from_json`` (every field checked; a mismatch is one
:class:`~loadgen.errors.BadInput` line naming the file, the field path and the fix, exit 2), ``to_json`` (the
keys in the order the file had them, so a record read and written back is byte-identical) and ``json_schema``
(its JSON Schema, draft 2020-12, from the same hints, so the schema cannot drift from the type).

A field without a default is required; one with a default may be absent from the file, and stays absent when the
record is written back, unless its metadata says ``required`` (the file must hold it though code may leave it
out). Field metadata: ``doc`` (the schema's description), ``pattern`` (a string's regex, checked when read) and
``kind`` (a :class:`~loadgen.records.wire.Kind` narrower than the hint: a non-empty name, a folder under runs/).
Keys the type does not name are kept verbatim (``extra``), so a file of newer code survives older code.

Class settings, each record's own:

- ``WHOLE``: a mismatch names the field with its whole kind (``notes: expected a list of strings``; protocol.json,
  cells.jsonl, requests.jsonl, sweep.json and the fleet's files, their schema ``wire.object_schema`` with the
  record's ``TITLE``); else the innermost value (``cells[3].ratios.value: expected a number``; the pair card and
  the servers/ files, their schema with the class docstring as description).
- ``SPARSE``: a record built in code writes its required fields and those away from their default (and a field
  set later with ``dataclasses.replace`` after the file's keys); else every field, None and defaults included.
- ``FIX``: what the message tells the user to do.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from loadgen.records.hints import (
    SCALARS,
    converter,
    expected,
    item_reader,
    json_schema,
    kind_of,
    plain_items,
    record_hints,
)
from loadgen.records.wire import RESTORE, Kind, Where, obj, object_schema

__all__ = ["FIX", "IN_FILE", "SCALARS", "Whole", "Wire", "dump", "json_schema", "kinds", "required", "wire_fields"]

#: The fix a card that does not match its type is given.
FIX = "re-render with `loadgen report` or restore the file"
_NOT_WIRE = {"wire": False}
#: Field metadata of a field the file must hold although the dataclass gives it a default.
IN_FILE = {"required": True}


@dataclass(frozen=True)
class Wire:
    """Base of a record read from and written to JSON. ``keys``: the wire keys in the order read (None for a
    record built in code: its fields in declared order); ``extra``: keys the type does not name, verbatim."""

    WHOLE: ClassVar[bool] = False
    SPARSE: ClassVar[bool] = True
    FIX: ClassVar[str] = FIX
    #: The record's name in its schema and in a message (``expected an object (node)``).
    TITLE: ClassVar[str] = "object"

    keys: tuple[str, ...] | None = field(default=None, kw_only=True, compare=False, repr=False, metadata=_NOT_WIRE)
    extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True, compare=False, repr=False, metadata=_NOT_WIRE)

    @classmethod
    def from_json(cls, data: object, *, source: str) -> Self:
        """The record of ``data`` (a parsed JSON value); BadInput naming ``source`` and the field otherwise."""
        return cls.read_at(data, Where(source, fix=cls.FIX))

    @classmethod
    def read_at(cls, data: object, where: Where) -> Self:
        """:meth:`from_json` at ``where`` (an object inside the file)."""
        d = obj(data, where)
        slots = _slots(cls)
        return cls(**read_fields(cls, d, where), keys=tuple(d), extra={k: v for k, v in d.items() if k not in slots})

    def to_json(self) -> dict[str, Any]:
        """The JSON object: the keys read, in their order (then, ``SPARSE``, any field set since), or for a record
        built in code its fields in declared order and then ``extra``."""
        slots, sparse = _slots(type(self)), self.SPARSE
        if self.keys is None:
            order = [*(n for n, s in slots.items() if not sparse or _present(self, s.field)), *self.extra]
        else:
            order = [
                *self.keys,
                *(n for n, s in slots.items() if sparse and n not in self.keys and _present(self, s.field)),
            ]
        return {k: self.extra[k] if k in self.extra else slots[k].dump(getattr(self, k)) for k in order}

    def keyed(self, *keys: str) -> Self:
        """This record written with ``keys`` first, in this order, each even where it holds its default (a
        record built in code whose file names a field as null, as a record read from that file would)."""
        return dataclasses.replace(self, keys=keys)

    def with_fields(self, **values: Any) -> Self:
        """This record with ``values`` set, written after the record's own keys in the order given, even None
        (a key a file of this record gains, as assigning it in the file's object would)."""
        own = self.keys if self.keys is not None else tuple(self.to_json())
        return dataclasses.replace(self, **values, keys=(*own, *(k for k in values if k not in own)))

    def in_full(self) -> Self:
        """This record written with every field, in declared order, None and defaults included."""
        return self.keyed(*wire_fields(type(self)))

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The record's JSON Schema (draft 2020-12 fragment), generated from its fields' hints."""
        if cls.WHOLE:
            return object_schema(kinds(cls), required(cls), cls.TITLE)
        return _record_schema(cls)


@dataclass(frozen=True)
class Whole(Wire):
    """Settings, no fields: a record checked field by field as a whole and written whole (``WHOLE``, not
    ``SPARSE``), the fix a run file gets (module docstring)."""

    WHOLE: ClassVar[bool] = True
    SPARSE: ClassVar[bool] = False
    FIX: ClassVar[str] = RESTORE


@dataclass(frozen=True)
class _Slot:
    """One field as read and written: its dataclass field, hint, kind, reader and writer."""

    field: dataclasses.Field[Any]
    hint: Any
    kind: Kind
    required: bool
    read: Callable[[Any, Where], Any]
    dump: Callable[[Any], Any]


_SLOTS: dict[type[Wire], dict[str, _Slot]] = {}


def _slots(cls: type[Wire]) -> dict[str, _Slot]:
    """The wire fields of ``cls``, in declared order (computed once per class)."""
    if cls not in _SLOTS:
        hints = record_hints(cls)
        _SLOTS[cls] = {f.name: _slot(cls, f, hints[f.name]) for f in wire_fields(cls).values()}
    return _SLOTS[cls]


def _slot(cls: type[Wire], f: dataclasses.Field[Any], hint: Any) -> _Slot:
    kind = f.metadata.get("kind") or kind_of(hint)
    if cls.WHOLE:
        convert = converter(hint)
        read = _whole(kind) if convert is None else _whole_then(kind, convert)
    else:
        read = item_reader(hint)
    needed = f.metadata.get("required", False) or _no_default(f)
    return _Slot(f, hint, kind, needed, read, _dumper(hint))


def _whole(kind: Kind) -> Callable[[Any, Where], Any]:
    def read(value: Any, where: Where) -> Any:
        if not kind.test(value):
            where.fail(kind.name, value)
        return value

    return read


def _whole_then(kind: Kind, convert: Callable[[Any, Where], Any]) -> Callable[[Any, Where], Any]:
    def read(value: Any, where: Where) -> Any:
        if not kind.test(value):
            where.fail(kind.name, value)
        return convert(value, where)

    return read


def _copy(value: Any) -> Any:
    return value if value is None else list(value)


def _dumper(hint: Any) -> Callable[[Any], Any]:
    """How a field's value is written: a scalar as it is, a list of scalars copied in one step (a request's
    chunk arrival times), anything else by :func:`dump`."""
    plain = plain_items(hint)
    return dump if plain is None else _copy if plain else _as_is


def _as_is(value: Any) -> Any:
    return value


def read_fields(cls: type[Wire], data: Mapping[str, Any], where: Where) -> dict[str, Any]:
    """The field values of ``cls`` in the object ``data`` at ``where`` (the fields ``data`` holds), checked."""
    values: dict[str, Any] = {}
    for name, slot in _slots(cls).items():
        if name in data:
            values[name] = slot.read(data[name], where.at(name))
            pattern = slot.field.metadata.get("pattern")
            if pattern is not None and isinstance(data[name], str) and re.search(pattern, data[name]) is None:
                where.at(name).fail(f"a string matching {pattern}", data[name])
        elif slot.required:
            where.at(name).missing(slot.kind.name if cls.WHOLE else expected(slot.hint))
    return values


def kinds(cls: type[Wire]) -> dict[str, Kind]:
    """Each wire field's kind as a whole, in declared order."""
    return {n: s.kind for n, s in _slots(cls).items()}


def required(cls: type[Wire]) -> tuple[str, ...]:
    """The fields a file of ``cls`` must hold, in declared order."""
    return tuple(n for n, s in _slots(cls).items() if s.required)


def _present(record: Wire, f: dataclasses.Field[Any]) -> bool:
    """A field goes to the file when required or when its value is not its default."""
    value = getattr(record, f.name)
    if _no_default(f):
        return True
    default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[operator]
    return bool(value != default)


def dump(value: Any) -> Any:
    """A record, tuple or mapping as JSON-ready values (records by their ``to_json``)."""
    if isinstance(value, Wire):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [dump(v) for v in value]
    if isinstance(value, Mapping):
        return {k: dump(v) for k, v in value.items()}
    return value


_FIELDS: dict[type[Wire], dict[str, dataclasses.Field[Any]]] = {}


def wire_fields(cls: type[Wire]) -> dict[str, dataclasses.Field[Any]]:
    """The fields of ``cls`` that are JSON keys, in declared order (computed once per class)."""
    if cls not in _FIELDS:
        _FIELDS[cls] = {f.name: f for f in dataclasses.fields(cls) if f.metadata.get("wire", True)}
    return _FIELDS[cls]


def _no_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _record_schema(cls: type[Wire]) -> dict[str, Any]:
    """The schema of a record read item by item: an object with its fields as properties (``doc`` as
    description), the required ones listed, the class docstring as description."""
    props: dict[str, Any] = {}
    for name, slot in _slots(cls).items():
        meta = {k: slot.field.metadata[k] for k in ("pattern",) if k in slot.field.metadata}
        doc = {"description": slot.field.metadata["doc"]} if "doc" in slot.field.metadata else {}
        props[name] = {**doc, **json_schema(slot.hint), **meta}
    needed = list(required(cls))
    text = re.sub(r"\s+", " ", cls.__doc__ or "").strip()
    return {
        "type": "object",
        **({"description": text} if text else {}),
        **({"required": needed} if needed else {}),
        "properties": props,
    }
