"""Small messages: the /metrics error (one line, the role and the HTTP status, no "is the server alive?" for
a server that answered), and the verdict printed once by `loadgen compare`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import RunFailed
from loadgen.prom.scrape import scrape
from loadgen.run import flow
from tests.run.test_cell import FAULTY, _run
from tests.support.cards import full_card
from tests.support.scripted_server import scripted_server


def test_scrape_404_is_one_line_with_the_status_and_no_liveness_question() -> None:
    with scripted_server({}) as url, pytest.raises(RunFailed) as info:
        scrape(url + "/v1")  # GET /v1/metrics: 404 on the scripted server
    text = str(info.value)
    assert "\n" not in text and "HTTP 404" in text and f"{url}/v1/metrics" in text
    assert "alive" not in text and "no /metrics endpoint" in text


def test_scrape_of_a_closed_port_asks_whether_the_server_is_alive() -> None:
    with scripted_server({}) as url:
        pass  # closed now
    with pytest.raises(RunFailed) as info:
        scrape(url, timeout_s=2.0)
    text = str(info.value)
    assert "\n" not in text and "cannot reach" in text and "is the server alive?" in text


def test_cell_note_names_the_role_and_the_status_once(tmp_path: Path) -> None:
    _, entry, _ = _run(tmp_path, FAULTY, "continue")
    notes = [n for n in entry["notes"] if "metrics" in n]
    assert len(notes) == 1 and "\n" not in notes[0], notes
    assert notes[0].startswith("server metrics unavailable for this cell (plain server): ")
    assert notes[0].count("HTTP 500") == 1 and "alive" not in notes[0]


@pytest.mark.parametrize(("passed", "code"), [(True, 0), (False, 3)])
def test_compare_prints_the_verdict_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passed: bool, code: int
) -> None:
    summary = "PASS: 3 of 3 cells" if passed else "FAIL: 1 failed check(s)"

    def fake_run(*args: Any, **kwargs: Any) -> Path:
        card = {"pair": "demo-cpu", "complete": True, "cells": [], "verdict": {"summary": summary, "passed": passed}}
        (tmp_path / "card.json").write_text(json.dumps(full_card(card)))
        return tmp_path

    monkeypatch.setattr(flow, "run_compare", fake_run)
    result = CliRunner().invoke(main, ["compare", "demo-cpu", "--no-progress"])
    assert result.exit_code == code, result.output
    assert result.output.count("verdict: ") == 1 and f"verdict: {summary}" in result.output
