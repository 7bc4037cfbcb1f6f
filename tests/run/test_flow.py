"""The compare flow's pure parts: cell planning, protocol replay, proof of mode on recorded /metrics."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from loadgen.errors import FallbackDetected, ProfileError
from loadgen.profile.pairfile import load_pair
from loadgen.prom import deltas
from loadgen.prom import exposition as prom
from loadgen.run.plan import plan_cells, probe_host, protocol, replay_protocol, unique_prompts
from loadgen.serve.modeproof import prove_mode

DATA = Path(__file__).parents[1] / "data"


def _pair_without_exact_lengths(tmp_path: Path) -> Path:
    text = Path("profiles/pairs/demo-cpu.toml").read_text()
    # no target model here: keep natural prompt lengths so no tokenizer is needed
    text = text.replace("[stop]", "[stop]\ncooldown = true").replace(
        "concurrency = [1, 2, 4]", "concurrency = [1, 4]\nrates_rps = [2.0]"
    )
    # unsized: the 3 blocks of the design, no more planned (sizing is tests/run/test_one_decision.py's)
    text = text.replace("ci_half_width = 0.1\n", "").replace("max_blocks = 4\n", "")
    wl = tmp_path / "profiles" / "workloads"
    wl.mkdir(parents=True)
    for name in ("short-homogeneous", "long-diverse"):
        src = Path(f"profiles/workloads/{name}.toml").read_text()
        (wl / f"{name}.toml").write_text(
            "\n".join(line for line in src.splitlines() if not line.startswith("input_tokens"))
        )
    path = tmp_path / "pair.toml"
    path.write_text(text)
    return path


def test_plan_cells_slices_are_disjoint_and_seeded(tmp_path: Path) -> None:
    pair = load_pair(str(_pair_without_exact_lengths(tmp_path)), workloads_dir=tmp_path / "profiles" / "workloads")
    cells = plan_cells(pair)
    blocks = pair.design.blocks
    assert blocks == 3  # demo-cpu's design
    levels = [("c1", 0), ("c4", 0), ("r2", 0), ("c1", 1), ("c4", 1), ("r2", 1), ("c1", 2), ("c4", 2), ("r2", 2)]
    assert [(c.workload, c.level.label, c.repetition) for c in cells] == [
        (w, lv, b) for w in ("short-homogeneous", "long-diverse") for lv, b in levels
    ]
    c1, c4, r2 = cells[:3]
    # demo-cpu per block: min_requests = 4, rounds = 1; cooldown fillers 4 x (concurrency - 1); the first block
    # of a level warms a full round at its concurrency, the later ones warmup_requests (1)
    assert (len(c1.warmup), len(c1.measured), len(c1.cooldown)) == (1, 4, 0)
    assert (len(c4.warmup), len(c4.measured), len(c4.cooldown)) == (4, 4, 12)
    assert len(cells[4].warmup) == 1 and cells[4].level.label == "c4" and cells[4].repetition == 1
    assert r2.arrivals_s is not None and len(r2.arrivals_s) == 4 and r2.arrivals_s[0] == 0.0
    ids = [p.prompt_id for c in cells[: 3 * blocks] for p in (*c.warmup, *c.measured, *c.cooldown)]
    assert len(ids) == len(set(ids))  # every block of every level has prompts of its own
    again = plan_cells(pair)
    assert [c.measured for c in again] == [c.measured for c in cells]
    assert again[2].arrivals_s == r2.arrivals_s


def test_protocol_replay_gives_the_same_cells(tmp_path: Path) -> None:
    pair = load_pair(str(_pair_without_exact_lengths(tmp_path)), workloads_dir=tmp_path / "profiles" / "workloads")
    cells = plan_cells(pair)
    run = tmp_path / "run"
    run.mkdir()
    prompts = unique_prompts(cells)
    (run / "prompts.jsonl").write_text("".join(json.dumps(p.to_json()) + "\n" for p in prompts))
    proto = protocol(pair, cells, prompts, probe_host()).to_json()
    order = [["plain", "short-homogeneous", "c1", 0], ["speculative", "short-homogeneous", "c1", 0]]
    (run / "protocol.json").write_text(json.dumps(proto | {"design": proto["design"] | {"order": order}}))
    shutil.copyfile(pair.path, run / "pair.toml")
    replayed_pair, replayed, replayed_order = replay_protocol(run / "protocol.json")
    assert replayed == cells and replayed_order == order
    assert replayed_pair.speculative == pair.speculative and replayed_pair.sampling == pair.sampling
    # a modified prompt file is refused
    (run / "prompts.jsonl").write_text((run / "prompts.jsonl").read_text().replace("The", "A", 1))
    with pytest.raises(ProfileError, match="does not match the protocol's prompts_sha256"):
        replay_protocol(run / "protocol.json")
    with pytest.raises(ProfileError, match="cannot replay"):
        replay_protocol(tmp_path / "nowhere" / "protocol.json")


def test_prove_mode_on_recorded_vllm_metrics() -> None:
    plain = prom.parse_metrics((DATA / "vllm032_plain_t0.prom").read_text())
    spec = prom.parse_metrics((DATA / "vllm032_spec_t0.prom").read_text())
    k = deltas.spec_decode_positions(spec)
    assert k >= 1
    assert prove_mode("plain", plain, k).spec_decode_metrics is False
    assert prove_mode("speculative", spec, k).spec_positions == k
    with pytest.raises(FallbackDetected, match="exposes no vllm:spec_decode"):
        prove_mode("speculative", plain, k)
    with pytest.raises(FallbackDetected, match="plain server exposes"):
        prove_mode("plain", spec, k)
    with pytest.raises(FallbackDetected, match=f"runs K={k}"):
        prove_mode("speculative", spec, k + 2)
