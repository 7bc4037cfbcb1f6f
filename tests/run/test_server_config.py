"""The server's configuration read into the card (issue 42), black-box on the scripted engine that loadgen launches:
a stream interval does not abort the run, a level above max-num-seqs is named with its running batch, an abnormal
step quotes the startup-log lines that explain it, and a regression's measured cause (preemptions after lost KV
capacity, a prefix-cache asymmetry) replaces the generic hint. The last two edit a finished run folder's server
records as a server that preempted or had seen the prompts would have written them, then re-render it with
``loadgen report``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli.commands import main
from loadgen.profile.pairfile import load_pair
from loadgen.run.flow import run_compare
from loadgen.serve.portlock import ENV_DIR
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import write_small_pair

DATA = Path(__file__).resolve().parents[1] / "data"
DESIGN = '[design]\nblocks = 3\nplacebo = "off"\n'


def _run(root: Path, name: str, args: str = "", tail: str = "", env: str = "", conc: int = 1) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = write_small_pair(root, name, free_port_block(2), DESIGN + tail, env)
    text = path.read_text().replace("concurrency = [1]", f"concurrency = [{conc}]")
    path.write_text(text.replace("startup_timeout_s = 30", f"startup_timeout_s = 30\nargs = [{args}]"))
    pair = load_pair(str(path), workloads_dir=root / "workloads")
    return run_compare(pair, root / "runs", log=lambda _: None, allow_unpinned=True)


@pytest.fixture(autouse=True)
def _own_hold_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "holds"))


@pytest.fixture(scope="module")
def slow_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose speculative server steps 6x slower than plain and logs vLLM 0.24's ngram startup warnings."""
    root = tmp_path_factory.mktemp("slow")
    spec = (
        '[servers.speculative]\nenv = { SCRIPTED_ENGINE_STEP_S = "0.06", '
        f'SCRIPTED_ENGINE_LOG = "{DATA / "vllm024_h200_ngram_startup.log"}" }}\n'
    )
    return _run(root, "slow", tail=spec)


def _card(run_dir: Path) -> str:
    return (run_dir / "card.md").read_text()


def test_a_stream_interval_is_read_and_does_not_abort_the_run(tmp_path: Path) -> None:
    """--stream-interval 4 on both servers: the plain server's 4-token chunks were once read as speculation."""
    run_dir = _run(tmp_path, "si", args='"--stream-interval", "4"')
    minimal = json.loads((run_dir / "servers" / "plain-minimal.json").read_text())
    assert max(minimal["response"]["chunk_tokens"]) == 4  # the engine did buffer 4 tokens a chunk
    card = _card(run_dir)
    assert card.count("server configuration read: stream interval 4 (launch line)") == 2
    assert "it runs speculative decoding" not in card
    assert "plain: stream interval 4 (launch line): a chunk holds up to 4 tokens without speculation" in card


def test_a_level_above_max_num_seqs_is_named(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, "mns", args='"--max-num-seqs", "2"', conc=3)
    card = _card(run_dir)
    for role in ("plain", "speculative"):
        assert (
            f"{role}: concurrency 3 is above its max-num-seqs 2 (launch line): at most 2 requests ran at once" in card
        )
    assert "at most 2 beside the nominal 3" in card  # no /metrics here: the running batch is bounded, not measured


def test_an_abnormal_step_quotes_the_startup_log(slow_spec: Path) -> None:
    card = _card(slow_spec)
    [line] = [x for x in card.splitlines() if "abnormal step" in x]
    assert "more than 2x the 1.00 that method ngram at K = 1 predicts" in line
    assert (
        '"Async scheduling not supported with ngram-based speculative decoding and will be disabled."' in line
        and '"Model Runner V2 does not yet support ngram/ngram_gpu speculative decoding; using the V1 model '
        'runner instead."'
        in line
    )
    ratio = float(line.split("costs ")[1].split(" plain")[0])
    assert 3.0 < ratio < 9.0  # 0.06 s against 0.01 s a step


def _edit(run_dir: Path, dest: Path, role_state: dict[str, dict[str, float]], kv: dict[str, int]) -> Path:
    """A copy of ``run_dir`` whose cells.jsonl lines carry ``role_state`` in ``state.engine`` and whose servers'
    resources hold ``kv`` KV-cache tokens, as /metrics and the startup log would have given them."""
    out = dest / run_dir.name
    shutil.copytree(run_dir, out)
    lines = [json.loads(x) for x in (out / "cells.jsonl").read_text().splitlines()]
    for line in lines:
        engine = ((line.setdefault("state", None) or {}).get("engine")) or {}
        line["state"] = {**(line["state"] or {}), "engine": {**engine, **role_state.get(line["role"], {})}}
    (out / "cells.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    for role, tokens in kv.items():
        path = out / "servers" / f"{role}-resources.json"
        res = json.loads(path.read_text())
        for phase in ("ready", "after_load"):
            if res.get(phase):
                res[phase]["kv_cache_tokens"] = tokens
        path.write_text(json.dumps(res))
    assert CliRunner().invoke(main, ["report", str(out)]).exit_code == 0
    return out


def test_preemptions_after_lost_kv_capacity_are_the_named_cause(slow_spec: Path, tmp_path: Path) -> None:
    state = {"speculative": {"preemptions": 4.0}, "plain": {"preemptions": 0.0}}
    card = _card(_edit(slow_spec, tmp_path, state, {"plain": 10_000, "speculative": 7_000}))
    assert (
        "cause: the speculative server preempted 12 times (plain 0) after losing 30% of its KV-cache capacity" in card
    )
    assert "check draft and verification cost" not in card


def test_a_prefix_cache_asymmetry_says_the_ttft_ratio_measures_the_cache(slow_spec: Path, tmp_path: Path) -> None:
    state = {"plain": {"prefix_cache_hit_share": 1.0}, "speculative": {"prefix_cache_hit_share": 0.0}}
    card = _card(_edit(slow_spec, tmp_path, state, {}))
    assert "cause: prefix-cache hit share plain 100% vs speculative 0%: the TTFT ratio" in card
    assert "measures the cache, not speculation" in card
    assert "preempted" not in card


def test_an_attached_servers_startup_log_is_read_when_given(tmp_path: Path) -> None:
    """Attach mode: the servers run already; the pair names their URLs and the speculative server's startup log."""
    import subprocess
    import sys
    import time

    import httpx

    plain_port = free_port_block(2)
    spec = '{"method": "ngram", "num_speculative_tokens": 1, "prompt_lookup_max": 4, "prompt_lookup_min": 2}'
    engines = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.scripted_engine",
                "--model",
                "org/target",
                "--served-model-name",
                "target",
                "--port",
                str(port),
                *extra,
            ],
            env={"PYTHONPATH": str(Path.cwd()), "SCRIPTED_ENGINE_STEP_S": step, "PATH": "/usr/bin:/bin"},
            stdout=subprocess.DEVNULL,
        )
        for port, step, extra in (
            (plain_port, "0.01", []),
            (plain_port + 1, "0.06", ["--speculative-config", spec]),
        )
    ]
    try:
        for port in (plain_port, plain_port + 1):
            for _ in range(100):
                try:
                    httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
        (tmp_path / "spec.log").write_text(
            "non-default args: {'model': 'org/target', 'max_num_seqs': 1}\n"
            + (DATA / "vllm024_h200_ngram_startup.log").read_text()
        )
        tail = (
            f'[servers.plain]\nurl = "http://127.0.0.1:{plain_port}"\n'
            f'[servers.speculative]\nurl = "http://127.0.0.1:{plain_port + 1}"\nlog = "spec.log"\n'
        )
        card = _card(_run(tmp_path, "att", tail=tail, conc=2))
    finally:
        for proc in engines:
            proc.terminate()
            proc.wait(10)
    assert "speculative: concurrency 2 is above its max-num-seqs 1 (startup log)" in card
    [line] = [x for x in card.splitlines() if "abnormal step" in x]
    assert '"Model Runner V2 does not yet support ngram/ngram_gpu speculative decoding; using the V1 model' in line
    assert "plain: concurrency 2 is above" not in card  # the plain server's log was not given: nothing is assumed
    # /v1/models is read in attach mode; what only a startup log says is named as not read, for the plain one only
    assert card.count("- /v1/models: root `org/target`, owned_by vllm, max_model_len 2048") == 2
    unread = "- not read in attach mode without a startup log (give it as [servers.{}].log): stream interval, "
    assert unread.format("plain") + "max-num-seqs, max-num-batched-tokens, data/tensor parallel size" in card
    assert unread.format("speculative") not in card
