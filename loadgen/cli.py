"""Command line: ``loadgen check|compare|report|pairs``.

Errors are :class:`loadgen.errors.LoadgenError` subclasses carrying their exit code (0 done, 1 run failed,
2 bad input, 3 criteria failed); they are printed as one line, never as a traceback.
"""

from __future__ import annotations

import functools
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import click

from loadgen.errors import BadInput, LoadgenError, PairCheckError
from loadgen.pair import available_pairs, load_pair

F = TypeVar("F", bound=Callable[..., Any])


def _handles_errors(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except LoadgenError as exc:
            click.echo(f"loadgen: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("loadgen: interrupted; everything measured so far is on disk", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def _sigterm_as_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="loadgen")
def main() -> None:
    """Does this speculative-decoding pair make vLLM serving better, on our workloads, at what cost?"""


@main.command()
def pairs() -> None:
    """List the pair profiles in profiles/pairs/."""
    for name in available_pairs():
        click.echo(name)


@main.command()
@click.argument("pair")
@click.option("--allow-unpinned", is_flag=True, help="Accept hub models without a pinned commit (warning only).")
@_handles_errors
def check(pair: str, allow_unpinned: bool) -> None:
    """Check PAIR (a name in profiles/pairs/ or a .toml path) without starting any server."""
    from loadgen.engine import detect_engine_version
    from loadgen.validate import check_pair

    loaded = load_pair(pair)
    version = detect_engine_version(loaded.engine.command, loaded.engine.env)
    click.echo(f"engine version (installed): {version or 'unknown'}")
    findings = check_pair(loaded, version, allow_unpinned)
    for f in findings:
        click.echo(f.line())
    blocking = [f for f in findings if f.blocking and not f.ok]
    if blocking:
        raise PairCheckError(f"{len(blocking)} blocking finding(s); fix them and run `loadgen check {pair}` again")


@main.command()
@click.argument("pair", required=False)
@click.option("--protocol", "protocol_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Repeat an earlier run: its protocol.json (same pair file, prompts, cells and settings).")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"),
              show_default=True, help="Where run folders are created.")
@click.option("--attach-plain", metavar="URL", help="Use the plain server already running at URL.")
@click.option("--attach-speculative", metavar="URL", help="Use the speculative server already running at URL.")
@click.option("--allow-unpinned", is_flag=True, help="Accept hub models without a pinned commit (warning only).")
@_handles_errors
def compare(pair: str | None, protocol_file: Path | None, runs_dir: Path, attach_plain: str | None,
            attach_speculative: str | None, allow_unpinned: bool) -> None:
    """Launch the plain and speculative servers of PAIR one after the other (or attach to running
    ones), replay the workloads on both, and write the pair card."""
    from loadgen.flow import replay_protocol, run_compare

    if (pair is None) == (protocol_file is None):
        raise BadInput("give either a PAIR or --protocol RUN_DIR/protocol.json, not both or neither")
    cells = None
    if protocol_file is not None:
        loaded, cells = replay_protocol(protocol_file)
    else:
        assert pair is not None
        loaded = load_pair(pair)
    attach = {role: url for role, url in (("plain", attach_plain), ("speculative", attach_speculative)) if url}
    for url in attach.values():
        if not url.startswith(("http://", "https://")):
            raise BadInput(f"--attach-* takes a URL such as http://127.0.0.1:8000, got {url!r}")
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    run_dir = run_compare(loaded, runs_dir, log=lambda line: click.echo(line), attach=attach, cells=cells,
                          allow_unpinned=allow_unpinned)
    click.echo(f"card: {run_dir / 'card.md'}")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_handles_errors
def report(run_dir: Path) -> None:
    """Re-render card.json and card.md of RUN_DIR from its saved data alone."""
    from loadgen.flow import finish_card

    finish_card(run_dir)
    click.echo(f"card: {run_dir / 'card.md'}")
