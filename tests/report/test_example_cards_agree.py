"""Every committed card in docs/examples (each card.json and sweep.json, recursively) agrees with itself under
the one decision (measure/decision.py): a pair card's judged cells have the verdict status of their primary
ratio's effect (STATUS_OF), a verdict PASS only when every judged cell passes; a sweep card's best per level is
faster there, and its static choice pays (faster) at every level in the declared range."""

from __future__ import annotations

import json
import re
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


def _md_table(md: str, section: str) -> list[dict[str, str]]:
    """The rows of the first table under ``section`` (a ``## `` heading) of a Markdown card."""
    lines = md.split(f"## {section}", 1)[1].splitlines()
    header = next(line for line in lines if line.startswith("| "))
    cols = [c.strip() for c in header.strip("|").split("|")]
    rows = []
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(cols, (c.strip() for c in line.strip("|").split("|")), strict=True)))
    return rows


@pytest.mark.parametrize("path", PAIR_CARDS, ids=_name)
def test_a_pair_cards_markdown_says_what_its_json_decided(path: Path) -> None:
    """card.md, read as a user reads it: the verdict line, each level of the answer's "where speculation stops
    paying" line and each cell's "effect against the noise floor" line carry card.json's words, in order."""
    card, md = json.loads(path.read_text()), (path.parent / "card.md").read_text()
    if card["verdict"].get("summary"):
        assert f"**verdict**: {card['verdict']['summary']}" in md
    closed = [c for c in card["cells"] if c.get("rate_rps") is None]
    answer = next((line for line in md.splitlines() if line.startswith("- **where speculation stops paying**")), "")
    for cell in closed:
        ratio = (cell.get("ratios") or {}).get("tpot_p50") or {}
        if ratio.get("value") is None:
            continue
        said = f"c={cell['concurrency']}: {ratio.get('effect') or 'not decided'} ({ratio['value']:.3f}"
        assert said in answer, f"{cell['workload']} c={cell['concurrency']}: {said!r} not in the answer"
    stated = [m.group(1) for m in re.finditer(r"effect against the noise floor: ([a-z ]+)$", md, re.M)]
    effects = [
        c["ratios"]["tpot_p50"]["effect"]
        for c in card["cells"]
        if ((c.get("ratios") or {}).get("tpot_p50") or {}).get("effect")
    ]
    blocked = any(c.get("noise_floor") for c in card["cells"])  # measured in blocks: each cell says its effect
    assert stated == (effects if blocked else effects[: len(stated)]), (stated, effects)


@pytest.mark.parametrize("path", SWEEP_CARDS, ids=_name)
def test_a_sweep_cards_markdown_says_what_its_json_decided(path: Path) -> None:
    """sweep.md's cells table carries sweep.json's effect for every (workload, level, candidate), and its
    recommendation lines are sweep.json's."""
    card, md = json.loads(path.read_text()), (path.parent / "sweep.md").read_text()
    rows = {(r["workload"], r["level"], r["candidate"]): r["effect"] for r in _md_table(md, "Cells")}
    for c in card["cells"]:
        for e in c["entries"]:
            if e.get("effect"):
                assert rows[(c["workload"], c["level"], e["candidate"])] == e["effect"], (c["level"], e["candidate"])
    for line in card["recommendation"]["lines"]:
        assert line.split(": ", 1)[-1][:60] in md, line
