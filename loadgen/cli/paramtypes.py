"""The click parameter types of the command line's flag values: a bad value is click's usage error (exit 2,
``Usage:`` and one ``Error: Invalid value for '--flag': ...`` line naming the fix), raised while click parses,
before any file is read or server started, the same way for ``compare``, ``sweep`` and ``diff``.

- :class:`LevelList`: ``--concurrency 1,4,16`` (closed-loop concurrency levels).
- :class:`WorkloadList`: ``--workload NAME|FILE[,...]`` (workload names or existing ``.toml`` files).
- :class:`Minutes`: ``--budget-min M`` (a finite number of minutes above 0).
- :class:`Tolerance`: ``--max-regression 5%`` (a percentage, or a fraction below 1).
- :class:`Url`: ``--attach-plain/--attach-speculative/--pushgateway/--prometheus-url URL`` (``http(s)://host``).
- :class:`SpeedRange`: ``trace-capacity --speeds LOW:HIGH`` (replay speeds, 1 / time_scale).

``--requests`` and ``--metrics-port`` are click.IntRange (bounds: profile/domains.py, 1..65535);
:func:`runs_dir_option` is ``--runs-dir DIR`` (default ``runs``) of every command that makes or lists folders.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from loadgen.profile.domains import MAX_CONCURRENCY, MAX_TIME_SCALE
from loadgen.serve.attached import url_problem
from loadgen.util.redact import redact_url


class LevelList(click.ParamType[tuple[int, ...], Any]):
    """``1,4,16`` -> ``(1, 4, 16)``: distinct closed-loop concurrency levels (integers 1 to
    domains.MAX_CONCURRENCY, the pair file's own bound), in the given order."""

    name = "N[,N...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, ...]:
        """The levels; click's usage error naming the value and the form wanted otherwise."""
        if isinstance(value, tuple):
            return value
        parts = [p.strip() for p in str(value).split(",")]
        if not all(p.isdigit() and 1 <= int(p) <= MAX_CONCURRENCY for p in parts):
            self.fail(
                f"{value!r} is not a list of concurrency levels; give integers from 1 to {MAX_CONCURRENCY:,} "
                "separated by commas, e.g. 1,4,16",
                param,
                ctx,
            )
        levels = tuple(int(p) for p in parts)
        if len(set(levels)) != len(levels):
            self.fail(f"{value!r} lists a level twice; give each level once, e.g. 1,4,16", param, ctx)
        return levels


class WorkloadList(click.ParamType[tuple[str, ...], Any]):
    """``chat,code`` or ``path/to/workload.toml`` -> a tuple of names of the pair's workloads and/or workload
    files (which must exist; given back as absolute paths). Whether the pair runs a name is checked when the
    pair file is read (profile/overrides.py), with a "did you mean"."""

    name = "NAME|FILE[,...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, ...]:
        """The names and absolute file paths; click's usage error for an empty name or a missing file."""
        if isinstance(value, tuple):
            return value
        parts = tuple(p.strip() for p in str(value).split(","))
        if not all(parts):
            self.fail(
                f"{value!r} has an empty workload name; give names or .toml files separated by commas", param, ctx
            )
        missing = [p for p in parts if p.endswith(".toml") and not Path(p).is_file()]
        if missing:
            self.fail(
                f"workload file {missing[0]!r} does not exist; give a workload .toml file or a workload name "
                "of the pair",
                param,
                ctx,
            )
        # a file as an absolute path, so that protocol.json's record repeats the run from any folder
        return tuple(str(Path(p).resolve()) if p.endswith(".toml") else p for p in parts)


class Minutes(click.ParamType[float, Any]):
    """Minutes > 0 and finite -> float. ``-5``, ``0``, ``nan`` or ``inf`` were once taken as given and gave a
    refusal that could not be met ("needs about 5.8 min, more than --budget-min nan") or no bound at all."""

    name = "FLOAT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        """The minutes as a float; click's usage error naming the value otherwise."""
        try:
            minutes = float(value)
        except (TypeError, ValueError):
            minutes = math.nan
        if not (math.isfinite(minutes) and minutes > 0):
            self.fail(
                f"{value!r} is no budget; give the minutes the sweep may take, a number above 0 such as 30", param, ctx
            )
        return minutes


class Tolerance(click.ParamType[float, Any]):
    """A tolerance as ``5%`` or ``0.05`` -> the fraction 0.05 (>= 0, below 10 = 1000%; a fraction of 1 or more
    only with ``%``: a bare ``5`` is refused, since it reads as 500%, a gate that never fails)."""

    name = "PERCENT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        """The fraction; click's usage error naming the value and the form wanted otherwise."""
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:
            fraction = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            fraction = -1.0
        if not 0 <= fraction < 10:
            self.fail(f"{value!r} is no tolerance; give a percentage such as 5% (or the fraction 0.05)", param, ctx)
        if fraction >= 1 and not text.endswith("%"):  # "5" meant as 5% would be a gate that never fails
            self.fail(
                f"{value!r} reads as the fraction {fraction:g} ({fraction:.0%}); write {text}% for "
                f"{text} percent, or {fraction:.0%} if you mean it",
                param,
                ctx,
            )
        return fraction


class Url(click.ParamType[str, Any]):
    """``http(s)://host[:port][/prefix]`` with a port in 1..65535 and no space or control character, given back
    unchanged (serve/attached.url_problem, the rule a pair file's ``[servers.<role>].url`` meets too); the
    error line shows the URL without its credentials (util/redact.redact_url)."""

    name = "URL"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        """The URL; click's usage error naming what is wrong and the form wanted otherwise."""
        url = str(value)
        if (problem := url_problem(url)) is not None:
            self.fail(f"{redact_url(url)!r} {problem}; give a URL such as http://127.0.0.1:8000", param, ctx)
        return url


class SpeedRange(click.ParamType[tuple[float, float], Any]):
    """``0.5:2`` -> ``(0.5, 2.0)``: the replay speeds a capacity search bisects (1 / time_scale), with
    1 / domains.MAX_TIME_SCALE <= LOW < HIGH < inf (a slower replay is a time_scale over a workload file's cap,
    and waits for ever)."""

    name = "LOW:HIGH"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[float, float]:
        """The two speeds; click's usage error naming the value and the form wanted otherwise."""
        if isinstance(value, tuple):
            return value
        low, _, high = str(value).partition(":")
        try:
            speeds = float(low), float(high)
        except ValueError:
            speeds = math.nan, math.nan
        if not 1 / MAX_TIME_SCALE <= speeds[0] < speeds[1] < math.inf:
            self.fail(
                f"{value!r} is no range of speeds; give LOW:HIGH with {1 / MAX_TIME_SCALE:g} <= LOW < HIGH "
                f"(a time_scale of at most {MAX_TIME_SCALE:,}, as in a workload file), e.g. 0.5:2",
                param,
                ctx,
            )
        return speeds


def runs_dir_option(help: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--runs-dir DIR`` option (a folder path, default ``runs``; the parameter ``runs_dir``, a Path) with
    the command's ``help`` (what it makes or reads there)."""
    return click.option(
        "--runs-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("runs"),
        show_default=True,
        help=help,
    )
