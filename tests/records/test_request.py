"""The request record (records/request.py): a frozen value, one requests.jsonl line that reads back as it was
written, and a line that does not read is one line naming the file, the line and the field (exit 2)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import BadInput
from loadgen.records.request import RequestRecord
from loadgen.records.wire import RESTORE
from loadgen.store.files import append_records, load_records
from loadgen.store.rundir import JsonlAppender
from tests.support.fakerun import fetch_one
from tests.support.scripted_server import DONE, completion_chunk, usage_chunk

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-1b-draft"
GOOD = {
    "prompt_id": "p0",
    "role": "plain",
    "workload": "w",
    "concurrency": 2,
    "phase": "measured",
    "scheduled_s": 0.0,
    "chunk_arrivals_s": [0.1, 0.2],
    "chunk_tokens": [1, 2],
    "token_ids": [5, 6, 7],
}


def _streamed() -> RequestRecord:
    """A record the real client wrote from a scripted server: three chunks of one token, then usage."""
    chunks = [
        completion_chunk("a", [11]),
        completion_chunk("b", [12]),
        completion_chunk("c", [13], "length"),
        usage_chunk(4, 3),
        DONE,
    ]
    return fetch_one({"hi": (200, [(0.0, c) for c in chunks])}, "hi", 3)


def test_a_streamed_record_writes_and_reads_back_byte_identically(tmp_path: Path) -> None:
    record = _streamed()
    assert (record.token_ids, record.chunk_tokens, record.finish_reason, record.error) == (
        [11, 12, 13],
        [1, 1, 1],
        "length",
        None,
    )
    app = JsonlAppender(tmp_path / "requests.jsonl")
    append_records(app, [record, record])
    app.close()
    text = (tmp_path / "requests.jsonl").read_text()
    loaded = load_records(tmp_path)
    assert loaded == [record, record]
    assert "".join(json.dumps(r.to_json()) + "\n" for r in loaded) == text


def test_the_record_is_frozen() -> None:
    record = RequestRecord.from_json(GOOD, source="requests.jsonl line 1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.error = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"concurrency": "two"}, "concurrency: expected an integer, got 'two'"),
        ({"concurrency": True}, "concurrency: expected an integer, got True"),
        ({"scheduled_s": None}, "scheduled_s: expected a number, got None"),
        ({"chunk_tokens": [1, "x"]}, "chunk_tokens: expected a list of integers, got [1, 'x']"),
        ({"http_status": "200"}, "http_status: expected an integer or null, got '200'"),
        ({"prompt_id": None}, "prompt_id: expected a string, got None"),
    ],
)
def test_a_field_of_the_wrong_kind_names_the_line_and_the_field(change: dict[str, object], message: str) -> None:
    with pytest.raises(BadInput) as caught:
        RequestRecord.from_json(GOOD | change, source="runs/x/requests.jsonl line 7")
    assert str(caught.value) == f"runs/x/requests.jsonl line 7: {message}; {RESTORE}"


def test_a_missing_field_and_a_line_that_is_no_object() -> None:
    line = {k: v for k, v in GOOD.items() if k != "role"}
    with pytest.raises(BadInput) as caught:
        RequestRecord.from_json(line, source="r.jsonl line 2")
    assert str(caught.value) == f"r.jsonl line 2: role: missing (expected a string); {RESTORE}"
    with pytest.raises(BadInput) as caught:
        RequestRecord.from_json([1, 2], source="r.jsonl line 3")
    assert str(caught.value) == f"r.jsonl line 3: expected an object, got [1, 2]; {RESTORE}"


def test_loadgen_report_on_a_bad_requests_line_is_one_line_exit_2(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(EXAMPLE, run)
    (run / "requests.jsonl").write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD | {"send_s": "soon"}) + "\n")
    result = CliRunner().invoke(main, ["report", str(run)])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        f"loadgen: error: {run / 'requests.jsonl'} line 2: send_s: expected a number, got 'soon'; {RESTORE}"
    )


def test_the_derived_values_of_a_record() -> None:
    record = RequestRecord.from_json(GOOD | {"usage_completion_tokens": 3}, source="r")
    assert (record.output_tokens, record.ok, record.warmup, record.usage_mismatch) == (3, True, False, False)
    record = RequestRecord.from_json(GOOD | {"usage_completion_tokens": 4, "phase": "cooldown"}, source="r")
    assert (record.warmup, record.usage_mismatch) == (True, True)  # 4 said, 3 counted
    failed = RequestRecord.from_json(GOOD | {"error": "HTTP 500", "http_status": 500}, source="r")
    assert (failed.ok, failed.output_tokens, failed.usage_mismatch) == (False, 3, False)  # no usage: no mismatch


def test_a_record_of_older_code_reads() -> None:
    older = {k: v for k, v in GOOD.items() if k != "phase"} | {"warmup": True, "retired_field": 1}
    record = RequestRecord.from_json(older, source="r")
    assert record.phase == "warmup" and "retired_field" not in record.to_json() and "warmup" not in record.to_json()
    assert RequestRecord.from_json(older | {"warmup": False}, source="r").phase == "measured"
    with pytest.raises(BadInput) as caught:
        RequestRecord.from_json(older | {"warmup": "yes"}, source="r line 1")
    assert str(caught.value) == f"r line 1: warmup: expected true or false, got 'yes'; {RESTORE}"


def test_an_older_record_without_error_or_token_gets_the_no_tokens_error() -> None:
    line = GOOD | {
        "chunk_arrivals_s": [],
        "chunk_tokens": [],
        "token_ids": [],
        "http_status": 200,
        "finish_reason": "stop",
        "usage_completion_tokens": 0,
    }
    record = RequestRecord.from_json(line, source="r")
    assert (
        record.error
        == (
            "no-tokens: HTTP 200 stream ended with no token-bearing chunk (finish_reason stop, usage "
            "completion_tokens 0)"
        )
        and not record.ok
    )
    assert RequestRecord.from_json(line | {"error": "timeout"}, source="r").error == "timeout"  # its own kept


def test_optional_fields_absent_take_their_defaults_and_null_only_where_allowed() -> None:
    record = RequestRecord.from_json(GOOD, source="r")
    assert (record.arrival_s, record.level, record.repetition, record.send_s, record.done_s) == (None, "", 0, 0.0, None)
    assert RequestRecord.from_json(GOOD | {"arrival_s": None, "done_s": 1.25}, source="r").done_s == 1.25
    with pytest.raises(BadInput) as caught:
        RequestRecord.from_json(GOOD | {"send_s": None}, source="r line 5")
    assert str(caught.value) == f"r line 5: send_s: expected a number, got None; {RESTORE}"
