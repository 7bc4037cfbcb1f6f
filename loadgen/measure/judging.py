"""Criteria against a card (pure): the card's verdict (the scope check when the pair file loads is
profile/pairfile.py). A pair file without ``[criteria]`` declares nothing, so nothing is judged: no invented default
stands in for a decision the file did not make, and ``compare`` exits 0 (criteria.py has the rules when
the table exists).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from loadgen.measure.verdict import JudgedResources, judge
from loadgen.records.card import CardVerdict, ResourceDifference
from loadgen.records.cardcell import CardCell
from loadgen.records.criteria import criteria_of
from loadgen.records.protocol import Protocol

#: The verdict's summary when the pair file has no ``[criteria]`` table.
NOT_DECLARED = "no criteria declared: not judged"


def judged_resources(difference: ResourceDifference | None) -> JudgedResources:
    """What measure/verdict.py ``judge`` judges of the card's ``resources.difference``: the draft's extra memory (GPU
    bytes where measured, else CPU RSS bytes) and the KV-cache capacity lost (a fraction)."""
    if difference is None:
        return JudgedResources()
    extra = difference.extra_gpu_memory_bytes
    return JudgedResources(extra if extra is not None else difference.extra_cpu_rss_bytes, difference.kv_capacity_loss)


def card_verdict(
    proto: Protocol, cells: Sequence[CardCell], resources: JudgedResources | None, path: Path
) -> CardVerdict:
    """The card's ``verdict`` against protocol.json's ``criteria`` (``Criteria.to_json()`` plus ``declared``, or
    None when the pair file had no ``[criteria]``; ``path``: the file named when it does not parse); ``cells``
    and ``resources`` as measure/verdict.py ``judge`` takes them.

    Returns :meth:`Verdict.record` with ``declared`` True, ``declared_keys`` (the keys the file set) and
    ``lines`` (one per cell); without criteria ``declared`` False, ``passed`` None, ``summary``
    :data:`NOT_DECLARED` and no cells. Raises ProfileError when ``raw`` does not parse. A protocol written
    before ``declared`` was recorded counts every key as declared (that run was judged by all of them)."""
    raw = proto.criteria
    if raw is None:
        return CardVerdict(declared=False, passed=None, summary=NOT_DECLARED, lines=()).keyed(
            "declared", "passed", "summary", "criteria", "cells", "resources", "lines"
        )
    criteria = criteria_of(raw, path)
    verdict = judge(criteria, cells, resources)
    record = verdict.record()
    return dataclasses.replace(
        record,
        declared_keys=criteria.declared,
        lines=tuple(c.line() for c in verdict.cells),
        keys=(*(record.keys or ()), "declared", "declared_keys", "lines"),
    )
