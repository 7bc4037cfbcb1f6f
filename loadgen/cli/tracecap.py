"""``loadgen trace-capacity``: the fastest replay of a trace workload at which each server still meets the
declared SLOs, by bisection over the replay speed (run/tracecapacity.py; docs/metrics.md "Trace replay")."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from loadgen.cli.handling import _handles_errors, _sigterm_as_interrupt
from loadgen.cli.paramtypes import SpeedRange, runs_dir_option
from loadgen.errors import BadInput
from loadgen.profile.pairfile import load_pair


@click.command("trace-capacity")
@click.argument("pair")
@click.option("--workload", required=True, help="The trace workload of PAIR to replay faster and slower.")
@click.option(
    "--speeds",
    type=SpeedRange(),
    default="0.5:2",
    show_default=True,
    help="The replay speeds to search (1 / time_scale; 2 = twice as fast as recorded).",
)
@click.option(
    "--steps",
    type=click.IntRange(0, 20),
    default=3,
    show_default=True,
    help="Bisection steps after the two ends (one compare each).",
)
@runs_dir_option("Where each replay's run folder is created.")
@click.option("--allow-unpinned", is_flag=True, help="Accept hub models without a pinned commit (warning only).")
@click.option(
    "--progress/--no-progress",
    default=True,
    help="Show each compare's progress line on stderr (a terminal only): the slot counter and the time left.",
)
@_handles_errors
def trace_capacity(
    pair: str,
    workload: str,
    speeds: tuple[float, float],
    steps: int,
    runs_dir: Path,
    allow_unpinned: bool,
    progress: bool,
) -> None:
    """Find, by bisection over the replay speed, the fastest replay of the trace WORKLOAD of PAIR at which each
    server still meets the pair's [slo]: one compare per speed, each with its own run folder and card."""
    from loadgen.run.observe import ObserveOptions
    from loadgen.run.tracecapacity import search_capacity

    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    loaded = load_pair(pair)
    if not any(w.kind == "trace" for w in loaded.workloads):
        raise BadInput(f"{loaded.path} has no trace workload; add one to [run].workloads (profiles/README.md)")
    observe = ObserveOptions(progress=progress and sys.stderr.isatty())
    found = search_capacity(
        loaded, workload, speeds, steps, runs_dir, log=click.echo, allow_unpinned=allow_unpinned, observe=observe
    )
    for speed, folder in sorted(found.run_dirs.items()):
        click.echo(f"speed {speed:.4g}x: {folder / 'card.md'}")
    said = [
        f"{s} holds {v:.3g}x this trace"
        if v is not None
        else f"{s} holds none of the speeds tested (from {speeds[0]:g}x)"
        for s, v in found.capacity.items()
    ]
    click.echo(f"capacity on {workload}: {', '.join(said)}")
