"""One check's outcome, the one ``Finding`` type of every pair check (pure data)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    """One check: ``ok`` passed; failed and ``blocking`` stops the run (exit 2), failed otherwise warns.
    ``message``: one line with its fix; ``data``: machine-readable extras (hashes, counts) for checks.json."""

    check: str
    ok: bool
    blocking: bool
    message: str
    data: Mapping[str, Any] | None = None

    def line(self) -> str:
        """One line: status (``ok``, ``FAIL``, ``warn``), check name, message."""
        status = "ok  " if self.ok else ("FAIL" if self.blocking else "warn")
        return f"{status} {self.check}: {self.message}"
