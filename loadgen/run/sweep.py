"""The sweep flow (``loadgen sweep``): several speculative candidates against one plain baseline.

Order: every candidate's pair file is written and checked with ``loadgen check``'s rules before any
server starts; the estimated wall time is printed (a ``--budget-min`` it cannot meet is refused); then
``plain-before`` (the plain server, launched or attached), each candidate in turn (its speculative
server only: its pair card pairs it with plain-before's records, copied into its folder) and
``plain-after`` (the plain server again, for the drift), each in its own folder of
``runs/<pair>/sweep-<ts>/``. Each folder is a compare run folder (protocol.json, pair.toml,
prompts.jsonl: ``loadgen compare --protocol`` repeats it). The plain server is launched for each of
its two phases, so that one server at a time holds the accelerator; attached, it is the same server.
``--resume`` continues at the first phase not finished (a cut-short one is completed in place).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loadgen.check.preflight import run_pair_check
from loadgen.errors import BadInput, CriteriaFailed
from loadgen.profile.candidates import Candidate, candidate_doc, expand_candidates
from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Pair
from loadgen.profile.pairfile import PAIRS_DIR, load_pair, resolve_pair_path
from loadgen.profile.tomlread import read_toml
from loadgen.profile.workload import WORKLOADS_DIR
from loadgen.report.rundir import read_json, read_jsonl, write_json, write_text
from loadgen.report.sweepcard import render_sweep_markdown
from loadgen.report.sweepdata import build_sweep_card
from loadgen.run import flow
from loadgen.run.plan import plan_cells, probe_host, protocol
from loadgen.run.sweepplan import PLAIN, Phase, estimate_s, fitting, history
from loadgen.util import strictjson, tomlwrite

Log = Callable[[str], None]
PLAIN_PHASES = ("plain-before", "plain-after")


@dataclass(frozen=True)
class SweepOptions:
    """The options of ``loadgen sweep`` (see its ``--help``)."""

    runs_dir: Path = Path("runs")
    budget_min: float | None = None
    attach_plain: str | None = None
    allow_unpinned: bool = False
    api_key: str | None = None
    pairs_dir: Path = PAIRS_DIR
    workloads_dir: Path = WORKLOADS_DIR
    history_dirs: tuple[Path, ...] = ()


@dataclass
class _Sweep:
    pair_name: str
    candidates: list[Candidate]
    pairs: dict[str, Pair]
    cells: list[CellSpec]
    engine_version: str | None = None
    findings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _load(sweep_file: Path, out: Path, o: SweepOptions, log: Log) -> _Sweep:
    """Expand, write (``out/<candidate>.toml``), read and check every candidate; plan the cells once."""
    doc = read_toml(sweep_file)
    name = str(doc.get("name", sweep_file.stem))
    candidates = expand_candidates(doc, sweep_file)
    out.mkdir(parents=True, exist_ok=True)
    pairs: dict[str, Pair] = {}
    for c in candidates:
        path = out / f"{c.name}.toml"
        path.write_text(tomlwrite.dumps(candidate_doc(doc, c, name)))
        pairs[c.name] = load_pair(str(path), workloads_dir=o.workloads_dir)
    sweep = _Sweep(name, candidates, pairs, plan_cells(pairs[candidates[0].name]))
    for c in candidates:
        log(f"[{c.name}] check")
        version, found = run_pair_check(pairs[c.name], o.allow_unpinned, log)
        sweep.engine_version = version
        sweep.findings[c.name] = [f.__dict__ for f in found]
    return sweep


def _setup(run_dir: Path, pair: Pair, sweep: _Sweep, host: dict[str, Any]) -> None:
    """A compare run folder for ``pair`` on the sweep's cells (protocol.json, prompts.jsonl, pair.toml)."""
    for sub in ("servers", "metrics"):
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    prompts = [p for c in sweep.cells for p in (*c.warmup, *c.measured, *c.cooldown)]
    write_text(run_dir / "prompts.jsonl", "".join(strictjson.dumps(p.to_json()) + "\n" for p in prompts))
    shutil.copyfile(pair.path, run_dir / "pair.toml")
    write_json(run_dir / "protocol.json", protocol(pair, sweep.cells, prompts, host)
               | {"engine_version": sweep.engine_version, "attach": {}})


def _copy_plain(before: Path, run_dir: Path) -> None:
    """plain-before's plain records, cell lines, server records and scrapes into ``run_dir``."""
    for name in ("requests.jsonl", "cells.jsonl"):
        lines = [r for r in read_jsonl(before / name) if r.get("role") == "plain"]
        write_text(run_dir / name, "".join(strictjson.dumps(r) + "\n" for r in lines))
    for sub, pattern in (("servers", "plain*"), ("metrics", "plain__*")):
        for src in (before / sub).glob(pattern):
            shutil.copyfile(src, run_dir / sub / src.name)


def _finished(run_dir: Path) -> bool:
    status = run_dir / "status.json"
    return status.is_file() and bool(read_json(status).get("complete"))


def _run_phase(sweep_dir: Path, phase: str, sweep: _Sweep, o: SweepOptions, log: Log) -> None:
    """Run (or complete in place) one phase folder."""
    run_dir = sweep_dir / phase
    plain = phase in PLAIN_PHASES
    pair = sweep.pairs[sweep.candidates[0].name if plain else phase]
    attach = {"plain": o.attach_plain} if plain and o.attach_plain else None
    if run_dir.exists() and plain:  # a plain phase has one role: measured again, the cut-short one kept aside
        aside, n = run_dir.with_name(f"{phase}.interrupted"), 1
        while aside.exists():
            aside, n = run_dir.with_name(f"{phase}.interrupted-{n}"), n + 1
        run_dir.rename(aside)
        log(f"{run_dir} was cut short: kept as {aside.name}, measured again")
    elif (run_dir / "status.json").is_file():  # a candidate: its speculative cells left run in place
        flow.resume_compare(run_dir, log=log, attach=attach, api_key=o.api_key)
        return
    _setup(run_dir, pair, sweep, probe_host())
    if not plain:
        _copy_plain(sweep_dir / "plain-before", run_dir)
    role = "plain" if plain else "speculative"
    flow._execute(pair, run_dir, {role: sweep.cells}, log, attach, None, o.api_key)


def _new_sweep_dir(runs_dir: Path, name: str, sweep_file: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path, n = runs_dir / name / f"sweep-{stamp}", 1
    while path.exists():
        path, n = runs_dir / name / f"sweep-{stamp}-{n}", n + 1
    path.mkdir(parents=True)
    shutil.copyfile(sweep_file, path / "sweep.toml")
    return path


def _announce(sweep: _Sweep, phases: list[str], o: SweepOptions, log: Log) -> None:
    """Print the estimate (sweepplan.py); raise BadInput (exit 2) when it exceeds ``--budget-min``, naming
    the candidates that would fit."""
    hist = history([o.runs_dir, *o.history_dirs])
    plan = [Phase(p, PLAIN, not o.attach_plain) if p in PLAIN_PHASES
            else Phase(p, sweep.pairs[p].method, True, sweep.pairs[p].num_speculative_tokens) for p in phases]
    est = estimate_s(sweep.cells, plan, hist)
    starts = sum(1 for p in plan if p.starts)
    log(f"sweep: {len(sweep.candidates)} candidates x {len(sweep.cells)} cells, {len(phases)} phases left; "
        f"estimated wall time {est / 60:.1f} min ({starts} server starts of {hist.start_s:.0f} s: {hist.source}; "
        f"plain TPOT {1000 * hist.plain_tpot_s:.1f} ms)")
    if o.budget_min is None or est <= 60 * o.budget_min:
        return
    fit = fitting(sweep.cells, plan, hist, 60 * o.budget_min)
    if fit is None:
        hint = "not even the plain phases fit it"
    elif not fit[0]:
        hint = "no candidate fits it next to the plain phases"
    else:
        hint = f"it fits {', '.join(fit[0])} ({fit[1] / 60:.1f} min)"
    raise BadInput(f"the sweep needs about {est / 60:.1f} min, more than --budget-min {o.budget_min:g} ({hint}); "
                   "raise the budget, or drop candidates, levels or requests from the pair file")


def _require_sweep_dir(path: Path) -> None:
    """Raise BadInput (exit 2) unless ``path`` is a sweep folder (it holds the sweep.toml it ran)."""
    if not (path / "sweep.toml").is_file():
        raise BadInput(f"{path} is not a sweep folder (no sweep.toml); pass runs/<pair>/sweep-<ts>")


def run_sweep(pair: str | None, o: SweepOptions, log: Log = print, resume: Path | None = None) -> Path:
    """Run the sweep of ``pair`` (or complete the sweep folder ``resume``); returns the sweep folder.

    Raises ProfileError / PairCheckError / BadInput (exit 2) before anything starts, RunFailed (exit 1)
    midway, CriteriaFailed (exit 3) when criteria are declared and no candidate meets them."""
    if resume is not None:
        _require_sweep_dir(resume)
    sweep_file = resume / "sweep.toml" if resume is not None else resolve_pair_path(pair or "", o.pairs_dir)
    with tempfile.TemporaryDirectory() as tmp:
        sweep = _load(sweep_file, Path(tmp) / "candidates", o, log)
        phases = ["plain-before", *(c.name for c in sweep.candidates), "plain-after"]
        todo = [p for p in phases if resume is None or not _finished(resume / p)]
        _announce(sweep, todo, o, log)
        sweep_dir = resume if resume is not None else _new_sweep_dir(o.runs_dir, sweep.pair_name, sweep_file)
        shutil.copytree(Path(tmp) / "candidates", sweep_dir / "candidates", dirs_exist_ok=True)
    sweep.pairs = {n: load_pair(str(sweep_dir / "candidates" / f"{n}.toml"), workloads_dir=o.workloads_dir)
                   for n in sweep.pairs}
    log(f"sweep folder: {sweep_dir}")
    times_path = sweep_dir / "times.json"
    times: dict[str, float] = read_json(times_path) if times_path.is_file() else {}
    for phase in todo:
        log(f"== {phase}")
        started = time.monotonic()
        try:
            _run_phase(sweep_dir, phase, sweep, o, log)
        finally:
            times[phase] = times.get(phase, 0.0) + time.monotonic() - started
            write_json(times_path, times)
        log(f"== {phase}: {times[phase] / 60:.1f} min")
    return finish_sweep(sweep_dir, sweep, times, log)


def rerender_sweep(sweep_dir: Path, log: Log = print) -> dict[str, Any]:
    """Write sweep.json, sweep.md and the plots of ``sweep_dir`` again from its saved data alone (``loadgen
    report SWEEP_DIR``): the candidates from sweep.toml, the times from times.json, the engine version and,
    where the plain phases' requests.jsonl are gone, the drift from the earlier sweep.json. Nothing is
    checked or measured; the card is returned (no exit 3). Raises BadInput when the folder is no sweep."""
    _require_sweep_dir(sweep_dir)
    saved = read_json(sweep_dir / "sweep.json") if (sweep_dir / "sweep.json").is_file() else None
    candidates = expand_candidates(read_toml(sweep_dir / "sweep.toml"), sweep_dir / "sweep.toml")
    times: dict[str, float] = read_json(sweep_dir / "times.json") if (sweep_dir / "times.json").is_file() else {}
    version = (saved or {}).get("engine_version")
    if version is None and (sweep_dir / "plain-before" / "protocol.json").is_file():
        version = read_json(sweep_dir / "plain-before" / "protocol.json").get("engine_version")
    return _write_sweep_card(sweep_dir, build_sweep_card(sweep_dir, candidates, times, version, saved), log)


def report_sweep(sweep_dir: Path, log: Log = print) -> None:
    """``loadgen report SWEEP_DIR``: every phase folder's card (run/flow.py ``finish_card``), then the sweep
    card (:func:`rerender_sweep`), each from saved data alone; logs the recommendation."""
    for phase in sorted(p for p in sweep_dir.iterdir() if (p / "status.json").is_file()):
        flow.finish_card(phase, log=log)
    _say(rerender_sweep(sweep_dir, log), sweep_dir, log)


def _say(card: dict[str, Any], sweep_dir: Path, log: Log) -> None:
    for line in [*card["recommendation"]["lines"], *(f"WARNING {w}" for w in card["drift_warnings"])]:
        log(line)
    log(f"sweep card: {sweep_dir / 'sweep.md'}")


def _write_sweep_card(sweep_dir: Path, card: dict[str, Any], log: Log) -> dict[str, Any]:
    try:
        from loadgen.report.sweepplots import render_sweep_plots

        card["plots"] = [str(p.relative_to(sweep_dir)) for p in render_sweep_plots(card, sweep_dir / "plots")]
    except Exception as exc:  # a plot must never cost the card
        log(f"could not draw the sweep plots ({type(exc).__name__}: {exc})")
        card["plots"] = []
    write_json(sweep_dir / "sweep.json", card)
    write_text(sweep_dir / "sweep.md", render_sweep_markdown(card))
    return card


def finish_sweep(sweep_dir: Path, sweep: _Sweep, times: dict[str, float], log: Log) -> Path:
    """Write sweep.json, sweep.md and the plots; raise CriteriaFailed when no candidate meets the
    declared criteria."""
    card = _write_sweep_card(sweep_dir, build_sweep_card(sweep_dir, sweep.candidates, times, sweep.engine_version),
                             log)
    _say(card, sweep_dir, log)
    if card["criteria_declared"] and not card["recommendation"]["meets_criteria"]:
        raise CriteriaFailed(f"no candidate meets the criteria declared in {sweep_dir / 'sweep.toml'}")
    return sweep_dir
