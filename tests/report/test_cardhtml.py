"""card.html from the card records (report/cardhtml.py, report/sweephtml.py, fleet/fleethtml.py through
report/htmlpage.py), read back with the standard library's HTML parser as a browser would build it: the answer
first with the same items card.md opens with, one table row per cell (per sweep entry, per fleet cell), every
plot embedded once as a ``data:`` URI of the PNG's own bytes, the provenance folded, nothing fetched (no URL
but ``data:``), and a value holding markup shown as text, not run."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

from loadgen.fleet.fleethtml import render_fleet_html
from loadgen.report.answermd import answer_items
from loadgen.report.cardhtml import render_card_html
from loadgen.report.htmlpage import embed
from loadgen.report.sweephtml import render_sweep_html
from loadgen.report.sweepmd import answer_items as sweep_answer
from loadgen.store.files import read_card, read_sweep
from tests.fleet.test_fleetmd import _card as fleet_card

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200"


class Page(HTMLParser):
    """What a reader sees of a page: the answer's items, each section (title, open), each table's rows, each
    image's source, every URL attribute, in document order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.answer: list[str] = []
        self.sections: list[list[object]] = []
        self.tables: list[list[list[str]]] = []
        self.images: list[tuple[str, str]] = []
        self.urls: list[str] = []
        self.order: list[str] = []
        self._text: list[str] | None = None
        self._where: str | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.urls += [v or "" for k, v in attrs if k in ("src", "href", "action")]
        if tag == "section" and a.get("id") == "answer":
            self.order.append("answer")
        elif tag == "details":
            self.order.append("details")
            self.sections.append(["", "open" in a])
        elif tag in ("li", "summary", "td") and self._where is None:
            self._where, self._text = tag, []
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag == "img":
            self.images.append((a.get("alt") or "", a.get("src") or ""))

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag != self._where or self._text is None:
            return
        text = "".join(self._text)
        if tag == "li" and len(self.sections) == 0:
            self.answer.append(text)
        elif tag == "summary":
            self.sections[-1][0] = text
        elif tag == "td":
            self.tables[-1][-1].append(text)
        self._where, self._text = None, None


def _plain(markdown_item: str) -> str:
    """An answer item's Markdown line as text: ``- **label** q: `x` y`` -> ``label q: x y``."""
    return re.sub(r"\*\*|`", "", markdown_item.removeprefix("- "))


def test_a_pair_card_page_opens_with_the_answer_and_embeds_each_plot_once() -> None:
    folder = EXAMPLES / "h200-1b-draft"
    card = read_card(folder / "card.json")
    figures = embed(folder, [*(card.plots or ()), *(card.plots or ())])  # listed twice: embedded once
    page = Page(render_card_html(card, figures))
    assert page.order[0] == "answer" and set(page.order[1:]) == {"details"}
    assert page.answer == [_plain(item.markdown()) for item in answer_items(card)]
    assert page.answer[0].startswith("verdict: ")
    (cells, *_) = page.tables
    rows = [r for r in cells if r]
    assert [(r[0], r[1]) for r in rows] == [(c.workload, c.level) for c in card.cells]
    first = card.cells[0].ratio("tpot_p50")
    assert first is not None and rows[0][4] == f"{first.text(3)} {first.effect}"
    assert [alt for alt, _ in page.images] == list(card.plots or ())
    for alt, src in page.images:
        assert src == "data:image/png;base64," + base64.b64encode((folder / alt).read_bytes()).decode()
    assert all(url.startswith("data:image/png;base64,") for url in page.urls)
    assert dict((str(t), o) for t, o in page.sections) == {
        "Cells": True,
        "Plots": True,
        "Verdict against the declared criteria": True,
        "Where speculation stops paying": True,
        "Capacity at SLO": True,
        "How sure: design and A/A noise floor": True,
        "Provenance": False,
    }


def test_markup_in_a_value_is_shown_as_text() -> None:
    card = read_card(EXAMPLES / "h200-1b-ngram" / "card.json")
    cell = replace(card.cells[0], workload="<script>alert(1)</script>")
    text = render_card_html(replace(card, cells=(cell, *card.cells[1:])), ())
    assert "<script>alert(1)</script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert Page(text).tables[0][1][0] == "<script>alert(1)</script>"


def test_a_sweep_page_has_the_sweep_s_answer_and_a_row_per_entry() -> None:
    folder = EXAMPLES / "h200-7b-sweep"
    card = read_sweep(folder / "sweep.json")
    page = Page(render_sweep_html(card, embed(folder, card.plots)))
    assert page.order[0] == "answer"
    assert page.answer == [_plain(item.markdown()) for item in sweep_answer(card)]
    entries = [(c.workload, c.level, e.candidate) for c in card.cells for e in c.entries]
    cells = next(t for t in page.tables if len([r for r in t if r]) == len(entries))
    assert [tuple(r[:3]) for r in cells if r] == entries
    assert [alt for alt, _ in page.images] == card.plots


def test_a_fleet_page_answers_per_pair_and_node() -> None:
    card = fleet_card()
    page = Page(render_fleet_html(card))
    assert page.order[0] == "answer"
    assert page.answer[0] == "tasks: 3 (pair x node): 2 done, 1 failed, 0 pending"
    assert page.answer[1] == "pair p: a (H200): PASS: every check; b (GPU type unknown): failed"
    assert page.answer[2] == "sweep s: a (H200): k2"
    tpot = next(t for t in page.tables if t and any(r[:2] == ["w", "c1"] and r[2].startswith("0.800") for r in t))
    # nodes a and b side by side: b, whose task failed, has no cell (the en dash)
    assert [r for r in tpot if r] == [["w", "c1", "0.800 [0.750, 0.850]", "–"], ["w", "c4", "0.900 (partial)", "–"]]
    assert page.images == [] and page.urls == []
    assert json.dumps(page.sections[-1]) == '["Nodes", false]'
