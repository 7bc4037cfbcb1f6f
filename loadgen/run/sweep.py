"""The sweep flow (``loadgen sweep``): several speculative candidates against one plain baseline, measured in
interleaved blocks (docs/metrics.md "Blocks").

Order: every candidate's pair file is written and checked with ``loadgen check``'s rules before any server
starts; the estimated wall time is printed (a ``--budget-min`` it cannot meet is refused); then every arm
(plain, the placebo, each candidate) measures the blocks of every cell in the balanced order of
run/design.py, on servers that stay up together when they fit (run/arms.py) or start one phase at a time,
into the sweep folder ``runs/<pair>/sweep-<ts>/`` (a run folder: protocol.json with the design and its
order, prompts.jsonl, requests.jsonl, cells.jsonl, servers/, metrics/); with ``[criteria].ci_half_width`` the
cells grow block by block (run/sizing.py) until the budget ends. Then each candidate's own compare folder is
cut out of it (run/sweepsplit.py) with its pair card, and the sweep card is written. ``--resume`` finishes the
slots not done. A sweep folder of older code (``plain-before``, a folder per candidate, ``plain-after``) still
re-renders with ``loadgen report``.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from loadgen.errors import BadInput
from loadgen.profile.pairfile import load_pair, resolve_pair_path
from loadgen.records.sweep import SweepCard
from loadgen.report.cardwrite import finish_card
from loadgen.report.sweepwrite import write_sweep_card
from loadgen.run import flow
from loadgen.run.plan import plan_cells, replay_protocol
from loadgen.run.scheddeploy import deploy_schedule
from loadgen.run.sweepplan import announce
from loadgen.run.sweepreplay import replay_sweep
from loadgen.run.sweepsetup import Log, SweepOptions, load_candidates, measure, new_sweep_dir, say_card, start_new
from loadgen.run.sweepsplit import split_candidate
from loadgen.store import resumefiles
from loadgen.store.files import read_protocol, read_sweep
from loadgen.store.runlock import locked

__all__ = ["SweepOptions", "report_sweep", "rerender_sweep", "run_sweep"]


def _require_sweep_dir(path: Path) -> None:
    """Raise BadInput (exit 2) unless ``path`` is a sweep folder (it holds the sweep.toml it ran)."""
    if not (path / "sweep.toml").is_file():
        raise BadInput(f"{path} is not a sweep folder (no sweep.toml); pass runs/<pair>/sweep-<ts>")


def _old_layout(sweep_dir: Path) -> bool:
    """A sweep folder of older code: phases plain-before, one per candidate, plain-after."""
    return (sweep_dir / "plain-before").is_dir() and not (sweep_dir / "protocol.json").is_file()


def run_sweep(
    pair: str | None,
    o: SweepOptions,
    log: Log = print,
    resume: Path | None = None,
    replay: Path | None = None,
    deploy: Path | None = None,
) -> Path:
    """Run the sweep of ``pair`` (or finish the sweep folder ``resume``, or measure the sweep whose
    protocol.json is ``replay`` again: run/sweepreplay.py, or the K schedule the sweep folder ``deploy``
    recommends: run/scheddeploy.py); returns the sweep folder.

    Raises ProfileError / PairCheckError / BadInput (exit 2) before anything starts, RunFailed (exit 1)
    midway, CriteriaFailed (exit 3) when criteria are declared and no candidate meets them."""
    if deploy is not None:
        return deploy_schedule(deploy, o, log)
    if replay is not None:
        return replay_sweep(replay, o, log)
    if resume is not None:
        _require_sweep_dir(resume)
        if _old_layout(resume):
            raise BadInput(
                f"{resume} was measured by older code (plain-before / plain-after phases) and cannot be "
                f"resumed; `loadgen report {resume}` re-renders it, `loadgen sweep` measures it anew"
            )
        with locked(resume, log):  # before anything is read or rewritten (store/runlock.py)
            return _resume(resume, o, log)
    sweep_file = resolve_pair_path(pair or "", o.pairs_dir)
    attach = {"plain": o.attach_plain} if o.attach_plain else {}
    with contextlib.ExitStack() as held:
        with tempfile.TemporaryDirectory() as tmp:
            loaded = load_candidates(sweep_file, Path(tmp) / "candidates", o, log)
            name, candidates, pairs, version, findings = loaded
            first = pairs[candidates[0].name]
            m = flow.plan_measurement(first, pairs, attach, plan_cells(first, log), None, o.metrics)
            announce(m, [o.runs_dir, *o.history_dirs], o.budget_min, log)
            sweep_dir = new_sweep_dir(o.runs_dir, name, sweep_file, o.overrides)
            held.enter_context(locked(sweep_dir, log))  # the sweep's lock covers its arms' folders
            shutil.copytree(Path(tmp) / "candidates", sweep_dir / "candidates")
        return start_new(sweep_dir, candidates, pairs, attach, (m, version, findings), o, log)


def _resume(sweep_dir: Path, o: SweepOptions, log: Log) -> Path:
    """Finish the slots of ``sweep_dir`` not done, in the recorded order."""
    proto = read_protocol(sweep_dir / "protocol.json")
    first, cells, order = replay_protocol(sweep_dir / "protocol.json", o.workloads_dir)
    pairs = {
        n: load_pair(str(sweep_dir / "candidates" / f"{n}.toml"), workloads_dir=o.workloads_dir)
        for n in proto.candidates or {}
    }
    done, moved = resumefiles.keep_finished(sweep_dir)
    if order is None:
        order = [list(s.to_json()) for s in flow.plan_measurement(first, pairs, {}, cells).slots]
    given = {"plain": o.attach_plain} if o.attach_plain else {}
    m = flow.resumed_measurement(first, pairs, proto, (given, dict(o.metrics)), (cells, order), done)
    log(
        f"resuming {sweep_dir}: {len(m.slots)} of {len(order)} slots left ({moved} partial requests moved to "
        "requests.partial.jsonl)"
    )
    m = replace(m, deadline=None if o.budget_min is None else time.monotonic() + 60 * o.budget_min)
    return measure(sweep_dir, m, o, log)


def rerender_sweep(sweep_dir: Path, log: Log = print) -> SweepCard:
    """Write sweep.json, sweep.md and the plots of ``sweep_dir`` again from its saved data alone (``loadgen
    report SWEEP_DIR``); an older sweep keeps its drift from the earlier sweep.json where the plain phases'
    requests.jsonl are gone. Nothing is checked or measured; the card is returned (no exit 3). Raises
    BadInput when the folder is no sweep, or its sweep.json is not a sweep card (one line naming the field)."""
    _require_sweep_dir(sweep_dir)
    saved = read_sweep(sweep_dir / "sweep.json") if (sweep_dir / "sweep.json").is_file() else None
    return write_sweep_card(sweep_dir, saved, log)


def report_sweep(sweep_dir: Path, log: Log = print) -> None:
    """``loadgen report SWEEP_DIR``: every candidate's folder cut again and its card (an older sweep: every
    phase folder's card), then the sweep card, each from saved data alone; logs the recommendation."""
    _require_sweep_dir(sweep_dir)
    if _old_layout(sweep_dir):
        for phase in sorted(p for p in sweep_dir.iterdir() if (p / "status.json").is_file()):
            finish_card(phase, log=log)
    else:
        for name in read_protocol(sweep_dir / "protocol.json").candidates or {}:
            finish_card(split_candidate(sweep_dir, name), log=log)
    say_card(rerender_sweep(sweep_dir, log), sweep_dir, log)
