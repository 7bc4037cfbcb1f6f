"""Criteria against a card (pure): the card's verdict (the scope check when the pair file loads is
profile/pairfile.py). A pair file without ``[criteria]`` declares nothing, so nothing is judged: no invented default
stands in for a decision the file did not make, and ``compare`` exits 0 (criteria.py has the rules when
the table exists).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loadgen.measure.verdict import judge
from loadgen.profile.criteria import parse_criteria
from loadgen.records.cardcell import CardCell

#: The verdict's summary when the pair file has no ``[criteria]`` table.
NOT_DECLARED = "no criteria declared: not judged"




def judged_resources(difference: Mapping[str, Any]) -> dict[str, Any]:
    """What :func:`criteria.judge` judges of ``resources.difference(...)``: the draft's extra memory (GPU
    bytes where measured, else CPU RSS bytes) and the KV-cache capacity lost (a fraction)."""
    extra = difference.get("extra_gpu_memory_bytes")
    return {"extra_memory_bytes": extra if extra is not None else difference.get("extra_cpu_rss_bytes"),
            "kv_capacity_loss": difference.get("kv_capacity_loss")}


def card_verdict(raw: Mapping[str, Any] | None, cells: Sequence[CardCell],
                 resources: Mapping[str, Any] | None, path: Path) -> dict[str, Any]:
    """The card's ``verdict``: ``raw`` is protocol.json's ``criteria`` (``Criteria.to_json()``, or None when
    the pair file had no ``[criteria]``); ``cells`` and ``resources`` as :func:`criteria.judge` takes them.

    Returns :meth:`Verdict.to_json` plus ``declared: True``, ``declared_keys`` (the keys the file set) and
    ``lines`` (one per cell); without criteria
    ``{"declared": False, "passed": None, "summary": NOT_DECLARED, ...}`` with no cells. Raises ProfileError
    when ``raw`` does not parse. A protocol written before ``declared`` was recorded counts every key as
    declared (that run was judged by all of them)."""
    if raw is None:
        return {"declared": False, "passed": None, "summary": NOT_DECLARED, "criteria": None, "cells": [],
                "resources": [], "lines": []}
    fields = {k: v for k, v in raw.items() if v is not None and k != "declared"}
    criteria = parse_criteria(fields, path)
    criteria = dataclasses.replace(criteria, declared=tuple(raw.get("declared", fields)))
    verdict = judge(criteria, cells, resources)
    return verdict.to_json() | {"declared": True, "declared_keys": list(criteria.declared),
                                "lines": [c.line() for c in verdict.cells]}
