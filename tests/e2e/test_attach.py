"""Attaching to running servers, with the same proofs: a plain server in the speculative role is an
unplanned fallback (exit 1), found before any speculative load, and an attached server is left running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadgen import servers
from loadgen.flow import launch_spec
from loadgen.pair import load_pair
from tests.e2e.conftest import ROOT, _require_engine


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Server]:
    _require_engine()
    spec = launch_spec(load_pair("tests/data/pairs/selfdraft.toml"), "plain", tmp_path_factory.mktemp("plain"))
    spec.port = 8360
    with servers.running(spec) as server:
        yield server


def test_plain_server_in_the_speculative_role_is_a_fallback(plain_server: servers.Server, tmp_path: Path) -> None:
    url = plain_server.base_url
    proc = subprocess.run(
        [sys.executable, "-m", "loadgen", "compare", "tests/data/pairs/selfdraft.toml", "--runs-dir", str(tmp_path),
         "--attach-plain", url, "--attach-speculative", url],
        cwd=ROOT, capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 1 and "Traceback" not in proc.stderr
    assert "speculative server exposes no vllm:spec_decode_* metrics" in errors[0]
    run_dir = next((tmp_path / "selfdraft").iterdir())
    # the plain role was measured on the attached server, then the speculative proof failed before any load
    cells = [json.loads(line) for line in (run_dir / "cells.jsonl").read_text().splitlines()]
    assert {c["role"] for c in cells} == {"plain"} and len(cells) == 4
    launch = json.loads((run_dir / "servers" / "plain-launch.json").read_text())
    assert launch["attached"] is True and launch["base_url"] == url
    effective = json.loads((run_dir / "servers" / "plain-effective.json").read_text())
    assert effective["version"] == "0.32.0" and effective["spec_decode_metrics"] is False
    assert "INCOMPLETE" in (run_dir / "card.md").read_text()
    # attached servers are not ours to stop
    assert plain_server.alive()
    assert plain_server.fetch("/health").status_code == 200
