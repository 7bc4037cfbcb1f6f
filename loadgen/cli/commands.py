"""Command line: ``loadgen check|compare|sweep|report|diff|fleet|pairs`` (``runs``: cli/runlist.py).

Errors are :class:`loadgen.errors.LoadgenError` subclasses carrying their exit code (0 done, 1 run failed,
2 bad input, 3 criteria failed); they are printed as one line, never as a traceback.
"""

from __future__ import annotations

import errno
import functools
import json
import shlex
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import click

from loadgen.cli.budget import Minutes
from loadgen.cli.diffcmd import Tolerance, run_diff
from loadgen.cli.ending import RUN_FAILED, criteria_exit, end_sweep
from loadgen.cli.overrides import Overrides, with_overrides
from loadgen.errors import BadInput, LoadgenError
from loadgen.profile.pairfile import load_pair
from loadgen.profile.pairkind import pair_lines
from loadgen.report.summary import print_summary
from loadgen.run.observe import ObserveOptions
from loadgen.serve.attached import check_url
from loadgen.util.redact import redact_text

F = TypeVar("F", bound=Callable[..., Any])
#: Disk full, over quota, read-only file system: the run folder cannot be written.
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def _handles_errors(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except LoadgenError as exc:
            if str(exc):  # a failed verdict has said everything on stdout already (see _verdict_exit)
                click.echo(f"loadgen: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt as exc:  # a run's own line (closing.RunInterrupted) says where its data is
            click.echo(f"loadgen: {str(exc) or 'interrupted; everything measured so far is on disk'}", err=True)
            sys.exit(1)
        except OSError as exc:
            if exc.errno not in _DISK_ERRNOS or exc.filename is None:
                raise
            # a write outside the run's own guarded writes (run folder creation, --resume's rewrite)
            from loadgen.report.rundir import unwritable

            error = unwritable(Path(exc.filename), exc)
            click.echo(f"loadgen: error: {error}", err=True)
            sys.exit(error.exit_code)

    return wrapper  # type: ignore[return-value]


def _sigterm_as_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


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


@main.command()
@click.argument("pair", required=False)
@click.option("--protocol", "protocol_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Repeat an earlier run: its protocol.json (same pair file, prompts, cells and settings).")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Complete an interrupted run folder in place: finished cells are kept, the rest run.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"),
              show_default=True, help="Where run folders are created.")
@click.option("--attach-plain", metavar="URL", help="Use the plain server already running at URL.")
@click.option("--attach-speculative", metavar="URL", help="Use the speculative server already running at URL.")
@click.option("--allow-unpinned", is_flag=True, help="Accept hub models without a pinned commit (warning only).")
@click.option("--metrics-port", type=click.IntRange(1, 65535),
              help="Serve loadgen's own metrics at http://ADDR:PORT/metrics while it runs.")
@click.option("--metrics-addr", default="127.0.0.1", show_default=True, help="Address the metrics endpoint binds.")
@click.option("--pushgateway", metavar="URL", help="Push each cell's metrics to this Pushgateway (job=loadgen).")
@click.option("--prometheus-url", metavar="URL",
              help="Also read vLLM's spec-decode counters from this Prometheus server and cross-check them.")
@click.option("--prometheus-selector", default='instance="{hostport}"', show_default=True,
              help="PromQL label selector of the vLLM server's series; {hostport} is its host:port.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar per cell (stderr).")
@click.option("--api-key", envvar="OPENAI_API_KEY", metavar="KEY",
              help="Bearer token for servers started with --api-key (default: $OPENAI_API_KEY); never written.")
@_handles_errors
@with_overrides
def compare(pair: str | None, **options: Any) -> None:
    """Launch the plain and speculative servers of PAIR one after the other (or attach to running
    ones), replay the workloads on both, and write the pair card."""
    _compare(pair, CompareOptions(**options))


@dataclass(frozen=True)
class CompareOptions:
    """The options of ``loadgen compare`` (see its ``--help``)."""

    protocol_file: Path | None
    resume_dir: Path | None
    runs_dir: Path
    attach_plain: str | None
    attach_speculative: str | None
    allow_unpinned: bool
    metrics_port: int | None
    metrics_addr: str
    pushgateway: str | None
    prometheus_url: str | None
    prometheus_selector: str
    progress: bool
    api_key: str | None
    overrides: Overrides | None = None  # --concurrency, --requests, --workload (cli/overrides.py)


def _compare(pair: str | None, o: CompareOptions) -> None:
    from loadgen.run.flow import resume_compare, run_compare
    from loadgen.run.plan import replay_protocol

    protocol_file, resume_dir, api_key = o.protocol_file, o.resume_dir, o.api_key

    if sum(x is not None for x in (pair, protocol_file, resume_dir)) != 1:
        raise BadInput("give exactly one of PAIR, --protocol RUN_DIR/protocol.json or --resume RUN_DIR")
    attach = {role: url for role, url in (("plain", o.attach_plain), ("speculative", o.attach_speculative))
              if url is not None}
    for role, url in attach.items():
        check_url(url, f"--attach-{role}")
    for option, given in (("--pushgateway", o.pushgateway), ("--prometheus-url", o.prometheus_url)):
        if given is not None:
            check_url(given, option)
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    observe = ObserveOptions(o.metrics_port, o.metrics_addr, o.pushgateway, o.prometheus_url,
                             o.prometheus_selector, o.progress and sys.stderr.isatty())
    def echo(line: str) -> None:
        click.echo(redact_text(line, [api_key]))

    if resume_dir is not None:
        run_dir = resume_compare(resume_dir, log=echo, attach=attach, observe=observe, api_key=api_key)
    else:
        repeat = None
        if protocol_file is not None:
            loaded, cells, order = replay_protocol(protocol_file)
            repeat = (cells, order)
        else:
            loaded = load_pair(str(pair), overrides=o.overrides)
        run_dir = run_compare(loaded, o.runs_dir, log=echo, attach=attach, cells=repeat,
                              allow_unpinned=o.allow_unpinned, observe=observe, api_key=api_key)
    print_summary(json.loads((run_dir / "card.json").read_text()))
    _verdict_exit(run_dir)


def _verdict_exit(run_dir: Path) -> None:
    """End a finished run plainly: the card's path after the verdict (printed by print_summary), then CriteriaFailed
    (exit 3, no error line: the run did not crash) when the verdict failed its declared criteria (none: exit 0)."""
    verdict = json.loads((run_dir / "card.json").read_text()).get("verdict") or {}
    click.echo(f"card: {run_dir / 'card.md'}")
    if verdict and verdict.get("passed") is False:
        criteria_exit(RUN_FAILED)


@main.command()
@click.argument("pair", required=False)
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Finish an interrupted sweep folder: the slots not done, in the recorded order.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"),
              show_default=True, help="Where sweep folders are created (and earlier start times are read).")
@click.option("--history", "history_dirs", multiple=True, metavar="DIR",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Also read earlier run folders under DIR for the estimate (repeatable), e.g. docs/examples/h200.")
@click.option("--budget-min", type=Minutes(), help="Refuse (exit 2) when the estimated wall time exceeds this.")
@click.option("--attach-plain", metavar="URL", help="Use the plain server already running at URL (the plain arm).")
@click.option("--allow-unpinned", is_flag=True, help="Accept hub models without a pinned commit (warning only).")
@click.option("--api-key", envvar="OPENAI_API_KEY", metavar="KEY", help="Bearer token, as for compare.")
@_handles_errors
@with_overrides
def sweep(pair: str | None, resume_dir: Path | None, runs_dir: Path, history_dirs: tuple[Path, ...],
          budget_min: float | None, attach_plain: str | None, **flags: Any) -> None:
    """Measure every candidate of the sweep pair file PAIR against one plain baseline, in interleaved blocks, and
    write the sweep card with its recommendation; exit 3 when no candidate meets the declared criteria."""
    from loadgen.run.sweep import SweepOptions, run_sweep

    if (pair is None) == (resume_dir is None):
        raise BadInput("give exactly one of PAIR or --resume SWEEP_DIR")
    if attach_plain is not None:
        check_url(attach_plain, "--attach-plain")
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    options = SweepOptions(runs_dir, budget_min, attach_plain, flags["allow_unpinned"], flags["api_key"],
                           history_dirs=tuple(history_dirs), overrides=flags["overrides"])
    end_sweep(lambda: run_sweep(pair, options, log=lambda line: click.echo(redact_text(line, [flags["api_key"]])),
                                resume=resume_dir))


@main.group()
def fleet() -> None:
    """The same comparison on every (pair x node) of a Ray cluster, and the fleet card (docs/fleet/README.md)."""


@fleet.command("run")
@click.argument("fleet_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--ray-address", default="auto", show_default=True,
              help="The Ray cluster to run on: HOST:6379 (the head's GCS port), or auto (this node's cluster).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="The fleet folder (default: RUNS_DIR/fleet-<name>-<UTC timestamp>).")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True)
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Run again only the tasks of this fleet folder that are not done.")
@click.option("--reload-pairs", is_flag=True,
              help="With --resume: read the pair files again; every task of a changed pair runs again.")
@_handles_errors
def fleet_run(fleet_file: Path | None, ray_address: str, out: Path | None, runs_dir: Path,
              resume_dir: Path | None, reload_pairs: bool) -> None:
    """Run FLEET_FILE's pairs and sweeps on its nodes, one Ray task per (pair x node), and write the
    fleet card. Exit 0 all done; 1 a task failed (the others' results are kept); 2 bad input; 3 every
    task finished but a verdict failed its declared criteria."""
    from loadgen.fleet.flow import fleet_exit, run_fleet

    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    if reload_pairs and resume_dir is None:
        raise BadInput("--reload-pairs goes with --resume FLEET_DIR")
    outcome = run_fleet(fleet_file, ray_address, click.echo, out=out, runs_dir=runs_dir, resume=resume_dir,
                        reload_pairs=reload_pairs)
    _print_fleet_card(outcome.fleet_dir, outcome.card)
    fleet_exit(outcome)


def _print_fleet_card(fleet_dir: Path, card: Path) -> None:
    from loadgen.fleet.fleetcard import fleet_summary_lines, read_fleet_card

    click.echo("\n".join([*fleet_summary_lines(read_fleet_card(fleet_dir / "fleet.json")), f"fleet card: {card}"]))


@fleet.command("report")
@click.argument("fleet_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_handles_errors
def fleet_report(fleet_dir: Path) -> None:
    """Merge the run folders of FLEET_DIR into the fleet card (fleet.json, fleet.md)."""
    from loadgen.cli.runlist import fleet_card_locked  # holds the folder's lock while it writes

    _print_fleet_card(fleet_dir, fleet_card_locked(fleet_dir))


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_handles_errors
def report(run_dir: Path) -> None:
    """Re-render RUN_DIR's card.json, card.md from its saved data alone (a sweep folder: each card, then sweep.md)."""
    from loadgen.cli.runlist import report_locked  # holds the folder's lock while it writes

    if (card := report_locked(run_dir)) is None:  # a sweep folder: report_sweep has said everything
        return
    print_summary(card)
    click.echo(f"card: {run_dir / 'card.md'}")


@main.command()
@click.argument("run_a", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("run_b", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--max-regression", type=Tolerance(), help="Tolerance such as 5%: the bar is RUN_A's ratio worsened "
              "by that much instead of RUN_A's 95% CI.")
@_handles_errors
def diff(run_a: Path, run_b: Path, max_regression: float | None) -> None:
    """Compare two run folders of the same pair (or two sweep folders, candidate by candidate), RUN_A the baseline;
    exit 3 when RUN_B regressed on a declared primary metric (its CI beyond RUN_A's) or lost a cell."""
    run_diff(run_a, run_b, max_regression)
