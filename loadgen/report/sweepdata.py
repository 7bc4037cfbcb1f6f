"""The sweep card's data (``sweep.json``: records/sweep.py ``SweepCard``, schema ``loadgen.sweep/2``) from a sweep
folder: each candidate's pair card, the A/A noise floor per cell, the design it was measured with, the cells
that stopped short of a declared precision, and the recommendation (report/sweeprec.py; measure/ranking.py
holds the rules and formulas).

A sweep of older code (``plain-before``, the candidates, ``plain-after``: one time window per server) is
read as it was: its intervals are within-run only, and the plain baseline's drift between its two phases is
the only measure of the server's movement it has (its warning rule: measure/ranking.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from loadgen.measure.blocks import half_width
from loadgen.measure.decision import INCONCLUSIVE
from loadgen.measure.metrics import per_prompt
from loadgen.measure.ranking import drift_warning, speedup_of, upper_bound
from loadgen.measure.ratios import paired_median_ratio
from loadgen.profile.cells import CellKey
from loadgen.records.candidates import Candidate
from loadgen.records.card import CardVerdict, PairCard, ResourceDifference
from loadgen.records.cardcell import Acceptance, CardCell, Cost
from loadgen.records.criteria import LATENCY_METRICS, Criteria, criteria_of
from loadgen.records.serverparts import EffectiveFile
from loadgen.records.sweep import SCHEMA as SWEEP_SCHEMA
from loadgen.records.sweep import Drift, NoiseFloor, SweepCandidate, SweepCard, SweepCell, SweepDesign, SweepEntry
from loadgen.report.sweeprec import entry_of, recommend
from loadgen.report.tracedata import sweep_trace
from loadgen.store.files import load_records, read_card, read_cell_lines, read_protocol, read_status
from loadgen.store.serverfiles import read_part

#: The per-request timing behind each paired primary metric (the drift is measured on it).
_TIMING = {"ttft_p50": "ttft_s", "tpot_p50": "tpot_s", "e2e_p50": "e2e_s"}
_PLAIN_PHASES = ("plain-before", "plain-after")
#: Where a record being built is said to come from, should it not read (a bug, never the user's input).
_BUILT = "the sweep card being built"
#: A fresh sweep.json's keys in their order (``trace`` follows with a trace workload).
_SWEEP_KEYS = (
    "schema",
    "pair",
    "sweep_dir",
    "engine_version",
    "primary_metric",
    "speedup_definition",
    "upper_bound_formula",
    "criteria_declared",
    "criteria",
    "design",
    "noise_floor",
    "times_s",
    "candidates",
    "cells",
    "drift_warnings",
    "recommendation",
)


def _per_prompt(run_dir: Path, key: CellKey, field: str) -> dict[str, float]:
    if not (run_dir / "requests.jsonl").is_file():
        return {}
    return per_prompt(
        (
            r
            for r in load_records(run_dir)
            if r.role == "plain" and r.phase == "measured" and CellKey.named(r.workload, r.level, r.concurrency) == key
        ),
        field,
    )


def plain_drift(
    sweep_dir: Path, key: CellKey, metric: str, saved: Mapping[CellKey, Drift] | None = None
) -> Drift | None:
    """An older sweep's plain-after / plain-before of ``metric``'s per-request timing at cell ``key`` (paired by
    prompt, bootstrap 95% CI, measure/ratios.py); TPOT for a metric without a per-request timing. Without both
    plain phases' requests.jsonl (a committed example keeps statistics only) the drift ``saved`` in the
    earlier sweep.json for ``key``; None for a sweep measured in blocks."""
    if not (sweep_dir / "plain-before").is_dir():
        return None
    field = _TIMING.get(metric, "tpot_s")
    kept = (saved or {}).get(key)
    if kept is not None and not all((sweep_dir / p / "requests.jsonl").is_file() for p in _PLAIN_PHASES):
        return kept
    r = paired_median_ratio(
        _per_prompt(sweep_dir / "plain-before", key, field), _per_prompt(sweep_dir / "plain-after", key, field)
    )
    return Drift(timing=field, value=r.value, ci_low=r.ci_low, ci_high=r.ci_high, pairs=r.pairs)


#: The TTFT percentiles whose speculative / plain ratios each entry carries (the pair card's cell ratios).
TAIL = ("p50", "p95", "p99")


def _entry(c: Candidate, cell: CardCell, metric: str, verdict_cells: Mapping[tuple[str, int], str]) -> SweepEntry:
    spec = cell.speculative
    acc = (spec.acceptance if spec else None) or Acceptance()
    cost = cell.cost or Cost()
    r = cell.ratio(metric)
    value, low, high = speedup_of(metric, r)
    return SweepEntry(
        candidate=c.name,
        k=c.k,
        method=c.speculative.method,
        draft_weights=c.draft_weights,
        ratio=r,
        speedup=value,
        speedup_ci_low=low,
        speedup_ci_high=high,
        effect=None if r is None else r.effect,
        half_width=half_width(low, high),
        blocks=None if r is None else r.blocks,
        acceptance_rate=acc.acceptance_rate,
        mean_acceptance_length=acc.mean_acceptance_length,
        per_position=None
        if spec is None or spec.acceptance is None
        else [x for x in acc.per_position if x is not None],
        tokens_per_decode_chunk=None if spec is None else spec.mean_tokens_per_decode_chunk,
        predicted_speedup=cost.predicted_speedup,
        step_time_ratio=cost.step_time_ratio,
        upper_bound=upper_bound(c.k, cost.step_time_ratio),
        criteria_status=verdict_cells.get((cell.workload, cell.concurrency)),
        ttft_ratios={p: None if (t := cell.ratio(f"ttft_{p}")) is None else t.value for p in TAIL},
    )


def _arm_seconds(sweep_dir: Path) -> dict[str, float]:
    """Seconds each arm measured (the sum of its slots' durations in cells.jsonl) plus its server's start."""
    out: dict[str, float] = defaultdict(float)
    for e in read_cell_lines(sweep_dir / "cells.jsonl") if (sweep_dir / "cells.jsonl").is_file() else []:
        out[e.role] += e.duration_s
    for path in sorted((sweep_dir / "servers").glob("*-effective.json")):
        role = path.name.removesuffix("-effective.json")
        effective = read_part(sweep_dir, role, "effective", EffectiveFile)
        out[role] += float((effective.ready_s if effective else None) or 0.0)
    return dict(out)


def _candidate(c: Candidate, card: PairCard | None, seconds: float | None) -> SweepCandidate:
    diff = (None if card is None else card.resources.difference) or ResourceDifference()
    verdict = None if card is None else card.verdict
    return SweepCandidate(
        name=c.name,
        speculative_config=c.speculative.to_json(),
        k=c.k,
        draft_weights=c.draft_weights,
        folder=c.name,
        measured=card is not None,
        complete=card is not None and card.complete,
        verdict_passed=None if verdict is None else verdict.passed,
        verdict_status=None if verdict is None else verdict.status,
        verdict_summary=None if verdict is None else verdict.summary,
        kv_capacity_loss=diff.kv_capacity_loss,
        kv_cache_tokens_lost=diff.kv_cache_tokens_lost,
        extra_cpu_rss_bytes=diff.extra_cpu_rss_bytes,
        extra_gpu_memory_bytes=diff.extra_gpu_memory_bytes,
        same_memory_budget=diff.same_memory_budget,
        time_s=seconds,
    )


def _cards(sweep_dir: Path, candidates: Sequence[Candidate]) -> dict[str, PairCard]:
    """Each measured candidate's card (store/files.py read_card: BadInput naming the file and field of a bad one)."""
    return {c.name: read_card(path) for c in candidates if (path := sweep_dir / c.name / "card.json").is_file()}


def _primary(cards: Mapping[str, PairCard], sweep_dir: Path) -> tuple[str, CardVerdict | None, Criteria | None]:
    """The primary metric, and the verdict and criteria of the first candidate card judged against declared
    criteria (None, None without)."""
    for name, card in cards.items():
        if card.verdict.criteria:
            criteria = criteria_of(card.verdict.criteria, sweep_dir / name / "card.json")
            return (criteria.primary or ("tpot_p50",))[0], card.verdict, criteria
    return "tpot_p50", None, None


def _cells(
    sweep_dir: Path,
    candidates: Sequence[Candidate],
    cards: Mapping[str, PairCard],
    metric: str,
    saved: SweepCard | None,
) -> list[SweepCell]:
    drifts = {CellKey(c.workload, c.level): c.drift for c in saved.cells if c.drift} if saved else {}
    keys: dict[CellKey, CardCell] = {}
    for card in cards.values():
        for cell in card.cells:
            keys.setdefault(CellKey(cell.workload, cell.level), cell)
    out = []
    for key, first in keys.items():
        entries = []
        for c in candidates:
            found = cards.get(c.name)
            mine = None if found is None else found.cell(key.workload, key.label)
            if found is not None and mine is not None:
                verdict_cells = {(v.workload, v.concurrency): v.status for v in found.verdict.cells}
                entries.append(_entry(c, mine, metric, verdict_cells))
        drift = plain_drift(sweep_dir, key, metric, drifts)
        warning = (
            drift_warning(
                f"{key.workload} {key.label}", drift, [entry_of(e) for e in entries], metric in LATENCY_METRICS
            )
            if drift
            else None
        )
        aa = first.aa_ratio(metric)
        out.append(
            SweepCell(
                workload=first.workload,
                level=first.level,
                concurrency=first.concurrency,
                rate_rps=first.rate_rps,
                noise_floor=aa,
                entries=entries,
                drift=drift,
                drift_warning=warning,
            )
        )
    return out


def _design(sweep_dir: Path, cells: Sequence[SweepCell]) -> SweepDesign:
    """How the sweep was measured: the design of its protocol.json (an older sweep: one window per server)."""
    proto = read_protocol(sweep_dir / "protocol.json") if (sweep_dir / "protocol.json").is_file() else None
    design = None if proto is None else proto.design
    if proto is None or design is None:
        return SweepDesign(
            blocks=None,
            ci_method="within-run",
            line=(
                "measured by older code: one time window per server (plain-before, each candidate, plain-after); its "
                "95% CIs cover the prompts of one window only, not the server's own movement"
            ),
            keys=("blocks", "ci_method", "line"),
        )
    goal = None if proto.criteria is None else proto.criteria.ci_half_width
    short = [
        f"{c.workload} {c.level} {e.candidate} ("
        + (
            "not measured"
            if e.speedup is None
            else (f"±{e.half_width:.3f}" if e.half_width is not None else "no CI") + f" after {e.blocks} blocks"
        )
        + ")"
        for c in cells
        for e in c.entries
        if goal is not None and (e.effect == INCONCLUSIVE or e.speedup is None)
    ]
    status = read_status(sweep_dir)
    sizing_end = status.sizing_end if goal is not None and status is not None else None
    where = "co-resident" if design.co_resident else "one server at a time"
    line = (
        f"{design.blocks} blocks per arm and cell (balanced order), placebo "
        f"{design.placebo_effective}, servers {where} ({design.co_resident_reason}), "
        f"{design.server_starts} server starts"
    )
    return SweepDesign(
        blocks=design.blocks,
        ci_method="blocks",
        co_resident=design.co_resident if isinstance(design.co_resident, bool) else None,
        placebo=design.placebo_effective,
        server_starts=design.server_starts,
        ci_half_width=goal,
        stopped_short=short,
        sizing_end=sizing_end,
        line=line,
    )


def _noise(cells: Sequence[SweepCell], placebo: str | None) -> NoiseFloor:
    every = [(c, f) for c in cells if (f := c.floor_ratio()) is not None]
    floors = [(c, f) for c, f in every if f.value is not None]
    if not floors:
        line = (
            "no A/A placebo: no noise floor (set [design].placebo)"
            if placebo in (None, "off")
            else f"no A/A noise floor: the placebo ({placebo}) has no measured cell here"
        )
        return NoiseFloor(measured=False, line=line, keys=("measured", "line"))
    widths = [w for _, f in floors if (w := half_width(f.ci_low, f.ci_high)) is not None]
    out = [
        f"{c.workload} {c.level}"
        for c, f in every
        if f.ci_low is not None and f.ci_high is not None and not f.ci_low <= 1.0 <= f.ci_high
    ]
    line = (
        f"A/A noise floor (placebo / plain): {min(f.value or 0 for _, f in floors):.3f}-"
        f"{max(f.value or 0 for _, f in floors):.3f} over {len(floors)} cells, widest 95% CI ±"
        + (f"{max(widths):.3f}" if widths else "-")
        + " (log half-width)"
        + (f"; WARNING: the A/A CI excludes 1 at {', '.join(out)}: the design did not hold there" if out else "")
    )
    return NoiseFloor(
        measured=True, cells=len(floors), widest_half_width=max(widths) if widths else None, excluding_1=out, line=line
    )


def build_sweep_card(
    sweep_dir: Path,
    candidates: Sequence[Candidate],
    times: Mapping[str, float],
    engine_version: str | None,
    saved: SweepCard | None = None,
) -> SweepCard:
    """The sweep card of ``sweep_dir`` (records/sweep.py, checked as a file read back would be). ``saved``: the
    earlier sweep.json when re-rendering; its pair name and folder (where it was measured) and an older
    sweep's drifts where the plain phases' requests.jsonl are gone are kept; ``times``: an older sweep's
    seconds per phase."""
    cards = _cards(sweep_dir, candidates)
    metric, verdict, criteria = _primary(cards, sweep_dir)
    cells = _cells(sweep_dir, candidates, cards, metric, saved)
    seconds = times or _arm_seconds(sweep_dir)
    rows = [_candidate(c, cards.get(c.name), seconds.get(c.name)) for c in candidates]
    design = _design(sweep_dir, cells)
    noise = _noise(cells, design.placebo)
    rec = recommend(cells, rows, criteria, engine_version)
    trace = sweep_trace(sweep_dir, rec, rows)
    return SweepCard(
        schema=SWEEP_SCHEMA,
        pair=(saved.pair if saved else None) or sweep_dir.parent.name,
        sweep_dir=(saved.sweep_dir if saved else None) or str(sweep_dir),
        engine_version=engine_version,
        primary_metric=metric,
        speedup_definition=(
            "plain / speculative of the primary metric (1 / the pair card's ratio) for a latency, "
            "the ratio itself for a throughput; > 1 is faster"
        ),
        upper_bound_formula="(K + 1) / step_time_ratio, step_time_ratio = speculative / plain step time",
        criteria_declared=criteria is not None,
        criteria=None if verdict is None else verdict.criteria,
        design=design,
        noise_floor=noise,
        times_s=dict(seconds),
        candidates=rows,
        cells=cells,
        drift_warnings=[c.drift_warning for c in cells if c.drift_warning]
        + ([noise.line.split("; ", 1)[1]] if noise.excluding_1 else []),
        recommendation=rec,
        trace=trace,
        keys=(*_SWEEP_KEYS, *(["trace"] if trace is not None else [])),
    )
