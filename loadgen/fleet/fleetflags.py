"""Disagreement flags of the fleet card (pure): nodes of the same GPU type that measured the same pair
differently (docs/fleet/README.md, "Disagreement flags").

Rule: at the same pair, GPU type, cell (workload, level) and metric, two nodes **disagree** when the 95%
confidence intervals of their ratios (speculative / plain; measure/ratios.py, paired bootstrap over
prompts) do not overlap: ``a.ci_high < b.ci_low`` or ``b.ci_high < a.ci_low``. Non-overlap of two 95% CIs
is a conservative test of a difference (it implies p < 0.05 and more; Schenker & Gentleman, "On judging the
significance of differences by examining the overlap between confidence intervals", The American
Statistician 55(3), 2001), so a flag is a real difference, not noise of the bootstrap. A ratio without a
CI (TTFT p99, or fewer than 2 prompt pairs) and the acceptance figures (one value per cell, no CI) are not
compared; neither are nodes of unknown GPU type or tasks that did not finish (``done``). A difference
below :data:`MIN_RELATIVE_GAP` of the smaller value is not flagged even when the CIs are apart: a
bootstrap over a few dozen prompts gives narrow intervals, and a 2% gap between two healthy nodes is
not what a capacity team acts on. For sweeps the
same rule holds for each candidate's speedup at a cell, and two nodes of the same GPU type whose sweeps
recommend different candidates are flagged.

Each flag: ``{kind: "ratio" | "speedup" | "recommendation", pair, gpu_type, workload, level, metric,
nodes: [{node, value, ci_low, ci_high, candidate}] x 2, line}`` (workload, level None for a recommendation).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import combinations
from typing import Any

#: The names of the ratios as docs/metrics.md writes them.
METRIC_NAMES = {"tpot_p50": "TPOT p50", "ttft_p50": "TTFT p50", "e2e_p50": "E2E latency p50",
                "ttft_p95": "TTFT p95", "ttft_p99": "TTFT p99", "itl_p50": "ITL p50", "e2e_p95": "E2E latency p95",
                "e2e_p99": "E2E latency p99"}
#: The smallest relative difference between two nodes' values that is flagged (5%).
MIN_RELATIVE_GAP = 0.05
CAUSES = ("look for a sick GPU (clocks, ECC errors, a degraded link), a different driver or CUDA version, or a "
          "noisy neighbour (another job on the node's GPUs, CPUs or network)")
FLAG_RULE = ("Two nodes of the same GPU type disagree when, at the same pair, cell and metric, the 95% CIs of their "
             "ratios (or of the same candidate's speedup) do not overlap and the values differ by more than "
             f"{MIN_RELATIVE_GAP:.0%}. Ratios without a CI (TTFT p99, or fewer "
             "than 2 prompt pairs) and the acceptance rate and mean acceptance length (no CI) are not compared; "
             "nodes of unknown GPU type and tasks that did not finish are not compared. Two nodes of the same GPU "
             "type whose sweeps recommend different candidates are flagged too. A disagreement means the nodes "
             f"are not interchangeable for this pair: {CAUSES}.")


def disjoint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when the intervals ``[ci_low, ci_high]`` of ``a`` and ``b`` do not overlap (touching overlaps);
    False when either has no interval."""
    if None in (a.get("ci_low"), a.get("ci_high"), b.get("ci_low"), b.get("ci_high")):
        return False
    return bool(a["ci_high"] < b["ci_low"] or b["ci_high"] < a["ci_low"])


def disagree(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when ``a`` and ``b`` are :func:`disjoint` and their values differ by more than
    :data:`MIN_RELATIVE_GAP` of the smaller one."""
    if not disjoint(a, b) or not all(isinstance(x.get("value"), int | float) for x in (a, b)):
        return False
    low = min(abs(a["value"]), abs(b["value"]))
    return bool(low > 0 and abs(a["value"] - b["value"]) > MIN_RELATIVE_GAP * low)


def _comparable(cell: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """Pairs of node entries of a cell that may be compared: both finished, same known GPU type."""
    done = [e for e in cell["nodes"] if e["status"] == "done" and e["gpu_type"] is not None]
    yield from ((a, b) for a, b in combinations(done, 2) if a["gpu_type"] == b["gpu_type"])


def _side(node: str, r: Mapping[str, Any], candidate: str | None = None) -> dict[str, Any]:
    return {"node": node, "value": r.get("value"), "ci_low": r.get("ci_low"), "ci_high": r.get("ci_high"),
            "candidate": candidate}


def _fmt(side: Mapping[str, Any]) -> str:
    return f"{side['node']} {side['value']:.3f} (95% CI {side['ci_low']:.3f}-{side['ci_high']:.3f})"


def _engines(pair: Mapping[str, Any], a: str, b: str) -> str:
    versions = {n["node"]: n.get("engine") for n in pair["nodes"]}
    if versions.get(a) == versions.get(b) or None in (versions.get(a), versions.get(b)):
        return ""
    return f"; their engine versions differ ({a}: vLLM {versions[a]}, {b}: vLLM {versions[b]})"


def _flag(kind: str, pair: Mapping[str, Any], cell: Mapping[str, Any] | None, metric: str,
          sides: Sequence[dict[str, Any]], what: str) -> dict[str, Any]:
    where = f"{cell['workload']} {cell['level']}, " if cell is not None else ""
    line = (f"{pair['pair']} on {sides[0]['gpu_type']}: {where}{what}: {sides[0]['text']} vs {sides[1]['text']}"
            f"{_engines(pair, sides[0]['node'], sides[1]['node'])}")
    return {"kind": kind, "pair": pair["pair"], "gpu_type": sides[0]["gpu_type"],
            "workload": cell["workload"] if cell else None, "level": cell["level"] if cell else None,
            "metric": metric, "nodes": [{k: s[k] for k in ("node", "value", "ci_low", "ci_high", "candidate")}
                                        for s in sides], "line": line}


def ratio_flags(pairs: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> list[dict[str, Any]]:
    """Flags of the compare pairs (fleet card ``pairs``): per cell, metric and two nodes of one GPU type
    whose ratios' 95% CIs do not overlap."""
    out = []
    for pair in pairs:
        for cell in pair["cells"]:
            for metric in metrics:
                for a, b in _comparable(cell):
                    ra, rb = a["ratios"].get(metric) or {}, b["ratios"].get(metric) or {}
                    if not disagree(ra, rb):
                        continue
                    sides = [_side(e["node"], r) | {"gpu_type": e["gpu_type"]} for e, r in ((a, ra), (b, rb))]
                    for s in sides:
                        s["text"] = _fmt(s)
                    what = f"{METRIC_NAMES.get(metric, metric)} ratio (speculative / plain), the 95% CIs do not overlap"
                    out.append(_flag("ratio", pair, cell, metric, sides, what))
    return out


def _speedup_flags(pair: Mapping[str, Any], cell: Mapping[str, Any], metric: str) -> Iterator[dict[str, Any]]:
    for a, b in _comparable(cell):
        mine = {e["candidate"]: e for e in b["entries"]}
        for ea in a["entries"]:
            eb = mine.get(ea["candidate"])
            ra = {"value": ea["speedup"], "ci_low": ea["speedup_ci_low"], "ci_high": ea["speedup_ci_high"]}
            rb = {} if eb is None else {"value": eb["speedup"], "ci_low": eb["speedup_ci_low"],
                                        "ci_high": eb["speedup_ci_high"]}
            if not disagree(ra, rb):
                continue
            sides = [_side(n["node"], r, ea["candidate"]) | {"gpu_type": n["gpu_type"]} for n, r in ((a, ra), (b, rb))]
            for s in sides:
                s["text"] = _fmt(s)
            what = (f"speedup of {ea['candidate']} ({METRIC_NAMES.get(metric, metric)}, plain / speculative), "
                    "the 95% CIs do not overlap")
            yield _flag("speedup", pair, cell, f"speedup:{metric}", sides, what)


def sweep_flags(sweeps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Flags of the sweep pairs (fleet card ``sweeps``): different recommendations on one GPU type, and
    per cell a candidate's speedup whose 95% CIs on two nodes of one GPU type do not overlap."""
    out = []
    for pair in sweeps:
        done = [n for n in pair["nodes"] if n["status"] == "done" and n["gpu_type"] is not None and n["measured"]]
        for a, b in combinations(done, 2):
            if a["gpu_type"] != b["gpu_type"] or a["recommendation"] == b["recommendation"]:
                continue
            sides = [_side(n["node"], {}, n["recommendation"]) | {"gpu_type": n["gpu_type"]} for n in (a, b)]
            for s in sides:
                s["text"] = f"{s['node']} recommends {s['candidate'] or 'no speculation'}"
            out.append(_flag("recommendation", pair, None, "recommendation", sides, "different recommendations"))
        for cell in pair["cells"]:
            out += _speedup_flags(pair, cell, pair.get("primary_metric") or "tpot_p50")
    return out
