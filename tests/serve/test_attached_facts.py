"""What an attached server says of itself before anything is measured (the scripted server's GET answers):
its engine version (``/version``) and ``max_model_len`` (``/v1/models``); a workload whose input plus output
cannot fit is bad input (exit 2) naming both numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.errors import BadInput
from loadgen.serve import servers
from loadgen.serve.attached import AttachedFacts, probe_attached
from tests.support.scripted_server import scripted_server

MODELS = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "max_model_len": 2048}]}).encode()
GETS = {"/v1/models": (200, MODELS), "/version": (200, b'{"version": "0.24.0"}')}


def _spec(url: str, tmp_path: Path) -> servers.LaunchSpec:
    return servers.LaunchSpec("plain", [], {}, "127.0.0.1", 0, "m", 5.0, tmp_path / "log", attach_url=url)


def _never(role: str, snap: object) -> None:
    raise AssertionError("no /metrics here: the proof of mode is not asked")


def test_the_attached_version_and_max_model_len_are_read(tmp_path: Path) -> None:
    lines: list[str] = []
    with scripted_server({}, gets=GETS) as url:
        facts = probe_attached([_spec(url, tmp_path)], _never, lines.append, [("w", 1024, 1024)])
    assert facts == {"plain": AttachedFacts("0.24.0", 2048)}
    assert "serves 'm' (vLLM 0.24.0, max_model_len 2048); /metrics unavailable" in lines[0]


def test_a_workload_longer_than_max_model_len_is_bad_input_naming_both_numbers(tmp_path: Path) -> None:
    with scripted_server({}, gets=GETS) as url, pytest.raises(BadInput) as exc:
        probe_attached([_spec(url, tmp_path)], _never, lambda _: None, [("short", 100, 10), ("long", 2000, 100)])
    assert str(exc.value).startswith(
        "workload 'long' needs 2100 tokens (2000 input + 100 output) but the plain "
        f"server at {url} serves max_model_len 2048 (/v1/models)"
    )
    assert exc.value.exit_code == 2
