"""Command line: ``loadgen check|report|diff|fleet|pairs`` (``compare``, ``sweep``: cli/runcmds.py; ``runs``:
cli/runlist.py).

Errors are :class:`loadgen.errors.LoadgenError` subclasses carrying their exit code (0 done, 1 run failed,
2 bad input, 3 criteria failed); they are printed as one line, never as a traceback (cli/handling.py).
"""

from __future__ import annotations

import shlex
import signal
from pathlib import Path

import click

from loadgen.cli.diffcmd import run_diff
from loadgen.cli.handling import _handles_errors, _sigterm_as_interrupt
from loadgen.cli.paramtypes import Tolerance, runs_dir_option
from loadgen.cli.runlist import fleet_card_locked, report_locked
from loadgen.cli.summary import print_summary
from loadgen.errors import BadInput
from loadgen.profile.pairfile import load_pair
from loadgen.profile.pairkind import pair_lines


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="loadgen")
def main() -> None:
    """Does this speculative-decoding pair make vLLM serving better, on our workloads, at what cost?"""


@main.command()
@_handles_errors
def pairs() -> None:
    """List the pair profiles in profiles/pairs/ (from the repository root), each marked CPU demo / GPU / sweep."""
    click.echo("\n".join(pair_lines()))


@main.command()
@click.argument("pair")
@click.option("--allow-unpinned", is_flag=True, help="Accept hub models without a pinned commit (warning only).")
@_handles_errors
def check(pair: str, allow_unpinned: bool) -> None:
    """Check PAIR (a name in profiles/pairs/ or a .toml path) without starting any server."""
    from loadgen.check.preflight import run_pair_check

    run_pair_check(load_pair(pair), allow_unpinned, click.echo, again=f"loadgen check {shlex.quote(pair)}")


@main.group()
def fleet() -> None:
    """The same comparison on every (pair x node) of a Ray cluster, and the fleet card (docs/fleet/README.md)."""


@fleet.command("run")
@click.argument("fleet_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--ray-address",
    default="auto",
    show_default=True,
    help="The Ray cluster to run on: HOST:6379 (the head's GCS port), or auto (this node's cluster).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="The fleet folder (default: RUNS_DIR/fleet-<name>-<UTC timestamp>).",
)
@runs_dir_option()
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run again only the tasks of this fleet folder that are not done.",
)
@click.option(
    "--reload-pairs",
    is_flag=True,
    help="With --resume: read the pair files again; every task of a changed pair runs again.",
)
@click.option(
    "--progress/--no-progress",
    default=True,
    help="After each task, a line of the tasks finished and the time left at the rate so far.",
)
@_handles_errors
def fleet_run(
    fleet_file: Path | None,
    ray_address: str,
    out: Path | None,
    runs_dir: Path,
    resume_dir: Path | None,
    reload_pairs: bool,
    progress: bool,
) -> None:
    """Run FLEET_FILE's pairs and sweeps on its nodes, one Ray task per (pair x node), and write the
    fleet card. Exit 0 all done; 1 a task failed (the others' results are kept); 2 bad input; 3 every
    task finished but a verdict failed its declared criteria."""
    from loadgen.fleet.fleetflow import fleet_exit, run_fleet

    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    if reload_pairs and resume_dir is None:
        raise BadInput("--reload-pairs goes with --resume FLEET_DIR")
    outcome = run_fleet(
        fleet_file,
        ray_address,
        click.echo,
        out=out,
        runs_dir=runs_dir,
        resume=resume_dir,
        reload_pairs=reload_pairs,
        progress=progress,
    )
    _print_fleet_card(outcome.fleet_dir, outcome.card)
    fleet_exit(outcome)


def _print_fleet_card(fleet_dir: Path, card: Path) -> None:
    from loadgen.fleet.fleetwrite import fleet_summary_lines, read_fleet_card

    click.echo("\n".join([*fleet_summary_lines(read_fleet_card(fleet_dir / "fleet.json")), f"fleet card: {card}"]))


@fleet.command("report")
@click.argument("fleet_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_handles_errors
def fleet_report(fleet_dir: Path) -> None:
    """Merge the run folders of FLEET_DIR into the fleet card (fleet.json, fleet.md)."""
    _print_fleet_card(fleet_dir, fleet_card_locked(fleet_dir))


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_handles_errors
def report(run_dir: Path) -> None:
    """Re-render RUN_DIR's card.json, card.md from its saved data alone (a sweep folder: each card, then sweep.md)."""
    if (card := report_locked(run_dir)) is None:  # a sweep folder: report_sweep has said everything
        return
    print_summary(card)
    click.echo(f"card: {run_dir / 'card.md'}")


@main.command()
@click.argument("run_a", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("run_b", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--max-regression",
    type=Tolerance(),
    help="Tolerance such as 5%: the bar is RUN_A's ratio worsened by that much instead of RUN_A's 95% CI.",
)
@_handles_errors
def diff(run_a: Path, run_b: Path, max_regression: float | None) -> None:
    """Compare two run folders of the same pair (or two sweep folders, candidate by candidate), RUN_A the baseline;
    exit 3 when RUN_B regressed on a declared primary metric (its CI beyond RUN_A's) or lost a cell."""
    run_diff(run_a, run_b, max_regression)
