"""The command-line overrides of a pair file's common knobs as protocol.json's ``command_line`` records them:
:class:`Overrides` (``--concurrency``, ``--requests``, ``--workload``; profile/overrides.py applies them to the pair
file's document and describes them for a card)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Overrides:
    """The values given on the command line (None: not given)."""

    concurrency: tuple[int, ...] | None = None
    requests: int | None = None
    workloads: tuple[str, ...] | None = None

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.concurrency, self.requests, self.workloads))

    def to_json(self) -> dict[str, int | list[int] | list[str]]:
        """protocol.json's ``command_line``: the given values only, under the option names' keys."""
        out: dict[str, int | list[int] | list[str]] = {}
        if self.concurrency is not None:
            out["concurrency"] = list(self.concurrency)
        if self.requests is not None:
            out["requests"] = self.requests
        if self.workloads is not None:
            out["workload"] = list(self.workloads)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Overrides | None:
        """The record :meth:`to_json` wrote (None or empty: no overrides)."""
        if not data:
            return None
        given = {k: data.get(k) for k in ("concurrency", "workload")}
        return cls(
            tuple(given["concurrency"]) if given["concurrency"] is not None else None,
            data.get("requests"),
            tuple(given["workload"]) if given["workload"] is not None else None,
        )
