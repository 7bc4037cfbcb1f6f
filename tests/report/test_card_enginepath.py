"""The engine path on the card: a line per server and one note when the speculative server's path differs
from the plain server's (cardmd.py, enginepath.py), recorded by Server.effective_config and, for run folders of
older code, parsed from the saved startup log (runfiles.with_engine_path). The logs: excerpts of real vLLM
0.24.0 startup logs on one NVIDIA H200 (tests/data/vllm024_h200_*_startup.log)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from loadgen.report.carddata import build_card
from loadgen.report.cardwrite import finish_card
from loadgen.serve import servers
from loadgen.serve.enginepath import parse_engine_path
from tests.report.test_carddata import write_run
from tests.report.test_cardmd import card, lines
from tests.support.cards import effective

DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-1b-draft"
DRAFT_ASYNC = "Async scheduling not supported with draft_model-based speculative decoding and will be disabled."
DRAFT_RUNNER = (
    "Model Runner V2 does not yet support speculative method 'draft_model'; using the V1 model runner instead."
)
REASONS = f'"{DRAFT_ASYNC}"; "{DRAFT_RUNNER}"'
NOTE = (
    f"> Engine path: the speculative server runs without async scheduling and on the V1 model runner "
    f"(vLLM: {REASONS}); the plain server: async scheduling on, model runner V2. The measured step-time ratio "
    "includes that engine-path change, not only the draft's work; compare against a plain server launched with "
    "`--no-async-scheduling` and `VLLM_USE_V2_MODEL_RUNNER=0` to separate the two."
)


def _log(name: str) -> str:
    return (DATA / f"vllm024_h200_{name}_startup.log").read_text()


def _path(name: str) -> dict[str, Any]:
    return effective(engine_path=parse_engine_path(_log(name)).to_json())


def _servers(plain: dict[str, Any] | None, spec: dict[str, Any] | None) -> dict[str, Any]:
    return {"plain": {"launch": None, "effective": plain}, "speculative": {"launch": None, "effective": spec}}


def test_a_speculative_server_without_async_scheduling_gets_the_line_and_the_note() -> None:
    out = lines(card(servers=_servers(_path("plain"), _path("draft"))))
    assert "- engine path (startup log): async scheduling on, model runner V2" in out
    assert (f"- engine path (startup log): async scheduling off, model runner V1 (vLLM: {REASONS})") in out
    assert [line for line in out if "Engine path:" in line] == [NOTE]


def test_a_speculative_server_on_the_plain_servers_path_gets_no_note() -> None:
    out = lines(card(servers=_servers(_path("plain"), _path("plain"))))
    assert not [line for line in out if "Engine path" in line]
    both_off = effective(engine_path={"async_scheduling": False, "model_runner": "V2", "fallback_reasons": []})
    assert not [line for line in lines(card(servers=_servers(both_off, both_off))) if "Engine path" in line]


def test_an_attached_plain_server_is_unknown_and_the_note_says_so() -> None:
    out = lines(card(servers=_servers(None, _path("ngram"))))
    assert out.count("- engine path (startup log): async scheduling unknown, model runner unknown") == 1
    note = next(line for line in out if "Engine path:" in line)
    assert "the plain server: async scheduling unknown, model runner unknown." in note
    # a V2 speculative server beside an unknown plain one is no fallback: no note
    v2 = effective(engine_path={"async_scheduling": None, "model_runner": "V2", "fallback_reasons": []})
    assert not [line for line in lines(card(servers=_servers(None, v2))) if "Engine path" in line]


def test_effective_config_records_the_launched_servers_path_and_not_an_attached_ones(tmp_path: Path) -> None:
    log = tmp_path / "speculative.log"
    log.write_text(_log("draft"))
    spec = servers.LaunchSpec("speculative", [], {}, "127.0.0.1", 9, "m", 5.0, log)
    done = subprocess.Popen([sys.executable, "-c", ""])
    done.wait()
    launched = servers.Server(spec=spec, process=done).effective_config()
    assert launched.to_json()["engine_path"] == {
        "async_scheduling": False,
        "model_runner": "V1",
        "fallback_reasons": [DRAFT_ASYNC, DRAFT_RUNNER],
    }
    attached = servers.attach(spec).effective_config()
    assert attached.to_json()["engine_path"] == {"async_scheduling": None, "model_runner": None, "fallback_reasons": []}


def test_a_run_folder_of_older_code_reads_the_path_from_its_saved_log(tmp_path: Path) -> None:
    run = write_run(tmp_path / "r", levels=(1,))
    for role in ("plain", "speculative"):
        (run / "servers" / f"{role}-effective.json").write_text(json.dumps(effective(version="0.24.0")))
    (run / "servers" / "speculative.log").write_text(_log("draft"))
    eff = {role: s["effective"] for role, s in build_card(run).to_json()["servers"].items()}
    assert eff["speculative"]["engine_path"]["model_runner"] == "V1"
    assert "engine_path" not in eff["plain"]  # no log kept: the card says unknown
    path = {"async_scheduling": True, "model_runner": "V2", "fallback_reasons": []}
    recorded = effective(version="0.24.0", engine_path=path)
    (run / "servers" / "speculative-effective.json").write_text(json.dumps(recorded))
    assert build_card(run).to_json()["servers"]["speculative"]["effective"]["engine_path"]["model_runner"] == "V2"


def test_a_saved_card_re_rendered_with_both_logs_gets_the_note(tmp_path: Path) -> None:
    copy = tmp_path / EXAMPLE.name
    shutil.copytree(EXAMPLE, copy)
    (copy / "servers" / "plain.log").write_text(_log("plain"))
    (copy / "servers" / "speculative.log").write_text(_log("draft"))
    finish_card(copy, log=lambda _: None)
    assert NOTE in (copy / "card.md").read_text().splitlines()
    saved = json.loads((copy / "card.json").read_text())["servers"]["speculative"]["effective"]
    assert saved["engine_path"]["async_scheduling"] is False
