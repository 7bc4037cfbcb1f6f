"""Build the pair card's data from a run folder's saved files alone (no server needed).

From protocol.json, status.json, cells.jsonl, requests.jsonl and servers/*.json (read once by runfiles.py;
``card_of`` itself reads nothing), computes every cell's statistics (metrics.py) and the speculative / plain
ratios (measure/ratios.py), and returns the card as the
records/card.py ``PairCard`` (schema ``loadgen.card/1``; report/card.schema.json is generated from that type)
that cardmd.py renders. Every part is built as its record (records/card.py, records/cardcell.py), with the keys
a fresh card.json writes in their order (``keyed``, ``with_fields``: a field that is null stays in the file).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Final

from loadgen.measure.blockstate import state_notes
from loadgen.measure.causes import cause_notes
from loadgen.measure.counterchecks import cell_notes, kv_capacity_note, usable_counters
from loadgen.measure.diagnosis import lossless, lossless_note, lossy_rejection, slo_check
from loadgen.measure.judging import card_verdict, judged_resources
from loadgen.measure.metrics import CellStats, MeasuredRequest, cell_stats
from loadgen.measure.outcomes import lossless_inputs, side_notes, side_outcomes, stop_notes
from loadgen.measure.replicas import spread
from loadgen.measure.serverside import compare
from loadgen.measure.stepcause import abnormal_step_note, draft_cost
from loadgen.measure.steptime import apply as apply_step_times
from loadgen.profile.cells import PLACEBO, ROLES, CellKey
from loadgen.profile.pair import LOOKUP_METHODS, SLO, off_reason, speculation_on_at
from loadgen.records.card import EngineVersion, PairCard, Resources
from loadgen.records.cardcell import CardCell, LosslessCheck, Ratio, RoleStats, ServerVsClient
from loadgen.records.cell import CellEntry
from loadgen.records.protocol import Protocol, ProtocolCell
from loadgen.records.protoparts import EngineRecord, SamplingRecord, Slo, StopRuleRecord
from loadgen.records.request import RequestRecord
from loadgen.records.serverfacts import ServerView
from loadgen.records.speculative import SpeculativeConfig
from loadgen.records.usage import UsageFigures
from loadgen.report.cardlevels import capacities, crossovers
from loadgen.report.enginelog import with_engine_paths
from loadgen.report.noisefloor import cell_ratios, design_summary, noise_notes, noise_summary
from loadgen.report.partial import mark_partial
from loadgen.report.tracedata import trace_card
from loadgen.report.workloadmd import context_axis, workload_statement
from loadgen.serve.placement import placement
from loadgen.serve.resources import budget_note, difference
from loadgen.store.runfiles import RunFiles, read_run

CARD_SCHEMA: Final = "loadgen.card/1"
#: The words of a cell note that speculation was switched off there by the declared config (not a fallback).
DECLARED_OFF = "speculation off by the declared config at this level"
#: The words of the blocking note of a lookup method's cell without a single draft (cardmd.py raises it).
NOT_SPECULATIVE = "this was not a speculative comparison"
#: A fresh card's keys in their order (``command_line`` and ``trace`` follow when present).
_CARD_KEYS = (
    "schema",
    "pair",
    "generated_utc",
    "complete",
    "failure",
    "requests_on_disk",
    "target",
    "draft",
    "speculative_config",
    "sampling",
    "engine_version",
    "servers",
    "workloads",
    "workloads_statement",
    "context_axis",
    "concurrency",
    "load",
    "stop_rule",
    "prompts_sha256",
    "cells",
    "crossover",
    "design",
    "noise_floor",
    "slo",
    "capacity",
    "resources",
    "placement",
    "verdict",
    "hardware",
)


def declared_notes(proto: Protocol, planned: ProtocolCell, spec_entries: list[CellEntry]) -> list[str]:
    """Notes from the declared speculative config (protocol's ``speculative_config``) for one planned cell
    (``concurrency``, ``rate_rps``) and its speculative entries (one per block): :data:`DECLARED_OFF` with the
    key and numbers where the config switches speculation off at this level (pair.speculation_on_at);
    where it is on, for a lookup method (pair.LOOKUP_METHODS), :data:`NOT_SPECULATIVE` when every block's
    ``spec_decode.num_drafts`` is 0 (a cell with drafts > 0 but little accepted is not that case)."""
    spec_config = proto.speculative_config
    if spec_config is None or not spec_config.to_json() or not spec_entries:
        return []
    conc, open_loop = planned.concurrency, planned.rate_rps is not None
    if not speculation_on_at(spec_config, conc, open_loop):
        return [
            f"speculative: {DECLARED_OFF} ({off_reason(spec_config, 1 if open_loop else conc)}); measured and "
            "compared like any other cell, no fallback"
        ]
    counted = [c for e in spec_entries if (c := e.spec_decode)]
    if (
        spec_config.method in LOOKUP_METHODS
        and counted
        and len(counted) == len(spec_entries)
        and all(not c.num_drafts for c in counted)
    ):
        return [
            f"BLOCKING: {NOT_SPECULATIVE}: {spec_config.method} proposed 0 drafts in all "
            f"{len(counted)} block(s) of this cell, so both servers decoded without speculation"
        ]
    return []


def _notes(sides: Mapping[str, RoleStats], ratios: Mapping[str, Ratio], entries: Mapping[str, CellEntry]) -> list[str]:
    notes = [note for entry in entries.values() for note in entry.notes]
    for role, entry in entries.items():
        if entry.output_length_mismatches:
            notes.append(
                f"{role}: {entry.output_length_mismatches} requests did not return their requested "
                "output length; per-token figures stay valid, summed times do not"
            )
        if entry.foreign_traffic:
            notes.append(
                f"{role}: the server finished more requests than loadgen sent (foreign traffic): "
                "its counters include other clients"
            )
    spec = sides.get("speculative")
    tpot = None if (r := ratios.get("tpot_p50")) is None else r.value
    if spec is not None and spec.acceptance is not None and tpot is not None:
        rate = spec.acceptance.acceptance_rate
        if rate is not None and rate >= 0.5 and tpot > 1.0:
            notes.append("acceptance good but latency worse: check draft and verification cost")
        if rate is not None and rate < 0.2:
            notes.append("acceptance low: check the draft's fit to the task and target")
    return notes


def _summed(lines: list[CellEntry]) -> CellEntry:
    """The first repetition's line with the counts summed over every repetition."""
    return replace(
        lines[0],
        errors=sum(e.errors for e in lines),
        output_length_mismatches=sum(e.output_length_mismatches for e in lines),
        usage_mismatches=sum(e.usage_mismatches for e in lines),
        foreign_traffic=any(e.foreign_traffic for e in lines),
    )


def _server_vs_client(stats: CellStats, entries: list[CellEntry]) -> dict[str, ServerVsClient]:
    """Client p50 of TTFT and E2E next to the server histogram's p50 (first repetition's delta; serverside.py)."""
    hists = entries[0].server_histograms if entries else {}
    return {key: compare(getattr(stats, key).p50, hist) for key in ("ttft_s", "e2e_s") if (hist := hists.get(key))}


def _role_cell(records: list[RequestRecord], entries: list[CellEntry]) -> tuple[CellStats, RoleStats]:
    """One server's statistics of a cell over its repetitions: measure/metrics.py's, and the card's record of
    them with the repetitions, the server-vs-client check, the gauges and the outcomes."""
    measured = [
        MeasuredRequest(r.scheduled_s, r.send_s, r.chunk_arrivals_s, r.chunk_tokens, r.error is not None)
        for r in records
    ]
    counters, unmeasurable = usable_counters(entries)  # repetitions with a server restart left out
    stats = cell_stats(measured, counters)
    reps = sorted({r.repetition for r in records})
    per_rep_tpot = tuple(
        cell_stats([m for m, r in zip(measured, records, strict=True) if r.repetition == k], None).tpot_s.p50
        for k in reps
    )
    side = stats.record().with_fields(
        repetitions=len(entries),
        tpot_p50_per_repetition_s=per_rep_tpot,
        failure=next((e.failure for e in entries if e.failure), None),
        server_vs_client=_server_vs_client(stats, entries),
        gauges=tuple(e.gauges for e in entries),
        **asdict(side_outcomes(records)),
        acceptance_unmeasurable=unmeasurable,
    )
    return stats, side


def build_card(run_dir: Path) -> PairCard:
    """The card of the run in ``run_dir`` (see module docstring): ``card_of`` over the run folder read once
    (runfiles.py). Raises BadInput when ``run_dir`` is not a run folder."""
    return card_of(with_engine_paths(read_run(run_dir, ROLES, (PLACEBO,)), run_dir))


def _cell(
    files: RunFiles,
    planned: ProtocolCell,
    by_cell: dict[tuple[str, str, str], list[RequestRecord]],
    entries: dict[tuple[str, str, str], list[CellEntry]],
) -> CardCell:
    """One card cell (both roles, ratios, diagnosis and notes) of the planned cell ``planned``."""
    key = planned.key
    proto = files.protocol
    slo = SLO.of(proto.slo)
    stats: dict[str, CellStats] = {}
    sides: dict[str, RoleStats] = {}
    for role in ROLES:
        if entries.get((*key, role)) or by_cell.get((*key, role)):  # requests of a cell cut short count too
            stats[role], side = _role_cell(by_cell[(*key, role)], entries[(*key, role)])
            side = mark_partial(side, entries[(*key, role)], by_cell[(*key, role)], files.status)
            sides[role] = side.with_fields(**slo_check(by_cell[(*key, role)], stats[role].window_s, slo))
    ratios, floor = cell_ratios(
        proto, by_cell[(*key, "plain")], by_cell[(*key, "speculative")], by_cell.get((*key, PLACEBO)) or [], stats
    )
    role_entries = {role: _summed(es) for role in ROLES if (es := entries.get((*key, role)))}
    greedy = proto.sampling is not None and proto.sampling.temperature == 0
    diag = _diagnose(by_cell[(*key, "plain")], by_cell[(*key, "speculative")], stats, greedy, _lossy(proto))
    notes = _notes(sides, ratios, role_entries) + noise_notes(ratios, floor)
    notes += [n for role, side in sides.items() for n in side_notes(role, side)]
    notes += stop_notes(by_cell[(*key, "plain")], by_cell[(*key, "speculative")])
    note = lossless_note(diag) if diag else None
    spec_config = proto.speculative_config or SpeculativeConfig()
    notes += [
        *([note] if note else []),
        *cell_notes({r: entries[(*key, r)] for r in ROLES if entries.get((*key, r))}, spec_config),
        *state_notes({r: entries[(*key, r)] for r in (*ROLES, PLACEBO) if entries.get((*key, r))}),
        *declared_notes(proto, planned, entries.get((*key, "speculative")) or []),
    ]
    lines, views = (
        {r: entries.get((*key, r)) or [] for r in ROLES},
        {r: s.view() if (s := files.servers.get(r)) else ServerView() for r in ROLES},
    )
    notes = cause_notes(notes, views, lines, ratios, planned, spec_config)
    cell = CardCell(
        workload=key[0],
        level=key[1],
        concurrency=planned.concurrency,
        rate_rps=planned.rate_rps,
        complete=len(stats) == 2 and not any(x.failure for x in sides.values()),
        ratios=ratios,
        notes=tuple(notes),
        plain=sides.get("plain"),
        speculative=sides.get("speculative"),
        noise_floor=floor,
        lossless=diag,
    )
    cell = cell.keyed(
        "workload",
        "level",
        "concurrency",
        "rate_rps",
        "complete",
        *sides,
        "ratios",
        *(["noise_floor"] if floor is not None else []),
        *(["lossless"] if len(stats) == 2 else []),
        "notes",
    )
    cell = apply_step_times(
        cell,
        {role: [r.chunk_arrivals_s for r in by_cell[(*key, role)] if r.error is None] for role in ROLES},
        role_entries,
    )
    weights = draft_cost(*(m.weight_bytes if m else None for m in (proto.draft, proto.target)))
    step = abnormal_step_note(cell.cost, spec_config, views, lines["speculative"], weights)
    return replace(cell, notes=(*cell.notes, step)) if step else cell


def card_of(files: RunFiles) -> PairCard:
    """The card of a run folder's contents (pure: no file is read; see the module docstring)."""
    proto, servers = files.protocol, files.servers
    by_cell: dict[tuple[str, str, str], list[RequestRecord]] = defaultdict(list)
    for r in files.records:
        if not r.warmup:
            by_cell[(*CellKey.named(r.workload, r.level, r.concurrency), r.role)].append(r)
    entries: dict[tuple[str, str, str], list[CellEntry]] = defaultdict(list)
    startup = {role: s.replicas() for role, s in servers.items()}
    for e in spread(files.entries, startup):  # replicas seen once mark every block of that server
        entries[(*e.key, e.role)].append(e)
    planned: dict[tuple[str, str], ProtocolCell] = {}
    for c in proto.cells:  # repetitions share one card cell: the first planned line of each key
        planned.setdefault(c.key, c)
    cells = tuple(_cell(files, c, by_cell, entries) for c in planned.values())
    slo = SLO.of(proto.slo)
    usage = {role: servers[role].usage() for role in ROLES}
    plain_use = UsageFigures.of(usage["plain"])
    diff = difference(plain_use, UsageFigures.of(usage["speculative"]))
    versions = {role: s.version() for role, s in servers.items()}
    card = PairCard(
        schema=CARD_SCHEMA,
        pair=proto.pair,
        generated_utc=files.generated_utc,
        complete=files.status.complete,
        failure=files.on_disk.failure,  # the run's own, plus what is partial or lost
        requests_on_disk=files.on_disk.requests_on_disk,
        target=proto.target,
        draft=proto.draft,
        speculative_config=proto.speculative_config,
        sampling=proto.sampling or SamplingRecord(),
        engine_version=EngineVersion(
            versions.get("plain"),
            versions.get("speculative"),
            keys=tuple(versions),
            extra={k: v for k, v in versions.items() if k not in ROLES},
        ),
        servers=servers,
        workloads=tuple(proto.workloads),
        workloads_statement=workload_statement(proto, files.records),
        context_axis=context_axis(cells),
        concurrency=tuple(proto.concurrency),
        load=proto.load,
        stop_rule=proto.stop_rule or StopRuleRecord(),
        prompts_sha256=proto.prompts_sha256 or "",
        cells=cells,
        crossover=crossovers(cells),
        design=design_summary(proto),
        noise_floor=noise_summary(cells),
        slo=Slo(**asdict(slo)).keyed(*asdict(slo)),
        capacity=capacities(cells, slo),
        resources=Resources(
            plain=usage["plain"],
            speculative=usage["speculative"],
            difference=diff,
            notes=tuple(n for n in [kv_capacity_note(diff), budget_note(plain_use, diff)] if n),
        ).in_full(),
        placement={role: placement(servers[role]) for role in ROLES},
        verdict=card_verdict(proto, cells, judged_resources(diff), files.protocol_path),
        hardware=proto.hardware,
        command_line=proto.command_line or None,
        trace=trace_card(files),
    )
    return card.keyed(
        *_CARD_KEYS, *(["command_line"] if proto.command_line else []), *(["trace"] if card.trace is not None else [])
    )  # absent without a trace: older cards alike


def _lossy(proto: Protocol) -> str | None:
    """Why the run's speculative config is lossy by design (diagnosis.lossy_rejection over protocol.json's
    speculative config and the speculative server's environment), None when it keeps the target's output."""
    engine = proto.engine or EngineRecord()
    env = {**(engine.env or {}), **(engine.speculative_env or {})}
    return lossy_rejection((proto.speculative_config or SpeculativeConfig()).to_json(), env)


def _diagnose(
    plain: list[RequestRecord],
    spec: list[RequestRecord],
    stats: Mapping[str, CellStats],
    greedy: bool,
    lossy: str | None = None,
) -> LosslessCheck | None:
    """The lossless check (greedy only; diagnosis.py) of a cell both servers measured (``lossy``: why the
    speculative config is lossy by design, its match rate then information), None otherwise; the cost
    decomposition is steptime.py's."""
    return lossless(*lossless_inputs(plain, spec), lossy=lossy) if greedy and len(stats) == 2 else None
