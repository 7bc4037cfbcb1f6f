"""records/launchtable.py: a pair document's launch tables, read leniently for `loadgen pairs`."""

from __future__ import annotations

from pathlib import Path

from loadgen.profile.tomlread import read_toml
from loadgen.records.launchtable import LaunchTable


def test_the_engine_table_comes_first_then_each_role_in_file_order() -> None:
    doc = {
        "engine": {"args": ["--device", "cpu", 3], "env": {"VLLM_CPU_KVCACHE_SPACE": "1"}},
        "servers": {"plain": {"env": {"CUDA_VISIBLE_DEVICES": "0"}}, "speculative": {"args": ["-tp", "2"]}},
    }
    assert LaunchTable.all_of(doc) == [
        LaunchTable(("--device", "cpu", "3"), ("VLLM_CPU_KVCACHE_SPACE",)),
        LaunchTable((), ("CUDA_VISIBLE_DEVICES",)),
        LaunchTable(("-tp", "2"), ()),
    ]


def test_values_of_another_kind_read_as_empty_and_non_tables_are_skipped() -> None:
    doc = {"engine": {"args": "--device cpu", "env": ["X"]}, "servers": {"plain": "fast", "placebo": {}}}
    assert LaunchTable.all_of(doc) == [LaunchTable(), LaunchTable()]
    assert LaunchTable.all_of({"servers": "none"}) == [] and LaunchTable.all_of({}) == []


def test_a_shipped_cpu_pair_names_its_cpu_settings() -> None:
    (engine, *_) = LaunchTable.all_of(read_toml(Path("profiles/pairs/demo-cpu.toml")))
    assert engine.args[:2] == ("--dtype", "float32") and engine.env_names[0] == "VLLM_CPU_KVCACHE_SPACE"
