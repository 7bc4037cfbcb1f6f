"""An attached server is left running and said to be: a whole compare in attach mode against two scripted
servers on loopback (tests/run/test_metrics_unavailable.py) logs "left running" for each, never "stopped", and
its ``-teardown.json`` (carried into card.json) records that nothing was stopped; both still answer."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from loadgen.run.flow import run_compare
from tests.run.test_metrics_unavailable import GETS, PLAIN, SPEC, _pair
from tests.support.scripted_server import scripted_server


@pytest.mark.slow
def test_an_attached_server_is_left_running_and_the_run_says_so(tmp_path: Path) -> None:
    lines: list[str] = []
    with scripted_server(PLAIN, None, GETS) as p_url, scripted_server(SPEC, None, GETS) as s_url:
        run_dir = run_compare(
            _pair(tmp_path), tmp_path / "runs", log=lines.append, attach={"plain": p_url, "speculative": s_url}
        )
        assert all(httpx.get(url + "/v1/models").status_code == 200 for url in (p_url, s_url))
    reason = "attached: loadgen does not stop a server it did not start"
    assert f"[plain] left running at {p_url} ({reason})" in lines
    assert f"[speculative] left running at {s_url} ({reason})" in lines
    assert not [line for line in lines if "stopped" in line]
    record = {"attached": True, "stopped": False, "reason": reason}
    for role in ("plain", "speculative"):
        assert json.loads((run_dir / "servers" / f"{role}-teardown.json").read_text()) == record
        assert json.loads((run_dir / "card.json").read_text())["servers"][role]["teardown"] == record
