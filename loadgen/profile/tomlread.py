"""Strict reading of TOML profiles: every key of a table is read once with its type checked, and keys
left over are errors naming the file, the table and the known keys (ProfileError, exit 2)."""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any

from loadgen.errors import ProfileError


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ProfileError(f"{path}: file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML ({exc}); fix the syntax") from None


class Table:
    """Strict reader of one TOML table: every key read once, leftovers are errors."""

    def __init__(self, path: Path, where: str, data: Any) -> None:
        if not isinstance(data, dict):
            raise ProfileError(f"{path}: {where} must be a table")
        self.path, self.where, self.data, self.seen = path, where, data, set[str]()

    def _fail(self, key: str, expected: str) -> ProfileError:
        return ProfileError(f"{self.path}: {self.where}.{key} must be {expected}, got {self.data[key]!r}")

    def _near(self, key: str) -> str:
        """``; the file has 'kye': did you mean 'key'?`` when a key of this table is close to the missing ``key``
        (difflib), else ""."""
        close = difflib.get_close_matches(key, [str(k) for k in self.data if k not in self.seen], n=1)
        return f"; the file has {close[0]!r} there: did you mean {key!r}?" if close else ""

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ..., expected: str = "") -> Any:
        self.seen.add(key)
        if key not in self.data:
            if default is ...:
                name = f"{self.where}.{key}" if self.where else key
                raise ProfileError(f"{self.path}: missing key {name}; add it (see profiles/README.md){self._near(key)}")
            return default
        value = self.data[key]
        if isinstance(value, bool) and kind in (int, float, (int, float)):
            raise self._fail(key, expected or getattr(kind, "__name__", "a number"))
        if not isinstance(value, kind):
            raise self._fail(key, expected or getattr(kind, "__name__", str(kind)))
        return value

    def number(self, key: str, default: Any = ..., expected: str = "a number") -> float:
        """The number at ``key`` (an integer or a float in the file) as a float; ``default`` when absent."""
        return float(self.get(key, (int, float), default, expected))

    def positive_int(self, key: str, default: Any = ...) -> int:
        value = self.get(key, int, default, "a positive integer")
        if value is not None and value < 1:
            raise self._fail(key, "a positive integer")
        return int(value)

    def str_list(self, key: str, default: Any = ...) -> tuple[str, ...]:
        value = self.get(key, list, default, "a list of strings")
        if not all(isinstance(v, str) for v in value):
            raise self._fail(key, "a list of strings")
        return tuple(value)

    def table(self, key: str, default: Any = ...) -> Table:
        name = f"[{key}]" if self.where == "" else f"{self.where}.{key}"
        if default is ... and key not in self.data:
            shown = name if self.where == "" else f"[{self.where.strip('[]')}.{key}]"
            raise ProfileError(f"{self.path}: missing table {shown}; add it (see profiles/README.md){self._near(key)}")
        return Table(self.path, name, self.get(key, dict, default))

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.seen)
        if unknown:
            where = self.where or "top level"
            close = difflib.get_close_matches(str(unknown[0]), sorted(self.seen), n=1)
            raise ProfileError(
                f"{self.path}: unknown key {unknown[0]!r} in {where}; "
                f"known keys: {', '.join(sorted(self.seen))} (see profiles/README.md)"
                + "".join(f"; did you mean {c!r}?" for c in close)
            )
