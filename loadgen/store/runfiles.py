"""A run folder's saved files, read once, for the card (carddata.py computes from them without I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from loadgen.errors import BadInput
from loadgen.records.cell import CellEntry
from loadgen.records.protocol import Protocol
from loadgen.records.request import RequestRecord
from loadgen.records.runparts import ServerFiles, StatusFile
from loadgen.store.files import load_records, read_cell_lines, read_protocol, read_status
from loadgen.store.ondisk import NO_STATUS, OnDisk, on_disk
from loadgen.store.serverfiles import read_server_files


@dataclass(frozen=True)
class RunFiles:
    """What the card needs from a run folder: protocol.json (checked, store/rundir.py ``read_protocol``),
    status.json, requests.jsonl's records, cells.jsonl's lines, each server's files (``servers[role]``,
    records/server.py ``ServerFiles``), the card's ``failure`` and ``requests_on_disk`` (partial.on_disk), where
    protocol.json lies and the card's ``generated_utc``."""

    protocol: Protocol
    status: StatusFile
    records: list[RequestRecord]
    entries: list[CellEntry]
    #: per role its files (:data:`SERVER_PARTS`), each as written, None when absent
    servers: Mapping[str, ServerFiles]
    on_disk: OnDisk
    protocol_path: Path
    generated_utc: str


def read_run(run_dir: Path, roles: Sequence[str], optional: Sequence[str] = ()) -> RunFiles:
    """Read the run folder ``run_dir``: the servers of ``roles``, and of each of ``optional`` whose
    ``servers/<role>-effective.json`` is there (the placebo). Raises BadInput when it has no protocol.json, or
    when its status.json is no status."""
    if not (run_dir / "protocol.json").is_file():
        raise BadInput(f"{run_dir} is not a run folder (no protocol.json); pass runs/<pair>/<timestamp>")
    status = read_status(run_dir) or NO_STATUS
    entries = read_cell_lines(run_dir / "cells.jsonl")
    found = [*roles, *(r for r in optional if (run_dir / "servers" / f"{r}-effective.json").is_file())]
    servers = {role: read_server_files(run_dir, role) for role in found}
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


def server_log(run_dir: Path, role: str) -> str | None:
    """The startup log ``servers/<role>.log`` as text (undecodable bytes replaced), None when the folder did not
    keep it."""
    log = run_dir / "servers" / f"{role}.log"
    return log.read_text(errors="replace") if log.is_file() else None
