"""The compare flow (docs/architecture.md): check, launch plain, replay, stop, launch speculative,
replay, stop, write the card.

Prompts for every cell are generated up front and saved, so both servers get the identical list.
Requests, cells, /metrics snapshots and server records are written as they happen; the card is written
in any case (marked incomplete when the run did not finish), so nothing measured is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from loadgen.check.preflight import run_pair_check
from loadgen.errors import LoadgenError, RunFailed
from loadgen.profile.cells import ROLES, CellKey, CellSpec
from loadgen.profile.pair import Pair, RoleServer
from loadgen.prom import exposition as prom
from loadgen.prom.scrape import scrape
from loadgen.report.card import render_markdown
from loadgen.report.carddata import build_card
from loadgen.report.rundir import (
    JsonlAppender,
    copy_pair_file,
    load_records,
    new_run_dir,
    read_json,
    read_jsonl,
    write_json,
    write_text,
)
from loadgen.report.savedcard import refresh_saved_card, saved_only
from loadgen.run.cell import RunContext, run_cell_on
from loadgen.run.closing import close_run, open_status
from loadgen.run.observe import ObserveOptions, Observers
from loadgen.run.plan import plan_cells, probe_host, protocol, replay_protocol
from loadgen.serve import attached, modeproof, resources, servers
from loadgen.util import strictjson
from loadgen.util.redact import redact_argv, redact_env, redact_url
from loadgen.util.schemas import Card

Log = Callable[[str], None]


def served_name(pair: Pair) -> str:
    """The model name both servers serve (the same on both sides, so request bodies are identical)."""
    return Path(pair.target.model).name or pair.target.model


def launch_spec(pair: Pair, role: str, run_dir: Path, attach_url: str | None = None,
                api_key: str | None = None) -> servers.LaunchSpec:
    """The launch of ``role`` ("plain" or "speculative"): ``[engine]`` plus ``[servers.<role>]``; the
    speculative server defaults to port + 1. With ``attach_url`` (or ``[servers.<role>].url``) the spec
    describes a running server to attach to."""
    extra = pair.servers.get(role, RoleServer())
    port = extra.port or pair.engine.port + (1 if role == "speculative" else 0)
    argv = servers.build_argv(
        pair.engine.command, pair.target, served_name(pair), pair.engine.host, port,
        pair.engine.seed, [*pair.engine.args, *extra.args], pair.speculative if role == "speculative" else None,
    )
    return servers.LaunchSpec(role, argv, {**pair.engine.env, **extra.env}, pair.engine.host, port,
                              served_name(pair), pair.engine.startup_timeout_s, run_dir / "servers" / f"{role}.log",
                              attach_url or extra.url, api_key)


def _startup_proof(run: RunContext, role: str, server: servers.Server) -> dict[str, Any]:
    """Scrape /metrics once and prove the mode (prove_mode), or, when /metrics gives no Prometheus text,
    from the startup log and the minimal completion's tokens per chunk (modeproof.py); the startup log's
    method must match the declared one. Returns the saved effective record."""
    config = server.effective_config()
    try:
        text, snap = scrape(server.base_url, headers=server.spec.headers)
    except RunFailed as exc:
        run.log(f"[{role}] {exc}: measuring without server-side figures")
        proof = modeproof.prove_without_metrics(role, config, server.minimal_response, server.process is not None,
                                                str(exc))
        snap = prom.parse_metrics("")
    else:
        write_text(run.run_dir / "metrics" / f"{role}__startup.prom", text)
        proof = modeproof.prove_mode(role, snap, run.pair.num_speculative_tokens)
    modeproof.check_effective_method(role, run.pair.method, config.get("speculative_config_log"),
                                     run.pair.num_speculative_tokens)
    return _save_server_record(run.run_dir, server, snap, proof, config)


def _save_server_record(run_dir: Path, server: servers.Server, snap: prom.Snapshot,
                        proof: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    role = server.spec.role
    write_json(run_dir / "servers" / f"{role}-minimal.json",
               {"request": server.minimal_request, "response": server.minimal_response})
    effective = {**config, **proof, "ready_s": server.ready_s,
                 "cache_config_info": prom.cache_config_info(snap)}
    write_json(run_dir / "servers" / f"{role}-effective.json", effective)
    return effective


def _resources(server: servers.Server, effective: dict[str, Any]) -> dict[str, Any]:
    pid = server.process.pid if server.process is not None else None
    url = httpx.URL(server.base_url)
    if pid is None and url.host in ("127.0.0.1", "localhost", "::1") and url.port is not None:
        pid = resources.pid_listening_on(url.port)  # an attached server on this machine
    return resources.usage(pid, effective["cache_config_info"], effective.get("kv_cache_tokens_log"))


def _run_role(run: RunContext, role: str, cells: list[CellSpec], attach_url: str | None) -> None:
    pair, run_dir, log = run.pair, run.run_dir, run.log
    spec = launch_spec(pair, role, run_dir, attach_url, run.api_key)
    write_json(run_dir / "servers" / f"{role}-launch.json",
               {"argv": None if spec.attach_url else redact_argv(spec.argv), "env": redact_env(spec.env),
                "base_url": redact_url(spec.base_url), "attached": spec.attach_url is not None})
    log(f"[{role}] attaching to {redact_url(spec.base_url)}" if spec.attach_url
        else f"[{role}] starting: {' '.join(redact_argv(spec.argv))}")

    def on_stop(report: dict[str, Any]) -> None:
        write_json(run_dir / "servers" / f"{role}-teardown.json", report)
        log(f"[{role}] stopped" + (f"; SURVIVORS {report['survivors']}" if report.get("survivors") else ""))

    with servers.running(spec, on_stop) as server:
        log(f"[{role}] ready after {server.ready_s:.0f} s at {redact_url(server.base_url)}")
        effective = _startup_proof(run, role, server)
        usage = {"ready": _resources(server, effective)}
        write_json(run_dir / "servers" / f"{role}-resources.json", usage)
        for cell in cells:
            run_cell_on(run, role, server, cell)
        usage["after_load"] = _resources(server, effective)
        write_json(run_dir / "servers" / f"{role}-resources.json", usage)


def run_compare(pair: Pair, runs_root: Path, log: Log = print, attach: dict[str, str] | None = None,
                cells: list[CellSpec] | None = None, allow_unpinned: bool = False,
                observe: ObserveOptions | None = None, api_key: str | None = None) -> Path:
    """Run the whole comparison of ``pair``; returns the run folder.

    Raises PairCheckError (exit 2) before anything starts, RunFailed/FallbackDetected (exit 1) midway;
    in every case after the run folder exists, the card is written (``complete: false`` if cut short).
    """
    engine_version, findings = run_pair_check(pair, allow_unpinned, log)
    run_dir = new_run_dir(runs_root, pair.name)
    log(f"run folder: {run_dir}")
    cells = cells if cells is not None else plan_cells(pair)
    all_prompts = [p for c in cells for p in (*c.warmup, *c.measured, *c.cooldown)]
    with (run_dir / "prompts.jsonl").open("w") as fh:
        for p in all_prompts:
            fh.write(strictjson.dumps(p.to_json()) + "\n")
    copy_pair_file(pair.path, run_dir)
    write_json(run_dir / "protocol.json", protocol(pair, cells, all_prompts, probe_host())
               | {"engine_version": engine_version, "attach": attached.record(attach or {})})
    write_json(run_dir / "checks.json", [f.__dict__ for f in findings])
    _execute(pair, run_dir, {role: cells for role in ROLES}, log, attach, observe, api_key)
    return run_dir


def resume_compare(run_dir: Path, log: Log = print, attach: dict[str, str] | None = None,
                   observe: ObserveOptions | None = None, api_key: str | None = None) -> Path:
    """Complete an interrupted run in place with its own protocol: cells with an entry in cells.jsonl
    and no failure are kept; the others run again (their partial requests move to
    ``requests.partial.jsonl``, so nothing is deleted). A role with nothing left starts no server.

    Raises ProfileError when ``run_dir`` cannot be replayed (see plan.replay_protocol).
    """
    pair, cells = replay_protocol(run_dir / "protocol.json")
    entries = list(read_jsonl(run_dir / "cells.jsonl"))
    done = {_cell_key(e["role"], e["workload"], e["level"], e.get("repetition", 0))
            for e in entries if not e.get("failure")}
    kept: list[dict[str, Any]] = []
    partial: list[dict[str, Any]] = []
    for r in read_jsonl(run_dir / "requests.jsonl"):  # one pass: a finished cell's requests stay
        finished = _cell_key(r["role"], *CellKey.of(r), r.get("repetition", 0)) in done
        (kept if finished else partial).append(r)
    moved = JsonlAppender(run_dir / "requests.partial.jsonl")
    try:
        for r in partial:
            moved.append(r)
    finally:
        moved.close()
    # atomic rewrites: a full disk leaves the old files whole
    write_text(run_dir / "requests.jsonl", "".join(strictjson.dumps(r) + "\n" for r in kept))
    write_text(run_dir / "cells.jsonl", "".join(strictjson.dumps(e) + "\n" for e in entries
                                                if _cell_key(e["role"], e["workload"], e["level"],
                                                             e.get("repetition", 0)) in done))
    todo = {role: [c for c in cells if _cell_key(role, c.workload, c.level.label, c.repetition) not in done]
            for role in ROLES}
    recorded = read_json(run_dir / "protocol.json").get("attach") or {}
    attach = attached.resume_urls(recorded, attach or {}, [role for role in ROLES if todo[role]])
    log(f"resuming {run_dir}: {sum(len(v) for v in todo.values())} of {2 * len(cells)} cells left "
        f"({len(partial)} partial requests moved to requests.partial.jsonl)")
    _execute(pair, run_dir, todo, log, attach, observe, api_key)
    return run_dir


def _cell_key(role: str, workload: str, level: str, repetition: int) -> tuple[str, str, str, int]:
    return role, workload, level, int(repetition)


def _execute(pair: Pair, run_dir: Path, todo: dict[str, list[CellSpec]], log: Log,
             attach: dict[str, str] | None, observe: ObserveOptions | None, api_key: str | None = None) -> None:
    """Run ``todo[role]`` on each role's server in order, appending to the run folder; always write the
    status and the card."""
    status: dict[str, Any] = {"complete": False, "failure": None}
    open_status(run_dir)
    requests, cells_log = JsonlAppender(run_dir / "requests.jsonl"), JsonlAppender(run_dir / "cells.jsonl")
    observers = Observers(pair.name, observe or ObserveOptions(progress=False), log)
    run = RunContext(pair, run_dir, requests, cells_log, log, observers, api_key)
    error: BaseException | None = None
    try:  # every attached server is checked before either is measured
        attached.preflight([launch_spec(pair, role, run_dir, (attach or {}).get(role), api_key)
                            for role in ROLES if todo.get(role)],
                           lambda role, snap: modeproof.prove_mode(role, snap, pair.num_speculative_tokens), log)
        for role in ROLES:
            if todo.get(role):
                _run_role(run, role, todo[role], (attach or {}).get(role))
        status["complete"] = True
    except KeyboardInterrupt as exc:
        status["failure"], error = "interrupted (Ctrl-C or SIGTERM)", exc
    except LoadgenError as exc:
        status["failure"], error = str(exc), exc
    finally:
        observers.close()
        requests.close()
        cells_log.close()
        ending = close_run(run_dir, status, finish_card, log, error, requests.lost)
    if ending is not None:
        raise ending from None


def finish_card(run_dir: Path, log: Log = print) -> Card:
    """(Re)build card.json, card.md and the plots from the run folder's saved data alone (without
    requests.jsonl: from card.json's statistics, plots kept; savedcard.py)."""
    saved = saved_only(run_dir)
    if saved:
        log(f"{run_dir} has no requests.jsonl: statistics kept from card.json, diagnosis and verdict recomputed")
    card = refresh_saved_card(run_dir) if saved else build_card(run_dir)
    try:
        from loadgen.report.plots import render_plots

        if not saved:
            card["plots"] = [str(p.relative_to(run_dir)) for p in
                             render_plots(card, [r for r in load_records(run_dir)], run_dir / "plots")]
    except Exception as exc:  # a plot must never cost the card
        plots_error: Exception | None = exc
        card["plots"] = []
    else:
        plots_error = None
    write_json(run_dir / "card.json", card)
    write_text(run_dir / "card.md", render_markdown(card))
    if plots_error is not None:  # said once the card is written (a full disk says more than this, above)
        log(f"could not draw the plots ({type(plots_error).__name__}: {plots_error})")
    return card
