"""What a server uses and leaves behind, and the machine it runs on (serve/resources.py, README.md "The run
folder"): :class:`ServerUsage` (each entry of ``servers/<server>-resources.json``) with its :class:`GpuMemory`,
:class:`Teardown` (``servers/<server>-teardown.json``) with its :class:`GpuSettle` and the :class:`GpuHolder`
records, :class:`Hardware` (protocol.json's ``hardware``), and the :class:`HostSample` taken beside every block
(its :class:`GpuState` and :class:`CpuTimes`; in memory only, measure/blockstate.py condenses it into the
block's ``state``). Bytes are bytes, times seconds.

Each is a frozen :class:`~loadgen.records.cardwire.Wire`: ``to_json`` writes the keys in declared order, a field
with a default only when it differs from it (a settle record not measured has ``note`` and none of the
measured keys), ``from_json`` reads a file back checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadgen.records.cardwire import Wire


@dataclass(frozen=True)
class GpuDevice(Wire):
    """One device a server's processes hold memory on (NVML): its index, name, total memory and what the
    server's PIDs use of it."""

    index: int
    name: str
    total_bytes: int
    used_by_pids_bytes: int


@dataclass(frozen=True)
class GpuMemory(Wire):
    """The GPU memory a server's processes use, summed over the devices (NVML per-process accounting)."""

    bytes: int
    devices: tuple[GpuDevice, ...]


@dataclass(frozen=True)
class ServerUsage(Wire):
    """One server's resources at one moment: its processes, their resident memory (None for an attached server
    not on this machine), their GPU memory (None without NVML), the KV-cache capacity in tokens from
    ``vllm:cache_config_info`` (num_gpu_blocks x block_size) and from the startup log, and the labels as the
    server sent them (strings)."""

    processes: int
    cpu_rss_bytes: int | None
    gpu_memory: GpuMemory | None
    kv_cache_tokens: int | None
    kv_cache_tokens_log: int | None
    num_gpu_blocks: str | None
    block_size: str | None
    gpu_memory_utilization: str | None


@dataclass(frozen=True)
class GpuHolder(Wire):
    """A compute process on a device that loadgen did not start: PID, device index, memory used, and its name
    (None when the PID is not visible here: another user's, or another PID namespace)."""

    pid: int
    device: int
    used_bytes: int
    name: str | None


@dataclass(frozen=True)
class GpuSettle(Wire):
    """Whether the devices' memory came back after a teardown: ``measured`` False (with the ``note`` why)
    without NVML or a reading before; else ``back`` within the slack, after ``waited_s``, each device's memory
    used before and after, the sum still above, and the processes of others holding a device."""

    measured: bool
    back: bool | None = None
    waited_s: float | None = None
    before_bytes: tuple[int, ...] | None = None
    after_bytes: tuple[int, ...] | None = None
    above_bytes: int | None = None
    foreign: tuple[GpuHolder, ...] | None = None
    note: str | None = None


@dataclass(frozen=True)
class Teardown(Wire):
    """A launched server's teardown: the PIDs that survived SIGKILL, its processes' GPU memory after the
    stop (None without NVML) and the :class:`GpuSettle`."""

    survivors: tuple[int, ...]
    gpu_memory_after: GpuMemory | None
    gpu_settle: GpuSettle


@dataclass(frozen=True)
class AttachedTeardown(Wire):
    """An attached server's ``-teardown.json``: loadgen did not stop it (``stopped`` False) and why."""

    attached: bool
    stopped: bool
    reason: str


@dataclass(frozen=True)
class HardwareGpu(Wire):
    """One GPU NVML sees: index, name, total memory."""

    index: int
    name: str
    memory_bytes: int


@dataclass(frozen=True)
class Hardware(Wire):
    """The machine loadgen runs on: CPU model (None when /proc/cpuinfo does not say), logical cores, memory,
    and the GPUs (none without NVML)."""

    cpu_model: str | None
    cpu_cores: int | None
    memory_bytes: int
    gpus: tuple[HardwareGpu, ...]


@dataclass(frozen=True)
class ClientHost(Wire):
    """What loadgen itself runs on (protocol.json ``client_host``, run/plan.py ``probe_host``): the Python
    version, the machine type and the platform line, as Python's ``platform`` says them."""

    python: str
    machine: str
    system: str


@dataclass(frozen=True)
class GpuState(Wire):
    """One GPU beside a block (serve/hoststate.py, NVML): SM and memory clocks in MHz, temperature in °C, power
    in W and the clock-event reasons by their nvml.h names; None for a reading NVML refused."""

    index: int
    sm_clock_mhz: int | None
    mem_clock_mhz: int | None
    temperature_c: int | None
    power_w: float | None
    throttle_reasons: tuple[str, ...] | None


@dataclass(frozen=True)
class CpuTimes(Wire):
    """Aggregate CPU time from /proc/stat's ``cpu`` line, in jiffies: the total and the part stolen."""

    total: float
    steal: float


@dataclass(frozen=True)
class HostSample(Wire):
    """The machine's state at one moment (serve/hoststate.py ``sample``): each GPU's (none without NVML), the
    1-minute load average and the CPU times (None where unreadable); measure/blockstate.py condenses two."""

    gpus: tuple[GpuState, ...]
    loadavg_1m: float | None
    cpu_times: CpuTimes | None


@dataclass(frozen=True)
class UsageFigures:
    """The figures of one server's usage (a ``-resources.json`` entry, :class:`ServerUsage`) that the draft's cost
    is computed from (serve/resources.py ``difference``): CPU RSS and GPU memory (bytes), KV-cache tokens and the
    ``gpu_memory_utilization`` it ran under. Read leniently, as the card shows the usage as saved: a figure a
    file of older code (or a partial one) lacks, or holds as another kind, is None."""

    cpu_rss_bytes: int | None = None
    gpu_memory_bytes: int | None = None
    kv_cache_tokens: int | None = None
    gpu_memory_utilization: str | None = None

    @classmethod
    def of(cls, usage: ServerUsage | None) -> UsageFigures | None:
        """The figures of a usage record; None for none."""
        if usage is None:
            return None
        gpu = usage.gpu_memory
        return cls(
            usage.cpu_rss_bytes, None if gpu is None else gpu.bytes, usage.kv_cache_tokens, usage.gpu_memory_utilization
        )
