"""profile/cells.py: which arms speculate, and a block's prefix-cache salt (distinct per arm, level and block,
without the characters vLLM refuses, at most 128 characters)."""

from __future__ import annotations

import pytest

from loadgen.profile.cells import PLACEBO, PLAIN, PLAIN_ARMS, CellKey, CellSpec, speculates
from loadgen.profile.pair import Level


@pytest.mark.parametrize(
    ("role", "on"), [(PLAIN, False), (PLACEBO, False), ("speculative", True), ("k3", True), ("", True)]
)
def test_every_arm_but_the_plain_ones_speculates(role: str, on: bool) -> None:
    assert speculates(role) is on
    assert PLAIN_ARMS == ("plain", "placebo")


def test_the_salt_names_the_arm_the_cell_and_the_block() -> None:
    cell = CellSpec("short", "completions", Level(4), repetition=2)
    assert cell.on("plain").cache_salt == "loadgen-plain-short-c4-b2"
    salts = {cell.on(r).cache_salt for r in ("plain", "placebo", "speculative")}
    salts |= {
        CellSpec("short", "completions", Level(4, 1.5), 2).on("plain").cache_salt,
        CellSpec("short", "completions", Level(4), 3).on("plain").cache_salt,
    }
    assert len(salts) == 5


def test_the_salt_has_no_character_vllm_refuses_and_is_cut_at_128() -> None:
    cell = CellSpec("ctx@512/a\\b", "chat", Level(8, 2.5)).on("cand@k/2")
    assert cell.cache_salt == "loadgen-cand_k_2-ctx_512_a_b-r2.5-b0"
    long = CellSpec("w" * 200, "chat", Level(1)).on("plain")
    assert len(long.cache_salt) == 128 and long.cache_salt.startswith("loadgen-plain-www")


def test_a_key_from_a_card_line_with_an_empty_level_and_no_concurrency_is_c0() -> None:
    assert CellKey.named("w", None, None) == CellKey("w", "c0")
    assert CellKey.named("w", None, 2.9) == CellKey("w", "c2")  # a float concurrency is truncated
    assert CellSpec("w", "chat", Level(16, 3.0)).concurrency == 16
