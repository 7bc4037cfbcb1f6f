"""Lossy rejection before launch (check/lossy.py through validate.check_pair and preflight.run_pair_check):
``rejection_sample_method`` fly/synthetic or a ``VLLM_*TOLERANCE`` variable warns, and a
``min_lossless_match`` criterion declared with it is refused (exit 2)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from loadgen.check import enginestart
from loadgen.check.preflight import run_pair_check
from loadgen.check.validate import check_pair
from loadgen.errors import PairCheckError
from loadgen.profile.pair import RoleServer
from loadgen.records.criteria import Criteria
from tests.check.test_validate import VOCAB, blocking, by_check, make_pair, warnings
from tests.support.tokfactory import write_model


def test_a_lossy_rejection_method_warns_that_outputs_differ_by_design(tmp_path: Path) -> None:
    target, draft = write_model(tmp_path / "t", VOCAB), write_model(tmp_path / "d", VOCAB)
    findings = check_pair(make_pair(target, draft, rejection_sample_method="fly"), "0.33.0")
    assert blocking(findings) == []
    (warn,) = warnings(findings)
    assert warn.check == "lossy rejection" and warn.data == {"lossy": "rejection_sample_method = fly"}
    assert warn.message.startswith(
        "rejection_sample_method = fly does not keep the target's distribution: the "
        "speculative server's outputs will differ from the target's by design"
    )
    synthetic = check_pair(make_pair(target, draft, rejection_sample_method="synthetic"), "0.24.0")
    assert by_check(synthetic, "lossy rejection").data == {"lossy": "rejection_sample_method = synthetic"}
    assert [
        f
        for f in check_pair(make_pair(target, draft, rejection_sample_method="block"), "0.33.0")
        if f.check == "lossy rejection"
    ] == []


def test_a_tolerance_variable_of_the_speculative_server_is_lossy(tmp_path: Path) -> None:
    target, draft = write_model(tmp_path / "t", VOCAB), write_model(tmp_path / "d", VOCAB)
    pair = dataclasses.replace(
        make_pair(target, draft), servers={"speculative": RoleServer(env={"VLLM_EARS_TOLERANCE": "0.1"})}
    )
    assert by_check(check_pair(pair, "0.32.0"), "lossy rejection").data == {"lossy": "VLLM_EARS_TOLERANCE=0.1"}
    both = make_pair(target, draft, env={"VLLM_EARS_TOLERANCE": "0.1"}, rejection_sample_method="fly")
    assert by_check(check_pair(both, "0.33.0"), "lossy rejection").data == {
        "lossy": "rejection_sample_method = fly, VLLM_EARS_TOLERANCE=0.1"
    }
    off = make_pair(target, draft, env={"VLLM_EARS_TOLERANCE": "0.0"})
    assert [f for f in check_pair(off, "0.32.0") if f.check == "lossy rejection"] == []


def test_min_lossless_match_with_a_lossy_method_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target, draft = write_model(tmp_path / "t", VOCAB), write_model(tmp_path / "d", VOCAB)
    pair = dataclasses.replace(
        make_pair(target, draft, rejection_sample_method="fly"),
        criteria=Criteria(min_lossless_match=0.95, declared=("min_lossless_match",)),
    )
    (refused,) = blocking(check_pair(pair, "0.33.0"))
    assert refused.check == "criteria.min_lossless_match"
    assert refused.message == (
        "[criteria].min_lossless_match = 0.95 cannot be judged with a lossy rejection "
        "(rejection_sample_method = fly): outputs differ from the target's by design; remove "
        "min_lossless_match or use a lossless rejection_sample_method (standard, block)"
    )
    monkeypatch.setattr(enginestart, "probe_engine", lambda command, env: enginestart.EngineStart("0.33.0"))
    logged: list[str] = []
    with pytest.raises(PairCheckError) as err:
        run_pair_check(pair, False, logged.append)
    assert err.value.exit_code == 2
    # the FAIL line says it once; the error names the check without repeating its text
    assert [line for line in logged if "cannot be judged" in line] == [
        f"FAIL criteria.min_lossless_match: {refused.message}"
    ]
    assert (
        str(err.value) == "pair check failed: 1 blocking finding(s) above (criteria.min_lossless_match); fix them first"
    )
    lossless = dataclasses.replace(pair, speculative=pair.speculative.with_fields(rejection_sample_method="standard"))
    assert blocking(check_pair(lossless, "0.33.0")) == []
