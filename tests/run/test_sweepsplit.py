"""run/sweepsplit.py: a candidate's compare folder cut out of a sweep folder written here with three arms
besides plain and the placebo (k1, k2, k10: a name that starts like k1's), checked file by file. Its protocol is
the committed example docs/examples/h200/h200-1b-ngram's with a sweep's fields set, so it reads as a Protocol."""

from __future__ import annotations

import json
from pathlib import Path

from loadgen.records.protocol import Protocol
from loadgen.run.sweepsplit import candidate_protocol, split_candidate
from loadgen.store.files import read_protocol

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-1b-ngram" / "protocol.json"


def arm(name: str, server: str) -> dict[str, object]:
    """An arm of the design (records/runparts.py ArmRecord) with a key of newer code, kept as it is."""
    return {"arm": name, "server": server, "port": 8000, "attached": False, "speculative_config": None, "x": 1}


PROTO = json.loads(EXAMPLE.read_text()) | {
    "pair": "sweep-pair",
    "seed": 3,
    "candidates": {
        name: {
            "pair": f"pair-{name}",
            "pair_file": f"candidates/{name}.toml",
            "draft": None,
            "speculative_config": {"method": "ngram", "num_speculative_tokens": k},
        }
        for name, k in (("k1", 1), ("k2", 2), ("k10", 10))
    },
    "design": {
        "blocks": 2,
        "arms": [arm(a, a) for a in ("plain", "placebo", "k1", "k2", "k10")],
        "order": [
            ["plain", "w", "c1", 0],
            ["k2", "w", "c1", 0],
            ["k1", "w", "c1", 0],
            ["placebo", "w", "c1", 0],
            ["k10", "w", "c1", 0],
        ],
    },
}


def write_sweep(sweep: Path) -> None:
    (sweep / "candidates").mkdir(parents=True)
    for name in ("k1", "k2", "k10"):
        (sweep / "candidates" / f"{name}.toml").write_text(f'name = "{name}"\n')
    (sweep / "protocol.json").write_text(json.dumps(PROTO))
    (sweep / "prompts.jsonl").write_text('{"id": "p0"}\n')
    rows = [
        {"role": r, "prompt_id": f"p-{r}", "v": float("nan") if r == "k1" else 1}
        for r in ("plain", "k1", "k2", "placebo", "k10")
    ]
    (sweep / "requests.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
    (sweep / "cells.jsonl").write_text(json.dumps({"role": "k1", "repetition": 0}) + "\n")
    (sweep / "checks.json").write_text(json.dumps({"k1": [{"check": "draft", "ok": True}], "k2": []}))
    (sweep / "servers").mkdir()
    for name in (
        "plain-launch.json",
        "k1-launch.json",
        "k10-launch.json",
        "k1.log",
        "placebo-effective.json",
        "k2-launch.json",
    ):
        (sweep / "servers" / name).write_text(name)
    (sweep / "metrics").mkdir()
    for name in ("plain__w__c1.prom", "k1__w__c1.prom", "k10__w__c1.prom"):
        (sweep / "metrics" / name).write_text(name)


def test_the_protocol_keeps_the_candidates_arms_only() -> None:
    got = candidate_protocol(Protocol.from_json(PROTO, source="protocol.json"), "k1").to_json()
    assert "candidates" not in got and (got["pair"], got["pair_file"], got["seed"]) == (
        "pair-k1",
        "candidates/k1.toml",
        3,
    )
    assert got["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 1} and got["draft"] is None
    assert got["sweep_candidate"] == "k1"
    assert got["design"] == {
        "blocks": 2,
        "arms": [arm("plain", "plain"), arm("placebo", "placebo"), arm("speculative", "k1")],
        "order": [["plain", "w", "c1", 0], ["speculative", "w", "c1", 0], ["placebo", "w", "c1", 0]],
    }
    assert PROTO["design"]["order"][1] == ["k2", "w", "c1", 0]  # the sweep's protocol is left as it was


def test_the_candidates_folder_holds_what_its_compare_would(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    write_sweep(sweep)
    out = split_candidate(sweep, "k1")
    assert out == sweep / "k1"
    assert (out / "pair.toml").read_text() == 'name = "k1"\n' and (out / "prompts.jsonl").is_file()
    assert not (out / "status.json").exists() and not (out / "requests.partial.jsonl").exists()
    assert (out / "requests.jsonl").read_text().splitlines() == [
        '{"role": "plain", "prompt_id": "p-plain", "v": 1}',
        '{"role": "speculative", "prompt_id": "p-k1", "v": null}',
        '{"role": "placebo", "prompt_id": "p-placebo", "v": 1}',
    ]  # NaN written as null (strict JSON)
    assert (out / "cells.jsonl").read_text() == '{"role": "speculative", "repetition": 0}\n'
    assert json.loads((out / "checks.json").read_text()) == [{"check": "draft", "ok": True}]
    cut = read_protocol(out / "protocol.json")  # what compare --protocol reads back
    whole = Protocol.from_json(PROTO, source="PROTO")
    assert (cut.pair, cut.sweep_candidate, cut.cells, cut.workloads) == ("pair-k1", "k1", whole.cells, whole.workloads)
    assert sorted(p.name for p in (out / "servers").iterdir()) == [
        "placebo-effective.json",
        "plain-launch.json",
        "speculative-launch.json",
        "speculative.log",
    ]
    assert (out / "servers" / "speculative-launch.json").read_text() == "k1-launch.json"  # not k10's
    assert sorted(p.name for p in (out / "metrics").iterdir()) == ["plain__w__c1.prom", "speculative__w__c1.prom"]
    first = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    split_candidate(sweep, "k1")
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == first  # cut again: same


def test_a_candidate_without_checks_gets_an_empty_list(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    write_sweep(sweep)
    out = split_candidate(sweep, "k10")
    assert json.loads((out / "checks.json").read_text()) == []
    assert (out / "servers" / "speculative-launch.json").read_text() == "k10-launch.json"
    assert [json.loads(x)["prompt_id"] for x in (out / "requests.jsonl").read_text().splitlines()] == [
        "p-plain",
        "p-placebo",
        "p-k10",
    ]
