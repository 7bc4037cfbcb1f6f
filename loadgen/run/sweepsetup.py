"""The sweep's set-up (``loadgen sweep``, ``--protocol`` and ``--deploy-schedule`` alike): its options, every
candidate's pair file written, read and checked before any server starts, the new sweep folder made and laid out
as a run folder (pair.toml, prompts.jsonl, protocol.json with every candidate and the design, checks.json), its
slots measured and its cards written (each candidate's folder cut out and its pair card, then the sweep card).

run/sweep.py (a new sweep, ``--resume``), run/sweepreplay.py (``--protocol``) and run/scheddeploy.py
(``--deploy-schedule``) start their sweeps here: run/sweep.py dispatches to the other two, which import only this
module of the three.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from loadgen.check.finding import Finding
from loadgen.check.hashes import model_hashes
from loadgen.check.preflight import check_pairs
from loadgen.errors import CriteriaFailed, ProfileError
from loadgen.profile.cells import PLAIN_ARMS
from loadgen.profile.locate import anchor_workloads
from loadgen.profile.overrides import Overrides, apply_overrides
from loadgen.profile.pair import Pair
from loadgen.profile.pairfile import PAIRS_DIR, load_pair
from loadgen.profile.tomlread import read_toml
from loadgen.profile.workload import WORKLOADS_DIR
from loadgen.records.candidates import Candidate, candidate_doc, expand_candidates
from loadgen.records.protoparts import CandidateRecord, RunDesign
from loadgen.records.sweep import SweepCard
from loadgen.report.cardwrite import finish_card
from loadgen.report.sweepwrite import write_sweep_card
from loadgen.run import flow
from loadgen.run.arms import metrics_record
from loadgen.run.observe import ObserveOptions
from loadgen.run.plan import probe_host, protocol, unique_prompts
from loadgen.run.sweepsplit import split_candidate
from loadgen.serve import attached
from loadgen.store.files import read_protocol, read_sweep, write_checks, write_prompts, write_protocol
from loadgen.store.rundir import exclusive_dir
from loadgen.util import tomlwrite

Log = Callable[[str], None]


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
    overrides: Overrides | None = None  # --concurrency, --requests, --workload (profile/overrides.py)
    progress: bool = False  # the progress line on stderr (run/observe.py: the slot counter, the time left)
    metrics: Mapping[str, str] = field(default_factory=dict)  # --metrics-plain/--metrics-speculative URL


#: Each candidate's pair-check findings (check/finding.py), written to the sweep folder's checks.json.
Findings = dict[str, list[Finding]]


def load_candidates(
    sweep_file: Path, out: Path, o: SweepOptions, log: Log
) -> tuple[str, list[Candidate], dict[str, Pair], str | None, Findings]:
    """Expand, write (``out/<candidate>.toml``), read and check every candidate: the sweep's name, the
    candidates, their pairs, the engine version and each one's findings."""
    doc = apply_overrides(anchor_workloads(read_toml(sweep_file), sweep_file), o.overrides, sweep_file)
    name = str(doc.get("name", sweep_file.stem))
    candidates = expand_candidates(doc, sweep_file)
    bad = next((c.name for c in candidates if c.name.startswith(PLAIN_ARMS)), None)
    if bad is not None:
        raise ProfileError(
            f"{sweep_file}: a candidate may not be named {bad!r} (plain and placebo name the "
            "baseline's arms); give it another name = ..."
        )
    out.mkdir(parents=True, exist_ok=True)
    pairs: dict[str, Pair] = {}
    for c in candidates:
        path = out / f"{c.name}.toml"
        path.write_text(tomlwrite.to_toml(candidate_doc(doc, c, name)))
        pairs[c.name] = load_pair(str(path), workloads_dir=o.workloads_dir)
    attach = {"plain": o.attach_plain} if o.attach_plain else {}  # check/preflight.py: PairCheckError (exit 2)
    version, findings = check_pairs(
        pairs, o.allow_unpinned, log, flow.attached_version(attach, o.api_key), list(attach)
    )
    return name, candidates, pairs, version, findings


def new_sweep_dir(runs_dir: Path, name: str, sweep_file: Path, overrides: Overrides | None) -> Path:
    """Create ``runs_dir/<name>/sweep-<ts>`` (exclusively: a suffix is added if it exists) holding the sweep
    file as run (with the command line's overrides written in, profile/overrides.py) and return it."""
    path = exclusive_dir(runs_dir / name, "sweep-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"))
    flow.write_as_run(sweep_file, path / "sweep.toml", overrides)
    return path


def _lay_out(
    sweep_dir: Path, first: Pair, pairs: dict[str, Pair], m: flow.Measurement, version: str | None, findings: Findings
) -> None:
    """The sweep folder as a run folder: pair.toml (the first candidate's: target, engine, workloads),
    prompts.jsonl, protocol.json with every candidate and the design, checks.json."""
    for sub in ("servers", "metrics"):
        (sweep_dir / sub).mkdir(exist_ok=True)
    prompts = unique_prompts(m.planned)
    write_prompts(sweep_dir, (p.to_json() for p in prompts))
    shutil.copyfile(first.path, sweep_dir / "pair.toml")
    urls = {a.server: a.attach_url for a in m.arms if a.attach_url is not None}  # kept for --resume
    proto = protocol(first, m.planned, prompts, probe_host()).with_fields(
        engine_version=version,
        attach=attached.attach_record(urls),
        **({"metrics_urls": metrics} if (metrics := metrics_record(m.arms)) else {}),
    )
    proto = proto.with_fields(
        design=(proto.design or RunDesign()).with_run(flow.design_record(m)),
        candidates={
            n: CandidateRecord(p.name, str(p.path), p.speculative, model_hashes(p.draft) if p.draft else None)
            for n, p in pairs.items()
        },
    )
    write_protocol(sweep_dir, proto)
    write_checks(sweep_dir, {n: [f.__dict__ for f in found] for n, found in findings.items()})


def start_new(
    sweep_dir: Path,
    candidates: list[Candidate],
    pairs: dict[str, Pair],
    attach: dict[str, str],
    planned: tuple[flow.Measurement, str | None, Findings],
    o: SweepOptions,
    log: Log,
) -> Path:
    """Measure the new sweep folder ``sweep_dir`` (its candidates' pair files written): ``planned`` holds the
    measurement, the engine version and the checks' findings."""
    m, version, findings = planned
    pairs = {
        n: replace(
            load_pair(str(sweep_dir / "candidates" / f"{n}.toml"), workloads_dir=o.workloads_dir), overrides=o.overrides
        )
        for n in pairs
    }
    m = flow.plan_measurement(pairs[candidates[0].name], pairs, attach, m.planned, None, o.metrics)
    return start_measuring(sweep_dir, pairs[candidates[0].name], pairs, m, (version, findings), o, log)


def start_measuring(
    sweep_dir: Path,
    first: Pair,
    pairs: dict[str, Pair],
    m: flow.Measurement,
    checked: tuple[str | None, Findings],
    o: SweepOptions,
    log: Log,
) -> Path:
    """Write the new sweep folder's pair.toml, prompts, protocol and checks (``checked``: the engine version
    and the findings), then measure ``m``'s slots; ``--budget-min`` sets the deadline."""
    if o.budget_min is not None:
        m = replace(m, deadline=time.monotonic() + 60 * o.budget_min)
    _lay_out(sweep_dir, first, pairs, m, *checked)
    log(f"sweep folder: {sweep_dir}")
    log(flow.design_line(m))
    return measure(sweep_dir, m, o, log)


def measure(sweep_dir: Path, m: flow.Measurement, o: SweepOptions, log: Log) -> Path:
    """Measure ``m``'s slots into ``sweep_dir`` and write its cards; CriteriaFailed (exit 3) when criteria are
    declared and no candidate meets them."""
    observe = ObserveOptions(progress=o.progress)
    flow.execute_run(sweep_dir, m, log, observe, o.api_key, sweep_dir.parent.name, write_card=_cards_and_sweep)
    card = read_sweep(sweep_dir / "sweep.json")
    if card.criteria_declared and not card.recommendation.meets_criteria:
        raise CriteriaFailed(f"no candidate meets the criteria declared in {sweep_dir / 'sweep.toml'}")
    return sweep_dir


def _cards_and_sweep(sweep_dir: Path, log: Log) -> None:
    """Each candidate's folder and pair card, then the sweep card (the run's card writer)."""
    for name in read_protocol(sweep_dir / "protocol.json").candidates or {}:
        finish_card(split_candidate(sweep_dir, name), log=lambda _: None)
    say_card(write_sweep_card(sweep_dir, None, log), sweep_dir, log)


def say_card(card: SweepCard, sweep_dir: Path, log: Log) -> None:
    """Log the sweep card's noise floor, recommendation and warnings, and where it is."""
    noise = card.noise_floor.line if card.noise_floor else None
    for line in [
        *([noise] if noise else []),
        *card.recommendation.lines,
        *(w if w.startswith("WARNING") else f"WARNING {w}" for w in card.drift_warnings),
    ]:
        log(line)
    log(f"sweep card: {sweep_dir / 'sweep.md'}")
