"""Fuzzing the profile loader: no input makes it crash with a traceback; it loads or raises ProfileError."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadgen.errors import ProfileError
from loadgen.pair import load_pair

BASE = Path("profiles/pairs/demo-cpu.toml").read_text().splitlines()
VALUES = st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                   st.booleans(), st.text(max_size=12), st.lists(st.integers(-3, 100), max_size=4))


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if value != value else ("inf" if value == float("inf") else
                                             "-inf" if value == float("-inf") else repr(value))
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def _load(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.toml"
        path.write_text(text)
        try:
            load_pair(str(path))
        except ProfileError as exc:
            assert "\n" not in str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_values(data: st.DataObject) -> None:
    lines = list(BASE)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        if "=" in lines[i] and not lines[i].lstrip().startswith("#"):
            key = lines[i].split("=", 1)[0]
            lines[i] = f"{key}= {_toml(data.draw(VALUES))}"
    _load("\n".join(lines))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_deleted_and_duplicated_lines(data: st.DataObject) -> None:
    lines = list(BASE)
    for _ in range(data.draw(st.integers(1, 5))):
        i = data.draw(st.integers(0, len(lines) - 1))
        if data.draw(st.booleans()):
            del lines[i]
        else:
            lines.insert(i, lines[data.draw(st.integers(0, len(lines) - 1))])
    _load("\n".join(lines))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text(text: str) -> None:
    _load(text)
