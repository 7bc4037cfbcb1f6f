"""profile/locate.py: a workload entry is a name or a path; a relative path is looked up in the current
directory first, then beside the file that names it; the not-found line names both places; a sweep's copy of a
pair file gets its workload paths made absolute."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.profile.locate import anchor_workloads, is_path, locate, looked_in


@pytest.mark.parametrize(
    ("ref", "path"),
    [("short-homogeneous", False), ("mine.toml", True), ("dir/mine", True), ("/abs/w.toml", True), ("w.tom", False)],
)
def test_a_workload_entry_is_a_path_when_it_ends_in_toml_or_holds_a_slash(ref: str, path: bool) -> None:
    assert is_path(ref) is path


def test_the_current_directory_comes_first_then_the_naming_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd, beside = tmp_path / "cwd", tmp_path / "pairdir"
    for d in (cwd, beside):
        (d / "w").mkdir(parents=True)
        (d / "w" / "a.toml").write_text("")
    (beside / "w" / "b.toml").write_text("")
    monkeypatch.chdir(cwd)
    assert locate("w/a.toml", beside) == Path("w/a.toml")  # found here: relative, as given
    assert locate("w/b.toml", beside) == beside / "w" / "b.toml"  # only beside: absolute
    assert locate("w/c.toml", beside) == Path("w/c.toml")  # nowhere: as given, for the caller's message
    assert locate("w/b.toml", None) == Path("w/b.toml")
    assert locate(beside / "w" / "b.toml", None) == beside / "w" / "b.toml"


def test_a_home_path_is_expanded_and_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert locate("~/w.toml", Path("/elsewhere")) == tmp_path / "w.toml"
    assert looked_in("~/w.toml", Path("/elsewhere")) == str(tmp_path / "w.toml")


def test_the_not_found_line_names_every_place_looked_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert looked_in("w/x.toml", Path("/p")) == f"{tmp_path}/w/x.toml nor /p/w/x.toml"
    assert looked_in("w/x.toml", None) == f"{tmp_path}/w/x.toml"
    assert looked_in("/abs/x.toml", Path("/p")) == "/abs/x.toml"


def test_a_sweep_copy_gets_its_workload_paths_made_absolute_and_its_names_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pairs" / "w").mkdir(parents=True)
    (tmp_path / "pairs" / "w" / "mine.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    doc = {"name": "p", "run": {"workloads": ["short-homogeneous", "w/mine.toml", "/abs/o.toml"], "concurrency": [1]}}
    got = anchor_workloads(doc, tmp_path / "pairs" / "p.toml")
    assert got["run"] == {
        "workloads": ["short-homogeneous", str(tmp_path / "pairs" / "w" / "mine.toml"), "/abs/o.toml"],
        "concurrency": [1],
    }
    assert doc["run"]["workloads"][1] == "w/mine.toml"  # the document itself is left alone
    assert got["name"] == "p"


@pytest.mark.parametrize("doc", [{}, {"run": "x"}, {"run": {"concurrency": [1]}}, {"run": {"workloads": "w.toml"}}])
def test_a_document_without_a_workload_list_is_copied_unchanged(doc: dict[str, object]) -> None:
    got = anchor_workloads(doc, Path("/p/pair.toml"))
    assert got == doc and got is not doc
