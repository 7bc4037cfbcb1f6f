"""The command-line overrides of ``loadgen compare`` and ``loadgen sweep`` (``--concurrency``, ``--requests``,
``--workload``): their click parameter types (a bad value is a click usage error, exit 2) and the decorator
that adds the three options and hands the command one ``overrides`` argument (profile/overrides.Overrides,
None when none was given). What each one sets in the pair file: profile/overrides.py."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from loadgen.errors import BadInput
from loadgen.profile.domains import MAX_CELL_REQUESTS, MAX_CONCURRENCY
from loadgen.profile.overrides import Overrides

__all__ = ["LevelList", "Overrides", "WorkloadList", "refuse_with", "with_overrides"]

F = TypeVar("F", bound=Callable[..., Any])


class LevelList(click.ParamType[tuple[int, ...]]):
    """``1,4,16``: distinct closed-loop concurrency levels (integers 1 to domains.MAX_CONCURRENCY, the pair
    file's own bound), in the given order."""

    name = "N[,N...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        parts = [p.strip() for p in str(value).split(",")]
        if not all(p.isdigit() and 1 <= int(p) <= MAX_CONCURRENCY for p in parts):
            self.fail(f"{value!r} is not a list of concurrency levels; give integers from 1 to {MAX_CONCURRENCY:,} "
                      "separated by commas, e.g. 1,4,16", param, ctx)
        levels = tuple(int(p) for p in parts)
        if len(set(levels)) != len(levels):
            self.fail(f"{value!r} lists a level twice; give each level once, e.g. 1,4,16", param, ctx)
        return levels


class WorkloadList(click.ParamType[tuple[str, ...]]):
    """``chat,code`` or ``path/to/workload.toml``: names of the pair's workloads and/or workload files (which
    must exist; given back as absolute paths); repeatable."""

    name = "NAME|FILE[,...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, ...]:
        if isinstance(value, tuple):
            return value
        parts = tuple(p.strip() for p in str(value).split(","))
        if not all(parts):
            self.fail(f"{value!r} has an empty workload name; give names or .toml files separated by commas",
                      param, ctx)
        missing = [p for p in parts if p.endswith(".toml") and not Path(p).is_file()]
        if missing:
            self.fail(f"workload file {missing[0]!r} does not exist; give a workload .toml file or a workload name "
                      "of the pair", param, ctx)
        # a file as an absolute path, so that protocol.json's record repeats the run from any folder
        return tuple(str(Path(p).resolve()) if p.endswith(".toml") else p for p in parts)


def with_overrides(fn: F) -> F:
    """Add ``--concurrency``, ``--requests`` and ``--workload`` to a command; ``fn`` gets ``overrides``. Given
    with ``--resume`` or ``--protocol`` they raise BadInput (exit 2): place it under the error handler."""

    @functools.wraps(fn)
    def wrapper(*args: Any, concurrency: tuple[int, ...] | None, requests: int | None,
                workload: tuple[tuple[str, ...], ...], **kwargs: Any) -> Any:
        chosen = tuple(dict.fromkeys(name for group in workload for name in group)) or None
        given = Overrides(concurrency, requests, chosen) or None
        for key, option in (("resume_dir", "--resume"), ("protocol_file", "--protocol")):
            if kwargs.get(key) is not None:
                refuse_with(given, option)
        return fn(*args, overrides=given, **kwargs)

    options = (
        click.option("--concurrency", type=LevelList(),
                     help="Closed-loop concurrency levels instead of [run].concurrency, e.g. 1,4,16."),
        click.option("--requests", type=click.IntRange(1, MAX_CELL_REQUESTS), metavar="N",
                     help="Measured requests per cell: [stop].min_requests = N with rounds = 1 (a level c sends "
                          "max(N, c)); with [stop].duration_s, [stop].max_requests = N."),
        click.option("--workload", type=WorkloadList(), multiple=True,
                     help="Run only these of the pair's workloads (names, comma-separated, repeatable), or a "
                          "workload file (.toml) instead of [run].workloads."),
    )
    return functools.reduce(lambda f, option: option(f), reversed(options), wrapper)  # type: ignore[return-value]


def refuse_with(overrides: Overrides | None, option: str) -> None:
    """Raise BadInput (exit 2) when overrides were given with ``option`` (``--resume`` / ``--protocol``), which
    repeats or finishes a run exactly as recorded."""
    if overrides:
        raise BadInput(f"--concurrency, --requests and --workload change the pair file's values; {option} repeats "
                       "or finishes a run as it was recorded: drop them, or give PAIR instead")
