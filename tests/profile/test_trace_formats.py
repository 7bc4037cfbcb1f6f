"""The trace formats people publish, read as they are (profile/traceformats.py, profile/trace.py): the Azure LLM
inference traces (2023 and 2024 CSV, ``TIMESTAMP,ContextTokens,GeneratedTokens``) and BurstGPT's CSV with the
format named or detected, Mooncake JSONL as before; every bad line counted and the first few named; requests of
0 output tokens refused, skipped or floored as the workload declares; the trace found beside its workload file."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.trace import read_trace
from loadgen.profile.traceformats import detect
from loadgen.profile.workload import load_workloads

#: The first rows of AzureLLMInferenceTrace_conv.csv (2023) as published, and of the 2024 week-long trace.
AZURE_2023 = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.2505090,879,53
"""
AZURE_2024 = """TIMESTAMP,ContextTokens,GeneratedTokens
2024-05-10 00:00:00.009930+00:00,2162,5
2024-05-10 00:00:00.131650+00:00,1025,21
"""
BURSTGPT = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,ChatGPT,1087,0,1087,Conversation log
118,GPT-4,417,1230,1647,API log
"""


def _file(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def test_the_azure_2023_trace_is_read_with_its_arrival_times_in_ms(tmp_path: Path) -> None:
    path = _file(tmp_path, "AzureLLMInferenceTrace_conv.csv", AZURE_2023)
    assert detect(str(path), AZURE_2023) == "azure"
    trace = read_trace(path)
    assert trace.layout == "mooncake" and trace.lines == 3
    e = trace.entries
    assert [(x.line, x.input_length, x.output_length) for x in e] == [(2, 374, 44), (3, 396, 109), (4, 879, 53)]
    # 18:15:50.9951690 - 18:15:46.6805900 = 4.314579 s (the 7th fractional digit cut)
    assert e[1].timestamp_ms - e[0].timestamp_ms == pytest.approx(
        4314.579, abs=1e-3
    )  # float64 epoch ms: sub-microsecond
    assert e[2].timestamp_ms - e[0].timestamp_ms == pytest.approx(
        4569.919, abs=1e-3
    )  # float64 epoch ms: sub-microsecond


def test_the_azure_2024_trace_with_its_time_zone_is_read(tmp_path: Path) -> None:
    trace = read_trace(_file(tmp_path, "week.csv", AZURE_2024), fmt="azure")
    assert [x.output_length for x in trace.entries] == [5, 21]
    assert trace.entries[1].timestamp_ms - trace.entries[0].timestamp_ms == pytest.approx(
        121.72, abs=1e-3
    )  # float64 epoch ms: sub-microsecond


def test_burstgpt_zero_output_requests_are_refused_skipped_or_floored(tmp_path: Path) -> None:
    path = _file(tmp_path, "BurstGPT_1.csv", BURSTGPT)
    with pytest.raises(ProfileError, match=r"BurstGPT_1.csv: line 3: 0 output tokens .*zero_output"):
        read_trace(path)
    skipped = read_trace(path, zero="skip")
    assert [(x.line, x.timestamp_ms, x.output_length) for x in skipped.entries] == [
        (2, 5000.0, 18),
        (4, 118000.0, 1230),
    ]
    assert skipped.skipped == ('line 3: 0 output tokens (zero_output = "skip")',)
    floored = read_trace(path, zero=4)
    assert [x.output_length for x in floored.entries] == [18, 4, 1230]
    assert floored.floored == ("line 3: 0 output tokens, sent with 4 (zero_output = 4)",) and not floored.skipped
    assert (skipped.format, floored.format, skipped.floored) == ("burstgpt", "burstgpt", ())
    jsonl = "".join(f'{{"timestamp": {t}, "input_length": 5, "output_length": {n}}}\n' for t, n in ((0, 0), (9, 3)))
    mooncake = read_trace(_file(tmp_path, "m.jsonl", jsonl), zero=2)
    assert [x.output_length for x in mooncake.entries] == [2, 3] and mooncake.format == "mooncake"
    assert mooncake.floored == ("line 1: 0 output tokens, sent with 2 (zero_output = 2)",)


def test_every_bad_line_is_counted_and_the_first_three_named(tmp_path: Path) -> None:
    rows = AZURE_2023 + "yesterday,10,5\n2023-11-16 18:16:00,ten,5\n2023-11-16 18:16:01,10\n2023-11-16 18:16:02,1.5,2\n"
    with pytest.raises(ProfileError) as info:
        read_trace(_file(tmp_path, "t.csv", rows))
    message = str(info.value)
    assert "4 of 7 lines cannot be read: line 5: TIMESTAMP 'yesterday' is not a date and time" in message
    assert "line 6: ContextTokens 'ten'" in message and "line 7: 2 columns, the header has 3" in message
    assert message.endswith("; and 1 more; fix or remove them") and "\n" not in message
    jsonl = '{"timestamp": 0, "input_length": 5, "output_length": 3}\nnot json\n{"timestamp": -1, "input_length": 5}\n'
    with pytest.raises(ProfileError, match=r"2 of 3 lines cannot be read: line 2 is not JSON .*; line 3: timestamp"):
        read_trace(_file(tmp_path, "m.jsonl", jsonl))


def test_an_unknown_header_names_the_formats_known(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"neither a JSON object .* Azure LLM inference .* BurstGPT"):
        read_trace(_file(tmp_path, "x.csv", "time,in,out\n1,2,3\n"))


def test_a_trace_workload_finds_its_trace_beside_it_and_reads_format_and_zero_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    _file(folder, "burst.csv", BURSTGPT)
    wl = _file(
        folder,
        "burst.toml",
        'name = "burst"\nkind = "trace"\npath = "burst.csv"\nformat = "burstgpt"\nzero_output = "skip"\n'
        "output_tokens = 8\n",
    )
    monkeypatch.chdir(tmp_path)  # not the workload file's folder
    (w,) = load_workloads(str(wl))
    assert w.path == str(folder / "burst.csv") and w.source_lines == 3 and w.trace_format == "burstgpt"
    assert w.skipped == ('line 3: 0 output tokens (zero_output = "skip")',) and w.trace_format_read == "burstgpt"
    wl.write_text(wl.read_text().replace('format = "burstgpt"', 'format = "auto"').replace('"skip"', "1"))
    (w,) = load_workloads(str(wl))
    assert (w.trace_format, w.trace_format_read, w.skipped) == ("auto", "burstgpt", ())
    assert w.floored == ("line 3: 0 output tokens, sent with 1 (zero_output = 1)",)
    wl.write_text(wl.read_text().replace('format = "auto"', 'format = "csv"'))
    with pytest.raises(ProfileError, match=r"format must be one of auto, mooncake, prompts, azure, burstgpt"):
        load_workloads(str(wl))
