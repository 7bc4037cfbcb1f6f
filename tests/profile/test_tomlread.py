"""profile/tomlread.py's strict table reader and profile/locate.py's file lookup, on documents and folders
written here: each refusal's one line (file, table, key, what was expected, the closest key by difflib) and
where a relative name is looked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.locate import anchor_workloads, is_path, locate, looked_in
from loadgen.profile.tomlread import Table, read_toml

P = Path("p.toml")


def refusal(fn: object, *args: object) -> str:
    with pytest.raises(ProfileError) as info:
        fn(*args)  # type: ignore[operator]
    return str(info.value)


def test_read_toml(tmp_path: Path) -> None:
    (tmp_path / "ok.toml").write_text('a = 1\n[t]\nb = "x"\n')
    assert read_toml(tmp_path / "ok.toml") == {"a": 1, "t": {"b": "x"}}
    assert refusal(read_toml, tmp_path / "none.toml") == f"{tmp_path / 'none.toml'}: file not found"
    (tmp_path / "bad.toml").write_text("a = \n")
    assert refusal(read_toml, tmp_path / "bad.toml").startswith(f"{tmp_path / 'bad.toml'}: not valid TOML (")


def test_each_key_typed_once_and_leftovers_refused() -> None:
    t = Table(P, "[run]", {"blocks": 3, "on": True, "names": ["a", "b"], "rate": 2, "extra": 1, "exrta2": 0})
    assert (t.positive_int("blocks"), t.get("on", bool), t.str_list("names")) == (3, True, ("a", "b"))
    assert t.get("rate", (int, float)) == 2 and t.get("absent", int, None) is None
    assert refusal(t.finish) == (
        "p.toml: unknown key 'exrta2' in [run]; known keys: absent, blocks, names, on, rate (see profiles/README.md)"
    )


@pytest.mark.parametrize(
    ("data", "read", "says"),
    [
        ({"n": True}, lambda t: t.get("n", int), "p.toml: [run].n must be int, got True"),  # a bool is no number
        ({"n": 0}, lambda t: t.positive_int("n"), "p.toml: [run].n must be a positive integer, got 0"),
        ({"n": ["a", 1]}, lambda t: t.str_list("n"), "p.toml: [run].n must be a list of strings, got ['a', 1]"),
        (
            {"n": "1"},
            lambda t: t.get("n", float, expected="a number of seconds"),
            "p.toml: [run].n must be a number of seconds, got '1'",
        ),
        (
            {"blcoks": 3},
            lambda t: t.positive_int("blocks"),
            "p.toml: missing key [run].blocks; add it (see profiles/README.md); "
            "the file has 'blcoks' there: did you mean "
            "'blocks'?",
        ),
        ({"n": 1}, lambda t: t.table("stop"), "p.toml: missing table [run.stop]; add it (see profiles/README.md)"),
        ({"stop": 3}, lambda t: t.table("stop"), "p.toml: [run].stop must be dict, got 3"),
    ],
)
def test_each_refusal_is_one_line(data: dict[str, object], read: object, says: str) -> None:
    assert refusal(read, Table(P, "[run]", data)) == says


def test_top_level_tables() -> None:
    top = Table(P, "", {"targte": {}})
    assert refusal(top.table, "target") == (
        "p.toml: missing table [target]; add it (see profiles/README.md); the "
        "file has 'targte' there: did you mean 'target'?"
    )
    assert refusal(Table, P, "[run]", [1]) == "p.toml: [run] must be a table"
    assert Table(P, "", {"run": {"x": 1}}).table("run").where == "[run]"


def test_locate_relative_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    beside = tmp_path / "mine"
    beside.mkdir()
    (beside / "w.toml").write_text("")
    (tmp_path / "here.toml").write_text("")
    assert (is_path("w.toml"), is_path("a/b"), is_path("chat")) == (True, True, False)
    assert locate("here.toml", beside) == Path("here.toml")  # the current directory first
    assert locate("w.toml", beside) == beside / "w.toml"  # then beside the file that names it
    assert locate("gone.toml", beside) == Path("gone.toml") and locate("w.toml", None) == Path("w.toml")
    assert looked_in("gone.toml", beside) == f"{tmp_path / 'gone.toml'} nor {beside / 'gone.toml'}"
    assert looked_in("/abs/x.toml", beside) == "/abs/x.toml"
    doc = {"pair": "p", "run": {"workloads": ["chat", "w.toml", 3]}}
    assert anchor_workloads(doc, beside / "pair.toml") == {
        "pair": "p",
        "run": {"workloads": ["chat", str(beside / "w.toml"), 3]},
    }
    assert anchor_workloads({"run": "x"}, beside / "pair.toml") == {"run": "x"}
