"""Pre-flight checks of the draft checkpoint (draftcheck.py through validate.check_pair and `loadgen check`):
its kind (config.json ``architectures``) against the declared method, and its context limit against the
serving length and the workloads (demo-cpu's: 16 + 32 and 32 + 96 tokens, --max-model-len 1024)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loadgen.check.draftcheck import draft_kind
from loadgen.check.validate import check_pair
from loadgen.cli import main
from loadgen.records.modelconfig import ModelConfig
from tests.check.test_validate import VOCAB, blocking, by_check, make_pair, warnings
from tests.support.tokfactory import write_model


@pytest.mark.parametrize(
    ("config", "kind"),
    [
        ({"architectures": ["DFlashDraftModel"]}, "dflash"),
        ({"architectures": ["LlamaForCausalLMEagle3"]}, "eagle3"),
        ({"architectures": ["EagleLlamaForCausalLM"]}, "eagle"),
        ({"architectures": ["DeepSeekMTPModel"]}, "mtp"),
        ({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_mtp"}, "mtp"),
        ({"architectures": ["MedusaModel"]}, "medusa"),
        ({"speculators_model_type": "eagle3", "architectures": ["Eagle3Speculator"]}, "eagle3"),
        ({"architectures": ["LlamaForCausalLM"]}, "draft_model"),
        ({"model_type": "llama"}, None),
    ],
)
def test_draft_kind(config: dict[str, Any], kind: str | None) -> None:
    assert (draft_kind(ModelConfig.from_json(config)) or (None,))[0] == kind


@pytest.mark.parametrize(
    ("method", "arch", "found", "fix"),
    [
        ("draft_model", "DFlashDraftModel", "dflash", 'set [speculative].method = "dflash"'),
        ("draft_model", "LlamaForCausalLMEagle3", "eagle3", 'set [speculative].method = "eagle3"'),
        ("eagle", "LlamaForCausalLM", "draft_model", 'set [speculative].method = "draft_model"'),
        ("eagle", "LlamaForCausalLMEagle3", "eagle3", 'set [speculative].method = "eagle3"'),
    ],
)
def test_a_draft_of_another_kind_than_declared_blocks(
    tmp_path: Path, method: str, arch: str, found: str, fix: str
) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(tmp_path / "neutral", VOCAB, config={"architectures": [arch]})
    finding = by_check(check_pair(make_pair(target, draft, method=method), "0.32.0"), "draft kind")
    assert finding.blocking and not finding.ok
    assert f"is a {found} draft (architectures ['{arch}']) but [speculative].method = '{method}'" in finding.message
    assert fix in finding.message


def test_a_draft_of_the_declared_kind_passes(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(
        tmp_path / "d", VOCAB, config={"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 2048}
    )
    findings = check_pair(make_pair(target, draft), "0.32.0")
    assert blocking(findings) == [] and warnings(findings) == []
    assert by_check(findings, "draft kind").ok and by_check(findings, "draft context").ok


def test_a_draft_that_cannot_see_the_workloads_blocks(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(tmp_path / "d", VOCAB, config={"max_position_embeddings": 100})
    finding = by_check(check_pair(make_pair(target, draft), "0.32.0"), "draft context")
    assert finding.blocking and not finding.ok
    assert (
        "the draft sees at most 100 tokens (max_position_embeddings) but workload 'long-diverse' needs 128 "
        "(input + output)"
    ) in finding.message


def test_the_speculative_max_model_len_is_the_draft_limit_too(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(tmp_path / "d", VOCAB, config={"max_position_embeddings": 4096})
    finding = by_check(check_pair(make_pair(target, draft, max_model_len=64), "0.32.0"), "draft context")
    assert finding.blocking and "at most 64 tokens ([speculative].max_model_len)" in finding.message


def test_a_serving_length_beyond_the_draft_warns(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(tmp_path / "d", VOCAB, config={"max_position_embeddings": 512})
    finding = by_check(check_pair(make_pair(target, draft), "0.32.0"), "draft context")
    assert not finding.ok and not finding.blocking
    assert "the serving --max-model-len 1024 exceeds the draft's 512 tokens" in finding.message
    assert "set --max-model-len 512 in [engine].args" in finding.message


@pytest.mark.slow
def test_check_exits_2_naming_the_draft_kind_and_the_fix(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(tmp_path / "neutral", VOCAB, config={"architectures": ["DFlashDraftModel"]})
    text = Path("profiles/pairs/demo-cpu.toml").read_text()
    text = text.replace(".models/smollm2-135m-instruct", str(target)).replace(".models/smollm2-135m-draft", str(draft))
    (tmp_path / "p.toml").write_text(text)
    result = CliRunner().invoke(main, ["check", str(tmp_path / "p.toml")])
    assert result.exit_code == 2
    line = next(x for x in result.output.splitlines() if x.startswith("FAIL draft kind"))
    assert "dflash draft" in line and "'draft_model'" in line and 'set [speculative].method = "dflash"' in line
