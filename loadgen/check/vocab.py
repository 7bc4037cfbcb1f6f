"""Tokenizer comparison of a target and a draft model directory (reads local files; no network, no clock).

vLLM compares only the configs' ``vocab_size`` for a draft model (``SpeculativeConfig.
verify_equal_vocab_size_if_draft_model``, vllm/config/speculative.py, 0.15+); the heterogeneous-vocabulary
mode (0.25+) maps tokens by exact string after normalising word-initial ``Ġ``/``▁`` to a space
(vllm/v1/spec_decode/vocab_mapping.py, https://github.com/vllm-project/vllm/pull/38174); docs/vllm-notes.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from loadgen.records.modelconfig import TOKEN_ROLES, ModelConfig, read_model_json

ROLES = TOKEN_ROLES
#: tokenizer.json sections that change how text becomes tokens, beside the vocabulary.
PIPELINE = ("normalizer", "pre_tokenizer", "post_processor", "decoder")


def _content(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class TokenizerInfo:
    """A model directory's tokenizer: ``vocab`` token->id (added tokens included), ``special`` tokens
    flagged special, ``roles`` role -> (token string, config.json id), config ``vocab_size`` (embedding
    rows; None if absent), ``pipeline`` (each tokenizer.json section of :data:`PIPELINE` as canonical JSON text,
    keys sorted, ``null`` when absent: equal texts are equal sections)."""

    vocab: Mapping[str, int]
    special: frozenset[str]
    roles: Mapping[str, tuple[str | None, Any]]
    vocab_size: int | None
    pipeline: Mapping[str, str]


def load_tokenizer_info(model_dir: Path) -> TokenizerInfo | None:
    """Read ``tokenizer.json`` (or ``vocab.json`` + tokenizer_config's ``added_tokens_decoder``),
    ``tokenizer_config.json``, ``special_tokens_map.json`` and ``config.json``. None: no token map."""
    tok_json, cfg = read_model_json(model_dir / "tokenizer.json"), ModelConfig.read(model_dir)
    tcfg = read_model_json(model_dir / "special_tokens_map.json")
    tcfg |= {k: v for k, v in read_model_json(model_dir / "tokenizer_config.json").items() if v is not None}
    decoder = tcfg.get("added_tokens_decoder")
    decoded = decoder.items() if isinstance(decoder, dict) else []
    added = [{"id": int(i), **v} for i, v in decoded if isinstance(v, dict)]
    if (model_dir / "tokenizer.json").is_file():
        added = [a for a in tok_json.get("added_tokens", []) if isinstance(a, dict)]
        try:
            vocab = Tokenizer.from_file(str(model_dir / "tokenizer.json")).get_vocab(with_added_tokens=True)
        except Exception:  # a tokenizer.json this tokenizers release cannot load: read its BPE/WordLevel map
            raw = (tok_json.get("model") or {}).get("vocab")
            vocab = {str(k): int(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
            vocab |= {str(a["content"]): int(a["id"]) for a in added if "content" in a and "id" in a}
    elif (model_dir / "vocab.json").is_file():
        vocab = {k: int(v) for k, v in read_model_json(model_dir / "vocab.json").items()}
        vocab |= {str(a["content"]): a["id"] for a in added if "content" in a}
    else:
        return None
    special = {str(a.get("content")) for a in added if a.get("special")}
    special |= {t for t in tcfg.get("additional_special_tokens") or [] if isinstance(t, str)}
    roles = {r: (_content(tcfg.get(f"{r}_token")), cfg.token_ids.get(r)) for r in ROLES}
    size = cfg.vocab_size if cfg.vocab_size is not None else cfg.text_vocab_size
    return TokenizerInfo(
        vocab,
        frozenset(special),
        roles,
        size,
        {k: json.dumps(tok_json.get(k), sort_keys=True) for k in PIPELINE},
    )


def _norm(token: str) -> str:
    return " " + token[1:] if token[:1] in ("Ġ", "▁") else token


@dataclass(frozen=True)
class VocabDiff:
    """Target vs draft tokenizer. ``kind``: ``identical`` (same maps and vocab_size), ``padding`` (same
    maps, vocab_size differs: padded embedding rows only) or ``mismatch`` (a token maps to another id or
    is missing). ``remapped``: (token, target id, draft id); ``intersection``: tokens in both after
    vLLM's TLI normalisation (word-initial Ġ/▁ -> space, vllm/v1/spec_decode/vocab_mapping.py, 0.25+)."""

    kind: str
    target: TokenizerInfo
    draft: TokenizerInfo
    remapped: tuple[tuple[str, int, int], ...]
    missing_in_draft: tuple[str, ...]
    missing_in_target: tuple[str, ...]
    intersection: int

    def roles_differ(self) -> list[str]:
        """Roles (bos/eos/pad/unk) and the special-token set where target and draft differ."""
        out = [r for r in ROLES if self.target.roles[r] != self.draft.roles[r]]
        return out + (["special tokens"] if self.target.special != self.draft.special else [])


def compare_vocabularies(target: TokenizerInfo, draft: TokenizerInfo) -> VocabDiff:
    """Classify the difference between two tokenizers (see :class:`VocabDiff`)."""
    tv, dv = target.vocab, draft.vocab
    remapped = tuple(sorted(((t, i, dv[t]) for t, i in tv.items() if t in dv and dv[t] != i), key=lambda x: x[1]))
    missing_d = tuple(sorted((t for t in tv if t not in dv), key=lambda t: tv[t]))
    missing_t = tuple(sorted((t for t in dv if t not in tv), key=lambda t: dv[t]))
    same_map = not (remapped or missing_d or missing_t)
    kind = "mismatch" if not same_map else ("identical" if target.vocab_size == draft.vocab_size else "padding")
    inter = len({_norm(t) for t in tv} & {_norm(t) for t in dv})
    return VocabDiff(kind, target, draft, remapped, missing_d, missing_t, inter)


def describe(d: VocabDiff) -> str:
    """One clause naming the difference with an example token and the counts (``padding``/``mismatch``)."""
    t, dr = d.target, d.draft
    if d.kind == "padding":
        return (
            f"same tokenizer ({len(t.vocab)} tokens) but config vocab_size differs (target {t.vocab_size}, "
            f"draft {dr.vocab_size}): padding only (embedding rows past the last token id)"
        )
    parts = []
    if d.remapped:
        tok, ti, di = d.remapped[0]
        parts.append(f"{len(d.remapped)} tokens map to different ids (e.g. {tok!r}: target {ti}, draft {di})")
    if d.missing_in_draft:
        parts.append(f"{len(d.missing_in_draft)} target tokens missing from the draft (e.g. {d.missing_in_draft[0]!r})")
    if d.missing_in_target:
        parts.append(
            f"{len(d.missing_in_target)} draft tokens missing from the target (e.g. {d.missing_in_target[0]!r})"
        )
    same = t.vocab_size == dr.vocab_size
    return (
        "token-id mismatch: "
        + ", ".join(parts)
        + "; renaming a model cannot fix a token-id mismatch"
        + (f"; vLLM would not notice (it compares vocab_size only, both {t.vocab_size})" if same else "")
    )
