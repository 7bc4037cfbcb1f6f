"""A record made of records (pure): :class:`Part`, the base of the sweep card's and the fleet card's frozen
dataclasses, read and written by their fields' kinds (records/wire.py) in one generic pair.

A subclass declares ``KINDS`` (each field's kind on disk, in the order a record built anew writes them),
``REQUIRED`` (the fields a file must hold) and ``NESTED`` (a field holding another :class:`Part`, or a list of
them, to its class) and ``MAPPED`` (a field holding one, or null, per key). ``from_json`` checks every field once,
descending into the nested parts with their field path (``cells[3].entries[0].speedup``), so a file that does not
read is one BadInput line (exit 2) naming the file, the field and the fix; ``to_json`` writes the file's own keys
in their order and keeps the keys it does not know as read, so a committed file writes back byte-identically.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Self

from loadgen.records.wire import RESTORE, Kind, Where, obj, object_schema
from loadgen.records.wire import field as read


def part_kind(cls: type[Part]) -> Kind:
    """The kind of a field holding one ``cls`` (its schema generated from ``cls``'s kinds)."""
    return Kind(f"an object ({cls.TITLE})", lambda v: isinstance(v, dict), cls.json_schema())


def _out(value: Any) -> Any:
    if isinstance(value, Part):
        return value.to_json()
    if isinstance(value, list):
        return [_out(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _out(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Part:
    """One object of a file (module docstring); ``keys`` and ``extra`` keep the object as it was read."""

    KINDS: ClassVar[dict[str, Kind]] = {}
    REQUIRED: ClassVar[tuple[str, ...]] = ()
    NESTED: ClassVar[dict[str, type[Part]]] = {}
    #: A field holding an object of ``cls`` (or null) under each key, to ``cls``.
    MAPPED: ClassVar[dict[str, type[Part]]] = {}
    TITLE: ClassVar[str] = "object"
    #: The fix a file that does not read gets.
    FIX: ClassVar[str] = RESTORE

    #: The object's keys in their order on disk (None for one built anew: every field's, in ``KINDS`` order).
    keys: tuple[str, ...] | None = field(default=None, compare=False, kw_only=True)
    #: Keys this code does not know (a file of other code), kept as read.
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, kw_only=True)

    def to_json(self) -> dict[str, Any]:
        """The object as its file holds it: its keys in their order (:attr:`keys`), nested parts written out."""
        keys = self.KINDS if self.keys is None else self.keys
        return {k: self.extra[k] if k in self.extra else _out(getattr(self, k)) for k in keys}

    @classmethod
    def from_json(cls, data: object, *, source: str) -> Self:
        """Inverse of :meth:`to_json`, checked: a missing required field or a value of the wrong kind raises
        BadInput (exit 2) naming ``source`` (the file), the field path and the fix."""
        return cls.read(data, Where(source, fix=cls.FIX))

    @classmethod
    def read(cls, data: object, where: Where) -> Self:
        """:meth:`from_json` at ``where`` (an object inside the file)."""
        d = obj(data, where)
        values = {}
        for k, kind in cls.KINDS.items():
            if k not in d and k not in cls.REQUIRED:
                continue
            value = read(d, k, kind, where)
            sub = cls.NESTED.get(k)
            if sub is not None and isinstance(value, list):
                value = [sub.read(v, where.at(k).at(i)) for i, v in enumerate(value)]
            elif sub is not None and value is not None:
                value = sub.read(value, where.at(k))
            if k in cls.MAPPED and value is not None:
                value = {m: None if v is None else cls.MAPPED[k].read(v, where.at(k).at(m)) for m, v in value.items()}
            values[k] = value
        return cls(**values, keys=tuple(d), extra={k: v for k, v in d.items() if k not in cls.KINDS})

    def with_fields(self, **values: Any) -> Self:
        """This object with ``values`` set, new keys written after the object's own."""
        keys = self.keys if self.keys is not None else tuple(k for k in self.KINDS if hasattr(self, k))
        return replace(self, **values, keys=(*keys, *(k for k in values if k not in keys)))

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The object's JSON Schema (draft 2020-12 fragment), generated from its fields' kinds."""
        return object_schema(cls.KINDS, cls.REQUIRED, cls.TITLE)
