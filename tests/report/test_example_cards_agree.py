"""Every committed card in docs/examples (each card.json and sweep.json, recursively) agrees with itself under
the one decision (measure/decision.py): a pair card's judged cells have the verdict status of their primary
ratio's effect (STATUS_OF), a verdict PASS only when every judged cell passes; a sweep card's best per level is
faster there, and its static choice pays (faster) at every level in the declared range."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loadgen.measure.decision import FASTER, STATUS_OF, Bar, decide
from loadgen.records.cardcell import Ratio
from loadgen.records.criteria import NOT_JUDGED, NOT_MEASURED, PASS, criteria_of

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
PAIR_CARDS = sorted(EXAMPLES.rglob("card.json"))
SWEEP_CARDS = sorted(EXAMPLES.rglob("sweep.json"))


def _ratio(doc: Any) -> Ratio | None:
    if not isinstance(doc, dict) or doc.get("value") is None:
        return None
    return Ratio(doc["value"], doc.get("ci_low"), doc.get("ci_high"))


def _name(path: Path) -> str:
    return str(path.relative_to(EXAMPLES))


def test_the_examples_hold_cards() -> None:
    assert len(PAIR_CARDS) >= 5 and len(SWEEP_CARDS) >= 2


@pytest.mark.parametrize("path", PAIR_CARDS, ids=_name)
def test_a_pair_card_judges_each_cell_by_its_effect(path: Path) -> None:
    card = json.loads(path.read_text())
    verdict = card["verdict"]
    if not verdict.get("declared"):
        assert verdict["passed"] is None and verdict["cells"] == []
        return
    criteria = criteria_of(verdict["criteria"], path)
    cells = {(c["workload"], c["concurrency"]): c for c in card["cells"]}
    judged = [v for v in verdict["cells"] if v["status"] not in (NOT_JUDGED, NOT_MEASURED)]
    for v in judged:
        cell = cells[(v["workload"], v["concurrency"])]
        where = f"{v['workload']} c={v['concurrency']}"
        for metric in criteria.primary:
            ratio = cell["ratios"].get(metric) or {}
            floor = ((cell.get("noise_floor") or {}).get("ratios") or {}).get(metric)
            decided = decide(metric, _ratio(ratio), _ratio(floor), Bar.of(criteria, metric)).outcome
            stated = ratio.get("effect")
            assert stated in (None, decided), f"{where}: {metric} effect {stated!r}, its numbers decide {decided!r}"
            check = next(k for k in v["checks"] if k["kind"] == "primary" and k["name"] == metric)
            assert check["status"] == STATUS_OF[stated or decided], (
                f"{where}: {metric} check {check['status']!r} but its effect is {stated or decided!r}"
            )
            if v["status"] == PASS:
                assert (stated or decided) == FASTER, f"{where} passes with {metric} {stated or decided!r}"
        assert (v["status"] == PASS) == all(k["status"] == PASS for k in v["checks"]), where
    if verdict["passed"]:
        assert judged and all(v["status"] == PASS for v in judged)
        assert verdict["summary"].startswith("PASS")
    else:
        assert not verdict["summary"].startswith("PASS")


@pytest.mark.parametrize("path", SWEEP_CARDS, ids=_name)
def test_a_sweep_card_recommends_only_what_is_faster(path: Path) -> None:
    card = json.loads(path.read_text())
    criteria = criteria_of(card["criteria"], path) if card.get("criteria") else None
    cells = {(c["workload"], c["level"]): c for c in card["cells"]}
    for w in card["recommendation"]["workloads"]:
        for lv in w["levels"]:
            if lv["best"] is not None:
                e = next(e for e in cells[(w["workload"], lv["level"])]["entries"] if e["candidate"] == lv["best"])
                assert e["effect"] == FASTER, f"{w['workload']} {lv['level']}: best {lv['best']} is {e['effect']!r}"
        if w["static"] is not None:
            for (workload, level), c in cells.items():
                in_range = criteria is None or criteria.in_scope(workload, int(c["concurrency"] or 0))
                if workload != w["workload"] or not in_range:
                    continue
                e = next((e for e in c["entries"] if e["candidate"] == w["static"]), None)
                assert e is not None and e["effect"] == FASTER, f"{workload} {level}: static {w['static']} does not pay"
