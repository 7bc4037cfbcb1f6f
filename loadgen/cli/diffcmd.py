"""``loadgen diff RUN_A RUN_B``: the regression gate between two run folders, or two sweep folders candidate by
candidate (report/diffing.py has the rules); exit 3 (CriteriaFailed) on any regression, 2 on bad input.

``--max-regression`` takes a tolerance as a percentage (``5%``) or a fraction (``0.05``; its click type:
cli/paramtypes.Tolerance): the candidate regressed where its whole 95% CI lies beyond the baseline's ratio
worsened by that much, instead of beyond the baseline's CI.
"""

from __future__ import annotations

from pathlib import Path

import click

from loadgen.errors import BadInput, CriteriaFailed
from loadgen.records.card import PairCard
from loadgen.report.diffing import Diff, diff_cards, prefixed
from loadgen.store.refused import read_refusal
from loadgen.store.rundir import read_json
from loadgen.store.runlock import probe


def _card(run_dir: Path, baseline: bool = True) -> PairCard:
    """The card.json of a run folder (``baseline``: RUN_A, else the candidate RUN_B). Raises BadInput naming the
    folder (or the file and its field) and the fix: a baseline refused before measuring, a folder being measured
    now, one without a card; CriteriaFailed (exit 3: nothing of the baseline was measured again) for a candidate
    refused before measuring."""
    if (refusal := read_refusal(run_dir)) is not None:
        if not baseline:
            raise CriteriaFailed(
                f"{run_dir} was refused before measuring ({refusal.reason}): nothing was measured, so every "
                f"cell of the baseline is lost; fix that and run `loadgen compare --resume {run_dir}`, then diff again"
            )
        raise BadInput(
            f"the baseline {run_dir} was refused before measuring ({refusal.reason}) and has no card; diff against "
            f"a measured run, or fix that and run `loadgen compare --resume {run_dir}` first"
        )
    if not (run_dir / "card.json").is_file():
        held, holder = probe(run_dir)
        if held:
            who = f"process {holder.pid}" if holder else "a process"
            raise BadInput(f"{run_dir} is being measured now by {who} and has no card yet; diff it once that run ends")
        raise BadInput(
            f"{run_dir} holds no card.json; pass run folders or sweep folders "
            f"(`loadgen report {run_dir}` writes the card of a run folder that has its data)"
        )
    return PairCard.from_json(read_json(run_dir / "card.json"), source=str(run_dir / "card.json"))


def _is_sweep(folder: Path) -> bool:
    return (folder / "sweep.toml").is_file()


def _candidates(sweep_dir: Path) -> dict[str, Path]:
    """Candidate name -> its run folder, from sweep.json (``candidates[].name`` / ``folder``)."""
    if not (sweep_dir / "sweep.json").is_file():
        raise BadInput(f"{sweep_dir} holds no sweep.json; run `loadgen report {sweep_dir}` to write it")
    sweep = read_json(sweep_dir / "sweep.json")
    listed = sweep.get("candidates") if isinstance(sweep, dict) else None
    if not isinstance(listed, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in listed):
        raise BadInput(
            f"{sweep_dir / 'sweep.json'} lists no candidates; run `loadgen report {sweep_dir}` to write it again"
        )
    return {c["name"]: sweep_dir / str(c.get("folder") or c["name"]) for c in listed}


def _diff_sweeps(sweep_a: Path, sweep_b: Path, tolerance: float | None) -> Diff:
    """Each candidate of the baseline sweep against the same candidate of the other (a candidate the baseline
    measured and the other lacks is a regression; one only in the other is listed, not judged)."""
    a, b = _candidates(sweep_a), _candidates(sweep_b)
    measured = {n: d for n, d in a.items() if (d / "card.json").is_file()}
    diffs = {
        n: diff_cards(_card(d), _card(b[n], False), tolerance)
        for n, d in measured.items()
        if n in b and (b[n] / "card.json").is_file()
    }
    missing = [n for n in measured if n not in diffs]
    only_b = [n for n in b if n not in a]
    out = prefixed(diffs, missing)
    return Diff(out.lines + tuple(f"[{n}] only in the candidate sweep" for n in only_b), out.regressions)


def run_diff(run_a: Path, run_b: Path, tolerance: float | None) -> None:
    """Print the diff of RUN_B against RUN_A (both run folders or both sweep folders); raise CriteriaFailed
    (exit 3) naming every regression, BadInput (exit 2) for a folder that is neither or a mixed pair."""
    sweeps = (_is_sweep(run_a), _is_sweep(run_b))
    if sweeps[0] != sweeps[1]:
        sweep, run = (run_a, run_b) if sweeps[0] else (run_b, run_a)
        raise BadInput(
            f"{sweep} is a sweep folder and {run} a run folder; diff two run folders, two sweep folders, "
            f"or a candidate's folder of the sweep ({sweep}/<candidate>) with the run folder"
        )
    result = (
        _diff_sweeps(run_a, run_b, tolerance) if sweeps[0] else diff_cards(_card(run_a), _card(run_b, False), tolerance)
    )
    for line in result.lines:
        click.echo(line)
    for line in result.regressions:
        click.echo(f"REGRESSION {line}")
    if result.regressed:
        raise CriteriaFailed(
            f"{run_b} regressed against {run_a}: {len(result.regressions)} regression(s), first: "
            f"{result.regressions[0]}"
        )
