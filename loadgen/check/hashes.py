"""sha256 of model files: the tokenizer and config artifacts the pair check records, and every file of a
local model directory for protocol.json (reads files; no network)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

from loadgen.profile.pair import ModelRef
from loadgen.records.runparts import ModelHashes

#: Files whose hashes identify a model's tokenizer and configuration.
ARTIFACTS = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


#: The suffixes of weight files (safetensors, PyTorch pickles, GGUF).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")


def artifact_hashes(model_dir: Path) -> dict[str, str]:
    """``{file name: hex sha256}`` of the :data:`ARTIFACTS` present in ``model_dir`` (tokenizer and config)."""
    return {name: sha256_file(model_dir / name) for name in ARTIFACTS if (model_dir / name).is_file()}


def model_hashes(model: ModelRef) -> ModelHashes:
    """sha256 of every file of a local model directory, plus a digest over all of them.

    Returns the model, revision, ``local``, ``files`` ({name: sha256}) and ``content_sha256``; a hub id
    (not a local directory) gets ``local`` False and no files. A head whose config.json declares a reduced
    ``draft_vocab_size`` (an EAGLE-3 head with a ``d2t``/``t2d`` mapping, check/headvocab.py) also gets
    ``"draft_vocab_size"`` (tokens), which the card prints beside the draft. A folder whose build marker
    (``.build-complete.json``, written by scripts/build_demo_models.py and scripts/widen_target.py) holds a
    ``"summary"`` string gets it as ``"build"``: what the model is and how it was checked, for the card. Its
    ``weight_bytes`` sum the files of :data:`WEIGHT_SUFFIXES` (measure/causes.py reads the draft's against the
    target's as the draft's cost per step).
    """
    root = Path(model.model)
    out = ModelHashes(model.model, model.revision, root.is_dir())
    if not root.is_dir():
        return out
    paths = [p for p in sorted(root.rglob("*")) if p.is_file() and not p.name.startswith(".")]
    files = {str(p.relative_to(root)): sha256_file(p) for p in paths}
    weights = sum(p.stat().st_size for p in paths if p.suffix in WEIGHT_SUFFIXES)
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    try:
        reduced = json.loads((root / "config.json").read_text()).get("draft_vocab_size")
    except (OSError, ValueError, AttributeError):
        reduced = None
    return replace(
        out,
        files=files,
        content_sha256=digest,
        draft_vocab_size=reduced if isinstance(reduced, int) and not isinstance(reduced, bool) else None,
        build=_build_summary(root / ".build-complete.json") or None,
        weight_bytes=weights or None,
    )


def _build_summary(marker: Path) -> str | None:
    try:
        summary = json.loads(marker.read_text()).get("summary")
    except (OSError, ValueError, AttributeError):
        return None
    return summary if isinstance(summary, str) and summary else None
