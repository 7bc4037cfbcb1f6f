"""``loadgen runs [PAIR]``: the run, sweep and fleet folders under ``--runs-dir``, one line each with its
status and verdict; and ``loadgen report`` and ``loadgen fleet report`` holding the folder's lock
(store/runlock.py) while they write.

Where folders are (README.md, "One process per folder"): run folders ``RUNS/<pair>/<timestamp>/``
(protocol.json), sweep folders ``RUNS/<pair>/sweep-<timestamp>/`` (sweep.toml; their candidates' folders
inside are part of the sweep and not listed), fleet folders ``RUNS/fleet-<name>-<timestamp>/`` (tasks.json).

Status: ``running`` (a live process holds its lock; a measuring run's line ends with its slot counter and time
left, from the progress.json it rewrites at every slot), ``refused`` (refused.json: refused before measuring,
store/refused.py), ``complete`` (status.json ``complete``), ``partial`` (stopped by Ctrl-C, SIGTERM or a
kill: ``--resume`` finishes it), ``failed`` (stopped by an error, named). A fleet folder is complete when
every task is done, failed when one failed, partial otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from loadgen.cli.handling import _handles_errors
from loadgen.cli.paramtypes import runs_dir_option
from loadgen.errors import BadInput
from loadgen.records.runparts import StatusFile
from loadgen.store.files import read_card, read_progress, read_status
from loadgen.store.refused import no_card_for_refused, read_refusal
from loadgen.store.rundir import read_json
from loadgen.store.runlock import locked, probe

#: A run's failure (status.json) when it was stopped by Ctrl-C or SIGTERM: resumed without fixing anything.
INTERRUPTED = "interrupted (Ctrl-C or SIGTERM)"
STATUSES = ("running", "refused", "complete", "partial", "failed")


@dataclass(frozen=True)
class RunEntry:
    """One listed folder: ``kind`` (run | sweep | fleet), its path, status (:data:`STATUSES`) and one line
    for the verdict (or what stopped it)."""

    kind: str
    path: Path
    status: str
    verdict: str

    def line(self) -> str:
        return f"{self.status:<9} {self.kind:<5} {self.path}  {self.verdict}"


def _json(path: Path) -> Any:
    try:
        return read_json(path) if path.is_file() else None
    except BadInput:
        return None


def _status(folder: Path) -> StatusFile | None:
    """``folder``'s status.json, None when it has none or it does not read (listed as stopped)."""
    try:
        return read_status(folder)
    except BadInput:
        return None


def _card_verdict(path: Path) -> str:
    """The verdict's summary of the card at ``path`` (store/files.py read_card), or why there is none to show."""
    if not path.is_file():
        return "no card (`loadgen report` writes it)"
    try:
        return read_card(path).verdict.summary or "no criteria declared"
    except BadInput as exc:
        return f"unreadable card ({exc})"


def _running(folder: Path, kind: str) -> RunEntry | None:
    """The entry of a folder a process holds now (store/runlock.py ``probe``), else None; a measuring run's
    line ends with its slot counter and time left (its progress.json, run/slotcount.py)."""
    held, holder = probe(folder)
    if not held:
        return None
    who = f"held by pid {holder.pid} since {holder.started_utc}" if holder else "held by a process starting now"
    return RunEntry(kind, folder, "running", who + (f"; {line}" if (line := _progress(folder)) else ""))


def _progress(folder: Path) -> str | None:
    """The progress line of ``folder``'s progress.json (ProgressFile.line), with the time it was written; None
    without one (not measuring yet, a fleet, a run of older code) or when it does not read."""
    try:
        now = read_progress(folder)
    except BadInput:
        return None
    if now is None:
        return None
    return f"{now.line()} (at {now.updated_utc})"


def run_status(status: StatusFile | None) -> tuple[str, str | None]:
    """(status, failure) of a run or sweep folder from its status.json (None: killed before it was written, or
    unreadable)."""
    from loadgen.run.closing import STOPPED  # imported when used: the CLI starts without the run layer

    if status is None:
        return "partial", STOPPED
    if status.complete:
        return "complete", None
    failure = status.failure
    return ("partial" if failure in (STOPPED, INTERRUPTED) or failure is None else "failed"), failure


def _run_entry(folder: Path, kind: str) -> RunEntry:
    if (running := _running(folder, kind)) is not None:
        return running
    if (refusal := read_refusal(folder)) is not None:
        return RunEntry(kind, folder, "refused", refusal.reason)
    status, failure = run_status(_status(folder))
    if status != "complete":  # no verdict yet: what it holds, and how it is finished
        held = f"{_measured(folder)} measured requests on disk; stopped: {failure}"
        command = "sweep" if kind == "sweep" else "compare"
        resume = f"; `loadgen {command} --resume {folder}` finishes it" if status == "partial" else ""
        return RunEntry(kind, folder, status, held + resume)
    if kind == "sweep":
        lines = ((_json(folder / "sweep.json") or {}).get("recommendation") or {}).get("lines") or []
        headline = str(lines[-1]) if lines else ""  # the recommendation's headline: its last line
        verdict = _short(headline, folder / "sweep.md") if lines else "no sweep card (`loadgen report` writes it)"
    else:
        verdict = _card_verdict(folder / "card.json")
    return RunEntry(kind, folder, status, verdict)


#: The longest verdict ``loadgen runs`` prints on its line (characters); the rest is in the card.
SHORT = 120


def _short(text: str, card: Path) -> str:
    """``text`` cut to :data:`SHORT` characters at a word, pointing at ``card`` for the rest."""
    if len(text) <= SHORT:
        return text
    return text[:SHORT].rsplit(" ", 1)[0] + f" ... (in full: {card})"


def _measured(folder: Path) -> int:
    """The measured requests in ``folder``'s requests.jsonl (each line's ``phase``; torn lines not counted)."""
    path = folder / "requests.jsonl"
    if not path.is_file():
        return 0
    count = 0
    with path.open("rb") as lines:
        for line in lines:
            try:
                count += json.loads(line).get("phase") == "measured"
            except (ValueError, AttributeError):
                continue
    return count


def _fleet_entry(folder: Path) -> RunEntry:
    if (running := _running(folder, "fleet")) is not None:
        return running
    tasks = [t for t in ((_json(folder / "tasks.json") or {}).get("tasks") or []) if isinstance(t, dict)]
    states = [t.get("status") for t in tasks]
    status = "complete" if tasks and all(s == "done" for s in states) else "failed" if "failed" in states else "partial"
    judged = sum(1 for t in tasks if t.get("exit_code") == 3)
    verdict = f"{states.count('done')} of {len(tasks)} tasks done" + (
        f", {judged} failed their declared criteria" if judged else ""
    )
    return RunEntry("fleet", folder, status, verdict)


def _fleet_pairs(folder: Path) -> set[str]:
    tasks = (_json(folder / "tasks.json") or {}).get("tasks") or []
    return {str(t.get("pair")) for t in tasks if isinstance(t, dict)}


def list_runs(runs_dir: Path, pair: str | None = None) -> Iterator[RunEntry]:
    """The folders under ``runs_dir`` (only ``pair``'s, and fleets that measured it, when given), by path."""
    for top in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        if (top / "tasks.json").is_file() or (top / "fleet.toml").is_file():
            if pair is None or pair in _fleet_pairs(top):
                yield _fleet_entry(top)
            continue
        if pair is not None and top.name != pair:
            continue
        for folder in sorted(p for p in top.iterdir() if p.is_dir()):
            if (folder / "sweep.toml").is_file():
                yield _run_entry(folder, "sweep")
            elif (
                (folder / "protocol.json").is_file()
                or (folder / "refused.json").is_file()
                or (folder / "status.json").is_file()
            ):
                yield _run_entry(folder, "run")


@click.command("runs")
@click.argument("pair", required=False)
@runs_dir_option("Where the run, sweep and fleet folders are.")
@_handles_errors
def runs(pair: str | None, runs_dir: Path) -> None:
    """List the run, sweep and fleet folders under --runs-dir (PAIR's only, when given) with their status
    (running, refused, complete, partial, failed) and verdict."""
    if not runs_dir.is_dir():
        raise BadInput(f"{runs_dir} is not a folder; pass --runs-dir DIR, where loadgen wrote its runs")
    entries = list(list_runs(runs_dir, pair))
    for entry in entries:
        click.echo(entry.line())
    if not entries:
        click.echo(f"no run folders{f' of {pair}' if pair else ''} under {runs_dir}")


def report_locked(run_dir: Path, log: Any = click.echo) -> Any:
    """``loadgen report RUN_DIR``'s writing, with the folder's lock held (a sweep folder: report_sweep;
    else the card, returned). Raises FolderBusy (exit 2) while another process measures the folder, BadInput
    for a folder refused before measuring (store/refused.py)."""
    from loadgen.report.cardwrite import finish_card
    from loadgen.run.sweep import report_sweep

    no_card_for_refused(run_dir)
    with locked(run_dir, log):
        return report_sweep(run_dir, log) if (run_dir / "sweep.toml").is_file() else finish_card(run_dir, log)


def fleet_card_locked(fleet_dir: Path) -> Path:
    """``loadgen fleet report DIR``: the fleet card written with the folder's lock held; its path. Raises
    FolderBusy (exit 2) while a ``loadgen fleet run`` holds the folder."""
    from loadgen.fleet.fleetwrite import write_fleet_card

    with locked(fleet_dir, click.echo):
        return write_fleet_card(fleet_dir)
