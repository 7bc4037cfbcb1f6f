"""The marker of a run folder refused before its first request: ``refused.json`` (README.md, "One process
per folder").

A new run or sweep folder whose servers fail the check before measuring (an attached server unreachable,
serving another model, in the wrong mode, or too short a ``max_model_len`` for the workloads:
serve/attached.py ``probe_attached``) keeps its plan (protocol.json, prompts.jsonl, pair.toml, checks.json) and
gets ``refused.json`` instead of ``status.json`` and a card. ``loadgen runs`` lists it as refused,
``loadgen report`` refuses it (exit 2), and ``loadgen compare|sweep --resume`` measures it once the cause is
fixed (the marker goes when measuring starts). A folder that has measured before (it has a status.json) is
left as it was.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from loadgen.errors import BadInput, LoadgenError
from loadgen.store.rundir import read_json, write_json

#: The marker's name inside a run folder.
REFUSED_NAME = "refused.json"


@dataclass(frozen=True)
class Refusal:
    """Why a run folder was refused: the error's one line, its exit code and when (ISO 8601 UTC)."""

    reason: str
    exit_code: int
    refused_utc: str


def mark_refused(run_dir: Path, error: LoadgenError) -> Refusal | None:
    """Write ``refused.json`` for ``error`` unless ``run_dir`` has measured before (it holds a status.json);
    returns the refusal written, or None. Raises RunDirUnwritable."""
    if (run_dir / "status.json").exists():
        return None
    refusal = Refusal(str(error), error.exit_code, datetime.now(UTC).isoformat(timespec="seconds"))
    write_json(run_dir / REFUSED_NAME, asdict(refusal))
    return refusal


def read_refusal(run_dir: Path) -> Refusal | None:
    """The refusal ``run_dir`` is marked with, None when it is not (or the marker is unreadable)."""
    path = run_dir / REFUSED_NAME
    if not path.is_file():
        return None
    try:
        d = read_json(path)
        return Refusal(str(d["reason"]), int(d["exit_code"]), str(d["refused_utc"]))
    except (BadInput, KeyError, TypeError, ValueError):
        return Refusal("unknown (refused.json is unreadable)", 2, "")


def clear_refusal(run_dir: Path) -> None:
    """Remove the marker: the folder is being measured."""
    with contextlib.suppress(FileNotFoundError):
        (run_dir / REFUSED_NAME).unlink()


def no_card_for_refused(run_dir: Path) -> None:
    """Raise BadInput (exit 2) when ``run_dir`` was refused before measuring: it has nothing to report."""
    if (refusal := read_refusal(run_dir)) is not None:
        again = "sweep" if (run_dir / "sweep.toml").is_file() else "compare"
        raise BadInput(
            f"{run_dir} was refused before measuring ({refusal.reason}); there is no card to write: "
            f"fix that and run `loadgen {again} --resume {run_dir}`"
        )
