"""check/lossy.py and check/targetcheck.py called directly: the lossy-rejection findings for each lossy setting
and a lossless criterion declared with it, a speculators-format target named with its verifier as the fix, and
where a tokenizer folder keeps its chat template."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from loadgen.check.lossy import lossy_findings
from loadgen.check.targetcheck import speculators_target, template_source
from loadgen.records.criteria import Criteria
from loadgen.records.modelconfig import ModelConfig
from loadgen.records.speculative import SpeculativeConfig


def spec_of(data: Mapping[str, Any]) -> SpeculativeConfig:
    """A speculative config record of ``data`` (as a pair file or protocol.json gives it)."""
    return SpeculativeConfig.from_json(dict(data), source="pair.toml")


@pytest.mark.parametrize(
    ("spec", "env", "reason"),
    [
        ({"rejection_sample_method": "fly"}, {}, "rejection_sample_method = fly"),
        (
            {"rejection_sample_method": "synthetic"},
            {"VLLM_EARS_TOLERANCE": "0.05"},
            "rejection_sample_method = synthetic, VLLM_EARS_TOLERANCE=0.05",
        ),
        ({}, {"VLLM_X_TOLERANCE": "on", "VLLM_EARS_TOLERANCE": "0.0"}, "VLLM_X_TOLERANCE=on"),
    ],
)
def test_each_lossy_setting_warns_and_blocks_a_lossless_criterion(
    spec: dict[str, str], env: dict[str, str], reason: str
) -> None:
    (warn,) = lossy_findings(spec_of(spec), env, None)
    assert (warn.check, warn.ok, warn.blocking, warn.data) == ("lossy rejection", False, False, {"lossy": reason})
    assert warn.message.startswith(f"{reason} does not keep the target's distribution: ")
    warn2, block = lossy_findings(spec_of(spec), env, Criteria(min_lossless_match=0.98))
    assert warn2 == warn and (block.check, block.ok, block.blocking) == ("criteria.min_lossless_match", False, True)
    assert block.message.startswith(
        f"[criteria].min_lossless_match = 0.98 cannot be judged with a lossy rejection ({reason})"
    )
    assert lossy_findings(spec_of(spec), env, Criteria()) == [warn]


@pytest.mark.parametrize(
    ("spec", "env"),
    [
        ({}, {}),
        ({"rejection_sample_method": "standard"}, {}),
        ({"rejection_sample_method": "block"}, {"VLLM_EARS_TOLERANCE": "0"}),
        ({}, {"MY_TOLERANCE": "0.1"}),
    ],
)
def test_lossless_settings_find_nothing(spec: dict[str, str], env: dict[str, str]) -> None:
    assert lossy_findings(spec_of(spec), env, Criteria(min_lossless_match=1.0)) == []


def test_a_speculators_checkpoint_as_target() -> None:
    config = {
        "speculators_model_type": "eagle3",
        "speculators_config": {"verifier": {"name_or_path": "meta-llama/Llama-3.1-8B-Instruct"}},
    }
    (f,) = speculators_target(ModelConfig.from_json(config), "/models/eagle3")
    assert (f.check, f.ok, f.blocking) == ("target kind", False, True)
    assert f.data == {"speculators_algorithm": "eagle3", "verifier": "meta-llama/Llama-3.1-8B-Instruct"}
    assert f.message == (
        "/models/eagle3 is a speculators-format checkpoint (eagle3 draft, config.json "
        "speculators_config): vLLM 0.11+ serves it with speculation on, so the plain server would not "
        'be plain; set [target].model = "meta-llama/Llama-3.1-8B-Instruct" (the verifier named in '
        "its speculators_config) and put this checkpoint in [speculative].model"
    )
    (bare,) = speculators_target(ModelConfig.from_json({"speculators_config": {"algorithm": "mtp"}}), "x")
    assert bare.data == {"speculators_algorithm": "mtp", "verifier": None}
    assert "set [target].model to its verifier model (speculators_config.verifier names none)" in bare.message
    assert speculators_target(ModelConfig.from_json({"model_type": "llama"}), "x") == []
    assert speculators_target(ModelConfig.from_json({"speculators_config": "yes"}), "x") == []


def test_where_the_chat_template_is(tmp_path: Path) -> None:
    assert template_source(tmp_path) is None
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": ""}))
    assert template_source(tmp_path) is None  # an empty template is none
    (tmp_path / "chat_template.json").write_text("{}")
    assert template_source(tmp_path) == "chat_template.json"
    (tmp_path / "chat_template.jinja").write_text("{{ messages }}")
    assert template_source(tmp_path) == "chat_template.jinja"  # the .jinja file first
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": [{"name": "default"}]}))
    assert template_source(tmp_path) == "tokenizer_config.json chat_template"
