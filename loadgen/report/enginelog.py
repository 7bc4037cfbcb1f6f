"""A server's engine path for a card of older code: parsed from the startup log the run folder kept
(``servers/<role>.log``, store/runfiles.py ``server_log``; serve/enginepath.py reads vLLM's lines) when its
effective record lacks one, so the card names it instead of saying unknown."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from loadgen.records.serverparts import EffectiveFile
from loadgen.serve.enginepath import parse_engine_path
from loadgen.store.runfiles import RunFiles, server_log


def with_engine_path(effective: EffectiveFile | None, run_dir: Path, role: str) -> EffectiveFile | None:
    """``effective`` (``servers/<role>-effective.json``) with its ``engine_path`` parsed from the startup log
    ``servers/<role>.log`` when a record of older code lacks it and the run folder kept the log (written after
    the file's keys); unchanged otherwise (the card then says unknown)."""
    if effective is None or "engine_path" in effective.to_json() or (log := server_log(run_dir, role)) is None:
        return effective
    return effective.with_fields(engine_path=parse_engine_path(log))


def with_engine_paths(files: RunFiles, run_dir: Path) -> RunFiles:
    """``files`` with each server's effective record completed by :func:`with_engine_path`."""
    servers = {
        role: replace(parts, effective=with_engine_path(parts.effective, run_dir, role))
        for role, parts in files.servers.items()
    }
    return replace(files, servers=servers)
