"""The committed H200 example README says what its cards' JSON says: each lossless-check figure quoted in
docs/examples/h200/README.md is recomputed here from the card.json files beside it (the README was once
written from memory: "first differences late (tokens 70-94)" where its own cards showed 0-63)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "h200"
README = " ".join((EXAMPLES / "README.md").read_text().split())  # lines re-wrapped: one space between words


def _cells(folder: Path) -> list[tuple[str, str, int, dict[str, Any]]]:
    out = []
    for card in sorted(folder.glob("*/card.json")) if not (folder / "card.json").exists() else [folder / "card.json"]:
        for cell in json.loads(card.read_text()).get("cells", []):
            if cell.get("lossless"):
                out.append((card.parent.name, cell["workload"], cell["concurrency"], cell["lossless"]))
    return out


def _firsts(cells: list[tuple[str, str, int, dict[str, Any]]]) -> tuple[int, int]:
    firsts = [t for *_, lossless in cells for t in lossless["first_difference"] or []]
    return min(firsts), max(firsts)


def test_the_sweep_paragraph_quotes_the_cards() -> None:
    cells = _cells(EXAMPLES / "h200-smollm2-sweep")
    differing = [c for c in cells if c[3]["identical"] < c[3]["pairs"]]
    lo, hi = (round(100 * f([c[3]["match_rate"] for c in differing])) for f in (min, max))
    per = {}
    for name, _, _, lossless in cells:
        same, total = per.get(name, (0, 0))
        per[name] = (same + lossless["identical"], total + lossless["pairs"])
    (total,) = {t for _, t in per.values()}
    a, b, c = (f"{per[n][0]:,}" for n in ("demo-draft-k1", "demo-draft-k2", "ngram-k4"))
    assert f"elsewhere {lo}-{hi}% of requests were identical ({a}, {b} and {c} of {total:,} per candidate)" in README
    assert all(c[2] == 1 or c[1] != "short-homogeneous" or c[3]["identical"] == c[3]["pairs"] for c in cells)
    for workload, words in (("long-diverse", "came late"), ("grounded", "came anywhere in the output")):
        lo_t, hi_t = _firsts([c for c in differing if c[1] == workload])
        assert f"{workload} traffic the first differences {words} (tokens {lo_t}-{hi_t} of" in README
    assert all(c[3]["late"] for c in differing if c[1] == "long-diverse")
    assert not any(c[3]["late"] for c in differing if c[1] == "grounded")


def test_the_random_1b_paragraph_quotes_the_cards() -> None:
    cells = [c for name in ("h200-1b-draft", "h200-1b-ngram", "h200-1b-selfdraft") for c in _cells(EXAMPLES / name)]
    assert all(c[3]["identical"] == c[3]["pairs"] == 32 for c in cells if c[2] == 1)
    lo_t, hi_t = _firsts(cells)
    assert f"first differences anywhere in the output (tokens {lo_t}-{hi_t};" in README
    late = [c for c in cells if c[3]["late"]]
    assert [(c[1], c[2]) for c in late] == [("short-homogeneous-gpu", 4)] and "only one cell" in README
    self_short = {
        c[2]: round(100 * c[3]["match_rate"])
        for c in cells
        if c[0] == "h200-1b-selfdraft" and c[1] == "short-homogeneous-gpu"
    }
    assert f"for the self-draft {self_short[4]}%, {self_short[16]}%, {self_short[64]}% at 4, 16, 64" in README
    at64 = [round(100 * c[3]["match_rate"]) for c in cells if c[2] == 64]
    assert f"{min(at64)}-{max(at64)}% at 64 for all three pairs" in README


def test_the_h100_readme_table_quotes_the_sweep_card() -> None:
    """docs/examples/h100/README.md's first table: each level's speedup, CI and decision as sweep.json holds
    them, and the A/A floor as the candidate's pair card holds it."""
    folder = EXAMPLES.parent / "h100" / "h200-7b-grounded-decide"
    text = (EXAMPLES.parent / "h100" / "README.md").read_text().split("## How it was measured")[0]
    sweep = json.loads((folder / "sweep.json").read_text())
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
        for line in text.splitlines()
        if line.startswith("| c")
    }
    for cell in sweep["cells"]:
        (entry,) = cell["entries"]
        speedup, ci, decision, aa = rows[cell["level"]][:4]
        assert speedup == f"{entry['speedup']:.3f}", cell["level"]
        assert ci == f"[{entry['speedup_ci_low']:.3f}, {entry['speedup_ci_high']:.3f}]", cell["level"]
        assert decision == entry["effect"], cell["level"]
        floor = cell["noise_floor"]
        assert aa == f"{floor['value']:.3f} [{floor['ci_low']:.3f}, {floor['ci_high']:.3f}]", cell["level"]
