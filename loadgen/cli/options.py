"""The options of ``loadgen compare`` and ``loadgen sweep`` as one typed record, :class:`RunOptions`, built by
click: the options both commands take are declared once here (:func:`run_options`), each command adds its own,
and the command function receives the record alone.

Flag values are checked by their click parameter types (cli/paramtypes.py: a bad value is click's usage error,
exit 2). What one flag cannot know alone is checked when the record is built: ``--concurrency``,
``--requests`` and ``--workload`` (profile/overrides.Overrides) with ``--resume`` or ``--protocol`` are
BadInput (exit 2).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import click

from loadgen.cli.paramtypes import LevelList, Minutes, Url, WorkloadList, runs_dir_option
from loadgen.errors import BadInput
from loadgen.profile.domains import MAX_CELL_REQUESTS
from loadgen.records.overrides import Overrides
from loadgen.run.observe import ObserveOptions

Command = Callable[["RunOptions"], None]
#: The options that become RunOptions.observe (compare's sinks: run/observe.py).
_OBSERVE = tuple(f.name for f in fields(ObserveOptions))
Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


@dataclass(frozen=True)
class RunOptions:
    """What ``loadgen compare`` and ``loadgen sweep`` were given (see their ``--help``); an option the command
    does not take keeps its default."""

    pair: str | None
    resume_dir: Path | None
    runs_dir: Path
    attach_plain: str | None
    allow_unpinned: bool
    api_key: str | None
    overrides: Overrides | None = None  # --concurrency, --requests, --workload (profile/overrides.py)
    protocol_file: Path | None = None
    deploy_dir: Path | None = None  # sweep only: --deploy-schedule SWEEP_DIR
    # compare only
    attach_speculative: str | None = None
    observe: ObserveOptions = field(default_factory=ObserveOptions)  # --metrics-*, --pushgateway, --prometheus-*
    # sweep only
    history_dirs: tuple[Path, ...] = ()
    budget_min: float | None = None
    metrics_plain: str | None = None  # --metrics-plain URL
    metrics_speculative: str | None = None  # --metrics-speculative URL

    @property
    def metrics(self) -> dict[str, str]:
        """Role -> the URL its server's ``/metrics`` is read at, when given apart from its API URL."""
        return _given(self.metrics_plain, self.metrics_speculative)

    @property
    def attach(self) -> dict[str, str]:
        """Role (``plain``, ``speculative``) -> the URL of the running server to use for it, when given."""
        return _given(self.attach_plain, self.attach_speculative)


def _given(plain: str | None, speculative: str | None) -> dict[str, str]:
    """Role (``plain``, ``speculative``) -> its URL, for the roles given one (in that order)."""
    return {role: url for role, url in (("plain", plain), ("speculative", speculative)) if url is not None}


def overrides_given(
    concurrency: tuple[int, ...] | None, requests: int | None, workload: tuple[tuple[str, ...], ...]
) -> Overrides | None:
    """The Overrides of ``--concurrency``, ``--requests`` and each ``--workload`` (names in first-given order,
    once each); None when none was given."""
    chosen = tuple(dict.fromkeys(name for group in workload for name in group)) or None
    return Overrides(concurrency, requests, chosen) or None


def refuse_with(overrides: Overrides | None, option: str) -> None:
    """Raise BadInput (exit 2) when overrides were given with ``option`` (``--resume`` / ``--protocol``), which
    repeats or finishes a run exactly as recorded."""
    if overrides:
        raise BadInput(
            f"--concurrency, --requests and --workload change the pair file's values; {option} repeats "
            "or finishes a run as it was recorded: drop them, or give PAIR instead"
        )


_RUNS_DIR_HELP = {
    "run": "Where run folders are created.",
    "sweep": "Where sweep folders are created (and earlier start times are read).",
}


def _shared(kind: str) -> tuple[Decorator, ...]:
    """The options compare and sweep both take; ``kind`` (``run``/``sweep``) names the folders in the help."""
    return (
        click.argument("pair", required=False),
        runs_dir_option(_RUNS_DIR_HELP[kind]),
        click.option("--attach-plain", type=Url(), help="Use the plain server already running at URL (the plain arm)."),
        click.option(
            "--metrics-plain",
            type=Url(),
            help="Read the plain server's /metrics at this URL instead of its API URL (a proxy in front of it; "
            "one replica of several). Same as [servers.plain].metrics_url.",
        ),
        click.option(
            "--metrics-speculative",
            type=Url(),
            help="Read the speculative server's /metrics at this URL instead of its API URL, e.g. the decode "
            "instance's behind a prefill/decode proxy. Same as [servers.speculative].metrics_url.",
        ),
        click.option(
            "--allow-unpinned", is_flag=True, help="Accept hub models without a pinned commit (warning only)."
        ),
        click.option(
            "--api-key",
            envvar="OPENAI_API_KEY",
            metavar="KEY",
            help="Bearer token for servers started with --api-key (default: $OPENAI_API_KEY); never written.",
        ),
        click.option(
            "--concurrency",
            type=LevelList(),
            help="Closed-loop concurrency levels instead of [run].concurrency, e.g. 1,4,16.",
        ),
        click.option(
            "--requests",
            type=click.IntRange(1, MAX_CELL_REQUESTS),
            metavar="N",
            help="Measured requests per cell: [stop].min_requests = N with rounds = 1 (a level c sends "
            "max(N, c)); with [stop].duration_s, [stop].max_requests = N.",
        ),
        click.option(
            "--workload",
            type=WorkloadList(),
            multiple=True,
            help="Run only these of the pair's workloads (names, comma-separated, repeatable), or a "
            "workload file (.toml) instead of [run].workloads.",
        ),
    )


def repeat_options(*, protocol: str, resume: str) -> tuple[Decorator, Decorator]:
    """``--protocol FILE`` (RunOptions.protocol_file) and ``--resume DIR`` (RunOptions.resume_dir), each with
    the command's help text: what they repeat or finish differs by command, how they parse does not."""
    return (
        click.option("--protocol", "protocol_file", type=click.Path(dir_okay=False, path_type=Path), help=protocol),
        click.option("--resume", "resume_dir", type=click.Path(file_okay=False, path_type=Path), help=resume),
    )


#: The options only ``loadgen sweep`` takes.
SWEEP_ONLY: tuple[Decorator, ...] = (
    *repeat_options(
        protocol="Measure an earlier sweep again in a new sweep folder: its SWEEP_DIR/protocol.json (the same "
        "candidates, prompts, cells, blocks and order).",
        resume="Finish an interrupted sweep folder: the slots not done, in the recorded order.",
    ),
    click.option(
        "--deploy-schedule",
        "deploy_dir",
        type=click.Path(file_okay=False, path_type=Path),
        metavar="SWEEP_DIR",
        help="Measure the K schedule (num_speculative_tokens_per_batch_size) that "
        "sweep recommends, as deployed on one server, on its prompts and cells, and compare each cell "
        "with the sweep's prediction (schedule-check.md).",
    ),
    click.option(
        "--history",
        "history_dirs",
        multiple=True,
        metavar="DIR",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="Also read earlier run folders under DIR for the estimate (repeatable), e.g. docs/examples/h200.",
    ),
    click.option("--budget-min", type=Minutes(), help="Refuse (exit 2) when the estimated wall time exceeds this."),
    click.option(
        "--progress/--no-progress",
        default=True,
        help="Show the progress line on stderr (a terminal only): the slot counter, the time left and the "
        "cell's requests.",
    ),
)


def run_options(kind: str, *own: Decorator) -> Callable[[Command], Callable[..., None]]:
    """Decorate a command taking one RunOptions with the shared options, then its ``own`` (click decorators,
    in the order of its ``--help``); ``kind`` is ``run`` (compare) or ``sweep``. Overrides given with
    ``--resume``/``--protocol`` raise BadInput: place it under the error handler."""

    def decorate(fn: Command) -> Callable[..., None]:
        @functools.wraps(fn)
        def wrapper(
            *,
            concurrency: tuple[int, ...] | None,
            requests: int | None,
            workload: tuple[tuple[str, ...], ...],
            **given: Any,
        ) -> None:
            overrides = overrides_given(concurrency, requests, workload)
            for key, option in (
                ("resume_dir", "--resume"),
                ("protocol_file", "--protocol"),
                ("deploy_dir", "--deploy-schedule"),
            ):
                if given.get(key) is not None:
                    refuse_with(overrides, option)
            if "history_dirs" in given:
                given["history_dirs"] = tuple(given["history_dirs"])
            given["observe"] = ObserveOptions(**{k: given.pop(k) for k in _OBSERVE if k in given})
            fn(RunOptions(overrides=overrides, **given))

        command: Callable[..., Any] = wrapper
        for option in reversed((*_shared(kind), *own)):  # the first given is outermost: first in --help
            command = option(command)
        return command

    return decorate
