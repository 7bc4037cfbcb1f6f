"""The async-scheduling check (check/asyncsched.py): vLLM 0.24.0 turns async scheduling off for draft_model and
ngram by default (seen in the startup logs of docs/examples/h200/h200-smollm2-sweep), 0.32.0 keeps it on for
draft_model, and both refuse --async-scheduling with ngram."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from loadgen.check.asyncsched import async_findings, explicit
from loadgen.check.validate import check_pair
from loadgen.profile.pair import RoleServer
from tests.check.test_validate import VOCAB, make_pair, write_model

SWEEP = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200" / "h200-smollm2-sweep"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), None),
        (("--max-model-len", "1024"), None),
        (("--async-scheduling",), True),
        (("--no-async-scheduling",), False),
        (("--async-scheduling", "--no-async-scheduling"), False),
        (("--no-async-scheduling", "--async-scheduling"), True),
        (("--async-scheduling=false",), False),
    ],
)
def test_the_flag_as_argparse_reads_it(args: tuple[str, ...], expected: bool | None) -> None:
    assert explicit(args) is expected


def test_the_rule_matches_what_the_h200_servers_logged() -> None:
    """Each speculative server of the committed sweep ran vLLM 0.24.0 with no async flag, and its startup log
    says vLLM turned async scheduling off: the check warns for exactly those two methods there."""
    for phase, method in (("demo-draft-k1", "draft_model"), ("ngram-k4", "ngram")):
        log = (SWEEP / phase / "servers" / "speculative.log").read_text()
        assert f"Async scheduling not supported with {method}-based speculative decoding" in log
        argv = json.loads((SWEEP / phase / "servers" / "speculative-launch.json").read_text())["argv"]
        assert explicit(argv) is None
        (found,) = async_findings(method, "0.24.0", [], argv)
        assert not found.ok and not found.blocking and "turns async scheduling off" in found.message


def test_draft_model_by_version() -> None:
    (warn,) = async_findings("draft_model", "0.24.0", [], [])
    assert "add --async-scheduling to [servers.speculative].args" in warn.message
    (maybe,) = async_findings("draft_model", "0.28.1", [], [])
    assert "may turn (0.24 does; PR #48341 made it default on)" in maybe.message
    assert async_findings("draft_model", "0.32.0+cpu", [], []) == []  # PR #48341: on by default
    assert async_findings("draft_model", "0.24.0", [], ["--async-scheduling"]) == []  # asked for: vLLM obliges
    assert async_findings("draft_model", "0.24.0", ["--no-async-scheduling"], []) == []  # off on both servers
    assert async_findings("draft_model", "0.33.0", [], []) == [] == async_findings("draft_model", "0.23.0", [], [])
    assert async_findings("draft_model", None, [], []) == [] == async_findings("eagle3", "0.24.0", [], [])


def test_the_cpu_build_runs_both_servers_without_it() -> None:
    """vllm/platforms/cpu.py sets async_scheduling = False for every server: nothing to warn about."""
    assert async_findings("ngram", "0.32.0+cpu", [], []) == []
    assert async_findings("ngram", "0.32.0", [], [], {"VLLM_CPU_KVCACHE_SPACE": "1"}) == []
    assert len(async_findings("ngram", "0.32.0", [], [], {"HF_HUB_OFFLINE": "1"})) == 1


def test_ngram_warns_and_refuses_the_flag() -> None:
    for version in ("0.24.0", "0.32.0"):
        (warn,) = async_findings("ngram", version, [], [])
        assert not warn.blocking and 'method = "ngram_gpu" keeps it' in warn.message
        (refused,) = async_findings("ngram", version, [], ["--async-scheduling"])
        assert refused.blocking and not refused.ok and f"vLLM {version} refuses --async-scheduling" in refused.message
        assert async_findings("ngram", version, [], ["--no-async-scheduling"]) == []
        assert async_findings("ngram_gpu", version, [], []) == []


def test_check_pair_reads_each_servers_args(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    pair = make_pair(target, None, method="ngram", prompt_lookup_min=2, prompt_lookup_max=4)
    assert [f.check for f in check_pair(pair, "0.32.0") if not f.ok] == ["async scheduling"]
    cpu = dataclasses.replace(pair, engine=dataclasses.replace(pair.engine, env={"VLLM_CPU_KVCACHE_SPACE": "1"}))
    assert [f for f in check_pair(cpu, "0.32.0") if f.check == "async scheduling"] == []
    refused = dataclasses.replace(pair, servers={"speculative": RoleServer(args=("--async-scheduling",))})
    assert [f.check for f in check_pair(refused, "0.32.0") if f.blocking and not f.ok] == ["async scheduling"]
    both_off = dataclasses.replace(pair, engine=dataclasses.replace(pair.engine, args=("--no-async-scheduling",)))
    assert [f for f in check_pair(both_off, "0.32.0") if f.check == "async scheduling"] == []


def test_the_h200_crossover_sweep_keeps_async_scheduling_for_both_candidates(tmp_path: Path) -> None:
    """profiles/pairs/h200-7b-crossover.toml: ngram_gpu (async by default) and draft_model with the flag asked
    for leave no async-scheduling finding on vLLM 0.24.0; the first 7B sweep's draft_model without it warned."""
    from loadgen.profile.pairfile import load_pair
    from loadgen.profile.tomlread import read_toml
    from loadgen.records.candidates import candidate_doc, expand_candidates
    from loadgen.util.tomlwrite import to_toml

    def findings(sweep: str) -> dict[str, list[str]]:
        doc = read_toml(Path(f"profiles/pairs/{sweep}.toml"))
        out = {}
        for c in expand_candidates(doc, Path(sweep)):
            path = tmp_path / f"{sweep}-{c.name}.toml"
            path.write_text(to_toml(candidate_doc(doc, c, sweep)))
            pair = load_pair(str(path))
            spec = [*pair.engine.args, *pair.servers["speculative"].args]
            out[c.name] = [
                f.line().split()[0]
                for f in async_findings(str(pair.speculative.method), "0.24.0", pair.engine.args, spec)
                if not f.ok
            ]
        return out

    assert findings("h200-7b-crossover") == {"ngram-k4": [], "smollm2-k4": []}
    assert findings("h200-7b-sweep") == {"distilled-k2": ["warn"], "smollm2-k4": ["warn"]}
