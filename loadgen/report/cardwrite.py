"""The pair card on disk: reads a run folder and writes ``card.json``, ``card.md``, ``card.html`` and the plots
next to it (``loadgen compare`` when the run ends, ``loadgen report RUN_DIR``). The card's data comes from
carddata.py (or saveddata.py for a folder without requests.jsonl), its Markdown from cardmd.py, its HTML view
from cardhtml.py (the plots embedded), its plots from plots.py.
Writes are atomic (rundir.py); a re-render of the same folder is byte-identical.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from loadgen.records.card import PairCard
from loadgen.report.carddata import build_card
from loadgen.report.cardhtml import CAPTIONS, render_card_html
from loadgen.report.cardmd import render_markdown
from loadgen.report.htmlpage import CARD_HTML, embed
from loadgen.report.saveddata import refresh_saved_card, saved_only
from loadgen.store.files import load_records
from loadgen.store.refused import no_card_for_refused
from loadgen.store.rundir import write_json, write_text

Log = Callable[[str], None]


def finish_card(run_dir: Path, log: Log = print) -> PairCard:
    """(Re)build card.json, card.md, card.html and the plots from the run folder's saved data alone (without
    requests.jsonl: from card.json's statistics, plots kept; saveddata.py). Raises BadInput for a folder
    refused before measuring (store/refused.py), or naming the field of a card that does not match its type;
    RunDirUnwritable (exit 1) when the folder cannot be written. A plot that fails is logged, never raised."""
    no_card_for_refused(run_dir)
    saved = saved_only(run_dir)
    if saved:
        log(f"{run_dir} has no requests.jsonl: statistics kept from card.json, diagnosis and verdict recomputed")
    card = refresh_saved_card(run_dir) if saved else build_card(run_dir)
    try:
        from loadgen.report.plots import render_plots

        if not saved:
            card = replace(
                card,
                plots=tuple(
                    str(p.relative_to(run_dir))
                    for p in render_plots(card, [r for r in load_records(run_dir)], run_dir / "plots")
                ),
            )
    except Exception as exc:  # a plot must never cost the card
        plots_error: Exception | None = exc
        card = replace(card, plots=())
    else:
        plots_error = None
    write_json(run_dir / "card.json", card.to_json())
    write_text(run_dir / "card.md", render_markdown(card))
    write_text(run_dir / CARD_HTML, render_card_html(card, embed(run_dir, card.plots or (), CAPTIONS)))
    if plots_error is not None:  # said once the card is written (a full disk says more than this, above)
        log(f"could not draw the plots ({type(plots_error).__name__}: {plots_error})")
    return card
