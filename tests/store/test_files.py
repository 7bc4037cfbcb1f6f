"""store/files.py and store/serverfiles.py: each file of a run folder written by its writer and read back by its
reader, byte for byte against the committed examples where they have the file (docs/examples/h100/
h200-7b-grounded-decide/ngram-k4, a candidate folder of a sweep on attached servers, and the H200 7B sweep's
prompts.jsonl), and the one-line error of a file that does not read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from loadgen.errors import BadInput
from loadgen.records.runparts import LaunchFile, ProgressFile, StatusFile
from loadgen.records.server import StartupRecord
from loadgen.records.usage import AttachedTeardown, ServerUsage, Teardown
from loadgen.store.files import (
    read_progress,
    read_prompts,
    read_protocol,
    read_status,
    read_sweep_checks,
    read_times,
    write_checks,
    write_progress,
    write_prompts,
    write_protocol,
    write_status,
)
from loadgen.store.serverfiles import (
    read_server_file,
    write_effective,
    write_launch,
    write_resources,
    write_teardown,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
EXAMPLE = EXAMPLES / "h100" / "h200-7b-grounded-decide" / "ngram-k4"
SWEEP = EXAMPLES / "h200" / "h200-7b-sweep"


def test_the_examples_run_files_write_back_byte_for_byte(tmp_path: Path) -> None:
    (tmp_path / "servers").mkdir()
    write_protocol(tmp_path, read_protocol(EXAMPLE / "protocol.json"))
    status = read_status(EXAMPLE)
    assert status == StatusFile(complete=True, failure=None, sizing_end="every cell is decided")
    write_status(tmp_path, status)
    write_checks(tmp_path, json.loads((EXAMPLE / "checks.json").read_text()))
    for name in ("protocol.json", "status.json", "checks.json"):
        assert (tmp_path / name).read_bytes() == (EXAMPLE / name).read_bytes(), name
    write_prompts(tmp_path, read_prompts(SWEEP))
    assert (tmp_path / "prompts.jsonl").read_bytes() == (SWEEP / "prompts.jsonl").read_bytes()


def test_the_examples_server_files_write_back_byte_for_byte(tmp_path: Path) -> None:
    (tmp_path / "servers").mkdir()
    for role in ("plain", "speculative"):
        saved = {part: read_server_file(EXAMPLE, role, part) for part in ("launch", "effective", "resources")}
        write_launch(tmp_path, role, LaunchFile.from_json(saved["launch"], source="launch"))
        write_effective(tmp_path, role, StartupRecord.from_json(saved["effective"], source="effective"))
        usage = {k: ServerUsage.from_json(v, source="resources") for k, v in saved["resources"].items()}
        write_resources(tmp_path, role, usage)
        saved_teardown = read_server_file(EXAMPLE, role, "teardown")
        kind = AttachedTeardown if "attached" in saved_teardown else Teardown
        write_teardown(tmp_path, role, kind.from_json(saved_teardown, source="t"))
        for part in ("launch", "effective", "resources", "teardown"):
            name = f"{role}-{part}.json"
            assert (tmp_path / "servers" / name).read_bytes() == (EXAMPLE / "servers" / name).read_bytes(), name
    assert read_server_file(tmp_path, "placebo", "launch") is None


def test_a_teardown_and_a_launch_line_are_written_in_their_records_order(tmp_path: Path) -> None:
    (tmp_path / "servers").mkdir()
    write_launch(
        tmp_path, "plain", LaunchFile(argv=("vllm", "serve", "m"), env={}, base_url="http://h:1", attached=False)
    )
    assert json.loads((tmp_path / "servers" / "plain-launch.json").read_text()) == {
        "argv": ["vllm", "serve", "m"],
        "env": {},
        "base_url": "http://h:1",
        "attached": False,
    }
    saved = {"survivors": [], "gpu_memory_after": None, "gpu_settle": {"settled": True}}
    with pytest.raises(BadInput, match="gpu_settle"):
        Teardown.from_json(saved, source="t")  # a settle record has its own required fields


def test_progress_reads_back_and_a_missing_file_is_none(tmp_path: Path) -> None:
    assert read_progress(tmp_path) is None and read_status(tmp_path) is None
    now = ProgressFile(3, 18, True, 250.0, "[plain] w c4 block 1", "2026-12-07T08:00:00+00:00").in_full()
    write_progress(tmp_path, now)
    got = read_progress(tmp_path)
    assert got == now and got is not None
    assert got.line() == "slot 4/18+, at least 4 min 10 s left (sizing may add blocks)"


def test_a_sweeps_checks_and_times(tmp_path: Path) -> None:
    assert read_sweep_checks(tmp_path) == {} and read_times(tmp_path) == {}
    write_checks(tmp_path, {"k1": [{"check": "draft", "ok": True}], "k2": []})
    assert read_sweep_checks(tmp_path)["k1"] == [{"check": "draft", "ok": True}]
    (tmp_path / "times.json").write_text('{"plain-before": 120.5, "k1": 300}')
    assert read_times(tmp_path) == {"plain-before": 120.5, "k1": 300}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "status.json",
            '{"complete": "yes", "failure": null}',
            "status.json: complete: expected true or false, got .yes.",
        ),
        ("checks.json", "[1, 2]", "checks.json holds no findings per candidate; restore it"),
        ("times.json", '{"k1": "long"}', "times.json holds no seconds per phase; restore it or remove it"),
    ],
)
def test_a_file_that_does_not_read_is_one_line(tmp_path: Path, name: str, text: str, message: str) -> None:
    (tmp_path / name).write_text(text)
    read = {"status.json": read_status, "checks.json": read_sweep_checks, "times.json": read_times}[name]
    with pytest.raises(BadInput, match=message) as err:
        read(tmp_path)
    assert "\n" not in str(err.value)


def test_a_status_json_of_older_code_is_read_as_one_status(tmp_path: Path) -> None:
    shutil.copyfile(EXAMPLES / "h200" / "h200-1b-ngram" / "status.json", tmp_path / "status.json")
    assert read_status(tmp_path) == StatusFile(complete=True, failure=None)
