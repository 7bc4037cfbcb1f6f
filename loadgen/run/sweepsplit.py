"""Each candidate's own compare folder, cut out of a sweep folder (``sweep_dir/<candidate>/``).

A sweep measures every arm into the sweep folder itself (one requests.jsonl, cells.jsonl, servers/ and
metrics/ for the plain server, the placebo and every candidate, each record's ``role`` naming its arm). A
candidate's folder holds what a compare of that candidate would hold: the plain and placebo records and the
candidate's own as ``speculative``, its pair file, the protocol with the design's order cut to those arms,
the prompts, and the server records renamed the same way. ``loadgen compare --protocol <candidate>/protocol.json``
repeats it; its pair card is written from it (report/cardwrite.py ``finish_card``). Cutting again gives the same files.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from loadgen.profile.cells import PLAIN_ARMS
from loadgen.records.protocol import Protocol
from loadgen.records.protoparts import RunDesign
from loadgen.store.files import read_protocol, read_sweep_checks, write_checks, write_protocol
from loadgen.store.rundir import read_jsonl, write_text
from loadgen.util import strictjson


def _rename(role: str, candidate: str) -> str | None:
    """The role in the candidate's folder: plain and placebo as they are, the candidate's ``speculative``,
    any other arm's None (left out)."""
    if role in PLAIN_ARMS:
        return role
    return "speculative" if role == candidate else None


def _lines(path: Path, candidate: str) -> str:
    out = []
    for line in read_jsonl(path):
        role = _rename(str(line.get("role")), candidate)
        if role is not None:
            out.append(strictjson.dumps_strict({**line, "role": role}) + "\n")
    return "".join(out)


def candidate_protocol(proto: Protocol, candidate: str) -> Protocol:
    """The sweep's protocol.json as the candidate's compare protocol: its pair, speculative config and draft,
    the design's arms and order cut to plain, placebo and the candidate (as ``speculative``); the sweep's
    ``candidates`` left out. Raises KeyError when the protocol has no such candidate."""
    mine = (proto.candidates or {})[candidate]
    design = proto.design or RunDesign()
    design = design.with_fields(
        order=tuple((r, *rest) for arm, *rest in design.order or () if (r := _rename(str(arm), candidate)) is not None),
        arms=tuple(replace(a, arm=r) for a in design.arms or () if (r := _rename(a.arm, candidate)) is not None),
    )
    own = tuple(k for k in proto.keys or proto.to_json() if k != "candidates")
    return replace(proto, candidates=None, keys=own).with_fields(
        pair=mine.pair,
        pair_file=mine.pair_file,
        draft=mine.draft,
        speculative_config=mine.speculative_config,
        design=design,
        sweep_candidate=candidate,
    )


def _copy_renamed(src_dir: Path, dst_dir: Path, candidate: str, sep: str) -> None:
    """Files ``<arm><sep>...`` and ``<arm>.log`` of ``src_dir`` into ``dst_dir`` under the arm's role in the
    candidate's folder (another candidate's are left out; candidate names never start with plain or placebo,
    run/sweep.py)."""
    if not src_dir.is_dir():
        return
    dst_dir.mkdir(parents=True, exist_ok=True)
    for src in sorted(p for p in src_dir.iterdir() if p.is_file()):
        arm = next((a for a in (candidate, *PLAIN_ARMS) if src.name.startswith((a + sep, a + "."))), None)
        renamed = None if arm is None else _rename(arm, candidate)
        if arm is not None and renamed is not None:
            shutil.copyfile(src, dst_dir / (renamed + src.name[len(arm) :]))


def split_candidate(sweep_dir: Path, candidate: str) -> Path:
    """Write ``sweep_dir/<candidate>/`` from the sweep folder (module docstring); returns it."""
    proto = read_protocol(sweep_dir / "protocol.json")
    out = sweep_dir / candidate
    out.mkdir(exist_ok=True)
    write_protocol(out, candidate_protocol(proto, candidate))
    shutil.copyfile(sweep_dir / "candidates" / f"{candidate}.toml", out / "pair.toml")
    for name in ("prompts.jsonl", "status.json"):
        if (sweep_dir / name).is_file():
            shutil.copyfile(sweep_dir / name, out / name)
    for name in ("requests.jsonl", "cells.jsonl", "requests.partial.jsonl"):
        if (sweep_dir / name).is_file():
            write_text(out / name, _lines(sweep_dir / name, candidate))
    write_checks(out, read_sweep_checks(sweep_dir).get(candidate, []))
    _copy_renamed(sweep_dir / "servers", out / "servers", candidate, "-")
    _copy_renamed(sweep_dir / "metrics", out / "metrics", candidate, "__")
    return out
