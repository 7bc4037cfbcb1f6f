"""The measurement design of a pair file (``[design]``): blocks per arm, the A/A placebo, whether the servers
share the accelerator, and how far a cell may grow to reach a declared precision (docs/metrics.md, "Blocks").

Every cell is measured in ``blocks`` blocks per **arm** (the plain server, the placebo, each speculative
candidate); a block is one run of the stop rule (``[stop]``) on one arm, and block ``b`` sends the same
prompts on every arm. The arms alternate block by block in a balanced order (run/design.py), so a server
whose speed moves over minutes moves every arm alike, and the speedup's 95% CI comes from the block-level
paired ratios (measure/blocks.py). Keys, all optional (unknown keys and wrong types: exit 2):

- ``blocks`` (integer 1-100, default 3): blocks per arm and cell. One block gives ratios without a CI.
- ``placebo`` (``"server"``, ``"blocks"`` or ``"off"``; default ``"server"``): the A/A arm, plain against
  plain through the same path. ``"server"``: a second plain server, launched as the candidates are (its
  spread includes a fresh server's); ``"blocks"``: a second set of blocks on the plain server itself
  (no extra server; it also stands in for ``"server"`` when the plain server is attached and no
  ``[servers.placebo].url`` is given); ``"off"``: none, and the card has no noise floor.
- ``co_resident`` (``true``, ``false`` or ``"auto"``, default ``"auto"``): keep every server up at once (only the
  one being measured gets load) or launch one at a time per phase. ``"auto"``: together when every server
  is attached; with no GPU visible (the CPU build: memory is the host's) when every launched server declares
  ``VLLM_CPU_KVCACHE_SPACE`` and their estimated memory fits the host's available memory (run/arms.py); with
  GPUs when every launched server declares ``--gpu-memory-utilization`` and the shares sum to at most 0.95.
- ``max_blocks`` (integer >= ``blocks``, default ``3 * blocks``): with ``[criteria].ci_half_width`` a run adds
  blocks to a cell until its outcome is decided (measure/decision.py), up to this many.
- ``min_block_requests`` (integer 1-100, default 16): with ``[criteria].ci_half_width`` (sized cells), the least
  measured requests of a closed-loop block, whatever ``[stop]`` gives (``max(min_requests, rounds * c)``): a
  block of a few requests at low concurrency cannot decide a cell.

- ``warmup_pass`` (``true`` or ``false``, default ``false``): before an arm's first block, send every prompt its
  blocks will send once, unmeasured (closed loop at the lowest closed-loop level, on a prefix-cache salt of its
  own, records not kept), on every arm alike: a proposer that learns as it serves (suffix decoding's cache) starts
  the measured blocks warm. The log says so per arm and protocol.json's ``design`` records it.

The first block of a closed-loop cell warms every arm with a full round at the level's concurrency
(``max([stop].warmup_requests, c)`` requests, excluded), not one request: a batch shape the server has not yet
run makes a slow first block (``[stop].warmup_requests = 0`` turns warm-up off).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgen.errors import ProfileError

PLACEBOS = ("server", "blocks", "off")
KEYS = ("blocks", "placebo", "co_resident", "max_blocks", "min_block_requests", "warmup_pass")
MAX_BLOCKS = 100


@dataclass(frozen=True)
class Design:
    """Parsed ``[design]`` (module docstring). ``co_resident`` is ``"auto"``, ``"yes"`` or ``"no"``."""

    blocks: int = 3
    placebo: str = "server"
    co_resident: str = "auto"
    max_blocks: int = 9
    min_block_requests: int = 16
    warmup_pass: bool = False

    def to_json(self) -> dict[str, int | str | bool]:
        """JSON-ready dict of every field (``warmup_pass`` only when on, as protocols of older code lack it)."""
        return {
            "blocks": self.blocks,
            "placebo": self.placebo,
            "co_resident": self.co_resident,
            "max_blocks": self.max_blocks,
            "min_block_requests": self.min_block_requests,
            **({"warmup_pass": True} if self.warmup_pass else {}),
        }


def _count(table: Mapping[str, Any], key: str, low: int, path: Path) -> int | None:
    if key not in table:
        return None
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_BLOCKS:
        raise ProfileError(
            f"{path}: [design].{key} must be an integer from {low} to {MAX_BLOCKS}, got {value!r} "
            "(see profiles/README.md, Design)"
        )
    return value


def parse_design(table: Mapping[str, Any] | None, path: Path) -> Design:
    """Strictly parse the ``[design]`` table of ``path`` (None: the defaults). Raises ProfileError (one line
    naming the key and the fix) on an unknown key or a bad value."""
    table = table or {}
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ProfileError(
            f"{path}: unknown key {unknown[0]!r} in [design]; known keys: {', '.join(KEYS)} "
            "(see profiles/README.md, Design)"
        )
    blocks = _count(table, "blocks", 1, path) or Design.blocks
    placebo = table.get("placebo", Design.placebo)
    if placebo not in PLACEBOS:
        raise ProfileError(f"{path}: [design].placebo must be one of {', '.join(map(repr, PLACEBOS))}, got {placebo!r}")
    co = table.get("co_resident", "auto")
    if not (isinstance(co, bool) or co == "auto"):
        raise ProfileError(f'{path}: [design].co_resident must be true, false or "auto", got {co!r}')
    most = _count(table, "max_blocks", 1, path) or min(MAX_BLOCKS, 3 * blocks)
    if most < blocks:
        raise ProfileError(f"{path}: [design].max_blocks = {most} is below blocks = {blocks}; raise it or lower blocks")
    floor = _count(table, "min_block_requests", 1, path) or Design.min_block_requests
    warm = table.get("warmup_pass", False)
    if not isinstance(warm, bool):
        raise ProfileError(f"{path}: [design].warmup_pass must be true or false, got {warm!r}")
    return Design(blocks, str(placebo), {True: "yes", False: "no"}.get(co, "auto"), most, floor, warm)
