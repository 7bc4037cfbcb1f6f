"""Re-derive a card from its saved statistics when the run folder has no requests.jsonl.

A committed example (docs/examples/h200/) keeps card.json, cells.jsonl and protocol.json but not the
per-request timelines (about 10 MB a run). Rebuilding the card from requests.jsonl is then impossible:
every per-request figure (percentiles, paired bootstrap CIs, goodput, the lossless check) stays as
card.json has it. What depends only on cell-level numbers is recomputed: the step times and the cost
decomposition, the burst check and the ratios it
withholds (steptime.py), the verdict (judging.py), and a server's engine path when card.json lacks it
and the folder kept its startup log (report/enginelog.py ``with_engine_path``).
The card keeps its own ``generated_utc`` (re-rendering gives the same bytes) and says
``statistics_from: "card.json"``; its plots are kept as they were.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from loadgen.errors import BadInput
from loadgen.measure.judging import card_verdict, judged_resources
from loadgen.measure.serverside import bounds_of, json_bounds
from loadgen.measure.steptime import apply
from loadgen.profile.cells import ROLES
from loadgen.records.card import PairCard
from loadgen.records.cardcell import CardCell
from loadgen.records.cell import CellEntry
from loadgen.records.criteria import criteria_of
from loadgen.report.cardlevels import crossovers
from loadgen.report.enginelog import with_engine_path
from loadgen.report.noisefloor import renoted, with_effects
from loadgen.store.files import read_card, read_cell_lines, read_protocol


def saved_only(run_dir: Path) -> bool:
    """True when ``run_dir`` has a card.json but no requests.jsonl to rebuild it from."""
    return not (run_dir / "requests.jsonl").exists() and (run_dir / "card.json").is_file()


def refresh_saved_card(run_dir: Path) -> PairCard:
    """card.json of ``run_dir`` (checked by store/files.py ``read_card``) with the cell-level diagnosis recomputed
    (module docstring); the same card again when run twice. Raises BadInput when card.json, cells.jsonl or
    protocol.json is missing, or naming the field of a card.json that does not match its type."""
    if not (run_dir / "cells.jsonl").is_file() or not (run_dir / "card.json").is_file():
        raise BadInput(
            f"{run_dir} has neither requests.jsonl nor card.json and cells.jsonl: nothing to build a card "
            "from; pass a run folder written by `loadgen compare`"
        )
    if not (run_dir / "protocol.json").is_file():  # the criteria the verdict is recomputed against
        raise BadInput(f"{run_dir} is not a run folder (no protocol.json); pass runs/<pair>/<timestamp>")
    card = read_card(run_dir / "card.json")
    entries: dict[tuple[str, str, str], CellEntry] = {}
    for e in read_cell_lines(run_dir / "cells.jsonl"):  # the first repetition's line, as carddata.py reads them
        entries.setdefault((*e.key, e.role), e)
    cells = tuple(
        apply(
            _refreshed(cell),
            None,
            {role: line for role in ROLES if (line := entries.get((cell.workload, cell.level, role))) is not None},
        )
        for cell in card.cells
    )
    servers = {
        role: replace(server, effective=with_engine_path(server.effective, run_dir, role))
        for role, server in card.servers.items()
    }  # a card of older code: the engine path from the log
    proto = read_protocol(run_dir / "protocol.json")
    criteria = None if proto.criteria is None else criteria_of(proto.criteria, run_dir / "protocol.json")
    cells = tuple(renoted(c, with_effects(c.ratios, c.noise_floor, criteria)) for c in cells)
    verdict = card_verdict(proto, cells, judged_resources(card.resources.difference), run_dir / "protocol.json")
    crossover = crossovers(cells)  # read from the recomputed decisions
    return replace(
        card, cells=cells, servers=servers, verdict=verdict, crossover=crossover, statistics_from="card.json"
    )


def _refreshed(cell: CardCell) -> CardCell:
    """``cell`` without its burst notes (steptime.apply writes them again) and with its server-vs-client
    bucket bounds in strict JSON (``"+Inf"``, as older cards wrote null)."""
    sides = {
        role: replace(
            side,
            server_vs_client={
                k: replace(row, bucket_bounds=json_bounds(bounds_of(row.bucket_bounds)))
                if "bucket_bounds" in (row.keys or ())
                else row
                for k, row in side.server_vs_client.items()
            },
        )
        for role in ROLES
        if (side := cell.role(role)) is not None and side.server_vs_client is not None
    }
    notes = tuple(n for n in cell.notes if not any(n.startswith(f"{r}: bursty") for r in ROLES))
    return replace(
        cell, plain=sides.get("plain", cell.plain), speculative=sides.get("speculative", cell.speculative), notes=notes
    )
