"""``loadgen sweep --protocol SWEEP_DIR/protocol.json``: measure an earlier sweep again in a new sweep folder,
with the same candidates (the pair files in ``SWEEP_DIR/candidates/``), the same prompts (``prompts.jsonl``,
checked against the protocol's sha256), cells, blocks and slot order (``design.order``), so that two sweeps on
two machines differ only in the machines and the servers (a reproduction: compare their cards with
``loadgen diff``). The candidates are checked again against the engine that is installed now."""

from __future__ import annotations

import contextlib
import shutil
import tomllib
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from loadgen.errors import BadInput
from loadgen.profile.pair import Pair
from loadgen.profile.pairfile import load_pair
from loadgen.report.rundir import exclusive_dir, read_protocol
from loadgen.report.runlock import locked
from loadgen.run import flow
from loadgen.run.plan import replay_protocol
from loadgen.run.sweepplan import announce

if TYPE_CHECKING:
    from loadgen.run.sweep import SweepOptions

__all__ = ["replay_sweep"]


def _sweep_name(sweep_dir: Path) -> str:
    """The ``name`` of the sweep file the folder ran (``sweep.toml``), else the folder's parent's name."""
    with contextlib.suppress(OSError, tomllib.TOMLDecodeError):
        return str(tomllib.loads((sweep_dir / "sweep.toml").read_text()).get("name") or sweep_dir.parent.name)
    return sweep_dir.parent.name


def replay_sweep(protocol_file: Path, o: SweepOptions, log: flow.Log) -> Path:
    """Measure the sweep recorded in ``protocol_file`` (a sweep folder's protocol.json) again in a new sweep
    folder under ``o.runs_dir``; returns that folder.

    Raises BadInput (exit 2) when the file is not a sweep's protocol (no ``candidates``; a run folder's is
    repeated by ``loadgen compare --protocol``) or its folder lacks sweep.toml or a candidate's pair file;
    ProfileError when prompts.jsonl no longer matches the recorded sha256."""
    from loadgen.run.sweep import check_candidates, start_measuring  # the sweep flow imports this module

    old = protocol_file.parent
    proto = read_protocol(protocol_file)
    if not proto.candidates or not (old / "sweep.toml").is_file():
        raise BadInput(f"{protocol_file} is not a sweep folder's protocol.json (no candidates or no sweep.toml "
                       "beside it); pass SWEEP_DIR/protocol.json, or repeat a run with `loadgen compare --protocol`")
    first, cells, order = replay_protocol(protocol_file, o.workloads_dir)
    pairs: dict[str, Pair] = {}
    for name in proto.candidates:
        path = old / "candidates" / f"{name}.toml"
        if not path.is_file():
            raise BadInput(f"{path} is missing: the sweep folder {old} is incomplete; restore its candidates/")
        pairs[name] = replace(load_pair(str(path), workloads_dir=o.workloads_dir), overrides=first.overrides)
    attach = {"plain": o.attach_plain} if o.attach_plain else {}
    version, findings = check_candidates(pairs, o, log)
    m = flow.plan_measurement(first, pairs, attach, cells, order)
    announce(m, [o.runs_dir, *o.history_dirs], o.budget_min, log)
    name = _sweep_name(old)
    sweep_dir = exclusive_dir(o.runs_dir / name, "sweep-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"))
    with locked(sweep_dir, log):
        shutil.copyfile(old / "sweep.toml", sweep_dir / "sweep.toml")
        shutil.copytree(old / "candidates", sweep_dir / "candidates")
        log(f"replaying {protocol_file}: {len(m.slots)} slots in the recorded order")
        return start_measuring(sweep_dir, first, pairs, m, (version, findings), o, log)
