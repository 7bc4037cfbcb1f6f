"""The compare flow (docs/architecture.md): check the pair, plan the blocks of every cell, then measure the
arms (plain, the placebo, speculative) block by block in a balanced order (run/design.py) on their servers
(co-resident, or one at a time: run/arms.py), size the cells to a declared precision (run/sizing.py), and
write the card.

Prompts for every block are generated up front and saved, so every arm gets the identical list. Requests,
cells, /metrics snapshots and server records are written as they happen; the card is written in any case
(marked incomplete when the run did not finish), so nothing measured is lost.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loadgen.check.preflight import run_pair_check
from loadgen.errors import LoadgenError, ProfileError
from loadgen.measure.decision import Bar
from loadgen.profile.cells import PLACEBO, PLAIN, ROLES, CellSpec
from loadgen.profile.overrides import Overrides, pair_text
from loadgen.profile.pair import Pair
from loadgen.records.protocol import Protocol
from loadgen.records.protoparts import RunDesign
from loadgen.records.runparts import SIZING_DECIDED as DECIDED
from loadgen.records.runparts import DesignRecord, StatusFile
from loadgen.report.cardwrite import finish_card
from loadgen.run import rearm
from loadgen.run.arms import Arm, build_arms, co_resident, describe, metrics_record
from loadgen.run.closing import close_run, open_status
from loadgen.run.design import Slot, balanced_order, replay_order, server_starts
from loadgen.run.execute import Session, check_attached
from loadgen.run.observe import ObserveOptions, Observers
from loadgen.run.plan import plan_cells, probe_host, protocol, replay_protocol, unique_prompts
from loadgen.run.sizing import grow, round_s
from loadgen.run.slotcount import SlotCount
from loadgen.serve import attached, resources
from loadgen.store import resumefiles
from loadgen.store.files import read_protocol, write_checks, write_prompts, write_protocol
from loadgen.store.refused import REFUSED_NAME, clear_refusal, mark_refused
from loadgen.store.rundir import JsonlAppender, copy_file, new_run_dir, write_text
from loadgen.store.runlock import locked
from loadgen.util import crashlog

Log = Callable[[str], None]


@dataclass(frozen=True)
class Measurement:
    """What one run folder measures: its arms (base order), whether their servers are co-resident and why,
    the planned blocks and the order of the slots to run, and the precision to size cells to (the primary
    metric, ``[criteria].ci_half_width``; None: no sizing) with the wall-clock deadline for it, and whether the
    co-resident servers start at once (no GPU visible: CPU servers, run/bench.py ``Bench.open_together``)."""

    arms: list[Arm]
    co_resident: bool
    why: str
    planned: list[CellSpec]
    slots: list[Slot]
    metric: str = "tpot_p50"
    bar: Bar | None = None
    deadline: float | None = None
    start_together: bool = False
    done_before: int = 0  # slots of the order an earlier process measured (--resume): the counter's start


def plan_measurement(
    pair: Pair,
    speculative: Mapping[str, Pair],
    attach: Mapping[str, str],
    cells: list[CellSpec],
    order: list[list[Any]] | None = None,
    metrics: Mapping[str, str] | None = None,
) -> Measurement:
    """The arms, co-residency and slot order of a run of ``cells`` (run/arms.py, run/design.py); ``order``:
    a recorded ``design.order`` to repeat exactly; ``metrics``: role -> the URL its ``/metrics`` is read at.
    Raises ProfileError when the recorded order names a block the cells do not hold."""
    arms = build_arms(pair, speculative, attach, metrics)
    gpus = len(resources.hardware().gpus)
    co, why = co_resident(arms, gpus, resources.host_available_bytes(), resources.gpu_free_share())
    if order is not None:
        try:
            slots = replay_order(order, cells)
        except KeyError as exc:
            raise ProfileError(
                f"protocol.json's design.order names a block not in its cells ({exc}); the run folder was modified"
            ) from None
        named = {s.arm for s in slots}
        arms = [a for a in arms if a.name in named]
    else:
        first = [c for c in cells if c.repetition < pair.design.blocks]
        slots = balanced_order(first, [a.name for a in arms], co)
    crit = pair.criteria
    metric = crit.primary[0] if crit is not None else "tpot_p50"
    bar = Bar.of(crit, metric) if crit is not None and crit.ci_half_width is not None else None
    # CPU servers reserve a declared KV-cache space: their start-ups may overlap (run/bench.py open_together)
    return Measurement(arms, co, why, cells, slots, metric, bar, start_together=co and gpus == 0)


def design_record(m: Measurement) -> DesignRecord:
    """protocol.json's ``design`` additions: the arms, co-residency and its reason, the server starts the
    order makes (run/design.py), and the order itself."""
    by_name = {a.name: a for a in m.arms}
    attached_keys = frozenset(a.server for a in m.arms if a.attach_url is not None)
    starts = server_starts(m.slots, lambda arm: by_name[arm].server, m.co_resident, attached_keys)
    placebo = next((("server" if a.server == PLACEBO else "blocks") for a in m.arms if a.name == PLACEBO), "off")
    order = tuple(tuple(s.to_json()) for s in m.slots)
    return DesignRecord(describe(m.arms), m.co_resident, m.why, placebo, starts, order)


def run_compare(
    pair: Pair,
    runs_root: Path,
    log: Log = print,
    attach: dict[str, str] | None = None,
    cells: list[CellSpec] | tuple[list[CellSpec], list[list[Any]] | None] | None = None,
    allow_unpinned: bool = False,
    observe: ObserveOptions | None = None,
    api_key: str | None = None,
) -> Path:
    """Run the whole comparison of ``pair``; returns the run folder. ``cells``: the cells to measure, or an
    earlier run's cells and recorded order (``--protocol``, plan.replay_protocol), repeated exactly. Each
    server's ``/metrics`` is read where ``[servers.<role>].metrics_url`` says (``--metrics-<role>``:
    profile/pair.py ``Pair.with_metrics_urls``), else at its API URL.

    Raises PairCheckError (exit 2) before anything starts, RunFailed/FallbackDetected (exit 1) midway;
    in every case after the run folder exists, the card is written (``complete: false`` if cut short).
    """
    t0 = time.monotonic()  # the pair check's start and end lines (README.md, "The two commands")
    log("pair check: started")
    engine_version, findings = run_pair_check(
        pair, allow_unpinned, log, attached=attached_version(attach, api_key), attached_roles=attach or {}
    )
    log(f"pair check: done in {time.monotonic() - t0:.1f} s")
    cells, order = cells if isinstance(cells, tuple) else (cells, None)
    cells = cells if cells is not None else plan_cells(pair, log)
    m = plan_measurement(pair, {"speculative": pair}, attach or {}, cells, order)
    run_dir = new_run_dir(runs_root, pair.name)
    log(f"run folder: {run_dir}")
    with locked(run_dir, log):
        prompts = unique_prompts(cells)
        write_prompts(run_dir, (p.to_json() for p in prompts))
        write_as_run(pair.path, run_dir / "pair.toml", pair.overrides)
        proto = protocol(pair, cells, prompts, probe_host()).with_fields(
            engine_version=engine_version,
            attach=attached.attach_record(attach or {}),
            **({"metrics_urls": urls} if (urls := metrics_record(m.arms)) else {}),
        )
        proto = proto.with_fields(design=(proto.design or RunDesign()).with_run(design_record(m)))
        write_protocol(run_dir, proto)
        write_checks(run_dir, [f.__dict__ for f in findings])
        log(design_line(m))
        execute_run(run_dir, m, log, observe, api_key, pair.name)
    return run_dir


def write_as_run(src: Path, dest: Path, overrides: Overrides | None) -> None:
    """Write the pair (or sweep) file ``src`` as run to ``dest`` (a run folder's pair.toml, a sweep folder's
    sweep.toml): with the command line's values written in when it gave any (profile/overrides.py), so that
    ``--protocol`` reads them back as the file's own; else a copy."""
    if overrides:
        write_text(dest, pair_text(src, overrides))
    else:
        copy_file(src, dest)


def attached_version(attach: Mapping[str, str] | None, api_key: str | None) -> str | None:
    """The engine version the first attached server reports on ``/version`` (serve/attached.py), None when
    nothing is attached or none answers: the pair is then checked against the installed engine."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return next((v for url in (attach or {}).values() if (v := attached.engine_version(url, headers))), None)


def design_line(m: Measurement) -> str:
    blocks = max((s.cell.repetition for s in m.slots), default=-1) + 1
    arms = ", ".join(a.name + ("" if a.server in (a.name, PLAIN) else f" (on {a.server})") for a in m.arms)
    where = "co-resident" if m.co_resident else "one server at a time"
    return f"design: {blocks} blocks per arm and cell, arms {arms}; servers {where} ({m.why}); {len(m.slots)} slots" + (
        f"; cells sized until decided on {m.metric} (±{m.bar.precision:g}, min_speedup {m.bar.min_speedup:g})"
        if m.bar
        else ""
    )


def resume_compare(
    run_dir: Path,
    log: Log = print,
    attach: dict[str, str] | None = None,
    observe: ObserveOptions | None = None,
    api_key: str | None = None,
    metrics: dict[str, str] | None = None,
) -> Path:
    """Complete an interrupted run in place with its own protocol: slots with an entry in cells.jsonl and
    no failure are kept; the others run again in the recorded order (their partial requests move to
    ``requests.partial.jsonl``, so nothing is deleted). A server with nothing left is not started. A run of
    older code (no recorded order) finishes in its own order: every plain cell, then every speculative one.

    Raises ProfileError when ``run_dir`` cannot be replayed (see plan.replay_protocol), FolderBusy (exit 2)
    before anything is read or rewritten when another process holds ``run_dir`` (store/runlock.py).
    """
    with locked(run_dir, log):
        return _resume_locked(run_dir, log, (attach or {}, metrics or {}), observe, api_key)


def _resume_locked(
    run_dir: Path,
    log: Log,
    given: tuple[dict[str, str], dict[str, str]],
    observe: ObserveOptions | None,
    api_key: str | None,
) -> Path:
    pair, cells, order = replay_protocol(run_dir / "protocol.json")
    if order is None:
        order = [[role, c.workload, c.level.label, c.repetition] for role in ROLES for c in cells]
    proto = read_protocol(run_dir / "protocol.json")
    done, moved = resumefiles.keep_finished(run_dir)
    m = resumed_measurement(pair, {"speculative": pair}, proto, given, (cells, order), done)
    log(
        f"resuming {run_dir}: {len(m.slots)} of {len(order)} slots left ({moved} partial requests moved to "
        "requests.partial.jsonl)"
    )
    execute_run(run_dir, m, log, observe, api_key, pair.name)
    return run_dir


def resumed_measurement(
    pair: Pair,
    speculative: Mapping[str, Pair],
    proto: Protocol,
    given: Mapping[str, str] | tuple[Mapping[str, str], Mapping[str, str]],
    planned: tuple[list[CellSpec], list[list[Any]]],
    done: set[tuple[str, str, str, int]],
) -> Measurement:
    """The measurement that finishes a run of ``proto`` (its ``planned`` cells and order): the slots not
    ``done``, on the arms and servers protocol.json records (run/rearm.py: attached servers attached again at
    the URLs ``given`` now or recorded, never launched; ``given`` the attach URLs, or those and the metrics
    URLs, each by role, a metrics URL not given again read from protocol.json's ``metrics_urls``) and its
    recorded co-residency. Raises BadInput as run/rearm.py and serve/attached.py ``resume_urls`` do."""
    given, metrics = given if isinstance(given, tuple) else (given, {})
    records = rearm.recorded_arms(proto.design)
    left = {str(o[0]) for o in planned[1] if (o[0], o[1], o[2], o[3]) not in done}
    # a placebo on blocks measures the plain server: its URL is the plain one's (older protocols: no records)
    servers = sorted({records[a].server if a in records else PLAIN if a == PLACEBO else a for a in left})
    recorded = proto.metrics_urls or {}
    metrics = attached.resume_urls(recorded, metrics, [r for r in recorded if r not in metrics], "metrics")
    urls = attached.resume_urls(proto.attach or {}, given, servers)
    m = plan_measurement(pair, speculative, urls, *planned, metrics)
    todo = [s for s in m.slots if (s.arm, *s.cell.key, s.cell.repetition) not in done]
    arms = rearm.resume_arms(m.arms, records, given, left)
    co = None if proto.design is None else proto.design.co_resident
    co = co if isinstance(co, bool) and records else m.co_resident
    together = m.start_together and co
    return replace(
        m, arms=arms, slots=todo, co_resident=co, start_together=together, done_before=len(m.slots) - len(todo)
    )


def measure_and_size(session: Session, m: Measurement) -> str | None:
    """Run ``m``'s slots and, with a bar to decide against, grow the undecided cells (run/sizing.py): co-resident,
    each cell right after its own initial blocks (the time still owed to the cells after it kept in reserve);
    one server at a time, every cell in rounds after the initial blocks. Returns why sizing stopped (None:
    no sizing); cells that stopped for another reason than being decided are named."""
    if m.bar is None:
        session.run(m.slots)
        return None
    names = [a.name for a in m.arms]
    if not m.co_resident:
        session.run(m.slots)
        return grow(session, m.planned, names, m.metric, m.bar, m.deadline)
    groups = [list(g) for _, g in itertools.groupby(m.slots, key=lambda s: s.cell.key)]
    ends: dict[str, list[str]] = {}
    for i, group in enumerate(groups):
        session.run(group)
        owed = round_s(session, [s for g in groups[i + 1 :] for s in g])
        why = grow(session, m.planned, names, m.metric, m.bar, m.deadline, {group[0].cell.key}, owed)
        ends.setdefault(why, []).append(f"{group[0].cell.workload} {group[0].cell.level.label}")
    if list(ends) == [DECIDED]:
        return DECIDED
    return "; ".join(
        f"decided: {', '.join(cells)}" if why == DECIDED else f"{why} ({', '.join(cells)})"
        for why, cells in ends.items()
    )


def execute_run(
    run_dir: Path,
    m: Measurement,
    log: Log,
    observe: ObserveOptions | None,
    api_key: str | None,
    name: str,
    write_card: Callable[[Path, Log], Any] | None = None,
) -> None:
    """Run ``m``'s slots (then size its cells, run/sizing.py) into ``run_dir``; always write the status and
    the card (``write_card``, default :func:`finish_card`). An exception loadgen did not expect ends the run as a
    RunFailed naming it and the folder, its traceback in the folder (util/crashlog.py ``unexpected``)."""
    try:  # before anything is written: a folder that never measured is marked refused (store/refused.py)
        check_attached({a.name: a for a in m.arms}, m.slots, run_dir, log, api_key)
    except LoadgenError as exc:
        if mark_refused(run_dir, exc) is not None:
            log(f"nothing measured; {run_dir} is marked refused ({REFUSED_NAME})")
        raise
    status = StatusFile(complete=False, failure=None)
    open_status(run_dir)
    clear_refusal(run_dir)
    requests, cells_log = JsonlAppender(run_dir / "requests.jsonl"), JsonlAppender(run_dir / "cells.jsonl")
    observers = Observers(name, observe or ObserveOptions(progress=False), log)
    arms = {a.name: a for a in m.arms}
    session = Session(run_dir, arms, m.co_resident, log, requests, cells_log, observers, api_key, m.start_together)
    session.count = count = SlotCount(run_dir, m.slots, m.done_before, m.bar is not None, log)
    error: BaseException | None = None
    try:
        try:
            session.hold_ports(m.slots)
            why = measure_and_size(session, m)
            if why is not None:
                count.sizing_ended()
                log(f"sizing: {why}")
                status = replace(status, sizing_end=why)
        finally:
            session.close()
        status = replace(status, complete=True)
    except KeyboardInterrupt as exc:
        status, error = replace(status, failure="interrupted (Ctrl-C or SIGTERM)"), exc
    except LoadgenError as exc:
        status, error = replace(status, failure=str(exc)), exc
    except Exception as exc:  # a defect: the folder keeps what was measured, marked failed (util/crashlog.py)
        error = crashlog.unexpected(exc, run_dir)
        status = replace(status, failure=str(error))
    finally:
        observers.close()
        requests.close()
        cells_log.close()
        ending = close_run(run_dir, status, write_card or finish_card, log, error, requests.lost)
    if ending is not None:
        raise ending from None
