"""report/schedcheck.py: a deployed K schedule against its sweep's prediction, cell by cell, from records with
known figures (K per level from the schedule's ranges, the prediction from the same family's entry of that K,
plain's A/A band at K = 0, and the three statuses at the CI boundaries)."""

from __future__ import annotations

import pytest

from loadgen.records.cardcell import Ratio
from loadgen.records.schedule import DeployedSchedule
from loadgen.records.sweep import (
    KSchedule,
    Recommendation,
    SweepCandidate,
    SweepCard,
    SweepCell,
    SweepEntry,
    WorkloadChoice,
)
from loadgen.report.schedcheck import AS_PREDICTED, BETTER, NOT_MEASURED, WORSE, check_schedule, schedule_configs
from loadgen.report.schedcheck import render_schedule_check as render

NGRAM = {"method": "ngram_gpu", "prompt_lookup_min": 2, "prompt_lookup_max": 4}
DRAFT = {"method": "draft_model", "model": "d"}
SCHEDULE = {
    **NGRAM,
    "num_speculative_tokens": 4,
    "num_speculative_tokens_per_batch_size": [[1, 4, 4], [5, 16, 2], [17, 128, 0]],
}


def _entry(name: str, k: int, speedup: float, half: float) -> SweepEntry:
    return SweepEntry(
        candidate=name, k=k, speedup=speedup, speedup_ci_low=speedup - half, speedup_ci_high=speedup + half
    )


def _card(cells: list[SweepCell], schedule: dict | None) -> SweepCard:
    candidates = [
        SweepCandidate(name="ngram-k2", speculative_config={**NGRAM, "num_speculative_tokens": 2}, k=2),
        SweepCandidate(name="ngram-k4", speculative_config={**NGRAM, "num_speculative_tokens": 4}, k=4),
        SweepCandidate(name="draft-k4", speculative_config={**DRAFT, "num_speculative_tokens": 4}, k=4),
    ]
    choice = WorkloadChoice(workload="short", schedule=KSchedule(line="", supported=True, config=schedule))
    return SweepCard(
        pair="p",
        primary_metric="tpot_p50",
        candidates=candidates,
        cells=cells,
        recommendation=Recommendation(lines=[], workloads=[choice]),
    )


def _sweep() -> SweepCard:
    floor = Ratio(1.0, 0.98, 1.03)
    cells = [
        SweepCell(
            workload="short",
            level=f"c{c}",
            concurrency=c,
            noise_floor=floor,
            entries=[
                _entry("ngram-k2", 2, s2, 0.05),
                _entry("ngram-k4", 4, s4, 0.05),
                _entry("draft-k4", 4, 9.0, 0.05),
            ],
        )
        for c, s2, s4 in ((1, 1.4, 1.8), (16, 1.2, 1.1), (64, 0.8, 0.6))
    ]
    return _card(cells, SCHEDULE)


def _deployed(measured: dict[int, float]) -> SweepCard:
    cells = [
        SweepCell(workload="short", level=f"c{c}", concurrency=c, entries=[_entry("schedule-k4", 4, s, 0.04)])
        for c, s in measured.items()
    ]
    return _card(cells, None)


def test_each_cell_is_predicted_from_the_same_family_at_the_scheduled_k() -> None:
    cells = check_schedule(_sweep(), _deployed({1: 1.79, 16: 0.9, 64: 1.2}), {"short": "schedule-k4"}).cells
    assert [(c.level, c.k, c.predicted_from) for c in cells] == [
        ("c1", 4, "ngram-k4"),
        ("c16", 2, "ngram-k2"),
        ("c64", 0, "plain (K = 0)"),
    ]  # never the draft's 9.0
    c1, c16, c64 = cells
    assert (c1.predicted, c1.predicted_low, c1.predicted_high) == pytest.approx((1.8, 1.75, 1.85))
    assert c1.status == AS_PREDICTED  # [1.75, 1.83] overlaps [1.75, 1.85]
    assert c16.status == WORSE  # 0.94 < 1.15: the schedule collapsed at its threshold
    assert (c64.predicted, c64.predicted_low, c64.predicted_high) == (1.0, 0.98, 1.03)
    assert c64.status == BETTER  # 1.16 > 1.03


def test_a_cell_the_deployed_sweep_lacks_is_not_measured_and_the_files_say_so() -> None:
    check = check_schedule(_sweep(), _deployed({1: 1.0}), {"short": "schedule-k4"}, "runs/x/sweep-1")
    assert [c.status for c in check.cells] == [WORSE, NOT_MEASURED, NOT_MEASURED]
    assert check.count(WORSE) == 1 and check.count(BETTER) == 0
    doc = check.to_json()
    assert doc["schema"] == "loadgen.schedule-check/1" and doc["sweep_dir"] == "runs/x/sweep-1"
    assert doc["candidates"] == {"short": "schedule-k4"} and doc["cells"][1]["measured"] is None
    md = render(check, schedule_configs(_sweep()))
    assert "1 of 3 cells did worse than the sweep predicted: short c1 (K = 4)" in md
    assert "- short: `--speculative-config '" + DeployedSchedule("short", SCHEDULE).text + "'`" in md
    row = "| short | c1 | 4 | ngram-k4 | 1.800 | [1.750, 1.850] | 1.000 | [0.960, 1.040] | worse than predicted |"
    assert row in md
    assert "| short | c16 | 2 | ngram-k2 | 1.200 | [1.150, 1.250] | - | - | not measured |" in md


def test_only_workloads_with_a_schedule_are_deployed() -> None:
    assert schedule_configs(_sweep()) == [DeployedSchedule("short", SCHEDULE)]
    assert schedule_configs(_card([], None)) == []
    assert check_schedule(_sweep(), _deployed({1: 1.8}), {}).cells == ()
