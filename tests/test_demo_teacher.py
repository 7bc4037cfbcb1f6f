"""The demo draft's shipped teacher data (scripts/demo_teacher.json, scripts/demo_teacher.py): its shape, its
canonical bytes, the checks that refuse a file made for another target or recipe, and the byte-for-byte
check of ``build_demo_models.py --regenerate-teacher``."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import build_demo_models as build
import demo_distill
import demo_teacher

SHIPPED = json.loads(demo_teacher.TEACHER_FILE.read_text())
# raw prompts (trained + held out) continue for RAW_TOKENS tokens, chat prompts for CHAT_TOKENS
LENGTHS = [36] * (224 + 16) + [64] * (40 + 8)


def test_the_shipped_file_holds_every_prompt_s_greedy_continuation_of_the_pinned_gguf() -> None:
    assert demo_distill.RAW_TOKENS == 36 and demo_distill.CHAT_TOKENS == 64
    assert SHIPPED["gguf_sha256"] == build.GGUF_SHA256
    assert [len(c) for c in SHIPPED["continuations"]] == LENGTHS
    assert SHIPPED["prompts"] == 288 and SHIPPED["tokens"] == 11_712 == sum(LENGTHS)
    assert all(0 <= t < 49_152 for c in SHIPPED["continuations"] for t in c)  # the target's vocabulary
    assert len(demo_teacher.TEACHER_FILE.read_bytes()) < 100_000


def test_the_file_s_bytes_are_the_canonical_encoding_of_its_continuations() -> None:
    again = demo_teacher.encode(SHIPPED["continuations"], SHIPPED["gguf_sha256"], SHIPPED["generation_sha256"])
    assert again == demo_teacher.TEACHER_FILE.read_bytes()


def test_loading_checks_the_gguf_the_generation_and_the_lengths(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(demo_teacher.encode([[1, 2], [3]], "g" * 64, "r" * 64))
    assert demo_teacher.load(path, "g" * 64, "r" * 64, [2, 1]) == [[1, 2], [3]]
    with pytest.raises(demo_teacher.TeacherError, match="not this build's .* --regenerate-teacher"):
        demo_teacher.load(path, "h" * 64, "r" * 64, [2, 1])
    with pytest.raises(demo_teacher.TeacherError, match="made for GGUF"):
        demo_teacher.load(path, "g" * 64, "s" * 64, [2, 1])
    with pytest.raises(demo_teacher.TeacherError, match=r"lengths \[2, 1\].* \[2, 2\]"):
        demo_teacher.load(path, "g" * 64, "r" * 64, [2, 2])
    path.write_text('{"gguf_sha256": ')
    with pytest.raises(demo_teacher.TeacherError, match="not a readable teacher file"):
        demo_teacher.load(path, "g" * 64, "r" * 64, [2, 1])


def test_the_generation_hash_covers_the_prompts_and_their_lengths() -> None:
    base = demo_teacher.generation_sha256([[1, 2], [3]], [36, 64])
    assert base == demo_teacher.generation_sha256([[1, 2], [3]], [36, 64])
    assert base != demo_teacher.generation_sha256([[1, 2], [4]], [36, 64])
    assert base != demo_teacher.generation_sha256([[1, 2], [3]], [36, 63])


def test_regenerated_bytes_must_match_the_shipped_file(tmp_path: Path) -> None:
    shipped = demo_teacher.TEACHER_FILE.read_bytes()
    build.check_teacher(shipped, tmp_path, 0.0)  # identical: nothing written
    assert list(tmp_path.iterdir()) == []
    changed = shipped.replace(b"]", b",0]", 1)
    with pytest.raises(build.BuildError, match="differs from .*demo_teacher.json"):
        build.check_teacher(changed, tmp_path, 0.0)
    assert (tmp_path / "demo_teacher.json").read_bytes() == changed


def test_only_the_default_build_reads_the_shipped_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert build.shipped_teacher("cpu", "float32", None)
    assert not build.shipped_teacher("cpu", "bfloat16", None)
    assert not build.shipped_teacher("cuda", "float32", None)
    assert not build.shipped_teacher("cpu", "float32", "HuggingFaceTB/SmolLM2-135M-Instruct")
    assert build.main(["--device", "cpu", "--save-dtype", "bfloat16", "--regenerate-teacher"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--regenerate-teacher" in err[0] and "default build" in err[0]
    assert hashlib.sha256(demo_teacher.TEACHER_FILE.read_bytes()).hexdigest() == \
        build.recipes("cpu", "float32", None)[1]["teacher_sha256"]
