"""Pre-flight pair checks on tiny local model directories (tests/support/tokfactory.py): vocabulary classes,
heterogeneous-vocabulary mode, revisions, artifact hashes, and the wiring of specconfig/engine checks."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.check.enginestart import EngineStart
from loadgen.check.validate import ARTIFACTS, Finding, artifact_hashes, check_pair, check_vocabulary
from loadgen.profile.pair import Engine, ModelRef, Pair
from loadgen.profile.pairfile import load_pair
from loadgen.records.speculative import SpeculativeConfig
from tests.support.tokfactory import renamed, swapped, trained_vocab, write_model

VOCAB = trained_vocab()
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def make_pair(
    target: Path | str,
    draft: Path | str | None,
    target_revision: str | None = None,
    args: tuple[str, ...] = ("--max-model-len", "1024"),
    env: dict[str, str] | None = None,
    **spec: Any,
) -> Pair:
    """demo-cpu (one chat workload) on ``target`` and ``draft``; ``--chat-template`` is appended to ``args``
    since tokfactory's model folders carry no chat template (tests/check/test_targetcheck.py checks that)."""
    base = load_pair("demo-cpu")
    speculative = {"method": "draft_model", "num_speculative_tokens": 3, **spec}
    if draft is not None:
        speculative["model"] = str(draft)
    engine = Engine(command=base.engine.command, args=(*args, "--chat-template", "{{ messages }}"), env=env or {})
    return dataclasses.replace(
        base,
        target=ModelRef(str(target), target_revision),
        speculative=SpeculativeConfig.from_json(speculative, source="pair"),
        engine=engine,
    )


def blocking(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.blocking and not f.ok]


def warnings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if not f.blocking and not f.ok]


def by_check(findings: list[Finding], check: str) -> Finding:
    matches = [f for f in findings if f.check == check]
    assert len(matches) == 1, [f.line() for f in findings]
    return matches[0]


def test_identical_vocabularies_pass(tmp_path: Path) -> None:
    target, draft = write_model(tmp_path / "t", VOCAB), write_model(tmp_path / "d", VOCAB)
    findings = check_pair(make_pair(target, draft), "0.32.0")
    assert blocking(findings) == [] and warnings(findings) == []
    vocab = by_check(findings, "vocabulary")
    assert vocab.ok and "identical token->id maps (22 tokens) and vocab_size 22" in vocab.message
    assert vocab.data is not None and vocab.data["kind"] == "identical"
    assert by_check(findings, "speculative config").ok


def test_artifact_hashes_in_findings(tmp_path: Path) -> None:
    target, draft = write_model(tmp_path / "t", VOCAB), write_model(tmp_path / "d", VOCAB, config={"x": 1})
    (target / "merges.txt").write_text("a b\n")
    hashes = artifact_hashes(target)
    assert set(hashes) == {"config.json", "tokenizer.json", "tokenizer_config.json", "merges.txt"}
    assert set(hashes) <= set(ARTIFACTS)
    assert hashes["merges.txt"] == hashlib.sha256(b"a b\n").hexdigest()
    findings = check_pair(make_pair(target, draft), "0.32.0")
    t_rev, d_rev = by_check(findings, "target revision"), by_check(findings, "draft revision")
    assert t_rev.ok and "pinned by content sha256" in t_rev.message
    assert t_rev.data is not None and t_rev.data["artifacts"] == hashes
    assert d_rev.data is not None
    assert d_rev.data["artifacts"]["config.json"] != hashes["config.json"]
    assert d_rev.data["artifacts"]["tokenizer.json"] == hashes["tokenizer.json"]
    json.dumps([f.__dict__ for f in findings])  # checks.json stays serialisable


def test_padding_only_difference(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB, vocab_size=64)
    draft = write_model(tmp_path / "d", VOCAB)
    findings = check_pair(make_pair(target, draft), "0.32.0")
    (vocab,) = blocking(findings)
    assert vocab.check == "vocabulary"
    assert (
        "same tokenizer (22 tokens) but config vocab_size differs (target 64, draft 22): padding only" in vocab.message
    )
    assert "verify_equal_vocab_size_if_draft_model" in vocab.message
    assert "use_heterogeneous_vocab = true on vLLM >= 0.25" in vocab.message
    assert "matching padding" in vocab.message
    accepted = check_pair(make_pair(target, draft, use_heterogeneous_vocab=True), "0.25.0")
    assert blocking(accepted) == []
    vocab = by_check(accepted, "vocabulary")
    assert (
        "accepted in the heterogeneous-vocabulary mode (vLLM 0.25+): 22 tokens in both (100.0% of the " in vocab.message
    )
    # vLLM warns below 100 shared tokens (vocab_mapping.py); the tiny test vocabulary is below it
    assert not vocab.ok and "very small intersection" in vocab.message


def test_swapped_ids_are_a_real_mismatch(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(tmp_path / "d", swapped(VOCAB, "cat", "dog"))
    (vocab,) = blocking(check_pair(make_pair(target, draft), "0.32.0"))
    assert f"2 tokens map to different ids (e.g. 'cat': target {VOCAB['cat']}, draft {VOCAB['dog']})" in vocab.message
    assert "renaming a model cannot fix a token-id mismatch" in vocab.message
    assert "vLLM would not notice (it compares vocab_size only, both 22)" in vocab.message
    assert vocab.data is not None and vocab.data["remapped"] == 2


def test_renamed_token_is_a_real_mismatch(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(tmp_path / "d", renamed(VOCAB, "mat", "rug"))
    vocab = by_check(check_pair(make_pair(target, draft), "0.32.0"), "vocabulary")
    assert vocab.blocking and not vocab.ok
    assert "1 target tokens missing from the draft (e.g. 'mat')" in vocab.message
    assert "1 draft tokens missing from the target (e.g. 'rug')" in vocab.message
    assert "map to different ids" not in vocab.message


def test_different_special_token_roles_warn(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(tmp_path / "d", VOCAB, eos="<pad>")
    findings = check_pair(make_pair(target, draft), "0.32.0")
    assert blocking(findings) == []
    special = by_check(findings, "special tokens")
    assert not special.ok and not special.blocking
    assert "eos: target ('</s>', 2), draft ('<pad>', 3)" in special.message
    assert by_check(findings, "vocabulary").ok


def test_heterogeneous_sampling_and_version(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(tmp_path / "d", renamed(VOCAB, "mat", "rug"))
    probabilistic = check_pair(
        make_pair(target, draft, use_heterogeneous_vocab=True, draft_sample_method="probabilistic"), "0.25.0"
    )
    (vocab,) = blocking(probabilistic)
    assert (
        "use_heterogeneous_vocab supports only greedy draft sampling; "
        "draft_sample_method='probabilistic' is not supported"
    ) in vocab.message
    greedy = check_pair(make_pair(target, draft, use_heterogeneous_vocab=True, draft_sample_method="greedy"), "0.25.0")
    assert blocking(greedy) == []
    assert "accepted in the heterogeneous-vocabulary mode" in by_check(greedy, "vocabulary").message
    old = check_pair(make_pair(target, draft, use_heterogeneous_vocab=True), "0.24.0")
    messages = [f.message for f in blocking(old)]
    assert any("vLLM 0.24.0 has no heterogeneous-vocabulary mode (added in 0.25.0)" in m for m in messages)
    assert any(
        "'use_heterogeneous_vocab' is not a speculative-config field of vLLM 0.24.0 (added in 0.25)" in m
        for m in messages
    )
    unknown = check_pair(make_pair(target, draft, use_heterogeneous_vocab=True), None)
    assert "the engine version is unknown" in by_check(unknown, "vocabulary").message
    assert by_check(unknown, "vocabulary").blocking


def test_heterogeneous_runner_hazards(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(tmp_path / "d", renamed(VOCAB, "mat", "rug"))
    hazard = check_pair(make_pair(target, draft, use_heterogeneous_vocab=True), "0.31.0")
    runner = by_check(hazard, "model runner")
    assert not runner.blocking and 'VLLM_USE_V2_MODEL_RUNNER = "0"' in runner.message
    safe = check_pair(
        make_pair(target, draft, env={"VLLM_USE_V2_MODEL_RUNNER": "0"}, use_heterogeneous_vocab=True), "0.31.0"
    )
    assert [f for f in safe if f.check == "model runner"] == []
    forced = check_pair(
        make_pair(target, draft, env={"VLLM_USE_V2_MODEL_RUNNER": "1"}, use_heterogeneous_vocab=True), "0.32.0"
    )
    assert by_check(forced, "model runner").blocking


def test_heterogeneous_flag_unnecessary_for_identical(tmp_path: Path) -> None:
    target, draft = write_model(tmp_path / "t", VOCAB), write_model(tmp_path / "d", VOCAB)
    findings = check_pair(make_pair(target, draft, use_heterogeneous_vocab=True), "0.25.0")
    assert blocking(findings) == []
    hetero = by_check(findings, "heterogeneous vocabulary")
    assert not hetero.ok and "unnecessary" in hetero.message


@pytest.mark.parametrize("revision", ["main", None, "v1.0"])
def test_hub_target_needs_a_commit(tmp_path: Path, revision: str | None) -> None:
    pair = make_pair("org/target-model", None, target_revision=revision, method="ngram")
    refused = by_check(check_pair(pair, "0.32.0"), "target revision")
    assert refused.blocking and not refused.ok
    assert f"with revision {revision!r}, not a 40-hex commit" in refused.message
    allowed = by_check(check_pair(pair, "0.32.0", allow_unpinned=True), "target revision")
    assert not allowed.ok and not allowed.blocking and "allowed by --allow-unpinned" in allowed.message


def test_hub_target_with_commit_passes() -> None:
    findings = check_pair(make_pair("org/target-model", None, target_revision=COMMIT, method="ngram"), "0.32.0")
    assert blocking(findings) == []
    assert by_check(findings, "target revision").ok


def test_hub_draft_revision(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    main = check_pair(make_pair(target, "org/draft", revision="main"), "0.32.0")
    draft_rev = by_check(main, "draft revision")
    assert draft_rev.blocking and "[speculative].revision" in draft_rev.message
    pinned = check_pair(make_pair(target, "org/draft", revision=COMMIT), "0.32.0")
    assert by_check(pinned, "draft revision").ok
    assert "not compared" in by_check(pinned, "vocabulary").message
    unknown = check_pair(make_pair(target, "org/draft", revision="main"), None)
    assert by_check(unknown, "draft revision").blocking


def test_missing_local_path(tmp_path: Path) -> None:
    findings = check_pair(make_pair(tmp_path / "none", None, method="ngram"), "0.32.0")
    assert any(f.check == "target" and "is not a local directory" in f.message for f in blocking(findings))


def test_unknown_engine_version_is_one_warning_when_the_engine_can_start(tmp_path: Path) -> None:
    target, draft = write_model(tmp_path / "t", VOCAB), write_model(tmp_path / "d", VOCAB)
    why = {
        EngineStart(None): "no vLLM version answered through [engine].command",  # probed, printed no version
        None: "every server is attached and none was asked",  # not probed
    }
    for start, reason in why.items():
        findings = check_pair(make_pair(target, draft), None, engine_start=start)
        assert blocking(findings) == []
        (warning,) = warnings(findings)
        assert warning.check == "speculative config"
        assert warning.message.startswith(f"engine version unknown ({reason}")


def test_an_engine_command_that_cannot_start_blocks(tmp_path: Path) -> None:
    target, draft = write_model(tmp_path / "t", VOCAB), write_model(tmp_path / "d", VOCAB)
    why = "[engine].command '/nope/python' does not exist; install vLLM there or fix [engine].command"
    findings = check_pair(make_pair(target, draft), None, engine_start=EngineStart(None, why))
    (refused,) = blocking(findings)
    assert (refused.check, refused.message) == ("engine command", why)
    assert warnings(findings) == []  # the unknown version is this finding, not a warning besides it


def test_speculative_config_and_args_are_checked(tmp_path: Path) -> None:
    target, draft = write_model(tmp_path / "t", VOCAB), write_model(tmp_path / "eagle3-draft", VOCAB)
    findings = check_pair(
        make_pair(target, draft, args=("--max-model-len", "1024", "--disable-log-stats"), max_model_len=4096), "0.32.0"
    )
    checks = {f.check for f in blocking(findings)}
    assert checks == {"engine.args", "speculative.model", "speculative.max_model_len"}
    assert "<= the serving max_model_len 1024" in by_check(findings, "speculative.max_model_len").message


def test_mtp_model_type_draft(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    draft = write_model(tmp_path / "d", VOCAB, model_type="deepseek_mtp")
    switch = by_check(check_pair(make_pair(target, draft), "0.32.0"), "speculative.model")
    assert switch.blocking and "model_type 'deepseek_mtp'" in switch.message and "'mtp'" in switch.message


def test_draft_without_tokenizer(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    same = write_model(tmp_path / "d", VOCAB, tokenizer=False)
    vocab = by_check(check_vocabulary(target, same, SpeculativeConfig(method="draft_model"), "0.32.0"), "vocabulary")
    assert not vocab.ok and not vocab.blocking and "the draft has no tokenizer.json" in vocab.message
    other = write_model(tmp_path / "o", VOCAB, vocab_size=64, tokenizer=False)
    vocab = by_check(check_vocabulary(target, other, SpeculativeConfig(method="draft_model"), "0.32.0"), "vocabulary")
    assert vocab.blocking and "target 22, draft 64" in vocab.message


def test_unknown_engine_version_still_refuses_what_no_release_accepts(tmp_path: Path) -> None:
    target = write_model(tmp_path / "t", VOCAB)
    bogus = check_pair(make_pair(target, None, method="bogus"), None)
    (finding,) = [f for f in blocking(bogus) if f.check == "speculative method"]
    assert "'bogus' is no method of any vLLM release 0.10-0.33" in finding.message and "ngram" in finding.message
    crossed = check_pair(make_pair(target, None, method="ngram", prompt_lookup_min=9, prompt_lookup_max=4), None)
    assert any(
        "prompt_lookup_min=9 must be a positive integer <= prompt_lookup_max=4" in f.message for f in blocking(crossed)
    )
    fine = check_pair(make_pair(target, None, method="ngram", prompt_lookup_min=2, prompt_lookup_max=4), None)
    assert blocking(fine) == []
