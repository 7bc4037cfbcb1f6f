"""The command-line overrides of a pair file's common knobs: :class:`Overrides` (``--concurrency``, ``--requests``,
``--workload``; profile/overrides.py applies them to the pair file's document and describes them for a card), and
:class:`CommandLine`, the same values as protocol.json's, the pair card's and the sweep card's ``command_line``
hold them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from loadgen.records.cardwire import Wire


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


@dataclass(frozen=True)
class CommandLine(Wire):
    """protocol.json's, the pair card's and the sweep card's ``command_line``: :meth:`Overrides.to_json`, the
    values given on the command line under the options' names (``concurrency``: the closed-loop levels,
    ``requests``: measured requests per cell, ``workload``: the workload names), each absent when not given;
    written back as read."""

    TITLE: ClassVar[str] = "command line"

    concurrency: tuple[int, ...] | None = None
    requests: int | None = None
    workload: tuple[str, ...] | None = None

    def __bool__(self) -> bool:
        """False for an empty object (nothing given), as the object itself would be."""
        return bool(self.to_json())

    def overrides(self) -> Overrides | None:
        """The :class:`Overrides` these values are (None when none was given)."""
        if not self:
            return None
        return Overrides(self.concurrency, self.requests, self.workload)
