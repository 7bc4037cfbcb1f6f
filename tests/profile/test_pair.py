"""Strict loading of pair and workload profiles."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.pairfile import available_pairs, load_pair, resolve_pair_path


def test_embedded_pairs_load() -> None:
    pair = load_pair("demo-cpu")
    assert pair.method == "draft_model"
    assert pair.num_speculative_tokens == 2
    assert pair.draft is not None and pair.draft.model.endswith("smollm2-135m-draft")
    assert pair.concurrency == (1, 2, 4)
    assert [w.kind for w in pair.workloads] == ["short-homogeneous", "long-diverse"]
    assert pair.sampling.temperature == 0.0 and pair.sampling.ignore_eos
    ngram = load_pair("demo-cpu-ngram")
    assert ngram.method == "ngram" and ngram.draft is None
    assert ngram.speculative.prompt_lookup_max == 4
    assert {"demo-cpu", "demo-cpu-ngram"} <= set(available_pairs())


def test_stop_rule() -> None:
    stop = load_pair("demo-cpu").stop
    # min_requests = 4, rounds = 1 (per block): max(4, 1 x concurrency)
    assert [stop.measured_requests(c) for c in (1, 2, 4, 16)] == [4, 4, 4, 16]


def _write(tmp_path: Path, text: str) -> Path:
    src = Path("profiles/pairs/demo-cpu.toml").read_text()
    path = tmp_path / "p.toml"
    path.write_text(text + src)
    return path


def test_unknown_top_level_key(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="unknown key 'colour' in top level"):
        load_pair(str(_write(tmp_path, '\ncolour = "red"\n')))


def test_unknown_key_in_table(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    text = Path("profiles/pairs/demo-cpu.toml").read_text()
    path.write_text(text.replace("[sampling]", "[sampling]\ntemprature = 0.5"))
    with pytest.raises(ProfileError, match=r"unknown key 'temprature' in \[sampling\]"):
        load_pair(str(path))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "[target]",
            "[targt]",
            "missing table [target]; add it (see profiles/README.md); the file has 'targt' there: "
            "did you mean 'target'?",
        ),
        (
            "[target]\nmodel",
            "[target]\nmodle",
            "missing key [target].model; add it (see profiles/README.md); the file "
            "has 'modle' there: did you mean 'model'?",
        ),
        (
            "[sampling]\ntemperature",
            "[sampling]\ntemprature",
            "unknown key 'temprature' in [sampling]; known keys: "
            "frequency_penalty, ignore_eos, min_p, presence_penalty, repetition_penalty, seed, temperature, top_k, "
            "top_p (see profiles/README.md); did you mean 'temperature'?",
        ),
    ],
)
def test_a_typo_in_a_key_or_table_is_named_with_did_you_mean(tmp_path: Path, old: str, new: str, message: str) -> None:
    """A misspelled table or key read as "missing table [target]; add it" while the file had [targt]."""
    path = tmp_path / "p.toml"
    text = Path("profiles/pairs/demo-cpu.toml").read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ProfileError) as err:
        load_pair(str(path))
    assert str(err.value) == f"{path}: {message}"


def test_unknown_speculative_key(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    text = Path("profiles/pairs/demo-cpu.toml").read_text()
    text = text.replace("[speculative]", "[speculative]\nspeculative_model = 'x'")
    path.write_text(text)
    with pytest.raises(ProfileError, match="speculative_model.*not a field of vLLM's speculative config"):
        load_pair(str(path))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("concurrency = [1, 2, 4]", "concurrency = [1, 0]", r"concurrency\[1\] must be an integer >= 1 and"),
        ("concurrency = [1, 2, 4]", 'concurrency = "4"', "list of positive integers"),
        ("num_speculative_tokens = 2", "num_speculative_tokens = true", "must be an integer >= 1"),
        ("port = 8310", "port = -1", r"port must be an integer >= 1 and <= 65,535"),
        ('workloads = ["short-homogeneous", "long-diverse"]', 'workloads = ["nope"]', "unknown workload 'nope'"),
        ("temperature = 0.0", 'temperature = "hot"', "temperature must be a number"),
    ],
)
def test_bad_values(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = tmp_path / "p.toml"
    text = Path("profiles/pairs/demo-cpu.toml").read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    with pytest.raises(ProfileError, match=message):
        load_pair(str(path))


def test_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("name = [unclosed\n")
    with pytest.raises(ProfileError, match="not valid TOML"):
        load_pair(str(path))


def test_unknown_pair_lists_available() -> None:
    with pytest.raises(ProfileError, match="available pairs: .*demo-cpu"):
        resolve_pair_path("no-such-pair")


def test_read_timeout_is_a_stop_key_with_a_default_from_the_declared_limits(tmp_path: Path) -> None:
    from loadgen.profile.timeouts import read_timeout_s

    text = Path("profiles/pairs/demo-cpu.toml").read_text()
    pair = load_pair("demo-cpu")  # [slo] ttft_s = 1.0, tpot_s = 0.1: max(60, 100 * 0.1, 5 * 1.0) = 60 s
    assert pair.stop.read_timeout_s is None and read_timeout_s(pair.stop, pair.slo) == 60.0
    path = tmp_path / "p.toml"
    path.write_text(text.replace("tpot_s = 0.1", "tpot_s = 0.9").replace("ttft_s = 1.0", "ttft_s = 20"))
    pair = load_pair(str(path))  # max(60, 90, 100) s
    assert read_timeout_s(pair.stop, pair.slo) == 100.0
    path.write_text(text.replace("[stop]\n", "[stop]\nread_timeout_s = 2.5\n"))
    pair = load_pair(str(path))
    assert pair.stop.read_timeout_s == 2.5 and read_timeout_s(pair.stop, pair.slo) == 2.5
    path.write_text(text.replace("[stop]\n", "[stop]\nread_timeout_s = 0\n"))
    with pytest.raises(ProfileError, match=r"\[stop\].read_timeout_s must be a number of seconds > 0"):
        load_pair(str(path))


def test_the_quick_demo_is_demo_cpu_with_fewer_cells() -> None:
    """`make compare`'s default (profiles/pairs/demo-cpu-quick.toml) differs from demo-cpu in its cells only."""
    quick, full = load_pair("demo-cpu-quick"), load_pair("demo-cpu")
    assert quick.concurrency == (1, 4) and [w.name for w in quick.workloads] == ["short-homogeneous"]
    assert full.concurrency == (1, 2, 4) and len(full.workloads) == 2
    same = ("target", "speculative", "engine", "sampling", "stop", "slo", "servers")
    assert {f: getattr(quick, f) for f in same} == {f: getattr(full, f) for f in same}
    # both demos are sized to be decided (docs/metrics.md "Sizing"): the same precision and blocks it may add
    assert quick.criteria == full.criteria and quick.criteria.ci_half_width == 0.1
    assert quick.design == full.design and (quick.design.max_blocks, quick.design.min_block_requests) == (4, 4)
    assert replace(quick.load, concurrency=full.load.concurrency) == full.load


@pytest.mark.parametrize("path", sorted(Path("profiles/pairs").glob("*.toml")), ids=lambda p: p.stem)
def test_every_shipped_profile_declares_a_precision_and_is_sized(path: Path) -> None:
    """Sized by default: every shipped pair or sweep file declares ``[criteria].ci_half_width`` (the precision a
    cell is decided at, measure/decision.py) and has ``[design].max_blocks`` (declared or the default) above its
    blocks, so a cell still undecided grows block by block (measure/sizing.py)."""
    doc = tomllib.loads(path.read_text())
    assert 0 < doc["criteria"]["ci_half_width"] <= 0.1, path.name
    design = doc.get("design", {})
    blocks = design.get("blocks", 3)
    assert design.get("max_blocks", 3 * blocks) > blocks, path.name  # records/design.py: default 3 x blocks
