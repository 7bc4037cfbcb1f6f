"""``loadgen compare`` and ``loadgen sweep``: the two commands that measure, each given one RunOptions record
(cli/options.py: the options they share are declared once; their values are checked by cli/paramtypes.py),
and how a finished compare ends (cli/ending.py for the lines both print)."""

from __future__ import annotations

import signal
import sys
from dataclasses import replace
from pathlib import Path

import click

from loadgen.cli.ending import RUN_FAILED, criteria_exit, end_sweep
from loadgen.cli.handling import _handles_errors, _sigterm_as_interrupt
from loadgen.cli.options import SWEEP_ONLY, RunOptions, repeat_options, run_options
from loadgen.cli.paramtypes import Url
from loadgen.cli.summary import print_summary
from loadgen.errors import BadInput
from loadgen.profile.pairfile import load_pair
from loadgen.records.card import PairCard
from loadgen.store.files import read_card
from loadgen.util.redact import redact_text

#: The options only ``loadgen compare`` takes.
_COMPARE_ONLY = (
    *repeat_options(
        protocol="Repeat an earlier run: its protocol.json (same pair file, prompts, cells and settings).",
        resume="Complete an interrupted run folder in place: finished cells are kept, the rest run.",
    ),
    click.option("--attach-speculative", type=Url(), help="Use the speculative server already running at URL."),
    click.option(
        "--metrics-port",
        type=click.IntRange(1, 65535),
        help="Serve loadgen's own metrics at http://ADDR:PORT/metrics while it runs.",
    ),
    click.option("--metrics-addr", default="127.0.0.1", show_default=True, help="Address the metrics endpoint binds."),
    click.option("--pushgateway", type=Url(), help="Push each cell's metrics to this Pushgateway (job=loadgen)."),
    click.option(
        "--prometheus-url",
        type=Url(),
        help="Also read vLLM's spec-decode counters from this Prometheus server and cross-check them.",
    ),
    click.option(
        "--prometheus-selector",
        default='instance="{hostport}"',
        show_default=True,
        help="PromQL label selector of the vLLM server's series; {hostport} is its host:port.",
    ),
    click.option(
        "--progress/--no-progress",
        default=True,
        help="Show the progress line on stderr (a terminal only): the slot counter, the time left and the "
        "cell's requests.",
    ),
)


@click.command()
@_handles_errors
@run_options("run", *_COMPARE_ONLY)
def compare(o: RunOptions) -> None:
    """Launch the plain and speculative servers of PAIR (kept up together when they fit, else one at a time;
    or attach to running ones), measure them in interleaved blocks beside the A/A placebo, and write the pair
    card."""
    from loadgen.run.flow import resume_compare, run_compare
    from loadgen.run.plan import replay_protocol

    if sum(x is not None for x in (o.pair, o.protocol_file, o.resume_dir)) != 1:
        raise BadInput("give exactly one of PAIR, --protocol RUN_DIR/protocol.json or --resume RUN_DIR")
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    observe = replace(o.observe, progress=o.observe.progress and sys.stderr.isatty())

    def echo(line: str) -> None:
        click.echo(redact_text(line, [o.api_key]))

    if o.resume_dir is not None:
        run_dir = resume_compare(
            o.resume_dir, log=echo, attach=o.attach, observe=observe, api_key=o.api_key, metrics=o.metrics
        )
    else:
        repeat = None
        if o.protocol_file is not None:
            loaded, cells, order = replay_protocol(o.protocol_file)
            repeat = (cells, order)
        else:
            loaded = load_pair(str(o.pair), overrides=o.overrides)
        run_dir = run_compare(
            loaded.with_metrics_urls(o.metrics),
            o.runs_dir,
            log=echo,
            attach=o.attach,
            cells=repeat,
            allow_unpinned=o.allow_unpinned,
            observe=observe,
            api_key=o.api_key,
        )
    card = read_card(run_dir / "card.json")  # store/files.py: BadInput (exit 2) naming the field that does not read
    print_summary(card)
    _end_with(card, run_dir)


def verdict_exit(run_dir: Path) -> None:
    """End a finished run plainly: the card's path after the verdict (printed by print_summary), then CriteriaFailed
    (exit 3, no error line: the run did not crash) when the verdict failed its declared criteria (none: exit 0)."""
    _end_with(read_card(run_dir / "card.json"), run_dir)


def _end_with(card: PairCard, run_dir: Path) -> None:
    """:func:`verdict_exit` of ``run_dir``'s card, read already."""
    click.echo(f"card: {run_dir / 'card.md'}")
    if card.verdict.passed is False:
        criteria_exit(RUN_FAILED)


@click.command()
@_handles_errors
@run_options("sweep", *SWEEP_ONLY)
def sweep(o: RunOptions) -> None:
    """Measure every candidate of the sweep pair file PAIR against one plain baseline, in interleaved blocks, and
    write the sweep card with its recommendation; exit 3 when no candidate meets the declared criteria."""
    from loadgen.run.sweep import SweepOptions, run_sweep

    if sum(x is not None for x in (o.pair, o.protocol_file, o.resume_dir, o.deploy_dir)) != 1:
        raise BadInput(
            "give exactly one of PAIR, --protocol SWEEP_DIR/protocol.json, --resume SWEEP_DIR or "
            "--deploy-schedule SWEEP_DIR"
        )
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    options = SweepOptions(
        o.runs_dir,
        o.budget_min,
        o.attach_plain,
        o.allow_unpinned,
        o.api_key,
        history_dirs=o.history_dirs,
        overrides=o.overrides,
        progress=o.observe.progress and sys.stderr.isatty(),
        metrics=o.metrics,
    )
    end_sweep(
        lambda: run_sweep(
            o.pair,
            options,
            log=lambda line: click.echo(redact_text(line, [o.api_key])),
            resume=o.resume_dir,
            replay=o.protocol_file,
            deploy=o.deploy_dir,
        )
    )
