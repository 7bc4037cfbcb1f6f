"""Where a server of the pair ran, from its saved launch and effective files (pure; report/carddata.py)."""

from __future__ import annotations

from loadgen.records.runparts import ServerFiles
from loadgen.records.server import Placement
from loadgen.util.argv import flag_value


def placement(server: ServerFiles) -> Placement:
    """Where a server ran: attached URL or launch, visible GPUs, tensor parallel size, memory fraction.
    ``server``: its saved files as read (``launch``, ``effective``; either may be absent: unknown)."""
    launch, effective = server.launch, server.effective
    argv = list((launch.argv if launch else None) or ())
    cache = effective.cache_config_info if effective else {}
    fraction = cache.get("gpu_memory_utilization") or flag_value(argv, "--gpu-memory-utilization")
    return Placement(
        attached=bool(launch and launch.attached),
        base_url=launch.base_url if launch else None,
        cuda_visible_devices=launch.env.get("CUDA_VISIBLE_DEVICES") if launch else None,
        tensor_parallel_size=int(flag_value(argv, "--tensor-parallel-size", "-tp") or 1),
        gpu_memory_utilization=fraction,
    )
