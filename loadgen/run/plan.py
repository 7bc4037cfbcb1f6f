"""The measurement protocol: which prompts each cell sends, in which order and on which schedule,
identical for both servers, and ``protocol.json``, which holds everything needed to repeat a run
(``loadgen compare --protocol``).

Prompts for every cell are generated up front (seeded) and saved, so both servers get the identical list;
each cell gets its own consecutive slice of its workload's prompt set (warmup, measured, cooldown).
"""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from loadgen import __version__
from loadgen.check.hashes import model_hashes
from loadgen.errors import ProfileError
from loadgen.profile.cells import CellSpec
from loadgen.profile.pair import Level, Pair
from loadgen.profile.pairfile import load_pair
from loadgen.profile.schedule import arrival_offsets
from loadgen.profile.workload import (
    WORKLOADS_DIR,
    Prompt,
    Workload,
    generate,
    load_tokenizer,
    needs_tokenizer,
    prompts_digest,
)
from loadgen.serve import resources
from loadgen.util.redact import redact_argv, redact_env


def plan_cells(pair: Pair) -> list[CellSpec]:
    """The blocks of every cell (``pair.planned_blocks`` per workload and level; docs/metrics.md "Blocks"),
    each with its own consecutive slice of its workload's seeded prompt set (warmup, measured, cooldown)
    and, for open-loop levels, its seeded arrival schedule. A prompt-file workload measures the same prompts
    at every level: block ``b`` of each level takes the first prompts of block ``b``'s shared sample (a
    level of n requests its first n), so the levels differ in load alone."""
    stop, load = pair.stop, pair.load
    tokenizer = None
    if any(needs_tokenizer(w) for w in pair.workloads):
        tokenizer = load_tokenizer(pair.target.model)
    cells = []
    for workload in pair.workloads:
        sizes = []
        for rep in range(pair.planned_blocks):
            for level in load.levels():
                if level.rate_rps is None:
                    n, cool = stop.measured_requests(level.concurrency), stop.cooldown_requests(level.concurrency)
                elif stop.duration_s is not None:
                    n, cool = min(stop.max_requests, math.ceil(level.rate_rps * stop.duration_s) + 1), 0
                else:
                    n, cool = stop.min_requests, 0
                sizes.append((level, rep, stop.warmup_requests, n, cool))
        shared = workload.kind == "file"
        pool = {rep: max(n for lv, r, _, n, _ in sizes if r == rep) for rep in {r for _, r, *_ in sizes}}
        total = sum(w + c + (0 if shared else n) for _, _, w, n, c in sizes) + (sum(pool.values()) if shared else 0)
        prompts = generate(workload, total, tokenizer)
        offset, common = 0, {}
        if shared:
            for rep, n in sorted(pool.items()):
                common[rep], offset = prompts[offset:offset + n], offset + n
        for level, rep, w, n, cool in sizes:
            measured = common[rep][:n] if shared else prompts[offset + w:offset + w + n]
            chunk = prompts[offset:offset + w + (0 if shared else n) + cool]
            warmup, cooldown = chunk[:w], chunk[len(chunk) - cool:] if cool else []
            offset += len(chunk)
            arrivals = None
            if level.rate_rps is not None:
                seed = workload.seed * 1_000_003 + rep * 1009 + int(level.rate_rps * 1000)
                arrivals = tuple(arrival_offsets(load.arrival, level.rate_rps, n, seed, load.burstiness))
            cells.append(CellSpec(workload.name, workload.endpoint, level, rep, tuple(warmup), tuple(measured),
                                  tuple(cooldown), arrivals))
    return cells


def unique_prompts(cells: Sequence[CellSpec]) -> list[Prompt]:
    """Every prompt of ``cells`` once (warmup, measured, cooldown, in plan order): what prompts.jsonl holds."""
    seen: dict[tuple[str, str], Prompt] = {}
    for c in cells:
        for p in (*c.warmup, *c.measured, *c.cooldown):
            seen.setdefault((p.workload, p.prompt_id), p)
    return list(seen.values())


def replay_protocol(protocol_path: Path, workloads_dir: Path = WORKLOADS_DIR) -> tuple[
        Pair, list[CellSpec], list[list[Any]] | None]:
    """The pair, the exact cells (prompts, blocks, arrival schedules) and the recorded order of the slots
    (``design.order``: ``[arm, workload, level, block]`` each; None for a run of older code, which measured
    every plain cell, then every speculative one) of an earlier run, from its ``protocol.json`` and the
    ``pair.toml`` and ``prompts.jsonl`` beside it.

    Raises ProfileError when a file is missing or the prompts no longer match the recorded sha256.
    """
    folder = protocol_path.parent
    try:
        proto = json.loads(protocol_path.read_text())
        prompts = {d["prompt_id"] + "@" + d["workload"]: _prompt(d)
                   for d in map(json.loads, (folder / "prompts.jsonl").read_text().splitlines())}
    except (OSError, ValueError, KeyError) as exc:
        raise ProfileError(f"{protocol_path}: cannot replay ({exc}); pass the protocol.json of a run folder "
                           "that still holds pair.toml and prompts.jsonl") from None
    if prompts_digest(prompts.values()) != proto.get("prompts_sha256"):
        raise ProfileError(f"{folder / 'prompts.jsonl'} does not match the protocol's prompts_sha256; "
                           "the run folder was modified")
    pair = load_pair(str(folder / "pair.toml"), workloads_dir=workloads_dir)
    workloads = {w["name"]: w for w in proto["workloads"]}
    pair = replace(pair, workloads=tuple(Workload(**(w | {"skipped": tuple(w.get("skipped") or ())}))
                                         for w in proto["workloads"]))
    cells = []
    for c in proto["cells"]:
        pick = [[prompts[f"{pid}@{c['workload']}"] for pid in c[part]] for part in ("warmup", "measured", "cooldown")]
        rate = c.get("rate_rps")
        level = Level(c["concurrency"], rate)
        cells.append(CellSpec(c["workload"], workloads[c["workload"]]["endpoint"], level, c.get("repetition", 0),
                              tuple(pick[0]), tuple(pick[1]), tuple(pick[2]),
                              tuple(c["arrivals_s"]) if c.get("arrivals_s") is not None else None))
    order = (proto.get("design") or {}).get("order")
    return pair, cells, order


def _prompt(d: dict[str, Any]) -> Prompt:
    messages = tuple(d["messages"]) if d.get("messages") is not None else None
    return Prompt(d["prompt_id"], d["workload"], d["endpoint"], d.get("text"), messages, d["output_tokens"])


def probe_host() -> dict[str, Any]:
    """The machine loadgen runs on: ``client_host`` (Python, machine, system) and ``hardware``
    (serve/resources.py: GPUs and drivers)."""
    return {"client_host": {"python": platform.python_version(), "machine": platform.machine(),
                            "system": platform.platform()},
            "hardware": resources.hardware()}


def protocol(pair: Pair, cells: list[CellSpec], all_prompts: list[Prompt], host: Mapping[str, Any]) -> dict[str, Any]:
    """Everything needed to repeat the run (protocol.json); ``host`` is :func:`probe_host`'s."""
    return {
        "schema": "loadgen.protocol/1",
        "loadgen_version": __version__,
        "pair": pair.name,
        "pair_file": str(pair.path),
        "target": model_hashes(pair.target),
        "draft": model_hashes(pair.draft) if pair.draft else None,
        "speculative_config": dict(pair.speculative),
        "engine": {"command": list(pair.engine.command), "args": redact_argv(pair.engine.args),
                   "env": redact_env(pair.engine.env), "seed": pair.engine.seed},
        "sampling": asdict(pair.sampling),
        "fairness": {"ignore_eos": pair.sampling.ignore_eos, "min_tokens_equals_max_tokens": pair.sampling.ignore_eos,
                     "return_token_ids": True},
        "workloads": [asdict(w) for w in pair.workloads],
        "concurrency": list(pair.concurrency),
        "load": asdict(pair.load),
        "stop_rule": asdict(pair.stop),
        "prompts_file": "prompts.jsonl",
        "prompts_sha256": prompts_digest(all_prompts),
        "criteria": None if pair.criteria is None else (pair.criteria.to_json()
                                                        | {"declared": list(pair.criteria.declared)}),
        "slo": asdict(pair.slo),
        "design": pair.design.to_json() | {"planned_blocks": pair.planned_blocks},
        "cells": [{"workload": c.workload, "concurrency": c.concurrency, "level": c.level.label,
                   "rate_rps": c.level.rate_rps, "repetition": c.repetition,
                   "warmup": [p.prompt_id for p in c.warmup],
                   "measured": [p.prompt_id for p in c.measured],
                   "cooldown": [p.prompt_id for p in c.cooldown],
                   "arrivals_s": list(c.arrivals_s) if c.arrivals_s is not None else None} for c in cells],
        "client_host": host.get("client_host"),
        "hardware": host.get("hardware"),
    }
