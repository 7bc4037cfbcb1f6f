"""The compare flow (DESIGN.md steps 2-7): check, launch plain, replay, stop, launch speculative,
replay, stop, write the card.

Prompts for every cell are generated up front and saved, so both servers get the identical list.
Requests, cells, /metrics snapshots and server records are written as they happen; the card is written
in any case (marked incomplete when the run did not finish), so nothing measured is lost.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from loadgen import prom, resources, servers
from loadgen.card import render_markdown
from loadgen.client import RequestRecord
from loadgen.engine import detect_engine_version
from loadgen.errors import FallbackDetected, LoadgenError, PairCheckError, RunFailed
from loadgen.metrics import MeasuredRequest, cell_stats
from loadgen.observe import ObserveOptions, Observers
from loadgen.pair import Pair, RoleServer
from loadgen.plan import CellSpec, plan_cells, protocol
from loadgen.report import build_card
from loadgen.rundir import JsonlAppender, copy_pair_file, load_records, new_run_dir, write_json
from loadgen.runner import CellPlan, run_cell
from loadgen.scrape import sample_gauges, scrape, server_histograms, summarize_gauges
from loadgen.validate import check_pair

ROLES = ("plain", "speculative")
#: Draft-free methods that propose only where the text repeats itself: no draft in a cell is possible.
LOOKUP_METHODS = frozenset({"ngram", "ngram_gpu", "suffix"})
Log = Callable[[str], None]


def served_name(pair: Pair) -> str:
    """The model name both servers serve (the same on both sides, so request bodies are identical)."""
    return Path(pair.target.model).name or pair.target.model


def launch_spec(pair: Pair, role: str, run_dir: Path, attach_url: str | None = None) -> servers.LaunchSpec:
    """The launch of ``role`` ("plain" or "speculative"): ``[engine]`` plus ``[servers.<role>]``; the
    speculative server defaults to port + 1. With ``attach_url`` (or ``[servers.<role>].url``) the spec
    describes a running server to attach to."""
    extra = pair.servers.get(role, RoleServer())
    port = extra.port or pair.engine.port + (1 if role == "speculative" else 0)
    argv = servers.build_argv(
        pair.engine.command, pair.target.model, served_name(pair), pair.engine.host, port,
        pair.engine.seed, [*pair.engine.args, *extra.args], pair.speculative if role == "speculative" else None,
        pair.target.revision,
    )
    return servers.LaunchSpec(role, argv, {**pair.engine.env, **extra.env}, pair.engine.host, port,
                              served_name(pair), pair.engine.startup_timeout_s, run_dir / "servers" / f"{role}.log",
                              attach_url or extra.url)


def prove_mode(role: str, snap: prom.Snapshot, k: int) -> dict[str, Any]:
    """Check the server runs the mode it was launched for (DESIGN.md step 4).

    Raises FallbackDetected: spec-decode series on the plain server, none on the speculative one, or a
    number of ``position`` labels different from the declared K.
    """
    has_spec = prom.has_spec_decode(snap)
    positions = prom.spec_decode_positions(snap)
    if role == "plain" and has_spec:
        raise FallbackDetected("the plain server exposes vllm:spec_decode_* metrics, so it runs speculative "
                               "decoding; check [engine].args and the target (a speculators checkpoint "
                               "enables speculation by itself)")
    if role == "speculative" and not has_spec:
        raise FallbackDetected("the speculative server exposes no vllm:spec_decode_* metrics: it runs without "
                               "speculation (unplanned fallback); check its log for the speculative_config")
    if role == "speculative" and positions != k:
        raise FallbackDetected(f"the speculative server runs K={positions} (position labels on /metrics) but "
                               f"the pair declares num_speculative_tokens={k}")
    return {"spec_decode_metrics": has_spec, "spec_positions": positions,
            "metric_families": sorted(snap.types)}


def _save_server_record(run_dir: Path, server: servers.Server, snap: prom.Snapshot,
                        proof: dict[str, Any]) -> dict[str, Any]:
    role = server.spec.role
    write_json(run_dir / "servers" / f"{role}-minimal.json",
               {"request": server.minimal_request, "response": server.minimal_response})
    effective = {**server.effective_config(), **proof, "ready_s": server.ready_s,
                 "cache_config_info": prom.cache_config_info(snap)}
    write_json(run_dir / "servers" / f"{role}-effective.json", effective)
    return effective


def _resources(server: servers.Server, effective: dict[str, Any]) -> dict[str, Any]:
    pid = server.process.pid if server.process is not None else None
    url = httpx.URL(server.base_url)
    if pid is None and url.host in ("127.0.0.1", "localhost", "::1") and url.port is not None:
        pid = resources.pid_listening_on(url.port)  # an attached server on this machine
    return resources.usage(pid, effective["cache_config_info"], effective.get("kv_cache_tokens_log"))


@dataclass
class _Run:
    """What every step of one run writes to."""

    pair: Pair
    run_dir: Path
    requests: JsonlAppender
    cells_log: JsonlAppender
    log: Log
    observers: Observers


def _run_role(run: _Run, role: str, cells: list[CellSpec], attach_url: str | None) -> None:
    pair, run_dir, log = run.pair, run.run_dir, run.log
    spec = launch_spec(pair, role, run_dir, attach_url)
    write_json(run_dir / "servers" / f"{role}-launch.json",
               {"argv": None if spec.attach_url else spec.argv, "env": spec.env, "base_url": spec.base_url,
                "attached": spec.attach_url is not None})
    log(f"[{role}] attaching to {spec.base_url}" if spec.attach_url
        else f"[{role}] starting: {' '.join(spec.argv)}")

    def on_stop(report: dict[str, Any]) -> None:
        write_json(run_dir / "servers" / f"{role}-teardown.json", report)
        log(f"[{role}] stopped" + (f"; SURVIVORS {report['survivors']}" if report.get("survivors") else ""))

    with servers.running(spec, on_stop) as server:
        log(f"[{role}] ready after {server.ready_s:.0f} s at {server.base_url}")
        text, snap = scrape(server.base_url)
        (run_dir / "metrics" / f"{role}__startup.prom").write_text(text)
        effective = _save_server_record(run_dir, server, snap, prove_mode(role, snap, pair.num_speculative_tokens))
        usage = {"ready": _resources(server, effective)}
        write_json(run_dir / "servers" / f"{role}-resources.json", usage)
        for cell in cells:
            _run_cell(run, role, server, cell)
        usage["after_load"] = _resources(server, effective)
        write_json(run_dir / "servers" / f"{role}-resources.json", usage)


def _run_cell(run: _Run, role: str, server: servers.Server, cell: CellSpec) -> None:
    pair, run_dir, log, observers = run.pair, run.run_dir, run.log, run.observers
    stem = cell.stem(role)
    before: dict[str, prom.Snapshot] = {}
    gauges: list[dict[str, Any]] = []

    def scrape_before() -> None:
        text, before["snap"] = scrape(server.base_url)
        (run_dir / "metrics" / f"{stem}__before.prom").write_text(text)
        observers.measured_window_start(httpx.URL(server.base_url).netloc.decode())
        observers.cell_started(f"[{role}] {cell.workload} {cell.level.label}", len(cell.measured))

    async def sampler(client: httpx.AsyncClient, clock: Callable[[], float]) -> None:
        await sample_gauges(client, server.base_url, gauges.append, clock)

    plan = CellPlan(role, cell.workload, cell.endpoint, cell.concurrency, cell.warmup, cell.measured,
                    cell.cooldown, cell.arrivals_s, pair.stop.duration_s, cell.level.label, cell.repetition)
    started = datetime.now(UTC).isoformat()
    t0 = time.monotonic()
    sent_by_phase: Counter[str] = Counter()

    def on_record(record: RequestRecord) -> None:
        run.requests.append(record.to_json())
        sent_by_phase[record.phase] += 1
        observers.request_finished(record)

    records = run_cell(server.base_url, server.spec.served_model, pair.sampling, plan, on_record,
                       scrape_before, sampler)
    duration = time.monotonic() - t0
    if not server.alive():
        raise RunFailed(f"the {role} server died during cell {cell.workload} {cell.level.label}; "
                        f"see {server.spec.log_path}")
    text, after = scrape(server.base_url)
    (run_dir / "metrics" / f"{stem}__after.prom").write_text(text)
    with (run_dir / "metrics" / f"{stem}__gauges.jsonl").open("w") as fh:
        fh.writelines(json.dumps(g) + "\n" for g in gauges)
    counters = prom.spec_decode_delta(before["snap"], after)
    finished = prom.counter_delta(before["snap"], after, "vllm:request_success_total").value
    errors = sum(1 for r in records if r.error)
    mismatched = _length_mismatches(records)
    sent = sent_by_phase["measured"] + sent_by_phase["cooldown"]
    failure = None
    if mismatched:
        failure = (f"{len(mismatched)} of {len(records)} requests did not return their requested output length "
                   f"(e.g. {mismatched[0].prompt_id}: {mismatched[0].output_tokens} of "
                   f"{mismatched[0].requested_output_tokens} tokens); the comparison needs ignore_eos with "
                   "min_tokens = max_tokens on a server that honours them")
    entry: dict[str, Any] = {
        "role": role, "workload": cell.workload, "concurrency": cell.concurrency, "level": cell.level.label,
        "rate_rps": cell.level.rate_rps, "repetition": cell.repetition,
        "started_utc": started, "duration_s": duration,
        "measured_prompt_ids": [p.prompt_id for p in cell.measured],
        "warmup_prompt_ids": [p.prompt_id for p in cell.warmup],
        "spec_decode": None if counters is None else {**asdict(counters),
                                                      "accepted_per_position": list(counters.accepted_per_position)},
        "server_histograms": server_histograms(before["snap"], after),
        "gauges": summarize_gauges(gauges),
        "server_finished_requests": finished,
        "client_sent_requests": sent,
        "foreign_traffic": finished > sent,
        "errors": errors,
        "usage_mismatches": sum(1 for r in records if r.usage_mismatch),
        "output_length_mismatches": len(mismatched),
        "failure": failure,
        "notes": [],
    }
    ok = len(records) - errors
    flat = role == "speculative" and counters is not None and counters.num_drafts == 0 and ok > 0
    if flat and pair.method in LOOKUP_METHODS:
        entry["notes"].append(f"{pair.method} proposed no draft in this cell (no n-gram of the text repeated)")
    measured = [MeasuredRequest(r.scheduled_s, r.send_s, r.chunk_arrivals_s, r.chunk_tokens, r.error is not None)
                for r in records]
    entry |= observers.cell_finished(role, cell.workload, cell.concurrency, cell.level.label,
                                     cell_stats(measured, counters), counters)
    run.cells_log.append(entry)
    log(f"[{role}] {cell.workload} {cell.level.label} rep {cell.repetition}: {ok}/{len(records)} ok in "
        f"{duration:.1f} s" + ("" if counters is None else f", drafts {counters.num_drafts:.0f}, accepted "
                              f"{counters.num_accepted_tokens:.0f}/{counters.num_draft_tokens:.0f}")
        + (f"; FAILED: {failure}" if failure else ""))
    if flat and pair.method not in LOOKUP_METHODS:
        raise FallbackDetected(f"the speculative server's draft counters did not move during cell "
                               f"{cell.workload} {cell.level.label}: no speculation happened")


def _length_mismatches(records: list[RequestRecord]) -> list[RequestRecord]:
    return [r for r in records if r.error is None and r.output_tokens != r.requested_output_tokens]


def run_compare(pair: Pair, runs_root: Path, log: Log = print, attach: dict[str, str] | None = None,
                cells: list[CellSpec] | None = None, allow_unpinned: bool = False,
                observe: ObserveOptions | None = None) -> Path:
    """Run the whole comparison of ``pair``; returns the run folder.

    Raises PairCheckError (exit 2) before anything starts, RunFailed/FallbackDetected (exit 1) midway;
    in every case after the run folder exists, the card is written (``complete: false`` if cut short).
    """
    engine_version = detect_engine_version(pair.engine.command, pair.engine.env)
    log(f"engine version (installed): {engine_version or 'unknown'}")
    findings = check_pair(pair, engine_version, allow_unpinned)
    for f in findings:
        log(f.line())
    blocking = [f for f in findings if f.blocking and not f.ok]
    if blocking:
        raise PairCheckError(f"pair check failed: {blocking[0].check}: {blocking[0].message}")
    run_dir = new_run_dir(runs_root, pair.name)
    log(f"run folder: {run_dir}")
    cells = cells if cells is not None else plan_cells(pair)
    all_prompts = [p for c in cells for p in (*c.warmup, *c.measured, *c.cooldown)]
    with (run_dir / "prompts.jsonl").open("w") as fh:
        for p in all_prompts:
            fh.write(json.dumps(p.to_json()) + "\n")
    copy_pair_file(pair.path, run_dir)
    write_json(run_dir / "protocol.json", protocol(pair, cells, all_prompts) | {"engine_version": engine_version})
    write_json(run_dir / "checks.json", [f.__dict__ for f in findings])
    status: dict[str, Any] = {"complete": False, "failure": None}
    requests, cells_log = JsonlAppender(run_dir / "requests.jsonl"), JsonlAppender(run_dir / "cells.jsonl")
    observers = Observers(pair.name, observe or ObserveOptions(progress=False), log)
    run = _Run(pair, run_dir, requests, cells_log, log, observers)
    try:
        for role in ROLES:
            _run_role(run, role, cells, (attach or {}).get(role))
        status["complete"] = True
    except KeyboardInterrupt:
        status["failure"] = "interrupted (Ctrl-C or SIGTERM)"
        raise
    except LoadgenError as exc:
        status["failure"] = str(exc)
        raise
    finally:
        observers.close()
        requests.close()
        cells_log.close()
        write_json(run_dir / "status.json", status)
        try:
            finish_card(run_dir, log)
        except Exception as exc:  # the card must never hide the run's own error
            log(f"could not write the card ({type(exc).__name__}: {exc}); run `loadgen report {run_dir}`")
    return run_dir


def finish_card(run_dir: Path, log: Log = print) -> dict[str, Any]:
    """(Re)build card.json, card.md and the plots from the run folder's saved data alone."""
    card = build_card(run_dir)
    try:
        from loadgen.plots import render_plots

        card["plots"] = [str(p.relative_to(run_dir)) for p in
                         render_plots(card, [r for r in load_records(run_dir)], run_dir / "plots")]
    except Exception as exc:  # a plot must never cost the card
        log(f"could not draw the plots ({type(exc).__name__}: {exc})")
        card["plots"] = []
    write_json(run_dir / "card.json", card)
    (run_dir / "card.md").write_text(render_markdown(card))
    return card
