"""Pre-flight checks of a pair, before any server starts: vocabulary and artifact hashes.

vLLM itself only compares the configs' ``vocab_size`` for a draft model (``SpeculativeConfig.
verify_equal_vocab_size_if_draft_model``, 0.15+), so a draft with a different tokenizer of the same size
passes the engine silently; here the token-to-id maps, added tokens and BOS/EOS are compared too.
Each finding is one line with its fix.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from loadgen.pair import ModelRef, Pair

#: Files whose hashes identify a model's tokenizer and configuration.
ARTIFACTS = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
             "special_tokens_map.json", "vocab.json", "merges.txt", "tokenizer.model")


@dataclass(frozen=True)
class Finding:
    """One check result. ``blocking`` findings stop the run (exit 2)."""

    check: str
    ok: bool
    blocking: bool
    message: str

    def line(self) -> str:
        """One line: status, check name, message."""
        status = "ok  " if self.ok else ("FAIL" if self.blocking else "warn")
        return f"{status} {self.check}: {self.message}"


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def model_hashes(model: ModelRef) -> dict[str, Any]:
    """sha256 of every file of a local model directory, plus a digest over all of them.

    Returns ``{"model", "revision", "local": bool, "files": {name: sha256}, "content_sha256"}``; a hub id
    (not a local directory) gets ``local: False`` and no files.
    """
    root = Path(model.model)
    out: dict[str, Any] = {"model": model.model, "revision": model.revision, "local": root.is_dir()}
    if not root.is_dir():
        return out
    files = {str(p.relative_to(root)): sha256_file(p)
             for p in sorted(root.rglob("*")) if p.is_file() and not p.name.startswith(".")}
    out["files"] = files
    out["content_sha256"] = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    return out


def _special_ids(tok_dir: Path) -> dict[str, Any]:
    config_path = tok_dir / "config.json"
    config = json.loads(config_path.read_text()) if config_path.exists() else {}
    return {k: config.get(k) for k in ("bos_token_id", "eos_token_id", "pad_token_id")}


def _vocab_size(model_dir: Path) -> int | None:
    config_path = model_dir / "config.json"
    if not config_path.exists():
        return None
    value = json.loads(config_path.read_text()).get("vocab_size")
    return int(value) if value is not None else None


def check_vocabulary(target: Path, draft: Path) -> list[Finding]:
    """Compare the tokenizers (token->id map, added tokens, BOS/EOS ids) and ``vocab_size``.

    Both arguments are local model directories holding ``tokenizer.json`` and ``config.json``.
    """
    findings = []
    t_tok = Tokenizer.from_file(str(target / "tokenizer.json"))
    d_tok = Tokenizer.from_file(str(draft / "tokenizer.json"))
    t_vocab, d_vocab = t_tok.get_vocab(with_added_tokens=True), d_tok.get_vocab(with_added_tokens=True)
    differing = sorted(k for k in set(t_vocab) | set(d_vocab) if t_vocab.get(k) != d_vocab.get(k))
    if differing:
        findings.append(Finding("vocabulary", False, True,
                                f"{len(differing)} tokens map to different ids (e.g. {differing[0]!r}); "
                                "the draft must use the target's tokenizer; renaming a model cannot fix "
                                "a token-id mismatch"))
    else:
        findings.append(Finding("vocabulary", True, False, f"identical token->id maps ({len(t_vocab)} tokens)"))
    t_special, d_special = _special_ids(target), _special_ids(draft)
    if t_special != d_special:
        findings.append(Finding("special tokens", False, True,
                                f"BOS/EOS/PAD ids differ: target {t_special}, draft {d_special}"))
    else:
        findings.append(Finding("special tokens", True, False, f"same BOS/EOS/PAD ids {t_special}"))
    t_size, d_size = _vocab_size(target), _vocab_size(draft)
    if t_size != d_size:
        findings.append(Finding("vocab_size", False, True,
                                f"config vocab_size differs (target {t_size}, draft {d_size}); vLLM refuses "
                                "draft_model pairs whose vocab_size differs"))
    else:
        findings.append(Finding("vocab_size", True, False, f"both {t_size}"))
    return findings


def check_pair(pair: Pair) -> list[Finding]:
    """All pre-flight checks of ``pair`` (no server needed)."""
    findings: list[Finding] = []
    target = Path(pair.target.model)
    if not target.is_dir():
        findings.append(Finding("target", False, True,
                                f"{pair.target.model} is not a local directory; build it (`make models`) "
                                "or fix [target].model"))
        return findings
    draft = pair.draft
    if draft is None:
        findings.append(Finding("draft", True, False, f"method {pair.method!r} has no draft model"))
        return findings
    draft_dir = Path(draft.model)
    if not draft_dir.is_dir():
        findings.append(Finding("draft", False, True,
                                f"{draft.model} is not a local directory; build it (`make models`) or fix "
                                "[speculative].model"))
        return findings
    findings.extend(check_vocabulary(target, draft_dir))
    return findings
