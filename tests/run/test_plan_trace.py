"""Planning a trace workload: every block replays the whole trace at its recorded offsets (time-scaled), the
same prompts on every arm, with the trace's sha256, line count and skipped lines in protocol.json; the replayed
protocol gives the same cells."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from loadgen.profile.pairfile import load_pair
from loadgen.run.plan import plan_cells, plan_size, probe_host, protocol, replay_protocol, unique_prompts
from tests.support.tokfactory import trained_vocab, write_model

ROWS = [
    {"timestamp": 4000 + 250 * i, "input_length": 20, "output_length": 3, "hash_ids": [i % 2, i]} for i in range(6)
] + [{"timestamp": 4100, "input_length": 2000, "output_length": 3}]


def _pair(tmp_path: Path) -> Path:
    from loadgen.profile.trace import WORDS

    model = write_model(tmp_path / "model", trained_vocab((" ".join(WORDS),)))
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    wl = tmp_path / "profiles" / "workloads"
    wl.mkdir(parents=True)
    (wl / "tr.toml").write_text(
        f'kind = "trace"\npath = "{data}"\noutput_tokens = 4\nseed = 1\nblock_tokens = 8\ntime_scale = [1.0, 0.5]\n'
    )
    text = (
        Path("profiles/pairs/demo-cpu-ngram.toml").read_text().replace("ci_half_width = 0.1\n", "")
    )  # unsized: 3 blocks
    text = text.replace('model = ".models/smollm2-135m-instruct"', f'model = "{model}"')
    text = text.replace('workloads = ["short-homogeneous", "long-diverse", "grounded"]', 'workloads = ["tr"]')
    text = text.replace("concurrency = [1, 2, 4]", "concurrency = [1]").replace("concurrency = [1, 4]\n", "")
    path = tmp_path / "pair.toml"
    path.write_text(text)
    return path


def test_a_trace_replays_whole_in_every_block_and_its_protocol_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _pair(tmp_path)
    monkeypatch.chdir(tmp_path)
    pair = load_pair(str(path))
    cells = plan_cells(pair)
    # 6 requests over 1.25 s (the 2000-token line exceeds the 1024-token serving context and is skipped)
    assert [(c.workload, c.level.label, c.level.rate_rps, c.repetition) for c in cells] == [
        ("tr@ts1", "r4.8", 4.8, b) for b in range(3)
    ] + [("tr@ts0.5", "r9.6", 9.6, b) for b in range(3)]
    assert cells[0].arrivals_s == (0.0, 0.25, 0.5, 0.75, 1.0, 1.25)
    assert cells[3].arrivals_s == (0.0, 0.125, 0.25, 0.375, 0.5, 0.625)
    assert all(
        c.measured == cells[3 * (i // 3)].measured and not c.warmup and not c.cooldown for i, c in enumerate(cells)
    )
    assert [p.text for p in cells[0].measured] == [p.text for p in cells[3].measured]  # the same trace, faster
    assert [p.prompt_id for p in cells[0].measured][:2] == ["tr@ts1-00000-line1", "tr@ts1-00001-line2"]
    assert plan_size(pair)[0] == 7 * 3 * 2  # counted from the line count before anything is generated
    prompts = unique_prompts(cells)
    proto = protocol(pair, cells, prompts, probe_host()).to_json()
    w = proto["workloads"][0]
    data = tmp_path / "t.jsonl"
    assert (
        w["kind"],
        w["path"],
        w["source_sha256"],
        w["source_lines"],
        list(w["skipped"]),
        w["time_scale"],
        w["block_tokens"],
    ) == (
        "trace",
        str(data),
        hashlib.sha256(data.read_bytes()).hexdigest(),
        7,
        ["line 7: 2000 prompt + 3 output tokens exceed the serving context (1024 tokens, --max-model-len)"],
        1.0,
        8,
    )
    run = tmp_path / "run"
    run.mkdir()
    (run / "prompts.jsonl").write_text("".join(json.dumps(p.to_json()) + "\n" for p in prompts))
    (run / "protocol.json").write_text(json.dumps(proto))
    shutil.copyfile(pair.path, run / "pair.toml")
    replayed_pair, replayed, _ = replay_protocol(run / "protocol.json")
    assert replayed == cells and replayed_pair.workloads == pair.workloads
