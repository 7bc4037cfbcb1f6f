"""A cell (one workload at one load level, one repetition) and its key.

``CellKey`` is the (workload, level label) pair that names a cell across protocol.json, cells.jsonl,
requests.jsonl and the card; ``CellSpec`` is the cell with its prompts and arrival schedule, the same for
both servers, and, once ``on(role, ...)`` has bound it, what the load loop (stream/loadloop.py) sends.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from loadgen.profile.pair import Level
from loadgen.profile.workload import Prompt

#: The two servers of a pair, in the card's order.
ROLES = ("plain", "speculative")
#: The arms that run the target alone: the plain server and the A/A placebo (plain measured again through the
#: same path, docs/metrics.md "The A/A noise floor"). Every other arm (``speculative``, or a sweep candidate's
#: name) runs a speculative config.
PLAIN, PLACEBO = "plain", "placebo"
PLAIN_ARMS = (PLAIN, PLACEBO)


def speculates(role: str) -> bool:
    """True for an arm that runs a speculative config (any role but ``plain`` and ``placebo``)."""
    return role not in PLAIN_ARMS


class CellKey(NamedTuple):
    """A cell's name: its workload and its level's label (``c4`` closed loop, ``r2.5`` open loop; the files'
    ``level`` key)."""

    workload: str
    label: str

    @classmethod
    def named(cls, workload: str, label: str | None, concurrency: float | None) -> CellKey:
        """The key from a workload, a level's label (may be empty) and the concurrency it falls back on (a line of
        a protocol cell, cells.jsonl, requests.jsonl or a card written before levels had labels: ``c<concurrency>``)."""
        return cls(workload, label or f"c{int(concurrency or 0)}")


@dataclass(frozen=True)
class CellSpec:
    """One block of one cell (workload x load level; ``repetition`` is the block's index, docs/metrics.md
    "Blocks") with its prompts, identical on every arm.

    ``arrivals_s`` (open loop) gives each measured prompt's due time (s after the first); None = closed
    loop. Bound to a server by ``on``: ``role``, ``duration_s`` (stop sending measured prompts that many
    seconds after the first one; None = a request count) and ``read_timeout_s`` (the longest silence
    since a stream's last byte, s; None = the load loop's default; profile/timeouts.py).
    """

    workload: str
    endpoint: str
    level: Level
    repetition: int = 0
    warmup: tuple[Prompt, ...] = ()
    measured: tuple[Prompt, ...] = ()
    cooldown: tuple[Prompt, ...] = ()
    arrivals_s: tuple[float, ...] | None = None
    role: str = ""
    duration_s: float | None = None
    read_timeout_s: float | None = None

    @property
    def cache_salt(self) -> str:
        """The ``cache_salt`` every request of this block sends on the bound arm (vLLM's prefix-cache salt,
        OpenAI server since vLLM 0.9): two arms on one server (the plain server and its placebo blocks) and
        two levels that send the same prompts never share prefix-cache entries, while the prompts of one
        block on one arm still share theirs. vLLM refuses ``@``, ``/`` and ``\\`` in a salt; they become ``_``."""
        raw = f"loadgen-{self.role}-{self.workload}-{self.level.label}-b{self.repetition}"
        return "".join("_" if ch in "@/\\" else ch for ch in raw)[:128]

    @property
    def concurrency(self) -> int:
        """Closed loop: the concurrency; open loop: the cap on requests in flight."""
        return int(self.level.concurrency)

    @property
    def key(self) -> CellKey:
        """The cell's (workload, level label)."""
        return CellKey(self.workload, self.level.label)

    def stem(self, role: str) -> str:
        """File-name stem of this cell for ``role``."""
        return f"{role}__{self.workload}__{self.level.label}__rep{self.repetition}"

    def on(self, role: str, duration_s: float | None = None, read_timeout_s: float | None = None) -> CellSpec:
        """This cell bound to the ``role`` server, with the stop rule's duration and read timeout."""
        return replace(self, role=role, duration_s=duration_s, read_timeout_s=read_timeout_s)
