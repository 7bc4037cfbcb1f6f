"""What the servers' configuration will change, warned by `loadgen check` before anything starts
(check/serverconfig.py), as the lines a user reads."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from loadgen.check.serverconfig import generation_findings, launch_findings, mtp_findings
from loadgen.profile.pair import Sampling

QWEN = {"repetition_penalty": 1.05, "temperature": 0.7, "top_k": 20, "top_p": 0.8, "bos_token_id": 1}


def test_generation_config_defaults_are_named_with_what_is_sent(tmp_path: Path) -> None:
    (tmp_path / "generation_config.json").write_text(json.dumps(QWEN))
    [finding] = generation_findings(tmp_path, asdict(Sampling()))
    assert finding.line().startswith(
        "warn sampling defaults: the target's generation_config.json sets temperature 0.7 (sent: 0.0), top_p 0.8 "
        "(sent: 1.0), top_k 20 (sent: -1), repetition_penalty 1.05 (sent: 1.0); vLLM applies these"
    )
    declared = asdict(Sampling(temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05))
    assert generation_findings(tmp_path, declared) == []  # the pair measures the model's own sampling
    assert generation_findings(tmp_path / "none", asdict(Sampling())) == []


def test_launch_lines_warn_of_stream_interval_max_num_seqs_and_a_schedule_under_dp() -> None:
    roles = {
        "plain": ["--stream-interval", "4", "--max-num-seqs=4"],
        "speculative": ["--max-num-seqs", "16", "--data-parallel-size", "2"],
    }
    lines = [f.line() for f in launch_findings(roles, [1, 8], k_schedule=True)]
    assert lines[0].startswith("warn stream interval: the plain server streams up to 4 tokens a chunk")
    assert lines[1].startswith(
        "warn max-num-seqs: the plain server runs at most 4 requests at once (--max-num-seqs 4) but the pair "
        "declares concurrency up to 8"
    )
    assert lines[2].startswith("warn K schedule: num_speculative_tokens_per_batch_size with --data-parallel-size 2")
    assert len(lines) == 3  # the speculative server's 16 holds 8
    assert launch_findings(roles, [1, 8], k_schedule=False)[-1].check == "max-num-seqs"


def test_mtp_k_above_the_targets_layers_warns(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"num_nextn_predict_layers": 1}))
    [finding] = mtp_findings("deepseek_mtp", 3, tmp_path)
    assert "num_speculative_tokens = 3 with a target of 1 MTP layer(s)" in finding.message
    assert mtp_findings("mtp", 1, tmp_path) == [] and mtp_findings("eagle3", 3, tmp_path) == []


def test_check_does_not_judge_an_attached_servers_launch_arguments(tmp_path: Path) -> None:
    """`loadgen check` of a pair whose plain server is attached ([servers.plain].url): the [engine].args that only
    the launched speculative server gets are judged for it alone (the attached one runs its own settings)."""
    from click.testing import CliRunner

    from loadgen.cli.commands import main
    from tests.support.scripted_engine import write_small_pair

    path = write_small_pair(tmp_path, "att", 8500, '[servers.plain]\nurl = "http://127.0.0.1:9"\n')
    text = path.read_text().replace('workloads = ["w"]', f'workloads = ["{tmp_path / "workloads" / "w.toml"}"]')
    text = text.replace("concurrency = [1]", "concurrency = [3]")
    path.write_text(text.replace("startup_timeout_s = 30", 'startup_timeout_s = 30\nargs = ["--max-num-seqs", "1"]'))
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 0 and result.exception is None, result.output
    lines = result.output.splitlines()
    assert [x for x in lines if "max-num-seqs" in x] == [
        "warn max-num-seqs: the speculative server runs at most 1 requests at once (--max-num-seqs 1) but the pair "
        "declares concurrency up to 3: above 1 the rest queue, and the card names those levels; raise "
        "--max-num-seqs or drop the levels above it"
    ]
    assert "ok   launch settings: the plain server is attached: the pair file's launch arguments are not its own" in (
        "\n".join(lines)
    )
