"""The sweep card on disk: reads a sweep folder (``sweep.toml``, ``times.json``, ``protocol.json`` and what
sweepdata.py reads) and writes ``sweep.json``, ``sweep.md``, ``card.html`` and the sweep plots next to them
(``loadgen sweep`` when the sweep ends, ``loadgen report SWEEP_DIR``). The card's data comes from sweepdata.py,
its Markdown from sweepmd.py, its HTML view from sweephtml.py (the plots embedded), its plots from
sweepplots.py. Writes are atomic (rundir.py); a re-render of the same
folder is byte-identical.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from loadgen.profile.tomlread import read_toml
from loadgen.records.candidates import expand_candidates
from loadgen.records.sweep import SweepCard
from loadgen.report.htmlpage import CARD_HTML, embed
from loadgen.report.sweepdata import build_sweep_card
from loadgen.report.sweephtml import CAPTIONS, render_sweep_html
from loadgen.report.sweepmd import render_sweep_markdown
from loadgen.store.files import read_protocol, read_times, write_sweep
from loadgen.store.rundir import write_text

Log = Callable[[str], None]


def read_sweep_dir(sweep_dir: Path, saved: SweepCard | None) -> SweepCard:
    """The sweep card's data of ``sweep_dir`` (sweepdata.py ``build_sweep_card``) from its files, with the
    engine version and the command line its protocol.json recorded; ``saved``: the earlier sweep.json, whose
    drift and engine version an older sweep keeps. Writes nothing. Raises BadInput naming a file that does not
    read (sweep.toml, a candidate's card.json, protocol.json)."""
    candidates = expand_candidates(read_toml(sweep_dir / "sweep.toml"), sweep_dir / "sweep.toml")
    times = read_times(sweep_dir)
    version = saved.engine_version if saved else None
    for proto in (sweep_dir / "protocol.json", sweep_dir / "plain-before" / "protocol.json"):
        if version is None and proto.is_file():
            version = read_protocol(proto).engine_version
    card = build_sweep_card(sweep_dir, candidates, times, version, saved)
    proto_file = sweep_dir / "protocol.json"
    given = read_protocol(proto_file).command_line if proto_file.is_file() else None
    return card.with_fields(command_line=given) if given else card


def write_sweep_card(sweep_dir: Path, saved: SweepCard | None, log: Log) -> SweepCard:
    """Write ``sweep_dir/sweep.json``, ``sweep.md``, ``card.html`` and the plots (``plots/``) from
    :func:`read_sweep_dir`; returns the card written. A plot that fails is logged, never raised (the card is
    written without it). Raises BadInput as :func:`read_sweep_dir`, RunDirUnwritable (exit 1) when the folder
    cannot be written."""
    card = read_sweep_dir(sweep_dir, saved)
    try:
        from loadgen.report.sweepplots import render_sweep_plots

        plots = [str(p.relative_to(sweep_dir)) for p in render_sweep_plots(card, sweep_dir / "plots")]
    except Exception as exc:  # a plot must never cost the card
        log(f"could not draw the sweep plots ({type(exc).__name__}: {exc})")
        plots = []
    card = card.with_fields(plots=plots)
    write_sweep(sweep_dir, card)
    write_text(sweep_dir / "sweep.md", render_sweep_markdown(card))
    write_text(sweep_dir / CARD_HTML, render_sweep_html(card, embed(sweep_dir, card.plots, CAPTIONS)))
    return card
