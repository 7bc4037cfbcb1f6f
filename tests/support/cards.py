"""Small pair cards for tests: :func:`full_card` fills the fields a ``loadgen.card/1`` card requires
(loadgen/records/card.py) around the few a test sets, :func:`card_record` reads the result as a ``PairCard``."""

from __future__ import annotations

from typing import Any

from loadgen.records.card import PairCard
from loadgen.records.cardcell import CardCell
from loadgen.records.serverparts import EffectiveFile

CARD: dict[str, Any] = {
    "schema": "loadgen.card/1",
    "pair": "t",
    "generated_utc": "2026-01-01T00:00:00+00:00",
    "complete": True,
    "failure": None,
    "target": {"model": "m", "revision": None, "local": False},
    "draft": None,
    "speculative_config": None,
    "sampling": {},
    "engine_version": {"plain": None, "speculative": None},
    "servers": {},
    "workloads": [],
    "workloads_statement": "",
    "concurrency": [],
    "stop_rule": {},
    "prompts_sha256": "",
    "cells": [],
    "crossover": {},
    "slo": {},
    "capacity": {},
    "resources": {},
    "placement": {},
    "verdict": {"passed": None, "summary": "not judged", "declared": False},
}
#: A ``servers/<server>-resources.json`` entry (records/usage.py ``ServerUsage``) with every figure unknown.
USAGE: dict[str, Any] = {
    "processes": 1,
    "cpu_rss_bytes": None,
    "gpu_memory": None,
    "kv_cache_tokens": None,
    "kv_cache_tokens_log": None,
    "num_gpu_blocks": None,
    "block_size": None,
    "gpu_memory_utilization": None,
}


def usage(gpu_bytes: int | None = None, **figures: Any) -> dict[str, Any]:
    """A usage entry with ``figures`` known (``gpu_bytes``: its GPU memory, on no listed device)."""
    gpu = None if gpu_bytes is None else {"bytes": gpu_bytes, "devices": []}
    return USAGE | {"gpu_memory": gpu} | figures


#: A ``servers/<server>-effective.json`` (records/serverparts.py ``EffectiveFile``) with only its required keys.
EFFECTIVE: dict[str, Any] = {
    "base_url": "http://127.0.0.1:8000",
    "speculative_config_log": None,
    "kv_cache_tokens_log": None,
    "spec_decode_metrics": False,
    "spec_positions": 0,
    "metric_families": [],
    "ready_s": None,
    "cache_config_info": {},
}
#: A ``servers/<server>-launch.json`` (records/runparts.py ``LaunchFile``) of an attached server.
LAUNCH: dict[str, Any] = {"argv": None, "env": {}, "base_url": "http://127.0.0.1:8000", "attached": True}


def effective(**keys: Any) -> dict[str, Any]:
    """An effective file with ``keys`` set (a new key after the required ones)."""
    return EFFECTIVE | keys


def effective_file(**keys: Any) -> EffectiveFile:
    """:func:`effective` read as its record."""
    return EffectiveFile.from_json(effective(**keys), source="test effective")


def launch(**keys: Any) -> dict[str, Any]:
    """A launch file with ``keys`` set."""
    return LAUNCH | keys


CELL: dict[str, Any] = {
    "workload": "w",
    "level": "c1",
    "concurrency": 1,
    "rate_rps": None,
    "complete": True,
    "ratios": {},
    "notes": [],
}
ROLE: dict[str, Any] = {
    "requests": 0,
    "errors": 0,
    "output_throughput_tps": None,
    "request_throughput_rps": None,
    "ttft_s": None,
    "tpot_s": None,
    "itl_s": None,
    "e2e_s": None,
    "failure": None,
}
DISTRIBUTIONS = ("ttft_s", "tpot_s", "itl_s", "icl_s", "e2e_s", "send_lag_s")


def _role(side: dict[str, Any]) -> dict[str, Any]:
    out = {**ROLE, **side}
    for key in DISTRIBUTIONS:
        if isinstance(out.get(key), dict):
            out[key] = {"count": 1, "p50": None, "p99": None, **out[key]}
    return out


def full_card(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a part of a card) with every required field filled: the card's, each cell's, each server's and
    each distribution's (count 1, percentiles None unless given), the verdict's."""
    cells = [
        {**CELL, **c, **{r: _role(c[r]) for r in ("plain", "speculative") if c.get(r)}} for c in data.get("cells") or []
    ]
    verdict = {**CARD["verdict"], **(data.get("verdict") or {})}
    verdict["cells"] = [{"checks": [], "reasons": [], **c} for c in verdict.get("cells") or []]
    return {**CARD, **data, "cells": cells, "verdict": verdict}


def card_record(data: dict[str, Any]) -> PairCard:
    """:func:`full_card` of ``data`` as the record."""
    return PairCard.from_json(full_card(data), source="test card")


def markdown(data: dict[str, Any]) -> str:
    """report/cardmd.py's Markdown of :func:`card_record` of ``data`` (a built card or a part of one)."""
    from loadgen.report.cardmd import render_markdown

    return render_markdown(card_record(data))


def card_cell(data: dict[str, Any]) -> CardCell:
    """A card cell from a part of one (its level ``c<concurrency>`` and every other required field filled)."""
    [cell] = full_card({"cells": [{"level": f"c{data.get('concurrency', 1)}", **data}]})["cells"]
    return CardCell.from_json(cell, source="test cell")
