"""check/hashes.py: every file of a local model is hashed (dot files left out), and a build marker's
``summary`` (scripts/widen_target.py, scripts/verify_widened.py) reaches the protocol record and the card."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

from loadgen.check.hashes import model_hashes
from loadgen.profile.pair import ModelRef
from loadgen.report.cardmd import _model_line


def test_the_build_summary_rides_with_the_hashes_to_the_card_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    summary = "widened from m to 7.18 B parameters; logprobs within 0.05 of the source"
    (tmp_path / ".build-complete.json").write_text(json.dumps({"recipe": {}, "summary": summary}))
    record = model_hashes(ModelRef(str(tmp_path)))
    hashes = record.to_json()
    assert hashes["files"] == {
        "config.json": hashlib.sha256(b"{}").hexdigest(),
        "model.safetensors": hashlib.sha256(b"weights").hexdigest(),
    }
    assert hashes["build"] == summary
    card = SimpleNamespace(target=record, draft=None)  # what _model_line reads of a PairCard
    assert _model_line(card, "target").endswith(f"`{hashes['content_sha256']}`); {summary}")  # type: ignore[arg-type]


def test_no_marker_or_no_summary_adds_nothing(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert "build" not in model_hashes(ModelRef(str(tmp_path))).to_json()
    (tmp_path / ".build-complete.json").write_text(json.dumps({"recipe": {"version": 1}}))
    assert "build" not in model_hashes(ModelRef(str(tmp_path))).to_json()
    (tmp_path / ".build-complete.json").write_text("not json")
    assert "build" not in model_hashes(ModelRef(str(tmp_path))).to_json()


def test_weight_bytes_sum_the_weight_files_only(tmp_path: Path) -> None:
    model = tmp_path / "m"
    (model / "sub").mkdir(parents=True)
    (model / "model-00001.safetensors").write_bytes(b"x" * 1000)
    (model / "sub" / "pytorch_model.bin").write_bytes(b"y" * 234)
    (model / "config.json").write_text('{"hidden_size": 8}')  # not a weight file
    (model / ".hidden.safetensors").write_bytes(b"z" * 99)  # hidden files are left out, as for the hashes
    hashes = model_hashes(ModelRef(str(model)))
    assert hashes.weight_bytes == 1234 and hashes.to_json()["weight_bytes"] == 1234
    (model / "model-00001.safetensors").unlink()
    (model / "sub" / "pytorch_model.bin").unlink()
    assert model_hashes(ModelRef(str(model))).weight_bytes is None
