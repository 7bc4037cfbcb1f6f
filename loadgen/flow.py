"""The compare flow (DESIGN.md steps 2-7): check, launch plain, replay, stop, launch speculative,
replay, stop, write the card.

Prompts for every cell are generated up front and saved, so both servers get the identical list.
Requests, cells, /metrics snapshots and server records are written as they happen; the card is written
in any case (marked incomplete when the run did not finish), so nothing measured is lost.
"""

from __future__ import annotations

import contextlib
import json
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from loadgen import __version__, prom, servers
from loadgen.card import render_markdown
from loadgen.client import RequestRecord
from loadgen.errors import FallbackDetected, LoadgenError, PairCheckError, RunFailed
from loadgen.pair import Pair
from loadgen.report import build_card
from loadgen.rundir import JsonlAppender, copy_pair_file, new_run_dir, write_json
from loadgen.runner import CellPlan, run_cell
from loadgen.validate import check_pair, model_hashes
from loadgen.workload import Prompt, generate, prompts_digest

ROLES = ("plain", "speculative")
Log = Callable[[str], None]


@dataclass(frozen=True)
class CellPrompts:
    """Prompts of one (workload, concurrency) cell, identical for both roles."""

    workload: str
    endpoint: str
    concurrency: int
    warmup: tuple[Prompt, ...]
    measured: tuple[Prompt, ...]


def plan_cells(pair: Pair) -> list[CellPrompts]:
    """Assign each cell its own consecutive slice of its workload's seeded prompt set."""
    cells = []
    for workload in pair.workloads:
        sizes = [(c, pair.stop.warmup_requests, pair.stop.measured_requests(c)) for c in pair.concurrency]
        prompts = generate(workload, sum(w + m for _, w, m in sizes))
        offset = 0
        for c, w, m in sizes:
            warm = tuple(prompts[offset:offset + w])
            measured = tuple(prompts[offset + w:offset + w + m])
            offset += w + m
            cells.append(CellPrompts(workload.name, workload.endpoint, c, warm, measured))
    return cells


def served_name(pair: Pair) -> str:
    """The model name both servers serve (the same on both sides, so request bodies are identical)."""
    return Path(pair.target.model).name or pair.target.model


def launch_spec(pair: Pair, role: str, run_dir: Path) -> servers.LaunchSpec:
    """The launch of ``role`` ("plain" or "speculative"); the speculative server uses port + 1."""
    port = pair.engine.port + (1 if role == "speculative" else 0)
    argv = servers.build_argv(
        pair.engine.command, pair.target.model, served_name(pair), pair.engine.host, port,
        pair.engine.seed, pair.engine.args, pair.speculative if role == "speculative" else None,
        pair.target.revision,
    )
    return servers.LaunchSpec(role, argv, dict(pair.engine.env), pair.engine.host, port, served_name(pair),
                              pair.engine.startup_timeout_s, run_dir / "servers" / f"{role}.log")


def scrape(base_url: str) -> tuple[str, prom.Snapshot]:
    """GET /metrics and parse it. Raises RunFailed when the server does not answer with metrics."""
    try:
        response = httpx.get(base_url + "/metrics", timeout=10.0)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise RunFailed(f"cannot scrape {base_url}/metrics ({exc}); is the server alive?") from None
    try:
        return response.text, prom.parse_metrics(response.text)
    except prom.PromParseError as exc:
        raise RunFailed(f"{base_url}/metrics is not Prometheus text ({exc})") from None


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


def _save_server_record(run_dir: Path, server: servers.Server, snap: prom.Snapshot, proof: dict[str, Any]) -> None:
    role = server.spec.role
    write_json(run_dir / "servers" / f"{role}-minimal.json",
               {"request": server.minimal_request, "response": server.minimal_response})
    write_json(run_dir / "servers" / f"{role}-effective.json",
               {**server.effective_config(), **proof, "ready_s": server.ready_s,
                "cache_config_info": prom.cache_config_info(snap)})


def _run_role(pair: Pair, role: str, run_dir: Path, cells: list[CellPrompts],
              requests: JsonlAppender, cells_log: JsonlAppender, log: Log) -> None:
    spec = launch_spec(pair, role, run_dir)
    write_json(run_dir / "servers" / f"{role}-launch.json",
               {"argv": spec.argv, "env": spec.env, "base_url": spec.base_url})
    log(f"[{role}] starting: {' '.join(spec.argv)}")
    with servers.running(spec) as server:
        log(f"[{role}] ready after {server.ready_s:.0f} s at {server.base_url}")
        text, snap = scrape(server.base_url)
        (run_dir / "metrics" / f"{role}__startup.prom").write_text(text)
        _save_server_record(run_dir, server, snap, prove_mode(role, snap, pair.num_speculative_tokens))
        for cell in cells:
            _run_cell(pair, role, server, cell, run_dir, requests, cells_log, log)


def _run_cell(pair: Pair, role: str, server: servers.Server, cell: CellPrompts, run_dir: Path,
              requests: JsonlAppender, cells_log: JsonlAppender, log: Log) -> None:
    stem = f"{role}__{cell.workload}__c{cell.concurrency}"
    before: dict[str, prom.Snapshot] = {}

    def scrape_before() -> None:
        text, before["snap"] = scrape(server.base_url)
        (run_dir / "metrics" / f"{stem}__before.prom").write_text(text)

    plan = CellPlan(role, cell.workload, cell.endpoint, cell.concurrency, cell.warmup, cell.measured)
    started = datetime.now(UTC).isoformat()
    t0 = time.monotonic()
    records = run_cell(server.base_url, server.spec.served_model, pair.sampling, plan,
                       lambda r: requests.append(r.to_json()), scrape_before)
    duration = time.monotonic() - t0
    if not server.alive():
        raise RunFailed(f"the {role} server died during cell {cell.workload} c={cell.concurrency}; "
                        f"see {server.spec.log_path}")
    text, after = scrape(server.base_url)
    (run_dir / "metrics" / f"{stem}__after.prom").write_text(text)
    counters = prom.spec_decode_delta(before["snap"], after)
    finished = prom.counter_delta(before["snap"], after, "vllm:request_success_total").value
    errors = sum(1 for r in records if r.error)
    entry: dict[str, Any] = {
        "role": role, "workload": cell.workload, "concurrency": cell.concurrency,
        "started_utc": started, "duration_s": duration,
        "measured_prompt_ids": [p.prompt_id for p in cell.measured],
        "warmup_prompt_ids": [p.prompt_id for p in cell.warmup],
        "spec_decode": None if counters is None else counters.__dict__ | {"accepted_per_position":
                                                                           list(counters.accepted_per_position)},
        "server_finished_requests": finished,
        "foreign_traffic": finished > len(records),
        "errors": errors,
        "output_length_mismatches": _length_mismatches(records),
    }
    cells_log.append(entry)
    ok = len(records) - errors
    log(f"[{role}] {cell.workload} c={cell.concurrency}: {ok}/{len(records)} ok in {duration:.1f} s"
        + ("" if counters is None else f", drafts {counters.num_drafts:.0f}, accepted "
           f"{counters.num_accepted_tokens:.0f}/{counters.num_draft_tokens:.0f}"))
    if role == "speculative" and counters is not None and counters.num_drafts == 0 and ok > 0:
        raise FallbackDetected(f"the speculative server's draft counters did not move during cell "
                               f"{cell.workload} c={cell.concurrency}: no speculation happened")


def _length_mismatches(records: list[RequestRecord]) -> int:
    return sum(1 for r in records if r.error is None and r.output_tokens != r.requested_output_tokens)


def protocol(pair: Pair, cells: list[CellPrompts], all_prompts: list[Prompt]) -> dict[str, Any]:
    """Everything needed to repeat the run (protocol.json)."""
    return {
        "schema": "loadgen.protocol/1",
        "loadgen_version": __version__,
        "pair": pair.name,
        "pair_file": str(pair.path),
        "target": model_hashes(pair.target),
        "draft": model_hashes(pair.draft) if pair.draft else None,
        "speculative_config": dict(pair.speculative),
        "engine": {"command": list(pair.engine.command), "args": list(pair.engine.args),
                   "env": dict(pair.engine.env), "seed": pair.engine.seed},
        "sampling": pair.sampling.__dict__,
        "fairness": {"ignore_eos": pair.sampling.ignore_eos, "min_tokens_equals_max_tokens": pair.sampling.ignore_eos,
                     "return_token_ids": True},
        "workloads": [w.__dict__ for w in pair.workloads],
        "concurrency": list(pair.concurrency),
        "schedule": "closed-loop",
        "stop_rule": pair.stop.__dict__,
        "prompts_file": "prompts.jsonl",
        "prompts_sha256": prompts_digest(all_prompts),
        "cells": [{"workload": c.workload, "concurrency": c.concurrency,
                   "warmup": [p.prompt_id for p in c.warmup],
                   "measured": [p.prompt_id for p in c.measured]} for c in cells],
        "client_host": {"python": platform.python_version(), "machine": platform.machine(),
                        "system": platform.platform()},
    }


def run_compare(pair: Pair, runs_root: Path, log: Log = print) -> Path:
    """Run the whole comparison of ``pair``; returns the run folder.

    Raises PairCheckError (exit 2) before anything starts, RunFailed/FallbackDetected (exit 1) midway;
    in every case after the run folder exists, the card is written (``complete: false`` if cut short).
    """
    findings = check_pair(pair)
    for f in findings:
        log(f.line())
    blocking = [f for f in findings if f.blocking and not f.ok]
    if blocking:
        raise PairCheckError(f"pair check failed: {blocking[0].check}: {blocking[0].message}")
    run_dir = new_run_dir(runs_root, pair.name)
    log(f"run folder: {run_dir}")
    cells = plan_cells(pair)
    all_prompts = [p for c in cells for p in (*c.warmup, *c.measured)]
    with (run_dir / "prompts.jsonl").open("w") as fh:
        for p in all_prompts:
            fh.write(json.dumps(p.to_json()) + "\n")
    copy_pair_file(pair.path, run_dir)
    write_json(run_dir / "protocol.json", protocol(pair, cells, all_prompts))
    write_json(run_dir / "checks.json", [f.__dict__ for f in findings])
    status: dict[str, Any] = {"complete": False, "failure": None}
    requests, cells_log = JsonlAppender(run_dir / "requests.jsonl"), JsonlAppender(run_dir / "cells.jsonl")
    try:
        for role in ROLES:
            _run_role(pair, role, run_dir, cells, requests, cells_log, log)
        status["complete"] = True
    except KeyboardInterrupt:
        status["failure"] = "interrupted (Ctrl-C or SIGTERM)"
        raise
    except LoadgenError as exc:
        status["failure"] = str(exc)
        raise
    finally:
        requests.close()
        cells_log.close()
        write_json(run_dir / "status.json", status)
        with contextlib.suppress(Exception):
            finish_card(run_dir)
    return run_dir


def finish_card(run_dir: Path) -> dict[str, Any]:
    """(Re)build card.json and card.md from the run folder's saved data."""
    card = build_card(run_dir)
    write_json(run_dir / "card.json", card)
    (run_dir / "card.md").write_text(render_markdown(card))
    return card
