"""Strict parsing of a pair file's ``[design]`` table (records/design.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loadgen.errors import ProfileError
from loadgen.records.design import Design, parse_design

PATH = Path("pairs/demo.toml")


def test_a_missing_table_gives_the_defaults() -> None:
    d = parse_design(None, PATH)
    assert (d.blocks, d.placebo, d.co_resident, d.max_blocks) == (3, "server", "auto", 9)


def test_an_empty_table_gives_the_defaults() -> None:
    assert parse_design({}, PATH) == Design(3, "server", "auto", 9)


def test_to_json_lists_every_field() -> None:
    assert parse_design({"blocks": 2, "placebo": "off", "co_resident": False}, PATH).to_json() == {
        "blocks": 2,
        "placebo": "off",
        "co_resident": "no",
        "max_blocks": 6,
        "min_block_requests": 16,
    }


# --- blocks -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("blocks", [1, 2, 5, 100])
def test_blocks_accepts_integers_from_one_to_one_hundred(blocks: int) -> None:
    assert parse_design({"blocks": blocks}, PATH).blocks == blocks


@pytest.mark.parametrize("blocks", [0, -1, 101, 2.0, "3", True, False, None])
def test_blocks_rejects_a_value_that_is_not_an_integer_from_one_to_one_hundred(blocks: Any) -> None:
    with pytest.raises(ProfileError, match=r"\[design\]\.blocks must be an integer from 1 to 100") as err:
        parse_design({"blocks": blocks}, PATH)
    assert str(PATH) in str(err.value)


# --- max_blocks -------------------------------------------------------------------------------------------


def test_max_blocks_defaults_to_three_times_blocks() -> None:
    assert parse_design({"blocks": 1}, PATH).max_blocks == 3
    assert parse_design({"blocks": 5}, PATH).max_blocks == 15
    assert parse_design({"blocks": 33}, PATH).max_blocks == 99


def test_max_blocks_default_is_capped_at_one_hundred() -> None:
    # 3 * 34 = 102 is past the 100-block limit
    assert parse_design({"blocks": 34}, PATH).max_blocks == 100
    assert parse_design({"blocks": 100}, PATH).max_blocks == 100


def test_an_explicit_max_blocks_at_or_above_blocks_is_kept() -> None:
    assert parse_design({"blocks": 4, "max_blocks": 4}, PATH).max_blocks == 4
    assert parse_design({"blocks": 4, "max_blocks": 50}, PATH).max_blocks == 50
    assert parse_design({"max_blocks": 3}, PATH) == Design(3, "server", "auto", 3)


def test_max_blocks_below_blocks_is_an_error_naming_both() -> None:
    with pytest.raises(ProfileError, match=r"\[design\]\.max_blocks = 2 is below blocks = 3"):
        parse_design({"max_blocks": 2}, PATH)
    with pytest.raises(ProfileError, match=r"\[design\]\.max_blocks = 5 is below blocks = 6"):
        parse_design({"blocks": 6, "max_blocks": 5}, PATH)


@pytest.mark.parametrize("most", [0, 101, 4.5, "9", True])
def test_max_blocks_rejects_a_value_that_is_not_an_integer_from_one_to_one_hundred(most: Any) -> None:
    with pytest.raises(ProfileError, match=r"\[design\]\.max_blocks must be an integer from 1 to 100"):
        parse_design({"max_blocks": most}, PATH)


# --- placebo ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("placebo", ["server", "blocks", "off"])
def test_placebo_accepts_server_blocks_and_off(placebo: str) -> None:
    assert parse_design({"placebo": placebo}, PATH).placebo == placebo


@pytest.mark.parametrize("placebo", ["on", "Server", "", False, None, 1])
def test_placebo_rejects_any_other_value(placebo: Any) -> None:
    with pytest.raises(ProfileError, match=r"\[design\]\.placebo must be one of 'server', 'blocks', 'off'"):
        parse_design({"placebo": placebo}, PATH)


# --- co_resident ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "parsed"), [(True, "yes"), (False, "no"), ("auto", "auto")])
def test_co_resident_maps_true_false_and_auto(value: Any, parsed: str) -> None:
    assert parse_design({"co_resident": value}, PATH).co_resident == parsed


@pytest.mark.parametrize("value", ["yes", "no", "true", "Auto", None, [True]])
def test_co_resident_rejects_any_other_value(value: Any) -> None:
    with pytest.raises(ProfileError, match=r"\[design\]\.co_resident must be true, false or \"auto\""):
        parse_design({"co_resident": value}, PATH)


@pytest.mark.parametrize("value", [1, 0, 1.0])
def test_co_resident_rejects_a_number_standing_in_for_a_boolean(value: Any) -> None:
    # module docstring: co_resident is `true`, `false` or "auto"; wrong types exit 2 (ProfileError)
    with pytest.raises(ProfileError, match=r"co_resident"):
        parse_design({"co_resident": value}, PATH)


# --- unknown keys -----------------------------------------------------------------------------------------


def test_an_unknown_key_is_an_error_naming_it_and_the_known_keys() -> None:
    with pytest.raises(
        ProfileError,
        match=r"unknown key 'blocs' in \[design\]; known keys: blocks, placebo, "
        r"co_resident, max_blocks",
    ) as err:
        parse_design({"blocs": 3}, PATH)
    assert str(err.value).startswith(f"{PATH}: ")


def test_the_first_unknown_key_in_sorted_order_is_named() -> None:
    with pytest.raises(ProfileError, match="unknown key 'alpha'"):
        parse_design({"zulu": 1, "blocks": 2, "alpha": 1}, PATH)


def test_warmup_pass_is_a_flag_written_only_when_on(tmp_path: Path) -> None:
    on = parse_design({"warmup_pass": True}, tmp_path / "p.toml")
    assert on.warmup_pass is True and on.to_json()["warmup_pass"] is True
    assert "warmup_pass" not in parse_design({}, tmp_path / "p.toml").to_json()  # protocols of older code alike
    with pytest.raises(ProfileError, match=r"\[design\]\.warmup_pass must be true or false, got 'yes'"):
        parse_design({"warmup_pass": "yes"}, tmp_path / "p.toml")
