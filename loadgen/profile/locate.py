"""Where a file that a profile names lies: a name under ``profiles/``, or a path anywhere (pure but for
checking that a file exists).

A ``[run].workloads`` entry is a workload name (``profiles/workloads/<name>.toml``) unless it ends in
``.toml`` or holds a ``/``: then it is the path of a workload file. A workload's prompt file (``path``) is
always a path. An absolute path (``~`` expanded) is itself; a relative one is looked up in the current
directory first (the repository root through ``make``; every shipped profile is written so), then in the
folder of the file that names it (the pair file for its workloads, the workload file for its prompt file),
which is what a user keeping a pair, its workloads and their prompts in one folder outside the checkout
expects.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def is_path(ref: str) -> bool:
    """Whether a ``[run].workloads`` entry is a path (ends in ``.toml`` or holds a ``/``), not a name."""
    return ref.endswith(".toml") or "/" in ref


def locate(ref: str | Path, beside: Path | None) -> Path:
    """The file ``ref`` names: itself when absolute or a file relative to the current directory, else
    ``beside / ref`` (absolute) when that is a file; else ``ref`` as given (the caller says it is missing,
    with :func:`looked_in`)."""
    path = Path(ref).expanduser()
    if path.is_absolute() or path.is_file() or beside is None:
        return path
    near = (beside / path).absolute()
    return near if near.is_file() else path


def looked_in(ref: str | Path, beside: Path | None) -> str:
    """Where :func:`locate` looked for ``ref``, for a not-found message."""
    path = Path(ref).expanduser()
    if path.is_absolute():
        return str(path)
    where = f"{Path.cwd() / path}" + (f" nor {(beside / path).absolute()}" if beside is not None else "")
    return where


def anchor_workloads(doc: Mapping[str, Any], pair_file: Path) -> dict[str, Any]:
    """``doc`` (a pair file's TOML) with each ``[run].workloads`` path made absolute (:func:`locate` from
    ``pair_file``'s folder), for a copy of the pair file written elsewhere (a sweep's candidates)."""
    run = doc.get("run")
    if not isinstance(run, Mapping) or not isinstance(run.get("workloads"), list):
        return dict(doc)
    refs = [
        str(locate(r, pair_file.parent).absolute()) if isinstance(r, str) and is_path(r) else r
        for r in run["workloads"]
    ]
    return {**doc, "run": {**run, "workloads": refs}}
