"""A model folder's JSON files (config.json, tokenizer.json, ...), read for the pair check (check/): the raw reader
:func:`read_model_json` and :class:`ModelConfig`, the config.json fields the checks use.

A model folder is not loadgen's file: it is read leniently, as vLLM and transformers would meet it. A missing,
unreadable or non-object file reads as ``{}``, and a field of another kind than the one below counts as absent
(None), so a check reports what it can instead of refusing the folder (check/draftcheck.py, headvocab.py,
targetcheck.py, vocab.py say what each absence means).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

#: config.json keys that hold an EAGLE-3 head's draft<->target token mapping.
MAPPING_NAMES = ("d2t", "t2d")
#: Special-token roles whose ids config.json may give (``<role>_token_id``).
TOKEN_ROLES = ("bos", "eos", "pad", "unk")


def read_model_json(path: Path) -> dict[str, Any]:
    """A JSON object file of a model folder (config.json, tokenizer.json, ...); ``{}`` when it is missing,
    unreadable or not an object (a run folder's JSON: store/rundir.read_json, which refuses instead)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _section(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class ModelConfig:
    """config.json, the fields the checks read (None: absent or of another kind).

    ``model_type`` and ``architectures`` (its strings only) name the checkpoint's kind;
    ``speculators_model_type`` and ``speculators`` (``speculators_config`` is an object) mark a speculators-format
    checkpoint, with ``speculators_algorithm`` and ``speculators_verifier`` (``speculators_config.algorithm``,
    ``.verifier.name_or_path``); ``max_position_embeddings`` (tokens); vocabulary sizes in tokens: ``vocab_size``,
    ``text_vocab_size`` (``text_config.vocab_size``), ``layer_vocab_size`` (``transformer_layer_config.
    vocab_size``), ``draft_vocab_size`` (a reduced head vocabulary); ``mapping_keys``: which of
    :data:`MAPPING_NAMES` it holds; ``token_ids``: role (:data:`TOKEN_ROLES`) -> ``<role>_token_id`` as given
    (an id, a list of ids or None)."""

    model_type: str | None = None
    architectures: tuple[str, ...] = ()
    speculators_model_type: str | None = None
    speculators: bool = False
    speculators_algorithm: str | None = None
    speculators_verifier: str | None = None
    max_position_embeddings: int | None = None
    vocab_size: int | None = None
    text_vocab_size: int | None = None
    layer_vocab_size: int | None = None
    draft_vocab_size: int | None = None
    mapping_keys: tuple[str, ...] = ()
    token_ids: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """The fields of a parsed config.json (leniently: module docstring)."""
        speculators = data.get("speculators_config")
        verifier = _section(speculators, "verifier") if isinstance(speculators, dict) else {}
        archs = data.get("architectures")
        return cls(
            model_type=_str(data.get("model_type")),
            architectures=tuple(a for a in archs if isinstance(a, str)) if isinstance(archs, list) else (),
            speculators_model_type=_str(data.get("speculators_model_type")),
            speculators=isinstance(speculators, dict),
            speculators_algorithm=_str(speculators.get("algorithm")) if isinstance(speculators, dict) else None,
            speculators_verifier=_str(verifier.get("name_or_path")),
            max_position_embeddings=_int(data.get("max_position_embeddings")),
            vocab_size=_int(data.get("vocab_size")),
            text_vocab_size=_int(_section(data, "text_config").get("vocab_size")),
            layer_vocab_size=_int(_section(data, "transformer_layer_config").get("vocab_size")),
            draft_vocab_size=_int(data.get("draft_vocab_size")),
            mapping_keys=tuple(k for k in MAPPING_NAMES if k in data),
            token_ids={r: data.get(f"{r}_token_id") for r in TOKEN_ROLES},
        )

    @classmethod
    def read(cls, model_dir: Path) -> Self:
        """``model_dir``'s config.json (all fields absent when it is missing or unreadable)."""
        return cls.from_json(read_model_json(model_dir / "config.json"))
