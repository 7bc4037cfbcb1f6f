"""The machine-readable extras a pair check's finding carries into ``checks.json`` (check/finding.py
``Finding.data``) where they have a fixed shape: :class:`VocabCounts`, the vocabulary comparison of a target and a
draft tokenizer (check/vocabrules.py), and :class:`HeadVocab`, a head draft's vocabulary (check/headvocab.py).
Each is a :class:`~loadgen.records.cardwire.Wire` record: ``to_json`` writes the required fields and those set
(``with_fields``) in declared order (the keys earlier code wrote), ``from_json`` reads them back checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadgen.records.cardwire import Wire


@dataclass(frozen=True)
class VocabCounts(Wire):
    """Target vs draft tokenizer (check/vocab.py ``VocabDiff``): ``kind`` (``identical``, ``padding`` or
    ``mismatch``), each side's tokens and config ``vocab_size`` (None when absent), and the number of tokens
    mapped to another id, missing in the draft, missing in the target, and in both after vLLM's normalisation
    (``intersection``)."""

    kind: str
    target_tokens: int
    draft_tokens: int
    target_vocab_size: int | None
    draft_vocab_size: int | None
    remapped: int
    missing_in_draft: int
    missing_in_target: int
    intersection: int


@dataclass(frozen=True)
class HeadVocab(Wire):
    """A head draft's vocabulary (check/headvocab.py): ``kind`` (``head``, or ``reduced`` for a reduced
    ``draft_vocab_size``), the ``method``, the target's and the draft's vocabulary sizes (tokens; None when the
    config does not say) and, for a reduced one, where its d2t/t2d ``mapping`` was found (None: nowhere)."""

    kind: str
    method: str
    target_vocab_size: int | None
    draft_vocab_size: int | None
    mapping: str | None = None
