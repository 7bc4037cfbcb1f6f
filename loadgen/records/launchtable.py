"""The launch tables of a pair document (``[engine]`` and each ``[servers.<role>]``), as far as they tell where the
engine runs: :class:`LaunchTable`, read leniently from the parsed TOML for ``loadgen pairs`` (profile/pairkind.py),
which lists every pair file, a broken one included, before any is checked (profile/pairfile.py checks them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LaunchTable:
    """One launch table: its ``args`` (each as a string; none when ``args`` is no list) and the names of its
    ``env`` (none when ``env`` is no table)."""

    args: tuple[str, ...] = ()
    env_names: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, table: Mapping[str, Any]) -> LaunchTable:
        """The table's args and env names (a value of another kind reads as empty)."""
        args, env = table.get("args"), table.get("env")
        return cls(
            tuple(str(a) for a in args) if isinstance(args, list) else (),
            tuple(str(k) for k in env) if isinstance(env, Mapping) else (),
        )

    @classmethod
    def all_of(cls, doc: Mapping[str, Any]) -> list[LaunchTable]:
        """``[engine]`` then each ``[servers.<role>]`` table of the document, in file order (a value that is no
        table is skipped)."""
        servers = doc.get("servers")
        tables = [doc.get("engine"), *(servers.values() if isinstance(servers, Mapping) else ())]
        return [cls.from_json(t) for t in tables if isinstance(t, Mapping)]
