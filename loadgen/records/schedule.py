"""A recommended K schedule and its check as deployed (``loadgen sweep --deploy-schedule``; the rules:
report/schedcheck.py, the flow: run/scheddeploy.py).

- :class:`DeployedSchedule`: one workload's recommended speculative config with
  ``num_speculative_tokens_per_batch_size`` (vLLM 0.24+, vllm/config/speculative.py: ``[lo, hi, K]`` ranges,
  K = 0 off), the engine's free-form config held verbatim;
- :class:`ScheduleCell` / :class:`ScheduleCheck`: ``schedule-check.json`` (``loadgen.schedule-check/1``);
- :func:`schedule_sweep_doc`: the sweep document (sweep.toml, free-form at the disk) that measures the
  schedules in place of the sweep's candidates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from loadgen.records.speculative import SpeculativeConfig

__all__ = ["SCHEDULE_CHECK_SCHEMA", "DeployedSchedule", "ScheduleCell", "ScheduleCheck", "schedule_sweep_doc"]

SCHEDULE_FIELD = "num_speculative_tokens_per_batch_size"
SCHEDULE_CHECK_SCHEMA = "loadgen.schedule-check/1"


@dataclass(frozen=True)
class DeployedSchedule:
    """One workload's recommended K schedule: ``config`` is the speculative config as vLLM takes it."""

    workload: str
    config: Mapping[str, Any]

    @property
    def text(self) -> str:
        """The config as ``--speculative-config`` JSON, keys sorted (equal schedules give equal texts)."""
        return json.dumps(self.config, sort_keys=True)

    @property
    def speculative(self) -> SpeculativeConfig:
        """:attr:`config` as a typed record."""
        return SpeculativeConfig.from_json(dict(self.config), source=f"schedule of {self.workload}")

    @staticmethod
    def family_of(config: Mapping[str, Any]) -> str:
        """A config's method and draft: everything but K and the schedule, as sorted JSON."""
        return json.dumps(
            {k: v for k, v in config.items() if k not in ("num_speculative_tokens", SCHEDULE_FIELD)}, sort_keys=True
        )


@dataclass(frozen=True)
class ScheduleCell:
    """One cell of the check (report/schedcheck.py); speedups are plain TPOT / speculative TPOT."""

    workload: str
    level: str
    concurrency: int
    k: int
    predicted_from: str  # the sweep's candidate whose figures are the prediction, or "plain (K = 0)"
    predicted: float | None
    predicted_low: float | None
    predicted_high: float | None
    measured: float | None
    measured_low: float | None
    measured_high: float | None
    status: str


@dataclass(frozen=True)
class ScheduleCheck:
    """``schedule-check.json``: the source sweep folder, workload -> deployed candidate, every cell."""

    sweep_dir: str
    candidates: Mapping[str, str]
    cells: tuple[ScheduleCell, ...]

    def count(self, status: str) -> int:
        """How many cells have ``status``."""
        return sum(c.status == status for c in self.cells)

    def to_json(self) -> dict[str, Any]:
        """The file's object (cells in order, each with every field)."""
        return {
            "schema": SCHEDULE_CHECK_SCHEMA,
            "sweep_dir": self.sweep_dir,
            "candidates": dict(self.candidates),
            "cells": [asdict(c) for c in self.cells],
        }


def schedule_sweep_doc(
    doc: Mapping[str, Any], schedules: Sequence[DeployedSchedule]
) -> tuple[dict[str, Any], dict[str, int]]:
    """The sweep document that measures ``schedules`` in place of ``doc``'s candidates (one candidate per
    distinct config: ``schedule``, or ``schedule1``, ``schedule2``... in first-seen order; the rest of ``doc``
    kept, its name suffixed ``-schedule``), and workload -> its candidate's index in file order."""
    distinct = list(dict.fromkeys(s.text for s in schedules))
    names = ["schedule"] if len(distinct) == 1 else [f"schedule{i + 1}" for i in range(len(distinct))]
    tables = [{"name": n, **json.loads(t)} for n, t in zip(names, distinct, strict=True)]
    out = {k: v for k, v in doc.items() if k not in ("speculative", "candidates")}
    out["name"] = f"{doc.get('name', 'sweep')}-schedule"
    out["speculative"] = tables[0]
    if tables[1:]:
        out["candidates"] = tables[1:]
    return out, {s.workload: distinct.index(s.text) for s in schedules}
