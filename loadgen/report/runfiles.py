"""A run folder's saved files, read once, for the card (carddata.py computes from them without I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from loadgen.errors import BadInput
from loadgen.profile.cells import PLACEBO, ROLES
from loadgen.records.cell import CellEntry
from loadgen.records.protocol import Protocol
from loadgen.records.request import RequestRecord
from loadgen.report.partial import OnDisk, RunStatus, on_disk
from loadgen.report.rundir import load_records, read_cell_lines, read_json, read_protocol
from loadgen.serve.enginepath import parse_engine_path

#: The per-server files under ``servers/`` (``<role>-<part>.json``).
SERVER_PARTS = ("launch", "effective", "resources", "teardown")


@dataclass(frozen=True)
class RunFiles:
    """What the card needs from a run folder: protocol.json (checked, report/rundir.py ``read_protocol``),
    status.json, requests.jsonl's records,
    cells.jsonl's lines, ``servers[role][part]`` (None when absent), the card's ``failure`` and
    ``requests_on_disk`` (partial.on_disk), where protocol.json lies and the card's ``generated_utc``."""

    protocol: Protocol
    status: RunStatus
    records: list[RequestRecord]
    entries: list[CellEntry]
    #: per role, per part (:data:`SERVER_PARTS`): the server's record as written, None when absent
    servers: Mapping[str, Mapping[str, Any]]
    on_disk: OnDisk
    protocol_path: Path
    generated_utc: str


def read_run(run_dir: Path) -> RunFiles:
    """Read the run folder ``run_dir``. Raises BadInput when it has no protocol.json."""
    if not (run_dir / "protocol.json").is_file():
        raise BadInput(f"{run_dir} is not a run folder (no protocol.json); pass runs/<pair>/<timestamp>")
    status_path = run_dir / "status.json"
    status = _status(read_json(status_path)) if status_path.exists() else RunStatus()
    entries = read_cell_lines(run_dir / "cells.jsonl")
    roles = [*ROLES, *([PLACEBO] if (run_dir / "servers" / f"{PLACEBO}-effective.json").is_file() else [])]
    servers = {
        role: {part: _optional_json(run_dir / "servers" / f"{role}-{part}.json") for part in SERVER_PARTS}
        for role in roles
    }
    for role in roles:
        servers[role]["effective"] = with_engine_path(servers[role]["effective"], run_dir, role)
    torn: list[str] = []
    records = load_records(run_dir, torn)
    return RunFiles(
        read_protocol(run_dir / "protocol.json"),
        status,
        records,
        entries,
        servers,
        on_disk(records, entries, torn, status),
        run_dir / "protocol.json",
        run_ended_utc(entries, run_dir),
    )


def run_ended_utc(entries: Iterable[CellEntry], run_dir: Path) -> str:
    """When the run's last cell ended (its ``started_utc`` + ``duration_s``, ISO 8601 to the second, UTC):
    the card's ``generated_utc``, so that rebuilding a card gives the same bytes. Without any cell line,
    when protocol.json was last written."""
    ends = [datetime.fromisoformat(e.started_utc) + timedelta(seconds=e.duration_s) for e in entries if e.started_utc]
    when = max(ends) if ends else datetime.fromtimestamp((run_dir / "protocol.json").stat().st_mtime, UTC)
    return when.astimezone(UTC).replace(microsecond=0).isoformat(timespec="seconds")


def with_engine_path(effective: dict[str, Any] | None, run_dir: Path, role: str) -> dict[str, Any] | None:
    """``effective`` (``servers/<role>-effective.json``) with its ``engine_path`` parsed from the startup log
    ``servers/<role>.log`` when a record of older code lacks it and the run folder kept the log; unchanged
    otherwise (the card then says unknown)."""
    log = run_dir / "servers" / f"{role}.log"
    if effective is None or "engine_path" in effective or not log.is_file():
        return effective
    return {**effective, "engine_path": parse_engine_path(log.read_text(errors="replace")).to_json()}


def _status(data: Any) -> RunStatus:
    """status.json's fields the card reads (partial.RunStatus); an absent key: not complete, no failure."""
    data = data if isinstance(data, dict) else {}
    return RunStatus(bool(data.get("complete")), data.get("failure"), int(data.get("requests_not_written") or 0))


def _optional_json(path: Path) -> Any:
    return read_json(path) if path.exists() else None
