"""The balanced order of arms over blocks, its phases and server starts, and its replay (run/design.py)."""

from __future__ import annotations

import pytest

from loadgen.profile.cells import PLACEBO, PLAIN, CellKey, CellSpec
from loadgen.profile.pair import Level
from loadgen.profile.workload import Prompt
from loadgen.run.design import (
    Slot,
    arms,
    balanced_order,
    block_order,
    next_blocks,
    phases,
    replay_order,
    server_starts,
)

SPEC = "speculative"


def cell(concurrency: int, block: int, workload: str = "w") -> CellSpec:
    """Block ``block`` of a closed-loop cell at ``concurrency`` (built as tests/support/fakerun.py ``cell`` does)."""
    prompts = tuple(
        Prompt(f"{workload}-c{concurrency}-b{block}-{i}", workload, "completions", f"p{i}", None, 2) for i in range(2)
    )
    return CellSpec(workload, "completions", Level(concurrency), block, prompts[:1], prompts[1:], (), None)


def plan(levels: tuple[int, ...], blocks: int) -> list[CellSpec]:
    """Every block of every level, in plan order (level after level)."""
    return [cell(c, b) for c in levels for b in range(blocks)]


def names(slots: list[Slot]) -> list[tuple[str, str, int]]:
    """(arm, level label, block) of each slot."""
    return [(s.arm, s.cell.level.label, s.cell.repetition) for s in slots]


def one_server_each(arm: str) -> str:
    return arm


def placebo_on_plain(arm: str) -> str:
    return PLAIN if arm == PLACEBO else arm


# --- block_order and arms ---------------------------------------------------------------------------------


def test_two_arms_alternate_ab_ba_ba_ab() -> None:
    assert [block_order("AB", b) for b in range(4)] == [list("AB"), list("BA"), list("BA"), list("AB")]


def test_two_arms_repeat_the_abba_pattern_every_four_blocks() -> None:
    assert [block_order("AB", b) for b in range(4, 8)] == [block_order("AB", b) for b in range(4)]


def test_three_arms_go_abc_cba_bca_acb() -> None:
    assert ["".join(block_order("ABC", b)) for b in range(4)] == ["ABC", "CBA", "BCA", "ACB"]


def test_three_arms_continue_the_rotation_cab_bac_then_wrap() -> None:
    # block 4: rotated by 2 -> CAB; block 5: CAB reversed -> BAC; block 6: rotated by 3 = 0 -> ABC
    assert ["".join(block_order("ABC", b)) for b in (4, 5, 6)] == ["CAB", "BAC", "ABC"]


@pytest.mark.parametrize("arm_list", ["AB", "ABC", "ABCD"])
def test_every_arm_has_the_same_mean_position_over_each_pair_of_blocks(arm_list: str) -> None:
    for first in range(0, 8, 2):
        totals = {
            a: block_order(arm_list, first).index(a) + block_order(arm_list, first + 1).index(a) for a in arm_list
        }
        assert set(totals.values()) == {len(arm_list) - 1}


def test_block_order_of_one_arm_is_that_arm_and_of_none_is_empty() -> None:
    assert [block_order(["A"], b) for b in range(3)] == [["A"], ["A"], ["A"]]
    assert block_order([], 0) == []
    assert block_order([], 3) == []


def test_arms_put_plain_then_the_placebo_then_the_speculative_arms() -> None:
    assert arms(["k1", "k2"], "server") == (PLAIN, PLACEBO, "k1", "k2")
    assert arms([SPEC], "blocks") == (PLAIN, PLACEBO, SPEC)


def test_arms_leave_out_the_placebo_when_it_is_off() -> None:
    assert arms([SPEC], "off") == (PLAIN, SPEC)
    assert arms([], "off") == (PLAIN,)


# --- balanced_order ---------------------------------------------------------------------------------------


def test_co_resident_order_runs_cell_after_cell_and_block_after_block() -> None:
    order = balanced_order(plan((1, 4), 2), [PLAIN, SPEC], co_resident=True)
    assert names(order) == [
        (PLAIN, "c1", 0),
        (SPEC, "c1", 0),
        (SPEC, "c1", 1),
        (PLAIN, "c1", 1),
        (PLAIN, "c4", 0),
        (SPEC, "c4", 0),
        (SPEC, "c4", 1),
        (PLAIN, "c4", 1),
    ]


def test_one_server_at_a_time_runs_round_by_round_arm_after_arm_over_every_cell() -> None:
    order = balanced_order(plan((1, 4), 2), [PLAIN, SPEC], co_resident=False)
    assert names(order) == [
        (PLAIN, "c1", 0),
        (PLAIN, "c4", 0),
        (SPEC, "c1", 0),
        (SPEC, "c4", 0),
        (SPEC, "c1", 1),
        (SPEC, "c4", 1),
        (PLAIN, "c1", 1),
        (PLAIN, "c4", 1),
    ]


@pytest.mark.parametrize("co_resident", [True, False])
def test_balanced_order_measures_every_arm_on_every_block_exactly_once(co_resident: bool) -> None:
    cells = plan((1, 2, 8), 3)
    arm_list = [PLAIN, PLACEBO, SPEC]
    order = balanced_order(cells, arm_list, co_resident)
    assert len(order) == len(cells) * len(arm_list)
    assert sorted(names(order)) == sorted((a, c.level.label, c.repetition) for c in cells for a in arm_list)


def test_co_resident_order_sorts_each_cells_blocks_and_keeps_cells_in_first_seen_order() -> None:
    shuffled = [cell(4, 1), cell(1, 0), cell(4, 0)]
    order = balanced_order(shuffled, [PLAIN, SPEC], co_resident=True)
    assert names(order) == [
        (PLAIN, "c4", 0),
        (SPEC, "c4", 0),
        (SPEC, "c4", 1),
        (PLAIN, "c4", 1),
        (PLAIN, "c1", 0),
        (SPEC, "c1", 0),
    ]


def test_balanced_order_of_no_cells_is_empty() -> None:
    assert balanced_order([], [PLAIN, SPEC], co_resident=True) == []
    assert balanced_order([], [PLAIN, SPEC], co_resident=False) == []


def test_slot_to_json_lists_arm_workload_level_and_block() -> None:
    assert Slot(SPEC, cell(4, 2, workload="chat")).to_json() == [SPEC, "chat", "c4", 2]


# --- phases and server_starts -----------------------------------------------------------------------------


def test_one_server_at_a_time_with_two_arms_gives_three_phases() -> None:
    order = balanced_order(plan((1, 4), 2), [PLAIN, SPEC], co_resident=False)
    cut = phases(order, one_server_each)
    # round 0: plain, spec; round 1: spec, plain -> the two spec phases merge
    assert [(server, len(slots)) for server, slots in cut] == [(PLAIN, 2), (SPEC, 4), (PLAIN, 2)]
    assert [s for _, slots in cut for s in slots] == order


def test_placebo_blocks_on_the_plain_server_merge_with_plains_phases() -> None:
    order = balanced_order(plan((1,), 2), [PLAIN, PLACEBO, SPEC], co_resident=False)
    # round 0: plain placebo spec; round 1: spec placebo plain -> plain+placebo | spec spec | placebo+plain
    cut = phases(order, placebo_on_plain)
    assert [(server, [s.arm for s in slots]) for server, slots in cut] == [
        (PLAIN, [PLAIN, PLACEBO]),
        (SPEC, [SPEC, SPEC]),
        (PLAIN, [PLACEBO, PLAIN]),
    ]


def test_phases_of_no_slots_is_empty() -> None:
    assert phases([], one_server_each) == []


def test_one_server_at_a_time_starts_one_server_per_phase() -> None:
    order = balanced_order(plan((1, 4), 2), [PLAIN, SPEC], co_resident=False)
    assert server_starts(order, one_server_each, co_resident=False) == 3


def test_one_server_at_a_time_starts_nothing_for_an_attached_servers_phases() -> None:
    order = balanced_order(plan((1, 4), 2), [PLAIN, SPEC], co_resident=False)
    assert server_starts(order, one_server_each, co_resident=False, attached=frozenset({PLAIN})) == 1
    assert server_starts(order, one_server_each, co_resident=False, attached=frozenset({PLAIN, SPEC})) == 0


def test_co_resident_starts_each_launched_server_once() -> None:
    order = balanced_order(plan((1, 4), 3), [PLAIN, PLACEBO, SPEC], co_resident=True)
    assert server_starts(order, one_server_each, co_resident=True) == 3
    assert server_starts(order, placebo_on_plain, co_resident=True) == 2
    assert server_starts(order, one_server_each, co_resident=True, attached=frozenset({PLAIN})) == 2
    assert server_starts(order, one_server_each, co_resident=True, attached=frozenset({PLAIN, PLACEBO, SPEC})) == 0


def test_no_slots_start_no_server() -> None:
    assert server_starts([], one_server_each, co_resident=True) == 0
    assert server_starts([], one_server_each, co_resident=False) == 0


# --- replay_order -----------------------------------------------------------------------------------------


def test_replay_order_rebuilds_the_slots_from_their_json() -> None:
    cells = plan((1, 4), 2)
    order = balanced_order(cells, [PLAIN, PLACEBO, SPEC], co_resident=False)
    assert replay_order([s.to_json() for s in order], cells) == order


def test_replay_order_accepts_a_block_index_written_as_text() -> None:
    cells = plan((4,), 2)
    assert replay_order([[SPEC, "w", "c4", "1"]], cells) == [Slot(SPEC, cells[1])]


def test_replay_order_raises_keyerror_for_an_unplanned_block() -> None:
    with pytest.raises(KeyError):
        replay_order([[PLAIN, "w", "c4", 5]], plan((4,), 2))


def test_replay_order_raises_keyerror_for_an_unplanned_level() -> None:
    with pytest.raises(KeyError):
        replay_order([[PLAIN, "w", "c8", 0]], plan((4,), 2))


# --- next_blocks ------------------------------------------------------------------------------------------


def test_next_blocks_co_resident_takes_the_next_planned_block_of_each_wanted_cell() -> None:
    planned = plan((1, 4), 3)
    arm_list = [PLAIN, PLACEBO, "k1", "k2"]
    wanted = {CellKey("w", "c1"): [PLAIN, PLACEBO, "k1"], CellKey("w", "c4"): [PLAIN, PLACEBO, "k2"]}
    done = {CellKey("w", "c1"): 1, CellKey("w", "c4"): 2}
    # c1 gets block 1: base order reversed (k2 k1 placebo plain), k2 left out;
    # c4 gets block 2: base order rotated by 1 (placebo k1 k2 plain), k1 left out
    assert names(next_blocks(planned, done, wanted, arm_list, co_resident=True)) == [
        ("k1", "c1", 1),
        (PLACEBO, "c1", 1),
        (PLAIN, "c1", 1),
        (PLACEBO, "c4", 2),
        ("k2", "c4", 2),
        (PLAIN, "c4", 2),
    ]


def test_next_blocks_one_server_at_a_time_is_one_round_in_the_earliest_blocks_order() -> None:
    planned = plan((1, 4), 3)
    arm_list = [PLAIN, PLACEBO, "k1", "k2"]
    wanted = {CellKey("w", "c1"): [PLAIN, PLACEBO, "k1"], CellKey("w", "c4"): [PLAIN, PLACEBO, "k2"]}
    done = {CellKey("w", "c1"): 1, CellKey("w", "c4"): 2}
    # the turn is block 1's: k2 k1 placebo plain, each over every cell that wants that arm
    assert names(next_blocks(planned, done, wanted, arm_list, co_resident=False)) == [
        ("k2", "c4", 2),
        ("k1", "c1", 1),
        (PLACEBO, "c1", 1),
        (PLACEBO, "c4", 2),
        (PLAIN, "c1", 1),
        (PLAIN, "c4", 2),
    ]


def test_next_blocks_starts_at_block_zero_for_a_cell_not_yet_measured() -> None:
    planned = plan((4,), 2)
    got = next_blocks(planned, {}, {CellKey("w", "c4"): [PLAIN, SPEC]}, [PLAIN, SPEC], co_resident=True)
    assert names(got) == [(PLAIN, "c4", 0), (SPEC, "c4", 0)]


def test_next_blocks_gives_none_for_a_cell_whose_planned_blocks_are_used_up() -> None:
    planned = plan((1, 4), 2)
    wanted = {CellKey("w", "c1"): [PLAIN, SPEC], CellKey("w", "c4"): [PLAIN, SPEC]}
    done = {CellKey("w", "c1"): 2, CellKey("w", "c4"): 1}
    for co_resident in (True, False):
        got = next_blocks(planned, done, wanted, [PLAIN, SPEC], co_resident)
        assert names(got) == [(SPEC, "c4", 1), (PLAIN, "c4", 1)]


def test_next_blocks_is_empty_when_no_cell_wants_an_arm() -> None:
    planned = plan((1,), 3)
    assert next_blocks(planned, {}, {}, [PLAIN, SPEC], co_resident=True) == []
    assert next_blocks(planned, {}, {CellKey("w", "c1"): []}, [PLAIN, SPEC], co_resident=False) == []
    assert (
        next_blocks(planned, {CellKey("w", "c1"): 3}, {CellKey("w", "c1"): [PLAIN]}, [PLAIN, SPEC], co_resident=False)
        == []
    )
