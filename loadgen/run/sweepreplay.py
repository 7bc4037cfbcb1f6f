"""``loadgen sweep --protocol SWEEP_DIR/protocol.json``: measure an earlier sweep again in a new sweep folder,
with the same candidates (the pair files in ``SWEEP_DIR/candidates/``), the same prompts (``prompts.jsonl``,
checked against the protocol's sha256), cells, blocks and slot order (``design.order``), so that two sweeps on
two machines differ only in the machines and the servers (a reproduction: compare their cards with
``loadgen diff``). The candidates are checked again against the engine that is installed now."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from loadgen.check.preflight import check_pairs
from loadgen.errors import BadInput
from loadgen.profile.pair import Pair
from loadgen.profile.pairfile import load_pair
from loadgen.profile.tomlread import read_toml
from loadgen.run import flow
from loadgen.run.plan import replay_protocol
from loadgen.run.sweepplan import announce
from loadgen.run.sweepsetup import SweepOptions, new_sweep_dir, start_measuring
from loadgen.store.files import read_protocol
from loadgen.store.runlock import locked

__all__ = ["replay_sweep"]


def replay_sweep(protocol_file: Path, o: SweepOptions, log: flow.Log) -> Path:
    """Measure the sweep recorded in ``protocol_file`` (a sweep folder's protocol.json) again in a new sweep
    folder under ``o.runs_dir``; returns that folder.

    Raises BadInput (exit 2) when the file is not a sweep's protocol (no ``candidates``; a run folder's is
    repeated by ``loadgen compare --protocol``) or its folder lacks sweep.toml or a candidate's pair file;
    ProfileError when prompts.jsonl no longer matches the recorded sha256."""
    old = protocol_file.parent
    proto = read_protocol(protocol_file)
    if not proto.candidates or not (old / "sweep.toml").is_file():
        raise BadInput(
            f"{protocol_file} is not a sweep folder's protocol.json (no candidates or no sweep.toml "
            "beside it); pass SWEEP_DIR/protocol.json, or repeat a run with `loadgen compare --protocol`"
        )
    first, cells, order = replay_protocol(protocol_file, o.workloads_dir)
    pairs: dict[str, Pair] = {}
    for candidate in proto.candidates:
        path = old / "candidates" / f"{candidate}.toml"
        if not path.is_file():
            raise BadInput(f"{path} is missing: the sweep folder {old} is incomplete; restore its candidates/")
        pairs[candidate] = replace(load_pair(str(path), workloads_dir=o.workloads_dir), overrides=first.overrides)
    attach = {"plain": o.attach_plain} if o.attach_plain else {}
    version, findings = check_pairs(
        pairs, o.allow_unpinned, log, flow.attached_version(attach, o.api_key), list(attach)
    )
    m = flow.plan_measurement(first, pairs, attach, cells, order, o.metrics)
    announce(m, [o.runs_dir, *o.history_dirs], o.budget_min, log)
    sweep_name = str(read_toml(old / "sweep.toml").get("name", old.parent.name))
    sweep_dir = new_sweep_dir(o.runs_dir, sweep_name, old / "sweep.toml", None)  # a copy of the sweep file as run
    with locked(sweep_dir, log):
        shutil.copytree(old / "candidates", sweep_dir / "candidates")
        log(f"replaying {protocol_file}: {len(m.slots)} slots in the recorded order")
        return start_measuring(sweep_dir, first, pairs, m, (version, findings), o, log)
