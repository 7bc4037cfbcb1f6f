"""What a pair file is, read from its content (never its name), for ``loadgen pairs``: the device its engine
runs on (``CPU demo``, ``GPU`` or ``device not stated``) and whether it is a sweep pair file.

The device comes from what vLLM itself reads: ``--device cpu|cuda`` in ``[engine].args`` or a role's
``[servers.<role>].args``; ``VLLM_CPU_*`` variables in an ``env`` (vLLM's CPU backend settings,
https://docs.vllm.ai/en/latest/getting_started/installation/cpu.html); GPU-only engine arguments
(``--gpu-memory-utilization``, ``--tensor-parallel-size``) or ``CUDA_VISIBLE_DEVICES`` in an ``env``.
A sweep pair file has ``[[candidates]]`` or a list of K (records/candidates.is_sweep).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loadgen.errors import BadInput, ProfileError
from loadgen.profile.pairfile import PAIRS_DIR, available_pairs
from loadgen.profile.tomlread import read_toml
from loadgen.records.candidates import is_sweep
from loadgen.records.launchtable import LaunchTable

#: Engine arguments that only a GPU engine takes (vLLM engine arguments).
GPU_ARGS = ("--gpu-memory-utilization", "--tensor-parallel-size", "-tp")


@dataclass(frozen=True)
class PairKind:
    """A pair file's kind: ``device`` (``cpu``, ``gpu`` or ``None`` when the file does not say) and
    ``sweep`` (True for a sweep pair file)."""

    device: str | None
    sweep: bool

    @property
    def label(self) -> str:
        """``CPU demo``, ``GPU`` or ``device not stated``, then ``, sweep`` for a sweep pair file."""
        device = {"cpu": "CPU demo", "gpu": "GPU"}.get(self.device or "", "device not stated")
        return device + (", sweep" if self.sweep else "")


def _device(table: LaunchTable) -> str | None:
    args = table.args
    for i, arg in enumerate(args):
        value = (
            args[i + 1]
            if arg == "--device" and i + 1 < len(args)
            else arg.partition("=")[2]
            if (arg.startswith("--device="))
            else None
        )
        if value in ("cpu", "cuda"):
            return "cpu" if value == "cpu" else "gpu"
    if any(k.startswith("VLLM_CPU_") for k in table.env_names):
        return "cpu"
    if "CUDA_VISIBLE_DEVICES" in table.env_names or any(a.split("=")[0] in GPU_ARGS for a in args):
        return "gpu"
    return None


def pair_kind(tables: Sequence[LaunchTable], sweep: bool) -> PairKind:
    """The kind of a pair document (pure) from its launch tables (records/launchtable.py ``LaunchTable.all_of``)
    and whether it is a sweep (records/candidates.is_sweep): the first table that states a device decides it."""
    device = next((d for d in map(_device, tables) if d is not None), None)
    return PairKind(device, sweep)


def pair_lines(pairs_dir: Path = PAIRS_DIR) -> list[str]:
    """One line per pair file of ``pairs_dir`` (sorted by name): ``<name>  <kind label>`` (names padded to one
    width); a file that cannot be read says so instead of a kind (``unreadable: <why>``). Raises BadInput
    (exit 2) when there is none."""
    names = available_pairs(pairs_dir)
    if not names:
        raise BadInput(
            f"no pair profiles in {pairs_dir.resolve()}; run loadgen from the repository root, or pass "
            "a pair file's path to check / compare"
        )
    width = max((len(n) for n in names), default=0)
    lines = []
    for name in names:
        try:
            doc = read_toml(pairs_dir / f"{name}.toml")
            label = pair_kind(LaunchTable.all_of(doc), is_sweep(doc)).label
        except ProfileError as exc:
            label = f"unreadable: {exc}"
        lines.append(f"{name:<{width}}  {label}")
    return lines
