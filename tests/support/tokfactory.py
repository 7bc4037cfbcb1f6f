"""Build tiny model directories (tokenizer.json, tokenizer_config.json, config.json) for vocabulary tests.

The vocabulary is a WordLevel tokenizer trained in memory (``tokenizers``) on a few sentences; variants
edit the trained token->id map (swap two ids, rename a token) and rebuild the tokenizer from it, so every
expected id in a test comes from :func:`trained_vocab`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, trainers

SENTENCES = (
    "the cat sat on the mat",
    "a dog ran to the park",
    "the bird sang a song in the tree",
    "my cat and my dog sleep",
)
SPECIALS = ("<unk>", "<s>", "</s>", "<pad>")


def trained_vocab(sentences: tuple[str, ...] = SENTENCES, specials: tuple[str, ...] = SPECIALS) -> dict[str, int]:
    """Token -> id of a WordLevel tokenizer trained on ``sentences`` (special tokens get ids 0..3)."""
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(list(sentences), trainers.WordLevelTrainer(special_tokens=list(specials)))
    return dict(tok.get_vocab(with_added_tokens=True))


def swapped(vocab: Mapping[str, int], a: str, b: str) -> dict[str, int]:
    """``vocab`` with the ids of tokens ``a`` and ``b`` exchanged."""
    out = dict(vocab)
    out[a], out[b] = vocab[b], vocab[a]
    return out


def renamed(vocab: Mapping[str, int], old: str, new: str) -> dict[str, int]:
    """``vocab`` with token ``old`` renamed to ``new`` (same id)."""
    return {new if t == old else t: i for t, i in vocab.items()}


def write_model(
    path: Path,
    vocab: Mapping[str, int],
    *,
    vocab_size: int | None = None,
    bos: str = "<s>",
    eos: str = "</s>",
    pad: str = "<pad>",
    model_type: str = "llama",
    config: Mapping[str, Any] | None = None,
    tokenizer: bool = True,
) -> Path:
    """Write a model directory at ``path``: tokenizer.json (WordLevel over ``vocab``, with the special
    tokens as added special tokens), tokenizer_config.json (bos/eos/pad/unk strings) and config.json
    (``vocab_size`` default ``len(vocab)``, the role ids, ``model_type``, plus ``config``)."""
    path.mkdir(parents=True, exist_ok=True)
    if tokenizer:
        tok = Tokenizer(models.WordLevel(vocab=dict(vocab), unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.add_special_tokens([AddedToken(s, special=True) for s in (*SPECIALS, bos, eos, pad) if s in vocab])
        tok.save(str(path / "tokenizer.json"))
        (path / "tokenizer_config.json").write_text(
            json.dumps({"bos_token": bos, "eos_token": eos, "pad_token": pad, "unk_token": "<unk>"})
        )
    cfg = {
        "model_type": model_type,
        "vocab_size": vocab_size or len(vocab),
        "bos_token_id": vocab[bos],
        "eos_token_id": vocab[eos],
        "pad_token_id": vocab[pad],
        "max_position_embeddings": 2048,
        **(config or {}),
    }
    (path / "config.json").write_text(json.dumps(cfg))
    return path
