"""profile/overrides.py called directly: the command line's values written into a pair document (by count or
by duration), the workloads chosen by name, file stem or path, the record protocol.json keeps and the card's
phrase, and the pair.toml text a run folder gets."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.overrides import Overrides, apply_overrides, described, pair_text

DOC = {
    "pair": "p",
    "run": {"concurrency": [1, 4], "rates_rps": [2.0], "workloads": ["chat", "/data/code.toml"]},
    "stop": {"min_requests": 64, "rounds": 3},
}
P = Path("pair.toml")


def test_concurrency_and_requests_by_count() -> None:
    got = apply_overrides(DOC, Overrides(concurrency=(8, 2), requests=10), P)
    assert got == {
        "pair": "p",
        "run": {"concurrency": [8, 2], "rates_rps": [2.0], "workloads": ["chat", "/data/code.toml"]},
        "stop": {"min_requests": 10, "rounds": 1},
    }
    assert DOC["run"]["concurrency"] == [1, 4]  # type: ignore[index]
    assert apply_overrides(DOC, None, P) == DOC and apply_overrides(DOC, Overrides(), P) == DOC


def test_requests_by_duration_cap_the_count() -> None:
    doc = DOC | {"stop": {"duration_s": 30}}
    assert apply_overrides(doc, Overrides(requests=100), P)["stop"] == {"duration_s": 30, "max_requests": 100}
    bare = apply_overrides({"pair": "p"}, Overrides(requests=5), P)
    assert bare == {"pair": "p", "run": {}, "stop": {"min_requests": 5, "rounds": 1}}


def test_workloads_by_name_stem_or_path(tmp_path: Path) -> None:
    given = Overrides(workloads=("code", "chat", str(tmp_path / "w.toml")))
    assert apply_overrides(DOC, given, P)["run"]["workloads"] == ["/data/code.toml", "chat", str(tmp_path / "w.toml")]
    with pytest.raises(ProfileError) as info:
        apply_overrides(DOC, Overrides(workloads=("chta",)), P)
    assert str(info.value) == (
        "--workload chta: pair.toml runs no workload of that name (chat, /data/code.toml); did "
        "you mean 'chat'? give one of them or a workload file path (.toml)"
    )


def test_the_record_and_the_phrase() -> None:
    given = Overrides((1, 16), 32, ("chat",))
    assert given.to_json() == {"concurrency": [1, 16], "requests": 32, "workload": ["chat"]}
    assert Overrides.from_json(given.to_json()) == given
    assert Overrides.from_json({"requests": 4}) == Overrides(requests=4)
    assert Overrides.from_json(None) is None and Overrides.from_json({}) is None
    assert not Overrides() and bool(Overrides(requests=1))
    assert described(given) == (
        "--concurrency 1,16 ([run].concurrency); --requests 32 ([stop].min_requests and rounds "
        "= 1, or max_requests by duration); --workload chat ([run].workloads)"
    )


def test_pair_text_reads_back_with_the_values(tmp_path: Path) -> None:
    path = tmp_path / "pair.toml"
    path.write_text('pair = "p"  # a comment\n[run]\nconcurrency = [1]\nworkloads = ["chat"]\n')
    text = pair_text(path, Overrides(concurrency=(2, 4), requests=8))
    assert "# a comment" not in text
    assert tomllib.loads(text) == {
        "pair": "p",
        "run": {"concurrency": [2, 4], "workloads": ["chat"]},
        "stop": {"min_requests": 8, "rounds": 1},
    }
