"""The measurement protocol: which prompts each cell sends, in which order and on which schedule,
identical for both servers, and ``protocol.json``, which holds everything needed to repeat a run
(``loadgen compare --protocol``).

Prompts for every cell are generated up front (seeded) and saved, so both servers get the identical list;
each cell gets its own consecutive slice of its workload's prompt set (warmup, measured, cooldown).

Before anything is generated, :func:`check_plan_size` counts the prompts the plan needs from the pair alone
(the same arithmetic as :func:`plan_cells`): above :data:`PLAN_REFUSE` prompts the run is refused (exit 2)
naming the level responsible, above :data:`PLAN_SLOW` one line says planning will take a while. The
thresholds come from the measured cost of planning: ``concurrency = [100000]`` on demo-cpu (3 blocks, 2
workloads, some 3 million prompts) took 3 minutes and 375 MB, about 17,000 prompts/s and 125 bytes each.
"""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from loadgen import __version__
from loadgen.check.hashes import model_hashes
from loadgen.errors import BadInput, ProfileError
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
from loadgen.records.cardwire import wire_fields
from loadgen.records.protocol import Protocol
from loadgen.records.protoparts import WorkloadRecord
from loadgen.records.usage import ClientHost, Hardware
from loadgen.run.traceplan import trace_cells
from loadgen.serve import resources
from loadgen.store.files import read_prompts, read_protocol
from loadgen.util.redact import redact_argv, redact_env

#: Prompts above which planning is refused (BadInput, exit 2): some 30 s and 60 MB of generation alone
#: (module docstring), for a plan whose requests would take hours to send.
PLAN_REFUSE = 500_000
#: Prompts above which one line says that planning will take a while (a few seconds).
PLAN_SLOW = 50_000

Size = tuple[Level, int, int, int, int]  # (level, block, warmup, measured, cooldown) prompts of one cell


def _sizes(pair: Pair) -> list[Size]:
    """The prompts each cell of one workload needs, in plan order (blocks, then levels)."""
    stop, sizes = pair.stop, []
    sized = pair.criteria is not None and pair.criteria.ci_half_width is not None
    floor = pair.design.min_block_requests if sized and stop.duration_s is None else 0
    for rep in range(pair.planned_blocks):
        for level in pair.load.levels():
            if level.rate_rps is None:
                n, cool = (
                    max(floor, stop.measured_requests(level.concurrency)),
                    stop.cooldown_requests(level.concurrency),
                )
                first = rep == 0 and stop.warmup_requests > 0  # a full round at c (records/design.py)
                sizes.append(
                    (
                        level,
                        rep,
                        max(stop.warmup_requests, level.concurrency) if first else stop.warmup_requests,
                        n,
                        cool,
                    )
                )
                continue
            if stop.duration_s is not None:
                n, cool = min(stop.max_requests, math.ceil(level.rate_rps * stop.duration_s) + 1), 0
            else:
                n, cool = stop.min_requests, 0
            sizes.append((level, rep, stop.warmup_requests, n, cool))
    return sizes


def _pool(sizes: Sequence[Size]) -> dict[int, int]:
    """A prompt-file workload's shared sample per block: as many prompts as its largest level measures."""
    return {rep: max(n for _, r, _, n, _ in sizes if r == rep) for rep in {r for _, r, *_ in sizes}}


def _total(sizes: Sequence[Size], shared: bool) -> int:
    """Prompts one workload generates (measured ones once per block when ``shared``: a prompt file)."""
    own = sum(w + c + (0 if shared else n) for _, _, w, n, c in sizes)
    return own + (sum(_pool(sizes).values()) if shared else 0)


def plan_size(pair: Pair) -> tuple[int, Level | None, int]:
    """The prompts :func:`plan_cells` would generate (sum over workloads, blocks and levels of warmup +
    measured + cooldown), the level that needs the most of them and how many that is; from the pair alone,
    nothing generated (the level is None when there is none). A prompt file's shared measured sample is
    counted in the total, not charged to a level."""
    sizes, total, by_level = _sizes(pair), 0, dict[Level, int]()
    for workload in pair.workloads:
        if workload.kind == "trace":  # the whole trace per block (run/traceplan.py)
            total += (workload.source_lines or 0) * pair.planned_blocks
            continue
        shared = workload.kind == "file"
        total += _total(sizes, shared)
        for level in pair.load.levels():
            own = [s for s in sizes if s[0] == level]
            by_level[level] = by_level.get(level, 0) + sum(w + c + (0 if shared else n) for _, _, w, n, c in own)
    worst = max(by_level, key=lambda lv: by_level[lv], default=None)
    return total, worst, by_level.get(worst, 0) if worst is not None else 0


def check_plan_size(pair: Pair, log: Callable[[str], None]) -> int:
    """Count the plan's prompts (:func:`plan_size`) before any is generated; returns the count. Logs one
    line above :data:`PLAN_SLOW`. Raises BadInput (exit 2) above :data:`PLAN_REFUSE`, naming the count, the
    level responsible and the keys that shrink it."""
    total, level, worst = plan_size(pair)
    if level is None or total <= PLAN_SLOW:
        return total
    where = (
        f"concurrency {level.concurrency} ([run].concurrency; {pair.stop.rounds} rounds of measured requests "
        "plus 4 cooldown fillers per other slot)"
        if level.rate_rps is None
        else f"rate {level.rate_rps:g} req/s ([run].rates_rps, [stop].duration_s and max_requests)"
    )
    blocks = f"{pair.planned_blocks} blocks x {len(pair.workloads)} workloads"
    if total > PLAN_REFUSE:
        raise BadInput(
            f"{pair.path}: the plan needs {total:,} prompts ({blocks}; {worst:,} of them at {where}), "
            f"over the {PLAN_REFUSE:,} loadgen plans; lower that level, or [stop].rounds / cooldown = "
            "false / [design].blocks, or split the run"
        )
    log(
        f"planning {total:,} prompts ({blocks}; {worst:,} of them at {where}): this takes a while "
        f"(at least {total / 17_000:.0f} s)"
    )
    return total


def plan_cells(pair: Pair, log: Callable[[str], None] | None = None) -> list[CellSpec]:
    """The blocks of every cell (``pair.planned_blocks`` per workload and level; docs/metrics.md "Blocks"),
    each with its own consecutive slice of its workload's seeded prompt set (warmup, measured, cooldown)
    and, for open-loop levels, its seeded arrival schedule. A prompt-file workload measures the same prompts
    at every level: block ``b`` of each level takes the first prompts of block ``b``'s shared sample (a
    level of n requests its first n), so the levels differ in load alone. A trace workload's cells replay the
    trace at its own offsets (run/traceplan.py).

    The plan's size is checked first, before the tokenizer is loaded or any prompt generated
    (:func:`check_plan_size`; its line goes to ``log``, default stdout). Raises BadInput (exit 2) above
    :data:`PLAN_REFUSE` prompts."""
    check_plan_size(pair, log or print)
    load = pair.load
    tokenizer = None
    if any(needs_tokenizer(w) for w in pair.workloads):
        tokenizer = load_tokenizer(pair.target.model)
    cells, sizes = [], _sizes(pair)
    for workload in pair.workloads:
        if workload.kind == "trace" and tokenizer is not None:
            cells += trace_cells(pair, workload, tokenizer)
            continue
        shared = workload.kind == "file"
        pool = _pool(sizes)
        prompts = generate(workload, _total(sizes, shared), tokenizer)
        offset, common = 0, {}
        if shared:
            for rep, n in sorted(pool.items()):
                common[rep], offset = prompts[offset : offset + n], offset + n
        for level, rep, w, n, cool in sizes:
            measured = common[rep][:n] if shared else prompts[offset + w : offset + w + n]
            chunk = prompts[offset : offset + w + (0 if shared else n) + cool]
            warmup, cooldown = chunk[:w], chunk[len(chunk) - cool :] if cool else []
            offset += len(chunk)
            arrivals = None
            if level.rate_rps is not None:
                seed = workload.seed * 1_000_003 + rep * 1009 + int(level.rate_rps * 1000)
                arrivals = tuple(arrival_offsets(load.arrival, level.rate_rps, n, seed, load.burstiness))
            cells.append(
                CellSpec(
                    workload.name,
                    workload.endpoint,
                    level,
                    rep,
                    tuple(warmup),
                    tuple(measured),
                    tuple(cooldown),
                    arrivals,
                )
            )
    return cells


def unique_prompts(cells: Sequence[CellSpec]) -> list[Prompt]:
    """Every prompt of ``cells`` once (warmup, measured, cooldown, in plan order): what prompts.jsonl holds."""
    seen: dict[tuple[str, str], Prompt] = {}
    for c in cells:
        for p in (*c.warmup, *c.measured, *c.cooldown):
            seen.setdefault((p.workload, p.prompt_id), p)
    return list(seen.values())


def replay_protocol(
    protocol_path: Path, workloads_dir: Path = WORKLOADS_DIR
) -> tuple[Pair, list[CellSpec], list[list[Any]] | None]:
    """The pair, the exact cells (prompts, blocks, arrival schedules) and the recorded order of the slots
    (``design.order``: ``[arm, workload, level, block]`` each; None for a run of older code, which measured
    every plain cell, then every speculative one) of an earlier run, from its ``protocol.json`` and the
    ``pair.toml`` and ``prompts.jsonl`` beside it.

    Raises ProfileError when a file is missing or the prompts no longer match the recorded sha256.
    """
    folder = protocol_path.parent
    try:
        proto = read_protocol(protocol_path)  # BadInput naming the field when a field does not read
        prompts = {d["prompt_id"] + "@" + d["workload"]: _prompt(d) for d in read_prompts(folder)}
    except (OSError, ValueError, KeyError) as exc:
        raise ProfileError(
            f"{protocol_path}: cannot replay ({exc}); pass the protocol.json of a run folder "
            "that still holds pair.toml and prompts.jsonl"
        ) from None
    if prompts_digest(prompts.values()) != proto.prompts_sha256:
        raise ProfileError(
            f"{folder / 'prompts.jsonl'} does not match the protocol's prompts_sha256; the run folder was modified"
        )
    original = Path(proto.pair_file or folder / "pair.toml")  # its workload paths' folder
    pair = load_pair(str(folder / "pair.toml"), workloads_dir=workloads_dir, beside=original.parent)
    workloads = {w.name: _workload(w, protocol_path) for w in proto.workloads}
    pair = replace(
        pair,
        workloads=tuple(workloads.values()),
        overrides=proto.command_line.overrides() if proto.command_line else None,
    )
    cells = []
    for c in proto.cells:
        pick = [[prompts[f"{pid}@{c.workload}"] for pid in part] for part in (c.warmup, c.measured, c.cooldown)]
        cells.append(
            CellSpec(
                c.workload,
                workloads[c.workload].endpoint,
                Level(c.concurrency, c.rate_rps),
                c.repetition,
                tuple(pick[0]),
                tuple(pick[1]),
                tuple(pick[2]),
                tuple(c.arrivals_s) if c.arrivals_s is not None else None,
            )
        )
    order = None if proto.design is None or proto.design.order is None else [list(o) for o in proto.design.order]
    return pair, cells, order


def _workload(w: WorkloadRecord, protocol_path: Path) -> Workload:
    """The workload protocol.json recorded (:func:`protocol` wrote its fields by name); ProfileError where it
    lacks what a ``Workload`` needs (a protocol written by hand)."""
    if w.kind is None or w.endpoint is None or w.output_tokens is None:
        raise ProfileError(
            f"{protocol_path}: workload {w.name!r} lacks its kind, endpoint or output_tokens; pass the "
            "protocol.json of a run folder"
        )
    return Workload(**{name: getattr(w, name) for name in wire_fields(WorkloadRecord)})


def _prompt(d: dict[str, Any]) -> Prompt:
    messages = tuple(d["messages"]) if d.get("messages") is not None else None
    grammar = json.dumps(d["constraint"], sort_keys=True) if d.get("constraint") else None
    return Prompt(d["prompt_id"], d["workload"], d["endpoint"], d.get("text"), messages, d["output_tokens"], grammar)


def probe_host() -> tuple[ClientHost, Hardware]:
    """The machine loadgen runs on: protocol.json's ``client_host`` (Python, machine, system) and ``hardware``
    (serve/resources.py: CPU, memory and the GPUs NVML sees)."""
    client = ClientHost(platform.python_version(), platform.machine(), platform.platform())
    return client, resources.hardware()


def protocol(
    pair: Pair, cells: list[CellSpec], all_prompts: list[Prompt], host: tuple[ClientHost, Hardware]
) -> Protocol:
    """Everything needed to repeat the run (protocol.json, records/protocol.py); ``host`` is :func:`probe_host`'s."""
    return Protocol.from_json(
        {
            "schema": "loadgen.protocol/1",
            "loadgen_version": __version__,
            "pair": pair.name,
            "pair_file": str(pair.path),
            "target": model_hashes(pair.target).to_json(),
            "draft": model_hashes(pair.draft).to_json() if pair.draft else None,
            "speculative_config": pair.speculative.to_json(),
            "engine": {
                "command": list(pair.engine.command),
                "args": redact_argv(pair.engine.args),
                "env": redact_env(pair.engine.env),
                "seed": pair.engine.seed,
                "speculative_env": redact_env(pair.servers["speculative"].env) if "speculative" in pair.servers else {},
            },
            "sampling": asdict(pair.sampling),
            "fairness": {
                "ignore_eos": pair.sampling.ignore_eos,
                "min_tokens_equals_max_tokens": pair.sampling.ignore_eos,
                "return_token_ids": True,
            },
            # a workload's grammar fields only when set (profile/structured.py), as protocols of older code lack them
            "workloads": [
                {
                    k: v
                    for k, v in w.in_full().to_json().items()
                    if v is not None or k not in ("constraint", "constrained")
                }
                for w in pair.workloads
            ],
            "concurrency": list(pair.concurrency),
            "load": asdict(pair.load),
            "stop_rule": asdict(pair.stop),
            "prompts_file": "prompts.jsonl",
            "prompts_sha256": prompts_digest(all_prompts),
            "criteria": None
            if pair.criteria is None
            else (pair.criteria.to_json() | {"declared": list(pair.criteria.declared)}),
            "slo": asdict(pair.slo),
            "design": pair.design.to_json()
            | {
                "planned_blocks": pair.planned_blocks,
                "pairing": "block b of a cell sends the same prompts, in the same order, on every arm",
                "decision": "measure/decision.py: faster, short, slower, not distinguishable or inconclusive",
                "warmup": "a cell's first block warms every arm with a full round at its concurrency",
                "outlier_blocks": "named on the card (measure/blocks.py far_blocks), never excluded",
            },
            "cells": [
                {
                    "workload": c.workload,
                    "concurrency": c.concurrency,
                    "level": c.level.label,
                    "rate_rps": c.level.rate_rps,
                    "repetition": c.repetition,
                    "warmup": [p.prompt_id for p in c.warmup],
                    "measured": [p.prompt_id for p in c.measured],
                    "cooldown": [p.prompt_id for p in c.cooldown],
                    "arrivals_s": list(c.arrivals_s) if c.arrivals_s is not None else None,
                }
                for c in cells
            ],
            "client_host": host[0].to_json(),
            "hardware": host[1].to_json(),
        }
        | ({"command_line": pair.overrides.to_json()} if pair.overrides else {}),
        source="the protocol being written",
    )
