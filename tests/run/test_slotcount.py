"""The slot counter of a measuring run (run/slotcount.py): which slot of how many, the time left from the slots
measured (on a fake clock: each c1 slot takes 10 s, each c4 slot 30 s), the total re-planned as sizing adds
blocks and marked as a floor while it may, a resumed run counting the slots done before it; and progress.json
holding what the terminal line says."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from loadgen.run.design import Slot
from loadgen.run.observe import ObserveOptions, Observers
from loadgen.run.slotcount import SlotCount
from tests.support.fakerun import cell

C1, C4 = cell(1, 2, "a"), cell(4, 2, "b")


def _slots(blocks: range, arms: tuple[str, ...] = ("plain", "speculative")) -> list[Slot]:
    return [Slot(a, replace(c, repetition=b)) for c in (C1, C4) for b in blocks for a in arms]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _measure(count: SlotCount, clock: Clock, slots: list[Slot]) -> list[str]:
    """Each slot started and finished on the clock (c1: 10 s, c4: 30 s); the line shown at each start."""
    lines = []
    for s in slots:
        lines.append(count.started(s, f"[{s.arm}] {s.cell.level.label} block {s.cell.repetition}").line())
        clock.now += 10.0 if s.cell.level.label == "c1" else 30.0
        count.finished(s)
    return lines


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr("loadgen.run.slotcount.time.monotonic", fake)
    return fake


def test_the_counter_and_time_left_follow_the_measured_slots(tmp_path: Path, clock: Clock) -> None:
    planned = _slots(range(2))  # 2 cells x 2 blocks x 2 arms = 8 slots
    count = SlotCount(tmp_path, planned, before=0, sizing=False, log=print)
    lines = _measure(count, clock, planned)
    assert lines[0] == "slot 1/8, time left not known yet"
    # after one c1 slot of 10 s: 7 slots left, none of c4 measured yet, each at the mean of every slot (10 s)
    assert lines[1] == "slot 2/8, about 1 min 10 s left"
    # 4 c1 slots of 10 s: the 4 c4 slots left at 10 s each, still unmeasured
    assert lines[4] == "slot 5/8, about 40 s left"
    # one plain c4 slot of 30 s measured: plain's c4 slot left at 30 s, the speculative c4 slots (not measured
    # yet) at the mean of every slot, 70 s / 5
    assert lines[5] == "slot 6/8, about 58 s left"
    saved = json.loads((tmp_path / "progress.json").read_text())
    assert {k: saved[k] for k in ("slots_done", "slots_planned", "sizing", "left_s", "current")} == {
        "slots_done": 8,
        "slots_planned": 8,
        "sizing": False,
        "left_s": 0.0,
        "current": None,
    }


def test_blocks_sizing_adds_grow_the_total_which_reads_as_a_floor_until_sizing_ends(
    tmp_path: Path, clock: Clock
) -> None:
    planned = _slots(range(1))  # 4 slots
    count = SlotCount(tmp_path, planned, before=0, sizing=True, log=print)
    lines = _measure(count, clock, planned)
    # the speculative c4 slot, not measured yet, at the mean of every slot: (10 + 10 + 30) / 3 s
    assert lines[3] == "slot 4/4+, at least 17 s left (sizing may add blocks)"
    more = [Slot("plain", replace(C4, repetition=1)), Slot("speculative", replace(C4, repetition=1))]
    count.expect(more)
    count.expect(more)  # the same blocks expected twice count once
    grown = _measure(count, clock, more)
    assert grown == [
        "slot 5/6+, at least 1 min 00 s left (sizing may add blocks)",
        "slot 6/6+, at least 30 s left (sizing may add blocks)",
    ]
    assert count.sizing_ended().line() == "6/6 slots done"
    saved = json.loads((tmp_path / "progress.json").read_text())
    assert (saved["slots_done"], saved["slots_planned"], saved["sizing"]) == (6, 6, False)


def test_a_resumed_run_counts_the_slots_done_before_it(tmp_path: Path, clock: Clock) -> None:
    left = _slots(range(1, 2))  # block 1 of both cells: 4 slots; block 0 (4 slots) done by an earlier process
    count = SlotCount(tmp_path, left, before=4, sizing=False, log=print)
    lines = _measure(count, clock, left)
    assert lines[0] == "slot 5/8, time left not known yet"
    assert lines[1] == "slot 6/8, about 30 s left"


def test_a_progress_file_that_cannot_be_written_is_one_warning_and_the_count_goes_on(
    tmp_path: Path, clock: Clock
) -> None:
    said: list[str] = []
    count = SlotCount(tmp_path / "gone", _slots(range(1)), before=0, sizing=False, log=said.append)
    lines = _measure(count, clock, _slots(range(1)))
    assert lines[-1] == "slot 4/4, about 17 s left"
    assert len(said) == 1 and said[0].startswith("warning: the progress file is not kept (cannot write progress.json")


def test_the_terminal_progress_line_opens_with_the_slot_counter() -> None:
    observers = Observers("p", ObserveOptions(progress=True), print)
    try:
        observers.slot_started("slot 2/8, about 1 min 10 s left")
        observers.cell_started("[plain] w c1", 4)
        assert observers._progress is not None
        (task,) = observers._progress.tasks
        assert (task.description, task.total) == ("slot 2/8, about 1 min 10 s left: [plain] w c1", 4)
    finally:
        observers.close()
