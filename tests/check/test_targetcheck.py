"""The target checkpoint before launch (check/targetcheck.py through validate.check_pair and `loadgen check`):
a speculators-format checkpoint as the plain target, and the chat template that chat workloads need."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.check import enginestart
from loadgen.check.validate import check_pair
from loadgen.cli import main
from loadgen.profile.pair import Engine, RoleServer
from tests.check.test_validate import VOCAB, blocking, by_check, make_pair
from tests.support.tokfactory import write_model

SPECULATORS = {
    "algorithm": "eagle3",
    "default_proposal_method": "greedy",
    "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
    "verifier": {"name_or_path": "meta-llama/Llama-3.1-8B-Instruct", "architectures": ["LlamaForCausalLM"]},
}


def test_a_speculators_checkpoint_as_target_names_its_verifier(tmp_path: Path) -> None:
    target = write_model(
        tmp_path / "t", VOCAB, config={"speculators_model_type": "eagle3", "speculators_config": SPECULATORS}
    )
    pair = make_pair(target, None, method="ngram", prompt_lookup_min=2, prompt_lookup_max=4)
    (refused,) = blocking(check_pair(pair, "0.32.0"))
    assert refused.check == "target kind"
    assert refused.message == (
        f"the target {target} is a speculators-format checkpoint (eagle3 draft, config.json "
        "speculators_config): vLLM 0.11+ serves it with speculation on, so the plain server "
        'would not be plain; set [target].model = "meta-llama/Llama-3.1-8B-Instruct" (the '
        "verifier named in its speculators_config) and put this checkpoint in "
        "[speculative].model"
    )
    plain = write_model(tmp_path / "plain", VOCAB)
    assert (
        blocking(check_pair(make_pair(plain, None, method="ngram", prompt_lookup_min=2, prompt_lookup_max=4), "0.32.0"))
        == []
    )


def without_template(pair_target: Path) -> list[str]:
    """The failing checks of demo-cpu (chat workload long-diverse) on ``pair_target`` with no --chat-template."""
    pair = make_pair(pair_target, None, method="ngram", prompt_lookup_min=2, prompt_lookup_max=4)
    pair = dataclasses.replace(pair, engine=dataclasses.replace(pair.engine, args=("--max-model-len", "1024")))
    return [f.line() for f in check_pair(pair, "0.32.0") if f.blocking and not f.ok]


def test_chat_workloads_need_a_chat_template(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    (line,) = without_template(target)
    assert line == (
        f"FAIL chat template: workload(s) long-diverse use the chat endpoint but the tokenizer {target} "
        "has no chat template (no chat_template in tokenizer_config.json, no chat_template.jinja) and the "
        "pair file gives none for the plain and speculative server: vLLM would refuse every chat request; "
        'add "--chat-template", "<template file>" to [engine].args, or use completions workloads'
    )
    (target / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    assert without_template(target) == []
    (target / "chat_template.jinja").unlink()
    config = json.loads((target / "tokenizer_config.json").read_text())
    (target / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": "{{ messages }}"}))
    assert without_template(target) == []


def test_a_chat_template_given_to_one_server_only_names_the_other(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    pair = make_pair(target, None, method="ngram", prompt_lookup_min=2, prompt_lookup_max=4)
    pair = dataclasses.replace(
        pair,
        engine=Engine(pair.engine.command, ("--max-model-len", "1024")),
        servers={"plain": RoleServer(args=("--chat-template", "t.jinja"))},
    )
    finding = by_check(check_pair(pair, "0.32.0"), "chat template")
    assert finding.blocking and finding.data == {"workloads": ["long-diverse"], "roles": ["speculative"]}
    completions = dataclasses.replace(pair, workloads=tuple(w for w in pair.workloads if w.endpoint != "chat"))
    assert [f for f in check_pair(completions, "0.32.0") if f.check == "chat template"] == []


def test_loadgen_check_says_so_before_any_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(enginestart, "probe_engine", lambda command, env: enginestart.EngineStart("0.32.0"))
    target, draft = write_model(tmp_path / "t", VOCAB), write_model(tmp_path / "d", VOCAB)
    text = Path("profiles/pairs/demo-cpu.toml").read_text()
    text = text.replace(".models/smollm2-135m-instruct", str(target)).replace(".models/smollm2-135m-draft", str(draft))
    (pair := tmp_path / "p.toml").write_text(text)
    result = CliRunner().invoke(main, ["check", str(pair)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if "chat template" in line]
    assert len(lines) == 1 and lines[0].startswith("FAIL chat template: workload(s) long-diverse use the chat endpoint")
