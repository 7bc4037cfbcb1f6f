"""The demo draft's shipped teacher data (scripts/demo_teacher.json, scripts/demo_teacher.py): its shape, its
canonical bytes, the checks that refuse a file made for another target or recipe, and the byte-for-byte
check of ``build_demo_models.py --regenerate-teacher``."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
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
    build.check_teacher(shipped, demo_teacher.TEACHER_FILE, tmp_path, 0.0)  # identical: nothing written
    assert list(tmp_path.iterdir()) == []
    changed = shipped.replace(b"]", b",0]", 1)
    with pytest.raises(build.BuildError, match="differs from .*demo_teacher.json"):
        build.check_teacher(changed, demo_teacher.TEACHER_FILE, tmp_path, 0.0)
    assert (tmp_path / "demo_teacher.json").read_bytes() == changed
    top_k = demo_teacher.TOP_K_FILE.read_bytes()
    build.check_teacher(top_k, demo_teacher.TOP_K_FILE, tmp_path, 0.0)
    other = top_k[:-2] + bytes([top_k[-2] ^ 1, top_k[-1]])  # the last logit's lowest bit
    with pytest.raises(build.BuildError, match="differs from .*demo_teacher_topk.npy"):
        build.check_teacher(other, demo_teacher.TOP_K_FILE, tmp_path, 0.0)
    assert (tmp_path / "demo_teacher_topk.npy").read_bytes() == other


def test_only_the_default_build_reads_the_shipped_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert build.shipped_teacher("cpu", "float32", None)
    assert not build.shipped_teacher("cpu", "bfloat16", None)
    assert not build.shipped_teacher("cuda", "float32", None)
    assert not build.shipped_teacher("cpu", "float32", "HuggingFaceTB/SmolLM2-135M-Instruct")
    assert build.main(["--device", "cpu", "--save-dtype", "bfloat16", "--regenerate-teacher"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--regenerate-teacher" in err[0] and "default build" in err[0]
    draft = build.recipes("cpu", "float32", None)[1]
    assert hashlib.sha256(demo_teacher.TEACHER_FILE.read_bytes()).hexdigest() == draft["teacher_sha256"]
    assert hashlib.sha256(demo_teacher.TOP_K_FILE.read_bytes()).hexdigest() == draft["top_k_sha256"]


# the target's top-8 on the shipped continuations (scripts/demo_teacher_topk.npy): one record per continuation token
TOP_K = np.load(demo_teacher.TOP_K_FILE, allow_pickle=False)
TOKENS = np.array([t for c in SHIPPED["continuations"] for t in c])
EOS = 2  # <|im_end|>: masked while the continuations were generated


def test_the_shipped_top_k_holds_the_target_s_best_eight_at_every_continuation_token() -> None:
    assert TOP_K.dtype == np.dtype(demo_teacher.TOP_K_DTYPE) and TOP_K.shape == (11_712,)
    assert TOP_K["top_i"].shape == TOP_K["top_v"].shape == (11_712, 8)
    best = TOP_K["top_i"][:, 0]
    # the greedy token is the best one, except where the best was EOS, masked while generating: then it is second
    assert int((best == TOKENS).sum()) == 11_699
    assert (best[best != TOKENS] == EOS).all() and (TOP_K["top_i"][best != TOKENS, 1] == TOKENS[best != TOKENS]).all()
    assert (TOP_K["top_v"][:, 0] == 0).all() and (np.diff(TOP_K["top_v"].astype(np.float32), axis=1) <= 0).all()
    assert all(len(set(row)) == 8 for row in TOP_K["top_i"].tolist())  # eight distinct tokens per position
    assert len(demo_teacher.TOP_K_FILE.read_bytes()) == 192 + 11_712 * 32  # .npy header, then the records


def test_the_top_k_file_s_bytes_are_the_canonical_encoding_of_its_records() -> None:
    assert demo_teacher.encode_top_k(TOP_K) == demo_teacher.TOP_K_FILE.read_bytes()


def test_loading_the_top_k_checks_it_against_the_continuations(tmp_path: Path) -> None:
    records = np.zeros(3, dtype=demo_teacher.TOP_K_DTYPE)
    records["top_i"][:, :2] = [[5, 9], [EOS, 7], [6, 1]]
    path = tmp_path / "t.npy"
    path.write_bytes(demo_teacher.encode_top_k(records))
    assert demo_teacher.load_top_k(path, [[5, 7], [6]], EOS).tobytes() == records.tobytes()
    with pytest.raises(demo_teacher.TeacherError, match="differs from the continuation's at 1 of 3"):
        demo_teacher.load_top_k(path, [[5, 9], [6]], EOS)  # EOS first, 9 is not second
    with pytest.raises(demo_teacher.TeacherError, match=r"\(3,\) records .* not \(2,\)"):
        demo_teacher.load_top_k(path, [[5, 7]], EOS)
    path.write_bytes(demo_teacher.encode_top_k(records)[:100])
    with pytest.raises(demo_teacher.TeacherError, match="not a readable top-k file"):
        demo_teacher.load_top_k(path, [[5, 7], [6]], EOS)
    np.save(path, np.zeros(3, dtype=[("top_i", "<i4", (8,)), ("top_v", "<f4", (8,))]))
    with pytest.raises(demo_teacher.TeacherError, match="--regenerate-teacher"):
        demo_teacher.load_top_k(path, [[5, 7], [6]], EOS)
