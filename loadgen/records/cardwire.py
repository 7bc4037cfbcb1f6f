"""The pair card's records at the disk boundary: a frozen dataclass subclassing :class:`Wire` gets ``from_json``
(every field checked against its type hint; a mismatch is one :class:`~loadgen.errors.BadInput` line naming the
file, the field path and the fix, exit 2) and ``to_json`` (the keys in the order the file had them, so a card
read and written back is byte-identical); :func:`json_schema` gives its JSON Schema (draft 2020-12) from the
same hints, so the schema cannot drift from the type (report/card.schema.json is its output).

Field types understood: ``str``, ``int``, ``float`` (an int in the file stays an int), ``bool``, ``X | None``,
``Literal[...]``, ``tuple[X, ...]`` (a JSON array), ``Mapping[str, X]`` (a JSON object), ``Any`` (free-form
engine or protocol data, copied verbatim) and :class:`Wire` subclasses; a union of two types besides None
(``float | str``) is taken as it is, unchecked. A field without a default is required;
a field with one may be absent from the file, and stays absent when the record is written back. Field metadata:
``doc`` (the schema's description) and ``pattern`` (a string's regex, checked when read). Keys the type does
not name are kept verbatim (``extra``), so a card of newer code survives a re-render of older code.

Built on records/wire.py, the one set of readers every record uses: a scalar is checked by, and its schema
is, the :class:`~loadgen.records.wire.Kind` of its type (``SCALARS``), and a mismatch is raised by
:class:`~loadgen.records.wire.Where` (the same one-line message as a ``cells.jsonl`` line gets).
"""

from __future__ import annotations

import dataclasses
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Self, TypeVar, Union, get_args, get_origin, get_type_hints

from loadgen.records.wire import BOOL, INT, NUM, STR, Kind, Where

#: The fix a card that does not match its type is given.
FIX = "re-render with `loadgen report` or restore the file"
_NOT_WIRE = {"wire": False}


@dataclass(frozen=True)
class Wire:
    """Base of a record read from and written to JSON. ``keys``: the wire keys in the order read (empty for a
    record built in code: its fields in declared order); ``extra``: keys the type does not name, verbatim."""

    keys: tuple[str, ...] = field(default=(), kw_only=True, compare=False, repr=False, metadata=_NOT_WIRE)
    extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True, compare=False, repr=False, metadata=_NOT_WIRE)

    @classmethod
    def from_json(cls, data: object, *, source: str) -> Self:
        """The record of ``data`` (a parsed JSON value); BadInput naming ``source`` and the field otherwise."""
        record: Self = _read(cls, data, Where(source, fix=FIX))
        return record

    def to_json(self) -> dict[str, Any]:
        """The JSON object: the keys read, in their order, then any field set since (``dataclasses.replace``)."""
        names = wire_fields(type(self))
        order = list(self.keys) or [n for n in names if _present(self, names[n])]
        order += [n for n in names if n not in order and _present(self, names[n])]
        return {k: dump(getattr(self, k)) if k in names else self.extra[k] for k in order}

    def keyed(self, *keys: str) -> Self:
        """This record written with ``keys`` first, in this order, each even where it holds its default (a
        record built in code whose file names a field as null, as a record read from that file would)."""
        return dataclasses.replace(self, keys=keys)

    def with_fields(self, **values: Any) -> Self:
        """This record with ``values`` set, written after the record's own keys in the order given, even None
        (a key a file of this record gains, as assigning it in the file's object would)."""
        own = self.keys or tuple(n for n, f in wire_fields(type(self)).items() if _present(self, f))
        return dataclasses.replace(self, **values, keys=(*own, *(k for k in values if k not in own)))

    def in_full(self) -> Self:
        """This record written with every field, in declared order, None and defaults included."""
        return self.keyed(*wire_fields(type(self)))


W = TypeVar("W", bound=Wire)


def _present(record: Wire, f: dataclasses.Field[Any]) -> bool:
    """A field goes to the file when required or when its value is not its default."""
    value = getattr(record, f.name)
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
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
_HINTS: dict[type[Wire], dict[str, Any]] = {}


def wire_fields(cls: type[Wire]) -> dict[str, dataclasses.Field[Any]]:
    """The fields of ``cls`` that are JSON keys, in declared order (computed once per class)."""
    if cls not in _FIELDS:
        _FIELDS[cls] = {f.name: f for f in dataclasses.fields(cls) if f.metadata.get("wire", True)}
    return _FIELDS[cls]


def _hints(cls: type[Wire]) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _read(tp: Any, value: object, where: Where) -> Any:
    """``value`` checked against the type ``tp`` (module docstring), as the record's field values."""
    if tp is Any:
        return value
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(tp) if a is not type(None)]
        if value is None and len(options) < len(get_args(tp)):
            return None
        return _read(options[0] if len(options) == 1 else Any, value, where)
    if origin is Literal:
        if value not in get_args(tp):
            where.fail(_expected(tp), value)
        return value
    if isinstance(tp, type) and issubclass(tp, Wire):
        return _record(tp, value, where)
    if origin is tuple:
        if not isinstance(value, list | tuple):  # a tuple: a card built in code (report/carddata.py)
            where.fail("a list", value)
        return tuple(_read(get_args(tp)[0], v, where.at(i)) for i, v in enumerate(value))
    if origin in (dict, Mapping):
        if not isinstance(value, dict):
            where.fail("an object", value)
        return {k: _read(get_args(tp)[1], v, where.at(k)) for k, v in value.items()}
    if not SCALARS[tp].test(value):
        where.fail(SCALARS[tp].name, value)
    return value


#: The wire kind of each scalar field type.
SCALARS: dict[Any, Kind] = {str: STR, bool: BOOL, int: INT, float: NUM}


def _expected(tp: Any) -> str:
    """What a field of type ``tp`` must hold, for the message of a missing or mismatching value."""
    origin = get_origin(tp)
    if origin is Literal:
        return " or ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(tp) if a is not type(None)]
        return f"{_expected(options[0])} or null" if len(options) == 1 else "any value"
    if origin is tuple:
        return "a list"
    if origin in (dict, Mapping) or (isinstance(tp, type) and issubclass(tp, Wire)):
        return "an object"
    return SCALARS[tp].name if tp in SCALARS else "any value"


def read_record(cls: type[W], value: object, where: Where) -> W:
    """``value`` read as the record ``cls`` at ``where`` (a record nested in a file of another kind: a field of
    protocol.json); BadInput naming the field path as :meth:`Wire.from_json` does."""
    return _record(cls, value, where)


def _record(cls: type[W], value: object, where: Where) -> W:
    if not isinstance(value, dict):
        where.fail("an object", value)
    names, hints = wire_fields(cls), _hints(cls)
    kwargs: dict[str, Any] = {}
    for name, f in names.items():
        if name in value:
            kwargs[name] = _read(hints[name], value[name], where.at(name))
            pattern = f.metadata.get("pattern")
            if pattern is not None and isinstance(value[name], str) and re.search(pattern, value[name]) is None:
                where.at(name).fail(f"a string matching {pattern}", value[name])
        elif _required(f):
            where.at(name).missing(_expected(hints[name]))
    extra = {k: v for k, v in value.items() if k not in names}
    return cls(**kwargs, keys=tuple(value), extra=extra)


def json_schema(tp: Any) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the type ``tp`` (module docstring): a record is an object with its
    fields as properties (``doc`` as description) and the fields without default required."""
    if tp is Any:
        return {}
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(tp) if a is not type(None)]
        inner = json_schema(options[0] if len(options) == 1 else Any)
        if "const" in inner:
            return {"enum": [inner.pop("const"), None], **inner}
        kind = inner.get("type")
        return inner if kind is None else {**inner, "type": [*([kind] if isinstance(kind, str) else kind), "null"]}
    if origin is Literal:
        args = get_args(tp)
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if isinstance(tp, type) and issubclass(tp, Wire):
        return _record_schema(tp)
    if origin is tuple:
        items = json_schema(get_args(tp)[0])
        return {"type": "array", **({"items": items} if items else {})}
    if origin in (dict, Mapping):
        values = json_schema(get_args(tp)[1])
        return {"type": "object", **({"additionalProperties": values} if values else {})}
    return dict(SCALARS[tp].schema)


def _record_schema(cls: type[Wire]) -> dict[str, Any]:
    names, hints = wire_fields(cls), _hints(cls)
    props: dict[str, Any] = {}
    for name, f in names.items():
        meta = {k: f.metadata[k] for k in ("pattern",) if k in f.metadata}
        doc = {"description": f.metadata["doc"]} if "doc" in f.metadata else {}
        props[name] = {**doc, **json_schema(hints[name]), **meta}
    required = [n for n, f in names.items() if _required(f)]
    text = re.sub(r"\s+", " ", cls.__doc__ or "").strip()
    return {
        "type": "object",
        **({"description": text} if text else {}),
        **({"required": required} if required else {}),
        "properties": props,
    }
