"""The HTML view of a card (``card.html``, ``sweep.html``'s ``card.html``, the fleet's ``card.html``): one
self-contained page rendered with Jinja2 from a :class:`Page` that each card's ``*html`` module builds from the
card's typed record (report/cardhtml.py, report/sweephtml.py, fleet/fleethtml.py), never from its Markdown.

The page holds everything it shows: the CSS and the few lines of JavaScript that sort a table by a clicked
header are inline (templates/page.html.j2, package data), every plot is a ``data:image/png;base64`` URI of the
PNG on disk, each embedded once; it fetches nothing, so it reads the same offline, attached to a ticket or
opened from a file share. The answer comes first (as in card.md), then sections that fold (``<details>``):
the evidence open, the provenance closed. Jinja2 escapes every value (``autoescape``); the output is
deterministic, so a re-render of the same folder is byte-identical.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import jinja2

from loadgen.report.answermd import AnswerItem

#: The file every card writes its HTML view to, beside its Markdown.
CARD_HTML = "card.html"

__all__ = ["CARD_HTML", "Figure", "Page", "Section", "Table", "data_uri", "embed", "render_page"]


@dataclass(frozen=True)
class Table:
    """A table whose rows sort by a clicked header (numbers by value, a dash or text last)."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""


@dataclass(frozen=True)
class Figure:
    """A plot: its path in the folder (``plots/tpot_ratio.png``), its ``data:`` URI and a caption."""

    name: str
    uri: str
    caption: str = ""


@dataclass(frozen=True)
class Section:
    """A section that folds: its lines (plain text), tables, figures and a block of code (JSON, a command), in
    that order; ``open``: unfolded when the page loads."""

    title: str
    lines: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    figures: tuple[Figure, ...] = ()
    code: str | None = None
    open: bool = True


@dataclass(frozen=True)
class Page:
    """One card as a page: its ``title``, the ``kind`` of card (``pair card``, ``sweep card``, ``fleet card``),
    the answer's items (the first, the verdict, is the element the reader's eye lands on), the statement the
    answer holds for, and the sections under it."""

    title: str
    kind: str
    answer: tuple[AnswerItem, ...]
    statement: str = ""
    sections: tuple[Section, ...] = field(default_factory=tuple)


def data_uri(png: bytes) -> str:
    """``data:image/png;base64,...`` of ``png`` (RFC 2397)."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def embed(folder: Path, paths: Sequence[str], caption: dict[str, str] | None = None) -> tuple[Figure, ...]:
    """The figures of ``paths`` (relative to ``folder``; the card's ``plots``) that exist as files, each read
    once; ``caption``: a caption per file name prefix (``tpot_ratio``: ...)."""
    out = []
    for rel in dict.fromkeys(paths):
        path = folder / rel
        if path.suffix == ".png" and path.is_file():
            said = next((text for prefix, text in (caption or {}).items() if path.name.startswith(prefix)), "")
            out.append(Figure(rel, data_uri(path.read_bytes()), said))
    return tuple(out)


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("loadgen.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )


def render_page(page: Page) -> str:
    """The page's HTML (templates/page.html.j2). Pure but for reading the template (package data)."""
    return _environment().get_template("page.html.j2").render(page=page)
