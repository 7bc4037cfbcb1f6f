"""Reading a record off the disk, checked (pure): typed field readers that raise BadInput (exit 2) with one
line naming the file, the field path and the fix, e.g. ``runs/x/cells.jsonl line 3: duration_s: expected a
number, got 'abc'; restore the file or measure the run again``.

Each record's ``from_json(data, *, source=...)`` reads its fields with :func:`field` under a :class:`Where`
(the file, the path so far, the fix); ``Where.at`` descends into an object key or a list index. JSON has
no integer/float split that Python keeps apart on the way in: an integer is accepted where a number is
expected (it stays an ``int``, so the file writes back byte-identically), a bool is never a number.

Every record declares its fields once, as type hints, on records/cardwire.py's ``Wire``: records/hints.py reads
each hint into these kinds (a field's whole kind, its check and JSON Schema) or into an item-by-item check on
the same scalar kinds, and every mismatch is raised through the same :class:`Where`, so every record file fails
with the same one-line message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

from loadgen.errors import BadInput

#: The fix a damaged run file gets unless its reader names another.
RESTORE = "restore the file from its run folder, or measure the run again"

if TYPE_CHECKING:
    #: Any JSON value: null, true/false, a number, a string, a list of JSON values or an object of them.
    JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | Mapping[str, "JsonValue"] | None
else:  # read as a value checked no further (records/hints.py: ``Any``), so its schema is any value
    JsonValue = Any
#: A JSON object kept as it is: a record's field whose shape is not loadgen's to fix (its doc says why).
JsonObject: TypeAlias = Mapping[str, JsonValue]


@dataclass(frozen=True)
class Kind:
    """What a field must hold: ``name`` for the message (``a number``), ``test`` the check, ``schema`` the same
    as JSON Schema (draft 2020-12), so a record's schema is generated from its kinds."""

    name: str
    test: Callable[[object], bool]
    schema: Mapping[str, Any]
    #: The exact Python types JSON gives this kind (a scalar kind), for the fast check of a long list.
    types: frozenset[type] = frozenset()


def _number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


STR = Kind("a string", lambda v: isinstance(v, str), {"type": "string"}, frozenset({str}))
INT = Kind(
    "an integer", lambda v: isinstance(v, int) and not isinstance(v, bool), {"type": "integer"}, frozenset({int})
)
NUM = Kind("a number", _number, {"type": "number"}, frozenset({int, float}))
BOOL = Kind("true or false", lambda v: isinstance(v, bool), {"type": "boolean"}, frozenset({bool}))
OBJ = Kind("an object", lambda v: isinstance(v, dict), {"type": "object"})
LIST = Kind("a list", lambda v: isinstance(v, list), {"type": "array"})
ANY = Kind("any value", lambda v: True, {})


def _plural(kind: Kind) -> str:
    """``a number`` -> ``numbers``, ``an object (cell)`` -> ``objects (cell)``."""
    head, titled, title = kind.name.removeprefix("a ").removeprefix("an ").partition(" (")
    return f"{head}s{titled}{title}"


def maybe(kind: Kind) -> Kind:
    """``kind`` or null."""
    return Kind(
        f"{kind.name} or null", lambda v: v is None or kind.test(v), {"anyOf": [dict(kind.schema), {"type": "null"}]}
    )


def list_of(kind: Kind) -> Kind:
    """A list whose every item is ``kind`` (a list of scalars checked by the set of its items' types: a
    request record's chunk arrivals run to thousands)."""
    if kind.types:

        def test(v: object) -> bool:
            return isinstance(v, list) and set(map(type, v)) <= kind.types
    else:

        def test(v: object) -> bool:
            return isinstance(v, list) and all(map(kind.test, v))

    return Kind(f"a list of {_plural(kind)}", test, {"type": "array", "items": dict(kind.schema)})


def map_of(kind: Kind) -> Kind:
    """An object whose every value is ``kind``."""
    return Kind(
        f"an object of {_plural(kind)}",
        lambda v: isinstance(v, dict) and all(map(kind.test, v.values())),
        {"type": "object", "additionalProperties": dict(kind.schema)},
    )


def one_of(choices: tuple[Any, ...]) -> Kind:
    """A value among ``choices`` (strings: a ``Literal`` field's)."""
    return Kind(f"one of {', '.join(map(str, choices))}", lambda v: v in choices, {"enum": list(choices)})


def object_schema(kinds: Mapping[str, Kind], required: Sequence[str], title: str) -> dict[str, Any]:
    """The JSON Schema of an object whose fields have ``kinds`` (other keys allowed: files of other code)."""
    return {
        "title": title,
        "type": "object",
        "properties": {k: dict(kind.schema) for k, kind in kinds.items()},
        "required": list(required),
    }


@dataclass(frozen=True)
class Where:
    """The place being read: ``source`` (the file, with its line for JSON lines), ``path`` (the field path
    so far, ``cells[3].rate_rps``) and ``fix`` (what the user should do)."""

    source: str
    path: str = ""
    fix: str = RESTORE

    def at(self, key: str | int) -> Where:
        """The place one key (or list index) down."""
        step = f"[{key}]" if isinstance(key, int) else (f".{key}" if self.path else key)
        return Where(self.source, self.path + step, self.fix)

    def fail(self, expected: str, got: object) -> NoReturn:
        """Raise the one-line BadInput for a value that is not ``expected``."""
        shown = repr(got) if len(repr(got)) <= 60 else repr(got)[:57] + "..."
        raise BadInput(f"{self}: expected {expected}, got {shown}; {self.fix}")

    def missing(self, expected: str) -> NoReturn:
        """Raise the one-line BadInput for a required field that is absent."""
        raise BadInput(f"{self}: missing (expected {expected}); {self.fix}")

    def __str__(self) -> str:
        return f"{self.source}: {self.path}" if self.path else self.source


#: The default of a required field (none).
REQUIRED: Any = object()


def obj(data: object, where: Where) -> Mapping[str, Any]:
    """``data`` as a JSON object; BadInput when it is something else."""
    if not isinstance(data, dict):
        where.fail("an object", data)
    return data


def field(data: Mapping[str, Any], key: str, kind: Kind, where: Where, default: Any = REQUIRED) -> Any:
    """``data[key]`` checked against ``kind``; ``default`` when the key is absent (BadInput naming the field
    when it is required and absent, or present with a value of another kind)."""
    if key not in data:
        if default is REQUIRED:
            where.at(key).missing(kind.name)
        return default
    value = data[key]
    if not kind.test(value):
        where.at(key).fail(kind.name, value)
    return value
