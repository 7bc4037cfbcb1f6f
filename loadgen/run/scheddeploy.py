"""``loadgen sweep --deploy-schedule SWEEP_DIR``: measure the per-batch-size K schedule a sweep recommends as it
would be deployed, one server with ``num_speculative_tokens_per_batch_size`` set (vLLM 0.24+), on the same
prompts and cells as the sweep, against plain and the placebo in interleaved blocks; then compare each cell
with what the sweep predicted (report/schedcheck.py).

The new sweep folder (``runs/<sweep>-schedule/sweep-<ts>``) is an ordinary sweep folder whose sweep.toml is
the old one with ``[speculative]`` replaced by the schedule (named ``schedule``; one candidate per distinct
schedule when workloads recommend different ones: ``schedule1``, ``schedule2``...), plus
``schedule-check.json`` / ``schedule-check.md``: per cell the schedule's K, the predicted and the measured
TPOT speedup with their 95% CIs, and whether it did worse than predicted. A schedule can: vLLM issue #49548
reports schedules collapsing at their thresholds."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from loadgen.errors import BadInput
from loadgen.profile.tomlread import read_toml
from loadgen.records.schedule import schedule_sweep_doc
from loadgen.report.schedcheck import WORSE, check_schedule, render_schedule_check, schedule_configs
from loadgen.run import flow
from loadgen.run.plan import replay_protocol
from loadgen.run.sweepplan import announce
from loadgen.run.sweepsetup import SweepOptions, load_candidates, new_sweep_dir, start_new
from loadgen.store.files import read_sweep
from loadgen.store.rundir import write_json, write_text
from loadgen.store.runlock import locked
from loadgen.util import tomlwrite

__all__ = ["deploy_schedule", "write_schedule_check"]

SOURCE_FILE = "schedule-source.json"


def deploy_schedule(sweep_dir: Path, o: SweepOptions, log: flow.Log) -> Path:
    """Measure ``sweep_dir``'s recommended K schedule(s) in a new sweep folder under ``o.runs_dir`` (module
    docstring) and write its schedule check; returns the new folder.

    Raises BadInput (exit 2) when ``sweep_dir`` is no finished sweep folder or recommends no K schedule,
    PairCheckError when the schedule fails ``loadgen check`` for the installed engine, RunFailed (exit 1)
    midway, CriteriaFailed (exit 3) as any sweep (the check is written first)."""
    for needed in ("sweep.json", "sweep.toml", "protocol.json"):
        if not (sweep_dir / needed).is_file():
            raise BadInput(f"{sweep_dir} has no {needed}: pass a finished sweep folder (runs/<pair>/sweep-<ts>)")
    configs = schedule_configs(read_sweep(sweep_dir / "sweep.json"))
    if not configs:
        raise BadInput(
            f"{sweep_dir}/sweep.json recommends no K schedule (no candidate pays at any level, or the "
            "engine has no num_speculative_tokens_per_batch_size): there is nothing to deploy"
        )
    doc, index = schedule_sweep_doc(read_toml(sweep_dir / "sweep.toml"), configs)
    attach = {"plain": o.attach_plain} if o.attach_plain else {}
    with tempfile.TemporaryDirectory() as tmp:
        sweep_file = Path(tmp) / "sweep.toml"
        sweep_file.write_text(tomlwrite.to_toml(doc))
        name, candidates, pairs, version, findings = load_candidates(sweep_file, Path(tmp) / "candidates", o, log)
        first = pairs[candidates[0].name]
        _, cells, _ = replay_protocol(sweep_dir / "protocol.json", o.workloads_dir)
        m = flow.plan_measurement(first, pairs, attach, cells, None, o.metrics)
        announce(m, [o.runs_dir, *o.history_dirs], o.budget_min, log)
        new_dir = new_sweep_dir(o.runs_dir, name, sweep_file, None)
        shutil.copytree(Path(tmp) / "candidates", new_dir / "candidates")
    candidate_of = {w: candidates[i].name for w, i in index.items()}
    write_json(new_dir / SOURCE_FILE, {"sweep_dir": str(sweep_dir), "candidates": candidate_of})
    with locked(new_dir, log):
        log(f"deploying the K schedule of {sweep_dir}: " + ", ".join(f"{w} on {n}" for w, n in candidate_of.items()))
        try:
            return start_new(new_dir, candidates, pairs, attach, (m, version, findings), o, log)
        finally:
            if (new_dir / "sweep.json").is_file():
                write_schedule_check(new_dir, log)


def write_schedule_check(new_dir: Path, log: flow.Log) -> None:
    """Write ``schedule-check.json`` and ``.md`` of the deployed-schedule sweep folder ``new_dir`` (its
    ``schedule-source.json`` names the source sweep) from the two sweep cards; logs how many cells did worse."""
    source = json.loads((new_dir / SOURCE_FILE).read_text())
    old_dir, candidate_of = Path(source["sweep_dir"]), dict(source["candidates"])
    old = read_sweep(old_dir / "sweep.json")
    check = check_schedule(old, read_sweep(new_dir / "sweep.json"), candidate_of, str(old_dir))
    write_json(new_dir / "schedule-check.json", check.to_json())
    write_text(new_dir / "schedule-check.md", render_schedule_check(check, schedule_configs(old)))
    log(
        f"{check.count(WORSE)} of {len(check.cells)} cells did worse than the sweep predicted; schedule check: "
        f"{new_dir / 'schedule-check.md'}"
    )
