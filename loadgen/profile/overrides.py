"""Command-line overrides of a pair file's common knobs (``--concurrency``, ``--requests``, ``--workload`` on
``loadgen compare`` and ``loadgen sweep``), applied to the TOML document before it is read and checked, so
the run records them exactly as if the file had said them (the run folder's pair.toml and protocol.json)
and ``--protocol`` repeats the run.

- ``concurrency``: replaces ``[run].concurrency`` (closed-loop levels; open-loop ``rates_rps`` are kept).
- ``requests``: measured requests per cell. By count it sets ``[stop].min_requests = N`` and
  ``[stop].rounds = 1``, so a closed-loop cell at concurrency c sends max(N, c) (every slot at least once,
  pair.StopRule.measured_requests); with ``[stop].duration_s`` it sets ``[stop].max_requests = N``.
- ``workloads``: replaces ``[run].workloads`` with names the pair runs (a base name, or a context-length
  variant's base; a workload the pair gives by its file's path also by that file's stem, ``w`` for
  ``/data/w.toml``) or paths of workload files (``.toml``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loadgen.errors import ProfileError
from loadgen.profile.tomlread import read_toml
from loadgen.records.overrides import Overrides
from loadgen.util import tomlwrite

__all__ = ["Overrides", "apply_overrides", "described", "pair_text"]


def _workloads(declared: Any, chosen: tuple[str, ...], path: Path) -> list[str]:
    names = [str(n) for n in declared] if isinstance(declared, list) else []
    by_stem = {Path(n).stem: n for n in names if n.endswith(".toml")}  # a workload the pair gives by its file
    out = []
    for name in chosen:
        if name.endswith(".toml"):
            out.append(str(Path(name).resolve()))
        elif name in names or name in by_stem:
            out.append(by_stem.get(name, name))
        else:
            close = difflib.get_close_matches(name, [*names, *by_stem], n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            runs = ", ".join(names) or "none"
            raise ProfileError(
                f"--workload {name}: {path} runs no workload of that name ({runs}); {hint}give one "
                "of them or a workload file path (.toml)"
            )
    return out


def apply_overrides(doc: Mapping[str, Any], given: Overrides | None, path: Path) -> dict[str, Any]:
    """A copy of the pair (or sweep) document ``doc`` read from ``path`` with the ``given`` values written into
    ``[run]`` and ``[stop]`` (module docstring); ``doc`` itself is unchanged. Raises ProfileError (exit 2) when
    ``--workload`` names a workload the file does not run."""
    out = dict(doc)
    if not given:
        return out
    run = dict(out.get("run") or {}) if isinstance(out.get("run"), Mapping) else {}
    stop = dict(out.get("stop") or {}) if isinstance(out.get("stop"), Mapping) else {}
    if given.concurrency is not None:
        run["concurrency"] = list(given.concurrency)
    if given.workloads is not None:
        run["workloads"] = _workloads(run.get("workloads"), given.workloads, path)
    if given.requests is not None and stop.get("duration_s") is not None:
        stop["max_requests"] = given.requests
    elif given.requests is not None:
        stop["min_requests"], stop["rounds"] = given.requests, 1
    out["run"] = run
    if stop:
        out["stop"] = stop
    return out


def described(given: Overrides) -> str:
    """One phrase for a card: each given option with its value and the keys it set."""
    parts = []
    if given.concurrency is not None:
        parts.append(f"--concurrency {','.join(map(str, given.concurrency))} ([run].concurrency)")
    if given.requests is not None:
        parts.append(f"--requests {given.requests} ([stop].min_requests and rounds = 1, or max_requests by duration)")
    if given.workloads is not None:
        parts.append(f"--workload {','.join(given.workloads)} ([run].workloads)")
    return "; ".join(parts)


def pair_text(path: Path, given: Overrides) -> str:
    """The pair file at ``path`` with ``given`` written in, as TOML text (util/tomlwrite.py): the run folder's
    pair.toml, which then holds the overridden values as its own (comments are not kept)."""
    return tomlwrite.to_toml(apply_overrides(read_toml(path), given, path))
