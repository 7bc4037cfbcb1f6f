"""workloadmd and contextplot: the card's workload statement (kind, source, lengths actually sent, scope)
and the context-length table and figure over ``<workload>@<tokens>`` cells."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.records.cardcell import CardCell
from loadgen.records.protocol import Protocol
from loadgen.records.request import RequestRecord
from loadgen.report.contextplot import render_context_plot
from loadgen.report.workloadmd import context_axis, context_rows, length_summary, workload_statement
from tests.support.cards import card_cell, markdown
from tests.support.figures import capture_figures, labels, line


def _rec(workload: str, role: str, prompt_tokens: int | None, out: int, phase: str = "measured") -> RequestRecord:
    return RequestRecord(
        "p", role, workload, 1, phase, 0.0, usage_prompt_tokens=prompt_tokens, requested_output_tokens=out
    )


def test_the_statement_names_kind_source_lengths_sent_and_scope() -> None:
    workloads = [
        {
            "name": "f",
            "kind": "file",
            "endpoint": "chat",
            "output_tokens": 32,
            "seed": 7,
            "path": "data/p.jsonl",
            "source_sha256": "ab" * 32,
            "source_lines": 30,
            "skipped": ["line 2: no human turn"],
        },
        {
            "name": "g@256",
            "kind": "grounded",
            "endpoint": "completions",
            "input_tokens": 256,
            "output_tokens": 64,
            "seed": 5,
        },
    ]
    records = [_rec("f", "plain", n, o) for n, o in ((10, 20), (30, 8), (12, 40))]
    records += [_rec("f", "speculative", 999, 999), _rec("f", "plain", 999, 999, phase="warmup")]
    records += [_rec("g@256", "plain", 256, 64) for _ in range(3)]
    assert workload_statement(Protocol.from_json({"workloads": workloads, "cells": []}, source="p.json"), records) == (
        "Conclusions hold for the workloads tested only: f (file, chat; file data/p.jsonl (sha256 "
        + "ab" * 32
        + ", 30 lines, 1 skipped: line 2: no human turn; sampled with seed 7); input tokens min/median/max "
        "10/12/30, output tokens 8/20/40); g@256 (grounded, completions; generator grounded, seed 5; input tokens "
        "min/median/max 256/256/256, output tokens 64/64/64). They do not carry over to other traffic: "
        "acceptance depends on what is asked (copying or short answers versus multi-step reasoning)."
    )
    assert length_summary([]) == "none sent" and length_summary([4, 1]) == "1/2.5/4"


def test_a_trace_names_its_format_and_its_skipped_and_floored_lines() -> None:
    trace = {"name": "t", "kind": "trace", "endpoint": "completions", "output_tokens": 8, "path": "b.csv"}
    trace |= {"source_sha256": "cd" * 32, "source_lines": 9, "time_scale": 0.5, "block_tokens": 512}
    trace |= {"trace_format": "auto", "trace_format_read": "burstgpt", "zero_output": 1}
    trace |= {"skipped": ["line 4: too long"], "floored": [f"line {n}: 0 output tokens, sent with 1" for n in (2, 7)]}
    said = workload_statement(Protocol.from_json({"workloads": [trace], "cells": []}, source="p.json"), [])
    assert (
        f"t (trace, completions; trace b.csv (format burstgpt (detected); sha256 {'cd' * 32}, 9 lines, 1 skipped: "
        "line 4: too long, 2 sent with the declared floor of 1 output tokens: line 2: 0 output tokens, sent with 1; "
        "line 7: 0 output tokens, sent with 1; replayed at its times x 0.5, blocks of 512 tokens); "
    ) in said
    declared = trace | {"trace_format": "azure", "floored": []}
    assert "(format azure (declared); sha256 " in workload_statement(
        Protocol.from_json({"workloads": [declared], "cells": []}, source="p.json"), []
    )
    older = {k: v for k, v in trace.items() if k not in ("trace_format", "trace_format_read", "floored")}
    assert "1 skipped: line 4: too long; replayed" in workload_statement(
        Protocol.from_json({"workloads": [older], "cells": []}, source="p.json"), []
    )


def _cell(workload: str, level: str, c: int, acc: float | None, ratio: float | None) -> CardCell:
    return card_cell(
        {
            "workload": workload,
            "level": level,
            "concurrency": c,
            **({"speculative": {"acceptance": {"acceptance_rate": acc}}} if acc is not None else {}),
            "ratios": {"tpot_p50": {"value": ratio, "ci_low": ratio - 0.05, "ci_high": ratio + 0.05}}
            if ratio is not None
            else {},
        }
    )


CELLS = [
    _cell("g@1024", "c1", 1, 0.5, 0.9),
    _cell("g@128", "c1", 1, 0.7, 0.8),
    _cell("g@128", "c4", 4, 0.6, 1.1),
    _cell("plain-w", "c1", 1, 0.2, 1.0),
]


def test_context_axis_rows_per_input_length_and_level() -> None:
    axis = context_axis(CELLS)
    assert list(axis) == ["g"]
    assert [(r.input_tokens, r.level, r.acceptance_rate, r.tpot_ratio) for r in axis["g"]] == [
        (128, "c1", 0.7, 0.8),
        (1024, "c1", 0.5, 0.9),
        (128, "c4", 0.6, 1.1),
    ]
    rows = context_rows(axis)
    assert rows[0] == "## Context length" and "### g" in rows
    assert "| 128 | c1 | 0.700 | 0.800 (0.750–0.850) |" in rows
    assert "| 1024 | c1 | 0.500 | 0.900 (0.850–0.950) |" in rows
    assert context_rows(context_axis(CELLS[3:])) == []


def test_the_card_and_the_plot_carry_the_context_axis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.report.test_cardmd import card as one_cell_card

    base = one_cell_card()
    card = base | {"context_axis": {k: [r.to_json() for r in rows] for k, rows in context_axis(CELLS).items()}}
    assert "| 128 | c4 | 0.600 | 1.100 (1.050–1.150) |" in markdown(card)
    figures = capture_figures(monkeypatch)
    (path,) = render_context_plot(card["pair"], context_axis(CELLS), tmp_path)
    assert path.name == "context_length.png" and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    acc_ax, ratio_ax = figures["context_length.png"].axes
    assert labels(acc_ax) == ["g c1", "g c4"]
    assert line(acc_ax, "g c1") == ([128, 1024], [0.7, 0.5]) and line(acc_ax, "g c4") == ([128], [0.6])
    assert line(ratio_ax, "g c1") == ([128, 1024], [0.8, 0.9]) and line(ratio_ax, "g c4") == ([128], [1.1])
    assert render_context_plot(base["pair"], None, tmp_path / "none") == []
