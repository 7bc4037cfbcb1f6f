"""The time left of a run (measure/timeleft.py): each slot left at the mean of its own kind measured so far, else
at the mean of every slot; the rate so far for units that run side by side; closed-form values."""

from __future__ import annotations

from loadgen.measure.timeleft import rate_left_s, time_left_s
from loadgen.util.numbers import clock


def test_one_kind_of_slot_is_the_mean_slot_time_times_the_slots_left() -> None:
    measured = [("plain", 10.0), ("plain", 14.0)]
    assert time_left_s(measured, ["plain"] * 5) == 5 * 12.0


def test_each_slot_left_is_weighed_by_its_own_kind_else_by_every_slot() -> None:
    measured = [(("plain", "c1"), 10.0), (("plain", "c4"), 30.0), (("plain", "c4"), 50.0)]
    left = [("plain", "c1"), ("plain", "c4"), ("speculative", "c4")]  # the last kind not measured yet: 30 s
    assert time_left_s(measured, left) == 10.0 + 40.0 + 30.0


def test_nothing_measured_has_no_estimate_and_nothing_left_takes_no_time() -> None:
    assert time_left_s([], ["plain"]) is None
    assert time_left_s([("plain", 3.0)], []) == 0.0


def test_units_side_by_side_are_estimated_at_the_rate_so_far() -> None:
    assert rate_left_s(0, 6, 100.0) is None
    assert rate_left_s(2, 6, 300.0) == 600.0  # 2 done in 300 s: 4 left take 600 s
    assert rate_left_s(6, 6, 900.0) == 0.0


def test_a_time_left_reads_in_seconds_minutes_and_hours() -> None:
    assert [clock(s) for s in (0.4, 45.2, 60, 250, 3599.6, 3900)] == [
        "0 s",
        "45 s",
        "1 min 00 s",
        "4 min 10 s",
        "1 h 00 min",
        "1 h 05 min",
    ]
