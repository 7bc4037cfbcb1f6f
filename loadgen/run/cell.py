"""One cell on one server: scrape ``/metrics``, replay the cell's prompts, scrape again, append the
cell's entry to ``cells.jsonl``, then write the optional files (``/metrics`` snapshots, gauges).

Nothing measured is lost: every request is appended to ``requests.jsonl`` as it finishes, and a cell that
ends badly still gets its entry (with ``failure``) before the run stops. ``/metrics`` that times out,
answers an error or garbage marks the cell (``metrics_error``) and the run goes on without its server
counters. Fallback rule (docs/metrics.md, "Acceptance"): a speculative cell whose draft counters did not move stops
the run (FallbackDetected, exit 1) where the declared speculative config has speculation on at the cell's
level (profile/pair.speculation_on_at: ``disable_by_batch_size``, a ``num_speculative_tokens_per_batch_size``
range with K = 0), except for draft-free lookup methods that may legitimately find nothing to propose
(``pair.LOOKUP_METHODS``; the card then says it was no speculative comparison). At a level the config
switches off, flat counters are the config working as declared: the cell is measured like any other.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from loadgen.errors import FallbackDetected, RunFailed
from loadgen.measure.blockstate import block_state
from loadgen.measure.counterchecks import WindowTally
from loadgen.measure.counterfaults import untrusted
from loadgen.measure.metrics import ClientUse, cell_stats
from loadgen.measure.replicas import answered_by, replica_signs, sighting
from loadgen.profile.cells import CellSpec, speculates
from loadgen.profile.pair import LOOKUP_METHODS, Level, Pair, k_at
from loadgen.profile.timeouts import read_timeout_s
from loadgen.prom import exposition as prom
from loadgen.prom.scrape import sample_gauges, scrape, summarize_gauges
from loadgen.records.blockstate import BlockState
from loadgen.records.cell import CellEntry
from loadgen.records.cellparts import GaugeSample
from loadgen.records.request import RequestRecord
from loadgen.records.usage import HostSample
from loadgen.run.cellentry import CellRun, cell_entry, flat_drafts, grammar_ended, length_mismatches
from loadgen.run.observe import Observers
from loadgen.serve import hoststate, servers
from loadgen.serve.attached import where_to_look
from loadgen.store.rundir import JsonlAppender, write_text
from loadgen.stream.loadloop import run_cell
from loadgen.util import strictjson


@dataclass
class RunContext:
    """What every step of one run writes to."""

    pair: Pair
    run_dir: Path
    requests: JsonlAppender
    cells_log: JsonlAppender
    log: Callable[[str], None]
    observers: Observers
    api_key: str | None = None


def _try_scrape(
    url: str, path: Path, headers: dict[str, str], later: list[tuple[Path, str]]
) -> tuple[prom.Snapshot | None, str | None]:
    try:
        text, snap = scrape(url, headers=headers)
    except RunFailed as exc:
        return None, str(exc)
    later.append((path, text))  # written after the cell's entry (optional files come second)
    return snap, None


def run_cell_on(run: RunContext, role: str, server: servers.Server, cell: CellSpec) -> None:
    """Run ``cell`` on ``server`` and append its entry. Raises RunFailed when the server died or the
    cell broke its error budget with ``on_error_budget = "stop"``, FallbackDetected when the draft
    counters did not move where the declared config speculates (:func:`unplanned_fallback`)."""
    pair, run_dir, observers = run.pair, run.run_dir, run.observers
    stem = cell.stem(role)
    before: dict[str, prom.Snapshot | None] = {}
    metrics_errors: list[str] = []
    gauges: list[GaugeSample] = []
    later: list[tuple[Path, str]] = []

    host: list[HostSample] = []

    def scrape_before() -> None:
        host.append(hoststate.sample())
        before["snap"], err = _try_scrape(
            server.metrics_base, run_dir / "metrics" / f"{stem}__before.prom", server.spec.headers, later
        )
        metrics_errors.extend([err] if err else [])
        server.sightings += [sighting(before["snap"])] if before["snap"] is not None else []
        observers.measured_window_start(httpx.URL(server.metrics_base).netloc.decode())
        observers.cell_started(f"[{role}] {cell.workload} {cell.level.label}", len(cell.measured))

    async def sampler(client: httpx.AsyncClient, clock: Callable[[], float]) -> None:
        await sample_gauges(client, server.metrics_base, gauges.append, clock)

    sent: Counter[str] = Counter()
    window = WindowTally()
    answered: list[RequestRecord] = []  # every phase's: whose answers they were (measure/replicas.py)

    def on_record(record: RequestRecord) -> None:
        run.requests.append(record.to_json())
        answered.append(record)
        sent[record.phase] += 1
        window.add(record)
        observers.request_finished(record)

    plan = cell.on(role, pair.stop.duration_s, read_timeout_s(pair.stop, pair.slo))
    started, t0, cpu0 = datetime.now(UTC).isoformat(), time.monotonic(), time.process_time()
    records = run_cell(
        server.base_url,
        server.spec.served_model,
        pair.sampling,
        plan,
        on_record,
        scrape_before,
        sampler,
        server.spec.api_key,
    )
    duration = time.monotonic() - t0
    client = ClientUse.of(time.process_time() - cpu0, duration, [r.send_s - r.scheduled_s for r in records])
    died = not server.alive() or (any(r.error for r in records) and server.gone())
    server.sightings += answered_by(answered)
    after, err = (
        (None, None)
        if died
        else _try_scrape(server.metrics_base, run_dir / "metrics" / f"{stem}__after.prom", server.spec.headers, later)
    )
    metrics_errors.extend([err] if err else [])
    server.sightings += [sighting(snap) for snap in (after,) if snap is not None]
    host.append(hoststate.sample())
    done = CellRun(
        role,
        cell,
        records,
        started,
        duration,
        before.get("snap"),
        after,
        summarize_gauges(gauges),
        tuple(metrics_errors),
        sent["measured"] + sent["cooldown"],
        window,
        client,
        died,
        tuple(replica_signs(server.sightings)),
    )
    _record(run, server, done, host, gauges, later, stem)


def _record(
    run: RunContext,
    server: servers.Server,
    done: CellRun,
    host: list[HostSample],
    gauges: list[GaugeSample],
    later: list[tuple[Path, str]],
    stem: str,
) -> None:
    """Append the finished cell's entry (with its block state) to cells.jsonl, write its deferred files
    (``later``: the /metrics scrapes, the gauges) and report it."""
    entry, cell = cell_entry(done, run.pair), done.cell
    usable = None if entry.restart_evidence else done.counters  # a restart leaves no measurable acceptance
    stats = cell_stats(done.measured(), usable)
    push_error, promql = run.observers.cell_finished(
        done.role, cell.workload, cell.concurrency, cell.level.label, stats, usable
    )
    line = entry.with_fields(
        **({} if push_error is None else {"push_error": push_error}),
        **({} if promql is None else {"promql": promql}),
    )
    run.cells_log.append(line.with_fields(state=_state(host, done, entry, server, run.pair)).to_json())
    lines = "".join(strictjson.dumps_strict(g.to_json()) + "\n" for g in gauges)
    later.append((run.run_dir / "metrics" / f"{stem}__gauges.jsonl", lines))
    for path, text in later:
        write_text(path, text)
    _report(run, server, done, entry)


def _state(host: list[HostSample], done: CellRun, entry: CellEntry, server: servers.Server, pair: Pair) -> BlockState:
    """The block's state (measure/blockstate.py) from the host samples at its measured window's start and end."""
    first, last = (host[0], host[-1]) if host else (None, None)
    k = k_at(pair.speculative, done.cell.concurrency) if speculates(done.role) else 0  # K as declared there
    ceiling = server.effective.cudagraph_ceiling if server.effective else None
    return block_state(
        (first, last),
        (done.before, done.after),
        entry,
        done.cell.concurrency * (1 + k),
        ceiling,
        hoststate.steal_share(first, last),
    )


def _report(run: RunContext, server: servers.Server, done: CellRun, entry: CellEntry) -> None:
    """Log the finished cell and stop the run when it must (see run_cell_on)."""
    role, cell, records, pair = done.role, done.cell, done.records, run.pair
    ok, counters, failure = len(records) - entry.errors, done.counters, entry.failure
    run.log(
        f"[{role}] {cell.workload} {cell.level.label} block {cell.repetition}: {ok}/{len(records)} ok in "
        f"{done.duration_s:.1f} s"
        + (
            ""
            if counters is None
            else f"; server counters cannot be trusted: {faults[0]}"
            if (faults := untrusted(entry))
            else f", drafts {counters.num_drafts:.0f}, accepted "
            f"{counters.num_accepted_tokens:.0f}/{counters.num_draft_tokens:.0f}"
        )
        + (f"; FAILED: {failure}" if failure else "")
    )
    if done.died:
        raise RunFailed(
            f"the {role} server died during cell {cell.workload} {cell.level.label}; the requests "
            f"that finished are kept in {run.run_dir / 'requests.jsonl'}; see {where_to_look(server.spec)}"
        )
    # a server that does not honour min_tokens = max_tokens breaks the comparison's premise: it stops the run
    # like errors over the budget (with ignore_eos off, shorter outputs are the server's right)
    broken = entry.errors or (pair.sampling.ignore_eos and length_mismatches(records, grammar_ended(cell)))
    if failure and broken and pair.stop.on_error_budget == "stop":
        raise RunFailed(
            f"cell {cell.workload} {cell.level.label} on the {role} server: {failure}; set "
            '[stop].max_error_rate / on_error_budget = "continue" to go on'
        )
    if unplanned_fallback(done, pair):
        raise FallbackDetected(
            f"the speculative server's draft counters did not move during cell "
            f"{cell.workload} {cell.level.label}: no speculation happened, although the declared "
            f"config speculates at this level (K = {k_at(pair.speculative, cell.concurrency)})"
        )


def warm_up(run: RunContext, role: str, server: servers.Server, cells: Sequence[CellSpec]) -> None:
    """The unmeasured warm-up pass of ``[design].warmup_pass`` (records/design.py): every prompt ``cells`` send
    (warmup, measured and cooldown, once each, per workload), closed loop at the lowest closed-loop level of
    ``cells`` (1 when all are open loop), on the cache salt of a block -1, its records counted, not kept; one log
    line per workload. Nothing raises for failed requests (they are counted)."""
    ok: Counter[tuple[str, bool]] = Counter()

    def count(record: RequestRecord) -> None:
        ok[record.workload, record.ok] += 1

    for workload in dict.fromkeys(c.workload for c in cells):
        mine = [c for c in cells if c.workload == workload]
        prompts = tuple({p.prompt_id: p for c in mine for p in (*c.warmup, *c.measured, *c.cooldown)}.values())
        level = Level(min((c.concurrency for c in mine if c.level.rate_rps is None), default=1))
        plan = CellSpec(workload, mine[0].endpoint, level, -1, warmup=prompts).on(role)
        t0 = time.monotonic()
        run_cell(server.base_url, server.spec.served_model, run.pair.sampling, plan, count, api_key=server.spec.api_key)
        run.log(
            f"[{role}] warm-up pass ({workload}): {ok[workload, True]}/{len(prompts)} unmeasured requests ok in "
            f"{time.monotonic() - t0:.1f} s"
        )


def unplanned_fallback(done: CellRun, pair: Pair) -> bool:
    """A speculative cell whose draft counters did not move (cellentry.flat_drafts) at a level where the
    declared config has speculation on (Pair.speculates_at), for a method that always proposes (not one of
    ``LOOKUP_METHODS``). A level the config switches off is no fallback, nor are counters read from replicas
    (their scrapes may read a replica that served nothing)."""
    flat = flat_drafts(done) and not done.replicas
    return flat and pair.method not in LOOKUP_METHODS and pair.speculates_at(done.cell.level)
