"""The published CSV traces replayed by ``loadgen compare`` as a user runs it (the command line in a subprocess,
scripted engines it launches): an Azure LLM inference trace (format detected) and a BurstGPT trace (format
declared), each holding a request of 0 output tokens, one floored (``zero_output = 1``) and one skipped
(``zero_output = "skip"``). The user sees the pair check name both lines, exit 0, and a card whose workload line
names each trace's format (detected or declared) and counts and names its skipped and floored lines; every
request sent is on the card."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from loadgen.profile.trace import WORDS
from tests.support.faultrun import loadgen, run_dir
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import PAIR, REPO
from tests.support.tokfactory import trained_vocab, write_model

pytestmark = pytest.mark.slow

#: Azure LLM inference 2023 (TIMESTAMP,ContextTokens,GeneratedTokens) and BurstGPT rows, 0.1-0.3 s apart.
AZURE = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,12,5
2023-11-16 18:15:46.8805900,10,0
2023-11-16 18:15:47.0805900,14,6
2023-11-16 18:15:47.1805900,9,4
"""
BURSTGPT = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
0.0,ChatGPT,11,4,15,Conversation log
0.2,ChatGPT,13,0,13,Conversation log
0.3,GPT-4,10,7,17,API log
"""
WORKLOADS = {
    "az": 'kind = "trace"\npath = "azure.csv"\noutput_tokens = 4\nblock_tokens = 4\nzero_output = 1\n',
    "burst": 'kind = "trace"\npath = "burst.csv"\nformat = "burstgpt"\noutput_tokens = 4\nzero_output = "skip"\n',
}


def _pair(tmp: Path) -> Path:
    """The scripted engine's pair (launched by loadgen) on a local target with a tokenizer, the two traces as its
    workloads (beside their workload files), one block, no placebo."""
    model = write_model(tmp / "model", trained_vocab((" ".join(WORDS),)))
    traces = tmp / "traces"
    traces.mkdir()
    (traces / "azure.csv").write_text(AZURE)
    (traces / "burst.csv").write_text(BURSTGPT)
    for name, text in WORKLOADS.items():
        (traces / f"{name}.toml").write_text(f'name = "{name}"\n' + text)
    listed = ", ".join(f'"{traces / name}.toml"' for name in WORKLOADS)
    text = (
        PAIR.format(name="csv", k=1, python=sys.executable, repo=REPO)
        .replace('model = "org/target"\nrevision = "0123456789abcdef0123456789abcdef01234567"', f'model = "{model}"')
        .replace("port = 8300", f"port = {free_port_block(2)}")
        .replace('workloads = ["w"]', f"workloads = [{listed}]")
        + '[design]\nblocks = 1\nplacebo = "off"\n'
    )
    (tmp / "pair.toml").write_text(text)
    return tmp / "pair.toml"


def test_azure_and_burstgpt_traces_through_the_cli_name_their_format_and_lines_on_the_card(tmp_path: Path) -> None:
    pair = _pair(tmp_path)
    ran = loadgen(
        tmp_path, ["compare", str(pair), "--no-progress", "--runs-dir", str(tmp_path / "runs")], timeout_s=300
    )
    assert ran.code == 0, ran.output
    traces = tmp_path / "traces"
    assert (
        f"warn trace lines: workload az: of the 4 lines of {traces / 'azure.csv'}, 1 sent with the declared floor: "
        "line 3: 0 output tokens, sent with 1 (zero_output = 1)"
    ) in ran.output
    assert (
        f"warn trace lines: workload burst: of the 3 lines of {traces / 'burst.csv'}, 1 skipped: line 3: 0 output "
        'tokens (zero_output = "skip")'
    ) in ran.output
    run = run_dir(tmp_path)
    md = (run / "card.md").read_text()
    assert (f"az (trace, completions; trace {traces / 'azure.csv'} (format azure (detected); sha256 ") in md
    assert (
        ", 4 lines, 0 skipped, 1 sent with the declared floor of 1 output tokens: line 3: 0 output tokens, sent with 1 "
        "(zero_output = 1); replayed at its times x 1, blocks of 4 tokens); input tokens"
    ) in md
    assert f"burst (trace, completions; trace {traces / 'burst.csv'} (format burstgpt (declared); sha256 " in md
    assert ', 3 lines, 1 skipped: line 3: 0 output tokens (zero_output = "skip"); replayed at its times x 1' in md
    card = json.loads((run / "card.json").read_text())
    sent = {c["workload"]: (c["plain"]["requests"], c["speculative"]["requests"]) for c in card["cells"]}
    assert sent == {"az": (4, 4), "burst": (2, 2)}  # the floored request sent, the skipped one not
    records = [json.loads(line) for line in (run / "requests.jsonl").read_text().splitlines()]
    floored = [r for r in records if r["workload"] == "az" and r["requested_output_tokens"] == 1]
    assert len(floored) == 2  # the 0-output request, on each server, with the declared floor of 1 token
