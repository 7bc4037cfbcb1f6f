"""Resource accounting of one server, kept separate per server: process tree, CPU RSS, GPU memory,
KV-cache capacity.

- Process tree: the API server and its EngineCore/worker children (psutil).
- CPU RSS: summed over the tree (bytes); on CPU builds the weights and the KV cache live there.
- GPU memory: per process through NVML (nvidia-ml-py, ``nvmlDeviceGetComputeRunningProcesses``), summed
  over the tree, with the devices it sits on; None where NVML or a GPU is absent.
- KV-cache capacity in tokens: ``num_gpu_blocks x block_size`` from ``vllm:cache_config_info`` (set
  after KV-cache initialisation, vllm/config/cache.py ``metrics_info``; on the CPU backend the blocks
  are CPU blocks), cross-checked with the startup log's ``KV cache size: N tokens``
  (vllm/v1/core/kv_cache_utils.py).
- Between launches (:func:`settle`): after a launched server is stopped, NVML's memory used on each device
  (``nvmlDeviceGetMemoryInfo.used``) is polled every :data:`SETTLE_POLL_S` s for up to :data:`SETTLE_S` s
  until it is back within :data:`SETTLE_SLACK` of its reading before that launch, and the compute processes
  still on a device that loadgen did not start are listed; without NVML the record says "not measured".
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import psutil

from loadgen.records.card import ResourceDifference
from loadgen.records.usage import (
    GpuDevice,
    GpuHolder,
    GpuMemory,
    GpuSettle,
    Hardware,
    HardwareGpu,
    ServerUsage,
    UsageFigures,
)

T = TypeVar("T")
#: How long a teardown waits for the accelerator's memory to come back (s), how often it reads NVML (s), and
#: the difference still counted as back (bytes: the driver's own bookkeeping moves by a few MiB).
SETTLE_S, SETTLE_POLL_S, SETTLE_SLACK = 30.0, 0.5, 64 * 2**20
NOT_MEASURED = "not measured (no NVML: no NVIDIA driver, GPU or nvidia-ml-py)"


def with_nvml(read: Callable[[Any], T]) -> T | None:
    """``read(pynvml)`` between nvmlInit and nvmlShutdown; None without nvidia-ml-py, a driver or a GPU
    (or on any NVML error: a figure not read, never a failed run)."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError: no driver or no GPU; anything else from a broken binding alike
        return None
    try:
        return read(pynvml)
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def process_tree(pid: int) -> list[psutil.Process]:
    """The process ``pid`` and all its descendants that are still alive ([] when it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def alive(pids: Iterable[int]) -> list[int]:
    """The PIDs among ``pids`` that still run (zombies count as gone)."""
    out = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
    return out


def group_members(pgid: int) -> list[int]:
    """PIDs of live processes whose process group is ``pgid`` (a server started in its own session)."""
    pids = []
    for proc in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error, ProcessLookupError, OSError):
            if proc.status() != psutil.STATUS_ZOMBIE and _pgid(proc.pid) == pgid:
                pids.append(proc.pid)
    return pids


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def cpu_rss_bytes(procs: Iterable[psutil.Process]) -> int:
    """Resident set size summed over ``procs`` (bytes); processes that vanished count 0."""
    total = 0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total


def gpu_memory(pids: Iterable[int]) -> GpuMemory | None:
    """GPU memory used by ``pids`` through NVML's per-process accounting (never a difference of device
    totals, which would charge one server with another's memory when servers share the device):
    records/usage.py ``GpuMemory`` (the bytes, and per device its index, name, total and the bytes ``pids``
    use); None when NVML is not
    available (no driver, no GPU, no nvidia-ml-py), or when NVML lists compute processes but none of
    ``pids`` (another PID namespace, as in a container: the figure would read 0)."""
    wanted = set(pids)

    def read(nv: Any) -> GpuMemory | None:
        devices, total, listed = [], 0, 0
        for index in range(nv.nvmlDeviceGetCount()):
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            procs = nv.nvmlDeviceGetComputeRunningProcesses(handle)
            listed += len(procs)
            used = sum(int(p.usedGpuMemory or 0) for p in procs if p.pid in wanted)
            if used:
                devices.append(GpuDevice(index, *_name_and_total(nv, handle), used))
                total += used
        return None if listed and not devices else GpuMemory(total, tuple(devices))

    return with_nvml(read)


def kv_capacity_tokens(cache_info: Mapping[str, str]) -> int | None:
    """KV-cache capacity in tokens from ``vllm:cache_config_info`` labels (num_gpu_blocks x block_size)."""
    try:
        return int(cache_info["num_gpu_blocks"]) * int(cache_info["block_size"])
    except (KeyError, ValueError):
        return None


def usage(pid: int | None, cache_info: Mapping[str, str], kv_tokens_log: int | None) -> ServerUsage:
    """One server's resources now (see module docstring); ``pid`` None for an attached server."""
    procs = process_tree(pid) if pid is not None else []
    return ServerUsage(
        len(procs),
        cpu_rss_bytes(procs) if procs else None,
        gpu_memory(p.pid for p in procs) if procs else None,
        kv_capacity_tokens(cache_info),
        kv_tokens_log,
        cache_info.get("num_gpu_blocks"),
        cache_info.get("block_size"),
        cache_info.get("gpu_memory_utilization"),
    )


def difference(plain: UsageFigures | None, speculative: UsageFigures | None) -> ResourceDifference:
    """The draft's cost: speculative minus plain for memory, and the KV-cache capacity lost, from the two
    servers' ``-resources.json`` usage figures as read (None: not measured).

    Returns the extra CPU RSS and GPU memory (bytes), the KV-cache tokens lost and that as a fraction of the
    plain server's tokens (None where unknown), every field written (``in_full``). ``same_memory_budget``: both
    servers ran under the same ``gpu_memory_utilization`` (from ``vllm:cache_config_info``): vLLM then fills
    that budget on both, so their GPU memory differs by the budget's slack, not by the draft's cost, which
    shows as KV-cache capacity lost instead.
    """
    p, s = plain or UsageFigures(), speculative or UsageFigures()

    def minus(a: int | None, b: int | None) -> int | None:
        return None if a is None or b is None else a - b

    lost = minus(p.kv_cache_tokens, s.kv_cache_tokens)
    return ResourceDifference(
        extra_cpu_rss_bytes=minus(s.cpu_rss_bytes, p.cpu_rss_bytes),
        extra_gpu_memory_bytes=minus(s.gpu_memory_bytes, p.gpu_memory_bytes),
        kv_cache_tokens_lost=lost,
        kv_capacity_loss=lost / p.kv_cache_tokens if lost is not None and p.kv_cache_tokens else None,
        same_memory_budget=p.gpu_memory_utilization is not None
        and p.gpu_memory_utilization == s.gpu_memory_utilization,
    ).in_full()


def budget_note(plain: UsageFigures | None, difference: ResourceDifference) -> str | None:
    """One line when both servers ran under the same memory budget and their GPU memory was measured: the
    difference is the budget's slack, the draft's cost is in the KV-cache capacity (:func:`difference`)."""
    extra = difference.extra_gpu_memory_bytes
    if not difference.same_memory_budget or extra is None:
        return None
    loss = difference.kv_capacity_loss
    cost = f"{100 * loss:.1f}% of the KV-cache capacity" if loss is not None else "KV-cache capacity"
    return (
        f"both servers ran under gpu_memory_utilization {plain.gpu_memory_utilization if plain else None}: vLLM fills "
        f"that budget on each, so their GPU memory differs by {extra / 2**20:+,.0f} MiB, the budget's slack, not "
        f"the draft's cost, which is {cost}"
    )


def hardware() -> Hardware:
    """The machine loadgen runs on (the servers' machine when launched locally): CPU model and cores,
    memory, and the GPUs NVML sees (name, memory); ``gpus`` is [] without NVML."""
    cpu_model = None
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        cpu_model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), None)

    def read(nv: Any) -> list[HardwareGpu]:
        gpus = []
        for index in range(nv.nvmlDeviceGetCount()):
            gpus.append(HardwareGpu(index, *_name_and_total(nv, nv.nvmlDeviceGetHandleByIndex(index))))
        return gpus

    gpus = with_nvml(read) or []
    return Hardware(cpu_model, psutil.cpu_count(logical=True), psutil.virtual_memory().total, tuple(gpus))


def gpu_free_share() -> float | None:
    """The smallest free share of any visible GPU's memory now (NVML ``free / total``), None without NVML:
    what servers launched now can still take beside those already running (an attached server's included)."""

    def read(nv: Any) -> float | None:
        infos = [nv.nvmlDeviceGetMemoryInfo(nv.nvmlDeviceGetHandleByIndex(i)) for i in range(nv.nvmlDeviceGetCount())]
        return min((int(x.free) / int(x.total) for x in infos), default=None)

    return with_nvml(read)


def host_available_bytes() -> int:
    """The host memory available to new processes now (bytes; ``psutil.virtual_memory().available``)."""
    return int(psutil.virtual_memory().available)


def pid_listening_on(port: int) -> int | None:
    """The PID of the local process listening on TCP ``port`` (an attached server on this machine), or
    None when there is none or it cannot be seen (another user's process without privileges)."""
    with contextlib.suppress(psutil.Error, OSError):
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                return int(conn.pid)
    return None


def gpu_used() -> list[int] | None:
    """Memory used on each visible device now (bytes, NVML ``nvmlDeviceGetMemoryInfo.used``, in device order;
    every process's, loadgen's servers and others alike); None without NVML."""
    return with_nvml(
        lambda nv: [
            int(nv.nvmlDeviceGetMemoryInfo(nv.nvmlDeviceGetHandleByIndex(i)).used)
            for i in range(nv.nvmlDeviceGetCount())
        ]
    )


def gpu_holders(ours: Iterable[int]) -> list[GpuHolder]:
    """The NVML compute processes on any device whose PID is not in ``ours`` nor among loadgen's own
    descendants (the servers it launched), as records/usage.py ``GpuHolder``; ``name`` None when the PID
    is not visible here (another user's, or another PID namespace); [] without NVML."""
    mine = {*ours, os.getpid(), *(p.pid for p in process_tree(os.getpid()))}

    def read(nv: Any) -> list[tuple[int, int, int]]:
        return [
            (int(p.pid), i, int(p.usedGpuMemory or 0))
            for i in range(nv.nvmlDeviceGetCount())
            for p in nv.nvmlDeviceGetComputeRunningProcesses(nv.nvmlDeviceGetHandleByIndex(i))
            if p.pid not in mine
        ]

    return [GpuHolder(pid, device, used, _process_name(pid)) for pid, device, used in with_nvml(read) or []]


def _process_name(pid: int) -> str | None:
    """The name of process ``pid``, None when it is not visible here."""
    with contextlib.suppress(psutil.Error):
        return str(psutil.Process(pid).name())
    return None


def settle(before: list[int] | None, ours: Iterable[int], timeout_s: float | None = None) -> GpuSettle:
    """Wait (up to ``timeout_s``, default :data:`SETTLE_S`) until every device's memory used is back within
    :data:`SETTLE_SLACK` of ``before`` (:func:`gpu_used` read before the launch). Returns the records/usage.py
    ``GpuSettle``: measured, whether the memory is ``back``, the wait, the readings, ``above_bytes`` (the sum of
    what each device is still over its reading before) and the ``foreign`` holders (:func:`gpu_holders`); or
    not measured, with its ``note``."""
    deadline = time.monotonic() + (SETTLE_S if timeout_s is None else timeout_s)
    start, ours = time.monotonic(), set(ours)
    while True:
        after = gpu_used() if before is not None else None
        if after is None or before is None or len(after) != len(before):
            return GpuSettle(False, note=NOT_MEASURED)
        above = sum(max(0, a - b) for a, b in zip(after, before, strict=True))
        back = all(a - b <= SETTLE_SLACK for a, b in zip(after, before, strict=True))
        if back or time.monotonic() >= deadline:
            return GpuSettle(
                True,
                back,
                round(time.monotonic() - start, 1),
                tuple(before),
                tuple(after),
                above,
                tuple(gpu_holders(ours)),
            )
        time.sleep(SETTLE_POLL_S)


def settle_line(record: GpuSettle | None) -> str | None:
    """One line for a teardown's :func:`settle` record when memory is not back or a process loadgen did not
    start holds a device (None otherwise, when not measured, and for None: no teardown)."""
    if record is None or not record.measured:
        return None
    parts = (
        []
        if record.back
        else [
            f"accelerator memory still {(record.above_bytes or 0) / 2**20:,.0f} MiB above its level before the launch "
            f"after {record.waited_s or 0:g} s"
        ]
    )
    if record.foreign:
        held = ", ".join(
            f"pid {h.pid} {h.name or '(not visible here)'} ({h.used_bytes / 2**20:,.0f} MiB on GPU {h.device})"
            for h in record.foreign
        )
        parts.append(f"processes loadgen did not start hold the accelerator: {held}")
    return "; ".join(parts) or None


def _name_and_total(nv: Any, handle: Any) -> tuple[str, int]:
    """An NVML device's name (bytes in older bindings, decoded) and total memory (bytes)."""
    name = nv.nvmlDeviceGetName(handle)
    return (name.decode() if isinstance(name, bytes) else name), int(nv.nvmlDeviceGetMemoryInfo(handle).total)
