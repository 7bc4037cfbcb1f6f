"""A record field's type hint, read once into what checks, converts and describes its value (pure), for
records/cardwire.py's ``Wire``:

- :func:`kind_of`: the field's :class:`~loadgen.records.wire.Kind` as a whole (``a list of numbers``, ``an
  object (node) or null``), the check and message of a field of protocol.json, cells.jsonl, requests.jsonl,
  sweep.json or the fleet's files, and their JSON Schema (``object_schema``);
- :func:`converter`: the field's value once its kind held, with its records built (each read with its path);
- :func:`item_reader`: the value checked item by item, the innermost mismatch named (``cells[3].ratios.value:
  expected a number``): the pair card's and the servers/ files' records, whose schema is :func:`json_schema`.

Hints understood: ``str``, ``int``, ``float`` (an int in the file stays an int), ``bool``, ``X | None``,
``Literal[...]``, ``list[X]`` and ``tuple[X, ...]`` (a JSON array), ``Mapping[str, X]`` (a JSON object), ``Any``
(free-form data, copied verbatim) and records (a class with ``read_at``, ``json_schema`` and ``TITLE``: a
``Wire``); a union of two types besides None (``float | str``) is taken as it is, unchecked. A generic
record's type variable is read as what the record's class binds it to (:func:`record_hints`).

A list of scalars (a request's thousands of chunk arrival times, a histogram's buckets) is checked by the set of
its items' exact types in one pass, and only a list that fails it is walked item by item to name the item.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any, Generic, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from loadgen.records.wire import ANY, BOOL, INT, LIST, NUM, OBJ, STR, Kind, Where, list_of, map_of, maybe, one_of

#: A reader or converter: the value at a place, as the record's field holds it.
Reader = Callable[[Any, Where], Any]
#: The wire kind of each scalar field type.
SCALARS: dict[Any, Kind] = {str: STR, bool: BOOL, int: INT, float: NUM}
_UNIONS = (Union, types.UnionType)
_SEQUENCES = (list, tuple)
_MAPPINGS = (dict, Mapping)


def is_record(tp: Any) -> bool:
    """True for a record class (read with its own ``read_at``)."""
    return isinstance(tp, type) and hasattr(tp, "read_at") and hasattr(tp, "json_schema")


def record_hints(cls: type) -> dict[str, Any]:
    """Each annotated name of the class ``cls`` and its hint, a type variable bound to what ``cls``'s generic
    bases give it (``nodes: list[_E]`` of ``class CompareCell(_PairCell[CompareEntry])``: ``list[CompareEntry]``);
    NameError where a hint names what its module does not define."""
    bound: dict[Any, Any] = {}
    for klass in reversed(cls.__mro__):
        for base in klass.__dict__.get("__orig_bases__", ()):
            origin = get_origin(base)
            if origin is not None and origin is not Generic:
                bound.update(zip(origin.__parameters__, (_bind(a, bound) for a in get_args(base)), strict=True))
    return {name: _bind(hint, bound) for name, hint in get_type_hints(cls).items()}


def _bind(hint: Any, bound: Mapping[Any, Any]) -> Any:
    if isinstance(hint, TypeVar):
        return bound.get(hint, hint)
    params = getattr(hint, "__parameters__", ())
    return hint[tuple(bound.get(p, p) for p in params)] if params else hint


def _options(tp: Any) -> list[Any]:
    return [a for a in get_args(tp) if a is not type(None)]


def kind_of(tp: Any) -> Kind:
    """The kind a value of the hint ``tp`` has as a whole (module docstring)."""
    origin = get_origin(tp)
    if tp is Any:
        return ANY
    if origin in _UNIONS:
        options = _options(tp)
        if len(options) > 1:
            return ANY
        return maybe(kind_of(options[0])) if len(options) < len(get_args(tp)) else kind_of(options[0])
    if origin is Literal:
        return one_of(get_args(tp))
    if is_record(tp):
        return Kind(f"an object ({tp.TITLE})", lambda v: isinstance(v, dict), tp.json_schema())
    if origin in _SEQUENCES:
        return LIST if get_args(tp)[0] is Any else list_of(kind_of(get_args(tp)[0]))
    if origin in _MAPPINGS:
        return OBJ if get_args(tp)[1] is Any else map_of(kind_of(get_args(tp)[1]))
    return SCALARS[tp]


def converter(tp: Any) -> Reader | None:
    """What turns a value of ``tp`` whose kind held into the field's value (its records read, a tuple made);
    None where the value is kept as read."""
    origin = get_origin(tp)
    if origin in _UNIONS:
        options = _options(tp)
        inner = converter(options[0]) if len(options) == 1 else None
        return None if inner is None else (lambda v, w: None if v is None else inner(v, w))
    if is_record(tp):
        read: Reader = tp.read_at
        return read
    if origin in _SEQUENCES:
        item = converter(get_args(tp)[0])
        if item is None:
            return (lambda v, w: tuple(v)) if origin is tuple else None
        make = tuple if origin is tuple else list
        return lambda v, w: make(item(x, w.at(i)) for i, x in enumerate(v))
    if origin in _MAPPINGS:
        value = converter(get_args(tp)[1])
        return None if value is None else (lambda v, w: {k: value(x, w.at(k)) for k, x in v.items()})
    return None


def _as_is(value: Any, where: Where) -> Any:
    return value


def item_reader(tp: Any) -> Reader:
    """What checks a value of ``tp`` item by item and gives the field's value; BadInput at the innermost
    mismatch (``many[1].n: expected an integer``)."""
    origin = get_origin(tp)
    if tp is Any:
        return _as_is
    if origin in _UNIONS:
        options = _options(tp)
        inner = item_reader(options[0] if len(options) == 1 else Any)
        if inner is _as_is or len(options) == len(get_args(tp)):
            return inner
        return lambda v, w: None if v is None else inner(v, w)
    if origin is Literal:
        return _literal(get_args(tp), expected(tp))
    if is_record(tp):
        read: Reader = tp.read_at
        return read
    if origin in _SEQUENCES:
        return _sequence(get_args(tp)[0], tuple if origin is tuple else list)
    if origin in _MAPPINGS:
        return _mapping(item_reader(get_args(tp)[1]))
    kind = SCALARS[tp]

    def scalar(v: Any, w: Where) -> Any:
        if not kind.test(v):
            w.fail(kind.name, v)
        return v

    return scalar


def _literal(choices: tuple[Any, ...], name: str) -> Reader:
    def literal(v: Any, w: Where) -> Any:
        if v not in choices:
            w.fail(name, v)
        return v

    return literal


def _plain_types(tp: Any) -> frozenset[type]:
    """The exact types a scalar item of ``tp`` may have (a scalar or a scalar or None); empty for any other."""
    options = _options(tp) if get_origin(tp) in _UNIONS else [tp]
    if len(options) != 1 or options[0] not in SCALARS:
        return frozenset()
    return SCALARS[options[0]].types | ({type(None)} if options[0] is not tp else set())


def plain_items(tp: Any) -> bool | None:
    """False for a scalar (or None) hint, True for a list of scalars (or None), None for any other: what a
    field's value needs to be written (kept, copied in one step, or walked)."""
    options = _options(tp) if get_origin(tp) in _UNIONS else [tp]
    if len(options) != 1:
        return None
    if options[0] in SCALARS or get_origin(options[0]) is Literal:
        return False
    sequence = get_origin(options[0]) in _SEQUENCES and bool(_plain_types(get_args(options[0])[0]))
    return True if sequence else None


def _sequence(item_tp: Any, make: Callable[[Any], Any]) -> Reader:
    item, plain = item_reader(item_tp), _plain_types(item_tp)

    def sequence(v: Any, w: Where) -> Any:
        if not isinstance(v, list | tuple):  # a tuple: a record built in code (report/carddata.py)
            w.fail("a list", v)
        if item is _as_is or (plain and set(map(type, v)) <= plain):
            return make(v)
        return make(item(x, w.at(i)) for i, x in enumerate(v))

    return sequence


def _mapping(value: Reader) -> Reader:
    def mapping(v: Any, w: Where) -> Any:
        if not isinstance(v, dict):
            w.fail("an object", v)
        return {k: value(x, w.at(k)) for k, x in v.items()}

    return mapping


def expected(tp: Any) -> str:
    """What a field of ``tp`` must hold, as :func:`item_reader` names it (a missing field's message)."""
    origin = get_origin(tp)
    if origin is Literal:
        return " or ".join(repr(a) for a in get_args(tp))
    if origin in _UNIONS:
        options = _options(tp)
        return f"{expected(options[0])} or null" if len(options) == 1 else "any value"
    if origin in _SEQUENCES:
        return "a list"
    if origin in _MAPPINGS or is_record(tp):
        return "an object"
    return SCALARS[tp].name if tp in SCALARS else "any value"


def json_schema(tp: Any) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the hint ``tp`` as :func:`item_reader` reads it; a record's is its
    class's ``json_schema()``."""
    origin = get_origin(tp)
    if tp is Any:
        return {}
    if origin in _UNIONS:
        options = _options(tp)
        inner = json_schema(options[0] if len(options) == 1 else Any)
        if "const" in inner:
            return {"enum": [inner.pop("const"), None], **inner}
        kind = inner.get("type")
        return inner if kind is None else {**inner, "type": [*([kind] if isinstance(kind, str) else kind), "null"]}
    if origin is Literal:
        args = get_args(tp)
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if is_record(tp):
        schema: dict[str, Any] = tp.json_schema()
        return schema
    if origin in _SEQUENCES:
        items = json_schema(get_args(tp)[0])
        return {"type": "array", **({"items": items} if items else {})}
    if origin in _MAPPINGS:
        values = json_schema(get_args(tp)[1])
        return {"type": "object", **({"additionalProperties": values} if values else {})}
    return dict(SCALARS[tp].schema)
