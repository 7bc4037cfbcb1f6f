"""Fuzzing the profile loader: no input makes it crash with a traceback; it loads into a valid Pair (every
number finite and within its domain) or raises ProfileError (exit 2) with one line."""

from __future__ import annotations

import dataclasses
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadgen.errors import ProfileError
from loadgen.profile import domains
from loadgen.profile.pair import Pair
from loadgen.profile.pairfile import load_pair

BASE = Path("profiles/pairs/demo-cpu.toml").read_text().splitlines()
#: Edge values: non-finite and absurd floats, 0, -1, ints past 64 bits, wrong types, lists for scalars.
EDGES = st.sampled_from(
    [
        math.nan,
        math.inf,
        -math.inf,
        1e308,
        -1e308,
        1e16,
        5e-324,
        -1,
        0,
        1,
        0.5,
        65535,
        65536,
        2**63 - 1,
        2**63,
        -(2**63) - 1,
        10**30,
        100_001,
        10_000_001,
        "",
        "x",
        True,
        False,
        [],
        [math.nan],
        [math.inf],
        [1e308],
        [0],
        [-1],
        [2**64],
        ["x"],
        [[1]],
        [1, 2],
        {"a": 1},
        {"a": math.nan},
    ]
)
VALUES = st.one_of(
    st.integers(-5, 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=12),
    st.lists(st.integers(-3, 100), max_size=4),
    EDGES,
)
#: Keys the demo pair leaves at their defaults, per table, to insert with fuzzed values.
EXTRA_KEYS = {
    "[run]": ("rates_rps", "burstiness", "max_concurrency", "repetitions", "output_tokens", "input_tokens", "arrival"),
    "[stop]": ("duration_s", "max_requests", "max_error_rate", "on_error_budget", "cooldown"),
    "[speculative]": (
        "prompt_lookup_max",
        "prompt_lookup_min",
        "draft_tensor_parallel_size",
        "max_model_len",
        "use_heterogeneous_vocab",
        "revision",
        "enforce_eager",
    ),
    "[engine]": ("seed", "host"),
    "[criteria]": ("min_lossless_match", "max_extra_memory_bytes", "use_confidence_interval", "workloads"),
    "[slo]": ("percentile",),
}


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            "nan"
            if value != value
            else ("inf" if value == float("inf") else "-inf" if value == float("-inf") else repr(value))
        )
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return str(value)


def _numbers(obj: Any) -> list[float]:
    """Every int/float inside a loaded Pair (dataclasses, mappings, sequences), bools excluded."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [n for f in dataclasses.fields(obj) for n in _numbers(getattr(obj, f.name))]
    if isinstance(obj, dict):
        return [n for v in obj.values() for n in _numbers(v)]
    if isinstance(obj, list | tuple):
        return [n for v in obj for n in _numbers(v)]
    return [obj] if isinstance(obj, int | float) and not isinstance(obj, bool) else []


def _assert_valid(pair: Pair) -> None:
    for n in _numbers(pair):
        assert math.isfinite(n) and abs(n) <= domains.MAX_ABS_INT, n
    assert 1 <= pair.engine.port <= 65535 and 0 < pair.engine.startup_timeout_s <= domains.MAX_SECONDS
    assert all(1 <= c <= domains.MAX_CONCURRENCY for c in (*pair.load.concurrency, pair.load.max_concurrency))
    assert all(0 < r <= domains.MAX_RATE_RPS for r in pair.load.rates_rps) and pair.load.burstiness > 0
    assert pair.sampling.temperature >= 0 and 0 < pair.sampling.top_p <= 1
    assert isinstance(pair.num_speculative_tokens, int) and pair.num_speculative_tokens >= 1
    assert pair.draft is None or isinstance(pair.speculative.model, str)
    assert all(w.output_tokens >= 1 for w in pair.workloads)
    assert 0 < pair.slo.percentile <= 100 and pair.criteria.min_speedup > 0


def _load(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.toml"
        path.write_text(text)
        try:
            pair = load_pair(str(path))
        except ProfileError as exc:
            assert "\n" not in str(exc) and str(exc).strip()
            return
        _assert_valid(pair)


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


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_edge_values_in_every_key(data: st.DataObject) -> None:
    """Set existing keys and insert defaulted ones with edge values (nan, inf, 1e308, -1, 0, 2**63, wrong
    types, lists where scalars go)."""
    lines = list(BASE)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(lines) - 1))
        if "=" in lines[i] and not lines[i].lstrip().startswith("#"):
            lines[i] = f"{lines[i].split('=', 1)[0]}= {_toml(data.draw(EDGES))}"
    for _ in range(data.draw(st.integers(0, 2))):
        table = data.draw(st.sampled_from(sorted(EXTRA_KEYS)))
        key = data.draw(st.sampled_from(EXTRA_KEYS[table]))
        lines.insert(lines.index(table) + 1, f"{key} = {_toml(data.draw(VALUES))}")
    if data.draw(st.booleans()):
        lines.append(f"[servers.speculative]\nport = {_toml(data.draw(EDGES))}")
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
