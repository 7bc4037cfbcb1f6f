"""profile/pairpath.py: a pair name or a path to its TOML file, and the one line for each way it can be wrong
(a path that is no file or a folder, a name that is no pair: the closest name by difflib, or no pair files at
all), on a pairs folder written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.pairpath import available_pairs, resolve_pair_path


@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    folder = tmp_path / "pairs"
    folder.mkdir()
    for name in ("demo-cpu", "demo-cpu-ngram", "h200-1b-draft"):
        (folder / f"{name}.toml").write_text("")
    (folder / "notes.md").write_text("")
    return folder


def test_names_and_paths(pairs: Path, tmp_path: Path) -> None:
    assert available_pairs(pairs) == ["demo-cpu", "demo-cpu-ngram", "h200-1b-draft"]
    assert resolve_pair_path("demo-cpu", pairs) == pairs / "demo-cpu.toml"
    own = tmp_path / "mine.toml"
    own.write_text("")
    assert resolve_pair_path(str(own), pairs) == own


def test_an_unknown_name_names_the_closest_and_every_pair(pairs: Path) -> None:
    with pytest.raises(ProfileError) as info:
        resolve_pair_path("demo-cpu-ngarm", pairs)
    assert str(info.value) == (
        f"unknown pair 'demo-cpu-ngarm': no {pairs}/demo-cpu-ngarm.toml; did you mean "
        "'demo-cpu-ngram'? available pairs: demo-cpu, demo-cpu-ngram, h200-1b-draft (give a "
        "pair name or the path to a .toml file)"
    )
    with pytest.raises(ProfileError, match="unknown pair 'zzz': no .*zzz.toml; available pairs: demo-cpu, "):
        resolve_pair_path("zzz", pairs)


def test_no_pair_files_says_to_run_from_the_repository_root(tmp_path: Path) -> None:
    with pytest.raises(
        ProfileError,
        match=f"available pairs: none in {tmp_path.resolve()} \\(pair names are read "
        "from the repository's profiles/pairs/: run loadgen from the repository "
        "root\\)",
    ):
        resolve_pair_path("demo-cpu", tmp_path)


def test_a_path_that_is_no_file(pairs: Path, tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as info:
        resolve_pair_path("elsewhere/demo-cpu.toml", pairs)
    assert str(info.value) == (
        f"no pair file elsewhere/demo-cpu.toml (no such file); did you mean {pairs}/demo-cpu.toml?"
    )
    with pytest.raises(ProfileError) as info:
        resolve_pair_path(str(tmp_path), pairs)  # a folder
    assert str(info.value) == (
        f"no pair file {tmp_path} (a folder); pass an existing .toml file or a pair name "
        "(available: demo-cpu, demo-cpu-ngram, h200-1b-draft)"
    )
    with pytest.raises(ProfileError, match="no pair file other.toml \\(no such file\\); pass an existing"):
        resolve_pair_path("other.toml", pairs)
