"""A cell's ``cells.jsonl`` entry from what its run produced (pure: no scrape, no clock, no file).

``cell.run_cell_on`` times the cell and scrapes ``/metrics``; this module turns its records, the two
snapshots and the client's own use into the entry: counter deltas read per ``engine`` (prom/deltas.py:
an engine whose counters went backwards is left out and named), K and the mean verified tokens per step
(measure/counterchecks.py), server histograms, the error budget and the fallback notes (docs/metrics.md,
"Counter deltas, resets and restart evidence", "Acceptance").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from loadgen.measure import counterfaults
from loadgen.measure.counterchecks import WindowTally, restart_evidence, server_counters, verification_depth
from loadgen.measure.faults import categories, over_budget
from loadgen.measure.metrics import ClientUse, MeasuredRequest
from loadgen.profile.cells import CellSpec, speculates
from loadgen.profile.pair import LOOKUP_METHODS, Pair
from loadgen.prom import deltas
from loadgen.prom.exposition import Snapshot
from loadgen.prom.scrape import server_histograms
from loadgen.records.cell import CellEntry
from loadgen.records.cellparts import GaugeSummary
from loadgen.records.request import RequestRecord


@dataclass(frozen=True)
class CellRun:
    """What one cell on one server produced: its records, when it started (ISO 8601 UTC) and how long it
    ran (s), the ``/metrics`` snapshots before and after (None when unavailable), the summarized gauges,
    the scrape errors, the requests sent after warmup, the measured window's tally, the client's own CPU
    use, whether the server died, and the signs that more than one server answers at its URL."""

    role: str
    cell: CellSpec
    records: list[RequestRecord]
    started_utc: str
    duration_s: float
    before: Snapshot | None
    after: Snapshot | None
    gauges: Mapping[str, GaugeSummary]
    metrics_errors: tuple[str, ...]
    sent: int
    window: WindowTally
    client: ClientUse
    died: bool
    replicas: tuple[str, ...] = ()  # signs of more than one server at the URL so far (measure/replicas.py)

    @property
    def counters(self) -> deltas.SpecDecodeCounters | None:
        """The spec-decode counter deltas over the cell from the engines whose counters held
        (``deltas.spec_decode_held``); None without both snapshots or the counters in both."""
        if self.before is None or self.after is None:
            return None
        return deltas.spec_decode_held(self.before, self.after)

    def measured(self) -> list[MeasuredRequest]:
        """The records as metrics.py reads them."""
        return [
            MeasuredRequest(r.scheduled_s, r.send_s, r.chunk_arrivals_s, r.chunk_tokens, r.error is not None)
            for r in self.records
        ]


def grammar_ended(cell: CellSpec) -> frozenset[str]:
    """The prompt ids of ``cell`` whose grammar ends their output (profile/structured.py): no length is asked."""
    return frozenset(p.prompt_id for p in (*cell.warmup, *cell.measured, *cell.cooldown) if p.constraint)


def length_mismatches(records: list[RequestRecord], free: frozenset[str] = frozenset()) -> list[RequestRecord]:
    """Requests that finished without their requested output length (those of ``free``, :func:`grammar_ended`,
    have none to return)."""
    return [
        r
        for r in records
        if r.error is None and r.output_tokens != r.requested_output_tokens and r.prompt_id not in free
    ]


def grammar_reason(pair: Pair, cell: CellSpec) -> str | None:
    """Why K is not held at every step in ``cell``: its workload is grammar-constrained (the grammar refuses the
    draft tokens it does not allow); None otherwise."""
    w = next((w for w in pair.workloads if w.name == cell.workload), None)
    return f"the workload is grammar-constrained ({w.constrained})" if w is not None and w.constrained else None


def _failure(
    records: list[RequestRecord], pair: Pair, died: bool, role: str, free: frozenset[str] = frozenset()
) -> str | None:
    errors = [r for r in records if r.error]
    if died:
        return (
            f"the {role} server died during this cell: {len(records) - len(errors)} of {len(records)} "
            "measured requests finished before"
        )
    mismatched = length_mismatches(records, free)
    if mismatched:
        m = mismatched[0]
        return (
            f"{len(mismatched)} of {len(records)} requests did not return their requested output length (e.g. "
            f"{m.prompt_id}: {m.output_tokens} of {m.requested_output_tokens} tokens); the comparison needs "
            "ignore_eos with min_tokens = max_tokens on a server that honours them"
        )
    if over_budget(len(errors), len(records), pair.stop.max_error_rate):
        kinds = ", ".join(f"{k}: {n}" for k, n in categories(r.error for r in errors).items())
        return (
            f"{len(errors)} of {len(records)} requests failed ({kinds}), over the error budget "
            f"max_error_rate = {pair.stop.max_error_rate:g}; first: {errors[0].error}"
        )
    return None


def cell_entry(run: CellRun, pair: Pair) -> CellEntry:
    """The cell's line of ``cells.jsonl`` (before the observers add theirs, run/cell.py)."""
    cell, records, b, after = run.cell, run.records, run.before, run.after
    counters = run.counters
    server = server_counters(b, after) if b is not None and after is not None else None
    finished = None if server is None else server.server_finished_requests  # None: unavailable, not 0
    errors = [r.error for r in records if r.error]
    metrics_error = "; ".join(dict.fromkeys(run.metrics_errors)) or None
    notes = [] if (busy := run.client.saturation_note()) is None else [busy]
    if flat_drafts(run) and pair.method in LOOKUP_METHODS:
        notes.append(f"{pair.method} proposed no draft in this cell (no n-gram of the text repeated)")
    if metrics_error:
        notes.append(f"server metrics unavailable for this cell ({run.role} server): {metrics_error}")
    built = CellEntry.of(
        {
            "role": run.role,
            "workload": cell.workload,
            "concurrency": cell.concurrency,
            "level": cell.level.label,
            "rate_rps": cell.level.rate_rps,
            "repetition": cell.repetition,
            "started_utc": run.started_utc,
            "duration_s": run.duration_s,
            "measured_prompt_ids": [p.prompt_id for p in cell.measured],
            "warmup_prompt_ids": [p.prompt_id for p in cell.warmup],
            "spec_decode": None
            if counters is None
            else asdict(counters)
            | {
                "accepted_per_position": list(counters.accepted_per_position),
                "engines": list(counters.engines),
                "reset_engines": list(counters.reset_engines),
            }
            | verification_depth(counters, pair.speculative, grammar_reason(pair, cell)).to_json(),
            "server_histograms": {}
            if b is None or after is None
            else {k: h.to_json() for k, h in server_histograms(b, after).items()},
            "gauges": {k: g.to_json() for k, g in run.gauges.items()},
            "server_finished_requests": finished,
            "client_sent_requests": run.sent,
            "foreign_traffic": finished is not None and finished > run.sent,
            **run.window.to_json(),
            **({} if server is None else server.to_json()),
            "errors": len(errors),
            "error_categories": categories(errors),
            "usage_mismatches": sum(1 for r in records if r.usage_mismatch),
            "output_length_mismatches": len(length_mismatches(records, grammar_ended(cell))),
            "metrics_error": metrics_error,
            "failure": _failure(records, pair, run.died, run.role, grammar_ended(cell)),
            "notes": notes,
            "client": {
                "cpu_s": run.client.cpu_s,
                "cpu_cores": run.client.cores,
                "send_lag_s": asdict(run.client.send_lag),
            },
        }
    )
    faults = counterfaults.bad_samples(b, after) if b is not None and after is not None else []
    if run.replicas:  # scrapes of different replicas: no restart (measure/replicas.py)
        return built.with_fields(restart_evidence=[], replica_evidence=list(run.replicas), counter_faults=faults)
    return built.with_fields(restart_evidence=restart_evidence(built), counter_faults=faults)


def flat_drafts(run: CellRun) -> bool:
    """A speculative cell with finished requests whose draft counters did not move."""
    counters = run.counters
    ok = sum(1 for r in run.records if not r.error)
    return speculates(run.role) and counters is not None and counters.num_drafts == 0 and ok > 0
