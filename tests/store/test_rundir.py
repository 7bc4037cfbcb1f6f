"""rundir: run folder naming and uniqueness, JSON round trips, whole JSON lines, torn lines, request records."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

from loadgen.records.request import RequestRecord
from loadgen.store.files import append_records, load_records
from loadgen.store.rundir import (
    JsonlAppender,
    copy_file,
    new_run_dir,
    read_json,
    read_jsonl,
    write_json,
    write_text,
)

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def test_new_run_dir_is_named_by_utc_time_and_made_unique(tmp_path: Path) -> None:
    first = new_run_dir(tmp_path, "pair", NOW)
    assert first == tmp_path / "pair" / "20260304T050607Z"
    assert sorted(p.name for p in first.iterdir()) == ["metrics", "servers"]
    assert new_run_dir(tmp_path, "pair", NOW).name == "20260304T050607Z-1"
    assert new_run_dir(tmp_path, "pair", NOW).name == "20260304T050607Z-2"
    assert new_run_dir(tmp_path, "other", NOW) == tmp_path / "other" / "20260304T050607Z"


def test_write_json_and_read_json_round_trip_with_indent(tmp_path: Path) -> None:
    data = {"a": [1, 2.5, None], "b": {"c": "é"}, "when": NOW}
    write_json(tmp_path / "x.json", data)
    assert read_json(tmp_path / "x.json") == {"a": [1, 2.5, None], "b": {"c": "é"}, "when": str(NOW)}
    text = (tmp_path / "x.json").read_text()
    assert text.startswith('{\n  "a": [') and text.endswith("}\n")
    assert not (tmp_path / "x.json.tmp").exists()


def test_write_json_keeps_json_strict_for_infinities(tmp_path: Path) -> None:
    write_json(tmp_path / "x.json", {"bounds": [1.0, math.inf], "nan": math.nan})
    text = (tmp_path / "x.json").read_text()
    assert "Infinity" not in text and "NaN" not in text
    assert read_json(tmp_path / "x.json") == {"bounds": [1.0, None], "nan": None}  # non-finite: "not measured"


def test_write_text_replaces_the_file_whole(tmp_path: Path) -> None:
    write_text(tmp_path / "t.md", "one\n")
    write_text(tmp_path / "t.md", "two\n")
    assert (tmp_path / "t.md").read_text() == "two\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.md"]


def test_the_appender_writes_one_line_per_object(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    app = JsonlAppender(path)
    app.append({"i": 1})
    app.append({"i": 2, "s": "x"})
    app.close()
    assert path.read_text() == '{"i": 1}\n{"i": 2, "s": "x"}\n'
    assert list(read_jsonl(path)) == [{"i": 1}, {"i": 2, "s": "x"}]
    assert app.lost == 0


def test_reopening_after_a_torn_line_ends_it_and_readers_skip_it(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"i": 1}\n{"i": 2, "s')
    app = JsonlAppender(path)
    app.append({"i": 3})
    app.close()
    assert path.read_text() == '{"i": 1}\n{"i": 2, "s\n{"i": 3}\n'
    torn: list[str] = []
    assert list(read_jsonl(path, torn)) == [{"i": 1}, {"i": 3}]
    assert torn == ['{"i": 2, "s']


def test_read_jsonl_of_a_missing_file_is_empty_and_skips_blank_lines(tmp_path: Path) -> None:
    assert list(read_jsonl(tmp_path / "none.jsonl")) == []
    (tmp_path / "b.jsonl").write_text('\n{"a": 1}\n   \n')
    assert list(read_jsonl(tmp_path / "b.jsonl")) == [{"a": 1}]


def test_request_records_round_trip_through_requests_jsonl(tmp_path: Path) -> None:
    records = [
        RequestRecord(
            "p0",
            "plain",
            "w",
            2,
            "measured",
            0.5,
            level="c2",
            send_s=0.5,
            chunk_arrivals_s=[0.6, 0.7],
            chunk_tokens=[1, 3],
            token_ids=[5, 6, 7, 8],
            finish_reason="length",
            usage_completion_tokens=4,
            requested_output_tokens=4,
        ),
        RequestRecord("p1", "speculative", "w", 2, "warmup", 0.0, error="http 500", http_status=500),
    ]
    app = JsonlAppender(tmp_path / "requests.jsonl")
    append_records(app, records)
    app.close()
    loaded = load_records(tmp_path)
    assert loaded == records
    assert [r.warmup for r in loaded] == [False, True] and loaded[0].output_tokens == 4


def test_an_older_record_without_phase_or_error_loads_as_today(tmp_path: Path) -> None:
    old = {
        "prompt_id": "p",
        "role": "plain",
        "workload": "w",
        "concurrency": 1,
        "warmup": True,
        "scheduled_s": 0.0,
        "retired_field": 1,
    }
    (tmp_path / "requests.jsonl").write_text(json.dumps(old) + "\n")
    (record,) = load_records(tmp_path)
    assert record.phase == "warmup" and record.error == (
        "no-tokens: HTTP None stream ended with no token-bearing "
        "chunk (finish_reason None, usage completion_tokens None)"
    )


def test_copy_file_copies_byte_for_byte(tmp_path: Path) -> None:
    src = tmp_path / "p.toml"
    src.write_bytes(b"[target]\r\n")
    (tmp_path / "run").mkdir()
    dest = copy_file(src, tmp_path / "run" / "pair.toml")
    assert dest == tmp_path / "run" / "pair.toml" and dest.read_bytes() == b"[target]\r\n"


def test_an_existing_folder_gets_the_next_suffix_never_the_same_folder(tmp_path: Path) -> None:
    from loadgen.store.rundir import exclusive_dir

    made = [exclusive_dir(tmp_path / "p", "sweep-x") for _ in range(3)]
    assert [m.name for m in made] == ["sweep-x", "sweep-x-1", "sweep-x-2"] and all(m.is_dir() for m in made)
