"""The fleet card on disk: reads a fleet folder (``tasks.json`` and each task's run folder), writes
``fleet.json`` and ``fleet.md`` next to them (``loadgen fleet report DIR``; docs/fleet/README.md).

A run folder that is missing, or whose card is unreadable, never stops the card: the task is shown
without it (a finished task as failed, naming the file and why). Only a missing or malformed
``tasks.json`` is an error (BadInput, exit 2). Writes are atomic (store/rundir.py); a re-render of the
same folder is byte-identical (nothing on the card depends on the clock or the reading order).
"""

from __future__ import annotations

from pathlib import Path

from loadgen.errors import BadInput
from loadgen.fleet.fleetdata import build_fleet_card
from loadgen.fleet.fleethtml import render_fleet_html
from loadgen.fleet.fleetmd import fleet_summary_lines, render_fleet_markdown
from loadgen.fleet.tasks import read_tasks
from loadgen.records.card import PairCard
from loadgen.records.fleet import FleetCard
from loadgen.records.fleettasks import Task, TaskList
from loadgen.records.sweep import SweepCard
from loadgen.report.htmlpage import CARD_HTML
from loadgen.store.rundir import read_json, write_json, write_text

__all__ = ["fleet_summary_lines", "read_fleet_card", "read_fleet_dir", "write_fleet_card"]

TASKS_FILE = "tasks.json"
CARD_JSON = "fleet.json"
CARD_MD = "fleet.md"


def _tasks(fleet_dir: Path) -> TaskList:
    path = fleet_dir / TASKS_FILE
    if not path.is_file():
        raise BadInput(
            f"{fleet_dir} has no {TASKS_FILE}: it is not a fleet folder; pass the folder that "
            "`loadgen fleet run` wrote (runs/fleet-<name>-<timestamp>/, or its --out)"
        )
    try:
        return read_tasks(path)
    except OSError as exc:
        raise BadInput(f"cannot read {path} ({exc.strerror or exc}); make it readable") from None


def _read(fleet_dir: Path, run_dir: str, name: str) -> tuple[object, str | None]:
    """(the JSON object in ``fleet_dir/run_dir/name``, None) or (None, why it could not be read)."""
    path = fleet_dir / run_dir / name
    shown = f"{run_dir.rstrip('/')}/{name}"
    if not path.is_file():
        return None, f"no {shown} came back"
    try:
        doc = read_json(path)
    except BadInput:
        return None, f"{shown} is not readable JSON; `loadgen report` can write the card again from the run folder"
    except OSError as exc:
        return None, f"cannot read {shown} ({exc.strerror or exc})"
    if not isinstance(doc, dict):
        return None, f"{shown} is not a JSON object"
    return doc, None


def _read_card(fleet_dir: Path, run_dir: str, name: str) -> tuple[PairCard | None, str | None]:
    """:func:`_read` of a pair card, checked against its type (records/card.py PairCard): a card that does not
    match is (None, the one line naming the file, the field and the fix)."""
    doc, problem = _read(fleet_dir, run_dir, name)
    try:
        return (
            (None, problem) if doc is None else (PairCard.from_json(doc, source=f"{run_dir.rstrip('/')}/{name}"), None)
        )
    except BadInput as exc:
        return None, str(exc)


def _sweep(fleet_dir: Path, run_dir: str) -> tuple[SweepCard | None, str | None]:
    """(the sweep card in ``fleet_dir/run_dir/sweep.json``, None) or (None, why it could not be read: the
    field that does not read, records/sweep.py)."""
    doc, problem = _read(fleet_dir, run_dir, "sweep.json")
    if doc is None:
        return None, problem
    try:
        return SweepCard.from_json(doc, source=f"{run_dir.rstrip('/')}/sweep.json"), None
    except BadInput as exc:
        return None, str(exc)


def _task_files(fleet_dir: Path, t: Task) -> tuple[PairCard | None, SweepCard | None, str | None]:
    """(pair card, sweep card, why the task's own card is missing) of one task; for a sweep the pair card
    is plain-before's (else the first candidate's that can be read): the node's hardware and engine."""
    if t.run_dir is None:
        return None, None, None
    if t.kind == "compare":
        card, problem = _read_card(fleet_dir, t.run_dir, "card.json")
        return card, None, problem
    sweep, problem = _sweep(fleet_dir, t.run_dir)
    folders = [c.folder for c in sweep.candidates if c.folder] if sweep else []
    for folder in ["plain-before", *folders]:
        baseline, _ = _read_card(fleet_dir, t.run_dir, f"{folder}/card.json")
        if baseline is not None:
            return baseline, sweep, problem
    return None, sweep, problem


def read_fleet_dir(fleet_dir: Path) -> FleetCard:
    """The fleet card's data of ``fleet_dir`` (fleet/fleetdata.py) from its files; writes nothing.

    Raises BadInput (exit 2) when ``tasks.json`` is missing or not a fleet task list."""
    doc = _tasks(fleet_dir)
    cards: dict[str, PairCard | None] = {}
    sweeps: dict[str, SweepCard | None] = {}
    unreadable: dict[str, str] = {}
    for t in doc.tasks:
        cards[t.id], sweeps[t.id], problem = _task_files(fleet_dir, t)
        if problem is not None:
            unreadable[t.id] = f"finished (exit {t.exit_code}) but {problem}; see {t.log or 'its log'}"
    return build_fleet_card(doc, cards, sweeps, unreadable)


def write_fleet_card(fleet_dir: Path) -> Path:
    """Write ``fleet_dir/fleet.json``, ``fleet_dir/fleet.md`` and its HTML view ``fleet_dir/card.html``
    (fleet/fleethtml.py); returns the path of ``fleet.md``.

    Raises BadInput (exit 2) for a missing or malformed ``tasks.json``, RunDirUnwritable (exit 1) when the
    folder cannot be written."""
    card = read_fleet_dir(fleet_dir)
    write_json(fleet_dir / CARD_JSON, card.to_json())
    path = fleet_dir / CARD_MD
    write_text(path, render_fleet_markdown(card))
    write_text(fleet_dir / CARD_HTML, render_fleet_html(card))
    return path


def read_fleet_card(path: Path) -> FleetCard:
    """The fleet card written in ``path`` (fleet.json), checked (records/fleet.py): BadInput (exit 2), one line
    naming the file, the field and the fix, when it is not JSON or not a fleet card."""
    return FleetCard.from_json(read_json(path), source=str(path))
