"""Sweep candidates: expansion of a K list and of [[candidates]], their names and validation, and each
candidate's pair document, written as TOML and read back strictly as a pair file."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.pairfile import load_pair
from loadgen.records.candidates import candidate_doc, expand_candidates
from loadgen.util import tomlwrite

SWEEP = Path("profiles/pairs/demo-cpu-sweep.toml")


def test_the_demo_sweep_expands_to_the_draft_at_k_1_2_and_ngram() -> None:
    doc = tomllib.loads(SWEEP.read_text())
    found = expand_candidates(doc, SWEEP)
    assert [(c.name, c.k, c.draft_weights) for c in found] == [
        ("demo-draft-k1", 1, True),
        ("demo-draft-k2", 2, True),
        ("ngram-k3", 3, False),
    ]
    assert found[2].cost_key() < found[0].cost_key()  # no draft weights is cheaper


def test_each_candidate_reads_back_as_a_strict_pair_file(tmp_path: Path) -> None:
    doc = tomllib.loads(SWEEP.read_text())
    for c in expand_candidates(doc, SWEEP):
        out = candidate_doc(doc, c, "demo-cpu-sweep")
        path = tmp_path / f"{c.name}.toml"
        path.write_text(tomlwrite.to_toml(out))
        assert tomllib.loads(path.read_text()) == out
        pair = load_pair(str(path))
        assert pair.name == f"demo-cpu-sweep-{c.name}" and pair.num_speculative_tokens == c.k
        assert "name" not in pair.speculative.to_json() and pair.load.concurrency == (1, 4)


def test_the_h200_sweep_and_its_cpu_dry_run_write_their_candidates_as_pair_files(tmp_path: Path) -> None:
    """scripts/sweep_pairs.py writes what the sweep checks and runs; the plain server's URL is the
    attach URL scripts/h200_sweep.sh passes on."""
    expected = {
        "h200-smollm2-sweep": (["demo-draft-k1", "demo-draft-k2", "ngram-k4"], "http://127.0.0.1:8400"),
        "tests/data/pairs/sweep-dryrun-cpu.toml": (["demo-draft-k1", "ngram-k2"], "http://127.0.0.1:8360"),
    }
    for sweep, (names, url) in expected.items():
        out = tmp_path / Path(sweep).stem
        run = [sys.executable, "scripts/sweep_pairs.py", sweep, str(out)]
        listed = subprocess.run(run, capture_output=True, text=True, check=True).stdout.split("\n")
        assert [line.split()[0] for line in listed if line] == names
        assert subprocess.run([*run, "--url"], capture_output=True, text=True, check=True).stdout.strip() == url
        pairs = [load_pair(line.split()[1]) for line in listed if line]
        assert [p.num_speculative_tokens for p in pairs] == [int(n[-1]) for n in names]
    h200 = load_pair(str(tmp_path / "h200-smollm2-sweep" / "ngram-k4.toml"))
    assert [h200.stop.measured_requests(c) for c in h200.load.concurrency] == [64, 64, 80, 320]
    assert [w.name for w in h200.workloads] == ["short-homogeneous", "long-diverse", "grounded"]
    assert "--enforce-eager" not in h200.engine.args and h200.engine.env["PYTHONPATH"] == "/tmp/site"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"speculative": {"method": "ngram", "num_speculative_tokens": [1, 1]}}, "lists a K twice"),
        ({"speculative": {"method": "ngram", "num_speculative_tokens": [0, 2]}}, "positive integer or a list"),
        ({"speculative": {"method": "ngram", "num_speculative_tokens": []}}, "positive integer or a list"),
        ({"candidates": [{"method": "ngram"}]}, "[[candidates]] #1 needs method"),
        ({"candidates": {"method": "ngram"}}, "array of tables"),
        ({"candidates": [{"name": "a b", "method": "ngram", "num_speculative_tokens": 2}]}, "folder name"),
        (
            {
                "speculative": {"method": "ngram", "num_speculative_tokens": 2},
                "candidates": [{"method": "ngram", "num_speculative_tokens": [2]}],
            },
            "both named 'ngram-k2'",
        ),
        ({}, "a sweep needs"),
    ],
)
def test_bad_candidates_are_one_line_errors(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ProfileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        expand_candidates(doc, Path("s.toml"))


def test_a_candidate_key_vllm_lacks_is_refused_by_the_pair_rules(tmp_path: Path) -> None:
    doc = tomllib.loads(SWEEP.read_text())
    doc["candidates"] = [{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_maxx": 4}]
    bad = expand_candidates(doc, SWEEP)[-1]
    path = tmp_path / "bad.toml"
    path.write_text(tomlwrite.to_toml(candidate_doc(doc, bad, "s")))
    with pytest.raises(ProfileError, match="unknown key 'prompt_lookup_maxx' in \\[speculative\\]"):
        load_pair(str(path))


def test_toml_writer_round_trips_nested_tables_and_escapes() -> None:
    doc = {"a": 'q"\\x', "b": [1, 2.5, True], "t": {"x": 1, "u": {"y": "z"}}, "l": [{"k": 1}], "odd key": 0}
    assert tomllib.loads(tomlwrite.to_toml(doc)) == doc
