"""A recommended K schedule measured as deployed, against what its own sweep predicted (``loadgen sweep
--deploy-schedule SWEEP_DIR``, run/scheddeploy.py): pure, from two sweep cards.

The sweep card recommends, per workload, a ``num_speculative_tokens_per_batch_size`` schedule (vLLM 0.24+,
vllm/config/speculative.py: ``[lo, hi, K]`` batch-size ranges, K = 0 turns speculation off; built by
report/sweeprec.py from each level's best paying K). The schedule's server is one configuration, so it can do
worse than the sweep's static servers it was assembled from: vLLM issue #49548 reports schedules collapsing at
their thresholds. Per cell (workload x closed-loop level):

- **K**: the schedule's K at a batch of ``concurrency`` sequences (profile/pair.k_at);
- **predicted**: the sweep's TPOT speedup (and 95% CI) of the candidate of the same family with that K in that
  cell; at K = 0, plain: 1.0 with the cell's A/A noise floor as the band (1.0 when none was measured);
- **measured**: the deployed schedule's speedup and 95% CI in the new sweep's same cell;
- **status**: ``worse than predicted`` when the measured CI lies wholly below the predicted band,
  ``better than predicted`` when wholly above, ``as predicted`` when they overlap, ``not measured`` when either
  side has no figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from loadgen.profile.pair import k_at
from loadgen.records.schedule import DeployedSchedule, ScheduleCell, ScheduleCheck
from loadgen.records.speculative import SCHEDULE_KEY
from loadgen.records.sweep import SweepCard, SweepCell, SweepEntry

__all__ = ["check_schedule", "render_schedule_check", "schedule_configs"]

WORSE, BETTER, AS_PREDICTED, NOT_MEASURED = (
    "worse than predicted",
    "better than predicted",
    "as predicted",
    "not measured",
)


def schedule_configs(card: SweepCard) -> list[DeployedSchedule]:
    """Each workload's recommended K schedule (report/sweeprec.py writes it as ``schedule.config``); workloads
    with none (no candidate pays, or the engine has no schedule field) are left out."""
    out = []
    for w in card.recommendation.workloads:
        config = w.schedule.config if w.schedule else None
        if isinstance(config, Mapping) and config.get(SCHEDULE_KEY):
            out.append(DeployedSchedule(w.workload, config))
    return out


def _status(pred: tuple[float | None, float | None], meas: tuple[float | None, float | None]) -> str:
    (p_low, p_high), (m_low, m_high) = pred, meas
    if p_low is None or p_high is None or m_low is None or m_high is None:
        return NOT_MEASURED
    if m_high < p_low:
        return WORSE
    return BETTER if m_low > p_high else AS_PREDICTED


def _prediction(
    sweep: SweepCard, cell: SweepCell, schedule: DeployedSchedule, k: int
) -> tuple[str, float | None, float | None, float | None]:
    if k == 0:
        floor = cell.noise_floor  # its CI, else the point 1.0
        low = 1.0 if floor is None or floor.ci_low is None else floor.ci_low
        high = 1.0 if floor is None or floor.ci_high is None else floor.ci_high
        return "plain (K = 0)", 1.0, low, high
    mine = DeployedSchedule.family_of(schedule.config)
    family = {c.name for c in sweep.candidates if DeployedSchedule.family_of(c.speculative_config) == mine}
    entry: SweepEntry | None = next((e for e in cell.entries if e.candidate in family and e.k == k), None)
    if entry is None:
        return f"no candidate of K = {k} in this cell", None, None, None
    return entry.candidate, entry.speedup, entry.speedup_ci_low, entry.speedup_ci_high


def check_schedule(
    sweep: SweepCard, deployed: SweepCard, candidate_of: Mapping[str, str], sweep_dir: str = ""
) -> ScheduleCheck:
    """Every closed-loop cell of ``sweep`` whose workload has a deployed schedule: ``candidate_of`` maps a
    workload to the deployed sweep's candidate serving its schedule (run/scheddeploy.py); ``sweep_dir`` names
    the source sweep folder in the result."""
    schedules = {s.workload: s for s in schedule_configs(sweep)}
    out: list[ScheduleCell] = []
    for cell in sweep.cells:
        name = candidate_of.get(cell.workload)
        if name is None or cell.concurrency is None or cell.rate_rps is not None:
            continue
        k = k_at(schedules[cell.workload].speculative, cell.concurrency)
        source, pred, p_low, p_high = _prediction(sweep, cell, schedules[cell.workload], k)
        mine = next((c for c in deployed.cells if (c.workload, c.level) == (cell.workload, cell.level)), None)
        entry = next((e for e in mine.entries if e.candidate == name), None) if mine else None
        m = (entry.speedup, entry.speedup_ci_low, entry.speedup_ci_high) if entry else (None, None, None)
        out.append(
            ScheduleCell(
                cell.workload,
                cell.level,
                cell.concurrency,
                k,
                source,
                pred,
                p_low,
                p_high,
                *m,
                _status((p_low, p_high), m[1:]),
            )
        )
    return ScheduleCheck(sweep_dir, dict(candidate_of), tuple(out))


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _band(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def render_schedule_check(check: ScheduleCheck, schedules: Sequence[DeployedSchedule]) -> str:
    """``schedule-check.md``: a line per workload's deployed ``--speculative-config``, the count of cells that
    did worse than predicted, and one table row per cell."""
    worse = [c for c in check.cells if c.status == WORSE]
    lines = [f"# The K schedule as deployed, against its sweep ({check.sweep_dir})", ""]
    lines += [f"- {s.workload}: `--speculative-config '{s.text}'`" for s in schedules]
    lines += [
        "",
        f"{len(worse)} of {len(check.cells)} cells did worse than the sweep predicted"
        + (": " + ", ".join(f"{c.workload} {c.level} (K = {c.k})" for c in worse) if worse else "")
        + " (measured 95% CI wholly below the predicted one; vLLM issue #49548 reports schedules "
        "collapsing at their thresholds).",
        "",
        "| workload | level | K | predicted from | predicted | 95% CI | measured | 95% CI | status |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {c.workload} | {c.level} | {c.k} | {c.predicted_from} | {_num(c.predicted)} | "
        f"{_band(c.predicted_low, c.predicted_high)} | {_num(c.measured)} | "
        f"{_band(c.measured_low, c.measured_high)} | {c.status} |"
        for c in check.cells
    ]
    return "\n".join(lines) + "\n"
