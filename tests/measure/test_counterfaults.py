"""Counters that cannot be trusted (measure/counterfaults.py): recorded vLLM 0.32.0 ``/metrics`` texts
(tests/data, t0 -> t1 on a speculative server: 100 drafts of K = 3, 150 accepted) with one counter made NaN,
+Inf, -Inf or negative, or gone backwards while the process start time held. Each is named, and the cell's
acceptance is refused (with the reason) while a sound cell keeps its figures; cells.jsonl lines that hold
null counters (NaN written as null) read back without a traceback."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from loadgen.measure.counterchecks import cell_notes, usable_counters
from loadgen.measure.counterfaults import backwards_without_restart, bad_samples, said, untrusted
from loadgen.prom import exposition as prom
from loadgen.records.cell import CellEntry
from loadgen.records.speculative import SpeculativeConfig
from tests.measure.test_counterchecks import _e, entry_of, started, text

DATA = Path(__file__).parents[1] / "data"
ACCEPTED = 'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="target"} 240.0'


def _spoiled(value: str) -> prom.Snapshot:
    """t1 with engine 0's accepted-tokens counter reading ``value``."""
    assert ACCEPTED in text("spec_t1")
    return prom.parse_metrics(text("spec_t1").replace(ACCEPTED, ACCEPTED.replace("240.0", value)))


@pytest.mark.parametrize(
    ("value", "reads"),
    [("NaN", "NaN"), ("+Inf", "+Inf"), ("-Inf", "-Inf"), ("-5.0", "a negative number (-5)")],
)
def test_a_counter_that_is_no_count_is_named_and_refuses_the_acceptance(value: str, reads: str) -> None:
    before, after = prom.parse_metrics(text("spec_t0")), _spoiled(value)
    faults = bad_samples(before, after)
    assert faults == [f"vllm:spec_decode_num_accepted_tokens_total (engine 0) read {reads} after the cell"]
    entry = _e({**_finite(entry_of(before, after, sent=10)), "counter_faults": faults})
    assert untrusted(entry)[0] == faults[0]
    counters, why = usable_counters([entry])
    assert counters is None and why == f"the server's counters cannot be trusted: {faults[0]}"
    (note,) = cell_notes(
        {"speculative": [entry]},
        SpeculativeConfig.from_json({"method": "ngram", "num_speculative_tokens": 3}, source="t"),
    )
    assert note.startswith("speculative: acceptance not measurable, the server's counters cannot be trusted (")


def _finite(fields: dict) -> dict:  # type: ignore[type-arg]
    """The entry's numbers as cells.jsonl holds them: a NaN or Inf is written as null (util/strictjson.py)."""
    sd = fields["spec_decode"]
    fix = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in sd.items()}
    fix["accepted_per_position"] = [None if not math.isfinite(v) else v for v in sd["accepted_per_position"]]
    return {**fields, "spec_decode": fix}


def test_sound_counters_are_not_flagged_and_keep_their_acceptance() -> None:
    before, after = prom.parse_metrics(text("spec_t0")), prom.parse_metrics(text("spec_t1"))
    assert bad_samples(before, after) == []
    entry = _e(entry_of(before, after, sent=10))
    assert untrusted(entry) == []
    counters, why = usable_counters([entry])
    assert why is None and counters is not None
    assert (counters.num_drafts, counters.num_draft_tokens, counters.num_accepted_tokens) == (100, 300, 150)


def test_a_line_with_null_counters_is_refused_not_a_traceback() -> None:
    # a cells.jsonl line written before the scrapes were checked: the NaN deltas are nulls on disk
    entry = CellEntry.from_json(
        {
            "role": "speculative",
            "workload": "w",
            "concurrency": 1,
            "spec_decode": {
                "num_drafts": None,
                "num_draft_tokens": None,
                "num_accepted_tokens": 5.0,
                "accepted_per_position": [None],
                "reset": False,
            },
        },
        source="cells.jsonl line 1",
    )
    assert untrusted(entry) == ["Δnum_drafts, Δnum_draft_tokens, Δaccepted[0] read NaN or Inf (written as null)"]
    assert usable_counters([entry])[0] is None


def test_counters_that_go_backwards_without_a_restart_refuse_the_whole_cell() -> None:
    # engine 0's and 1's spec-decode counters halved between the scrapes, the process start time unchanged:
    # no restart explains it, so neither this block nor the cell's sound one gives an acceptance
    t1 = text("spec_t1")
    halved = "\n".join(_halve(line) for line in t1.splitlines()) + "\n"
    before, after = started(t1, 1000.0), started(halved, 1000.0)
    cut = _e(entry_of(before, after, sent=0))
    assert backwards_without_restart(cut) == (
        "spec-decode counters went backwards while process_start_time_seconds held at 1000 (no restart)"
    )
    sound = _e(entry_of(started(text("spec_t0"), 1000.0), started(t1, 1000.0), sent=10))
    counters, why = usable_counters([sound, cut])
    assert counters is None and why is not None and "went backwards while process_start_time_seconds held" in why
    # with a changed start time it is a restart: that block is left out, the sound one kept
    restarted = _e(entry_of(before, started(halved, 2000.0), sent=0))
    assert backwards_without_restart(restarted) is None
    kept, why = usable_counters([sound, restarted])
    assert why is None and kept is not None and kept.num_accepted_tokens == 150


def _halve(line: str) -> str:
    if not line.startswith("vllm:spec_decode_") or "_created" in line:
        return line
    name, value = line.rsplit(" ", 1)
    return f"{name} {float(value) / 2}"


def test_many_faults_are_said_in_one_short_phrase() -> None:
    assert said(["a", "b", "c", "d", "e"]) == "a; b; c; and 2 more"
    assert said(["a"]) == "a"
