"""Planning prompt-file and context-length workloads: the file's sha256, line count and skipped lines land in
protocol.json, each input length is its own cell, and the replayed protocol gives the same cells."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from loadgen.profile.pairfile import load_pair
from loadgen.run.plan import plan_cells, probe_host, protocol, replay_protocol, unique_prompts
from tests.support.tokfactory import trained_vocab, write_model


def _pair(tmp_path: Path) -> Path:
    model = write_model(tmp_path / "model", trained_vocab())
    data = tmp_path / "p.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": f"the cat sat {i}"}) + "\n" for i in range(12))
        + json.dumps({"messages": [{"role": "user", "content": "the dog"}]})
        + "\n"
    )
    wl = tmp_path / "profiles" / "workloads"
    wl.mkdir(parents=True)
    (wl / "f.toml").write_text(f'kind = "file"\npath = "{data}"\noutput_tokens = 4\nseed = 1\n')
    (wl / "g.toml").write_text('kind = "grounded"\ninput_tokens = [40, 80]\noutput_tokens = 4\nseed = 1\n')
    text = (
        Path("profiles/pairs/demo-cpu-ngram.toml").read_text().replace("ci_half_width = 0.1\n", "")
    )  # unsized: 3 blocks
    text = text.replace('model = ".models/smollm2-135m-instruct"', f'model = "{model}"')
    text = text.replace('workloads = ["short-homogeneous", "long-diverse", "grounded"]', 'workloads = ["f", "g"]')
    text = text.replace("concurrency = [1, 2, 4]", "concurrency = [1]").replace("concurrency = [1, 4]\n", "")
    path = tmp_path / "pair.toml"
    path.write_text(text)
    return path


def test_prompt_file_and_context_lengths_in_the_protocol_and_its_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _pair(tmp_path)
    monkeypatch.chdir(tmp_path)  # the replay reads the pair's workloads from profiles/workloads
    pair = load_pair(str(path))
    cells = plan_cells(pair)
    assert [(c.workload, c.level.label, c.repetition) for c in cells] == [
        (w, "c1", b) for w in ("f", "g@40", "g@80") for b in range(3)
    ]
    assert cells == plan_cells(pair)  # seeded: the identical list for every arm, every time
    prompts = unique_prompts(cells)
    file_texts = [p.text for p in prompts if p.workload == "f"]
    # 3 blocks x (1 warmup + 4 measured) = 15 prompts over the file's 12 completions lines
    assert len(file_texts) == 15 and len(set(file_texts)) == 12
    proto = protocol(pair, cells, prompts, probe_host()).to_json()
    f = proto["workloads"][0]
    data = tmp_path / "p.jsonl"
    assert (f["kind"], f["path"], f["source_sha256"], f["source_lines"], list(f["skipped"])) == (
        "file",
        str(data),
        hashlib.sha256(data.read_bytes()).hexdigest(),
        13,
        ["line 13: a chat line in a completions file"],
    )
    assert [(w["name"], w["input_tokens"], w["context_tokens"]) for w in proto["workloads"][1:]] == [
        ("g@40", 40, 1024),
        ("g@80", 80, 1024),
    ]
    run = tmp_path / "run"
    run.mkdir()
    (run / "prompts.jsonl").write_text("".join(json.dumps(p.to_json()) + "\n" for p in prompts))
    (run / "protocol.json").write_text(json.dumps(proto))
    shutil.copyfile(pair.path, run / "pair.toml")
    replayed_pair, replayed, _ = replay_protocol(run / "protocol.json")
    assert replayed == cells and replayed_pair.workloads == pair.workloads
