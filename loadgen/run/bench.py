"""The servers a run holds open, one per server key (run/arms.py): launched (one after the other: vLLM's memory
profiling sees what is already on the accelerator, docs/vllm-notes.md; CPU servers, which reserve a declared
KV-cache space, all at once, :meth:`Bench.open_together`) or attached, each proven in the mode
its arm declares, its records written under ``servers/`` (``<server>-launch.json``, ``-minimal.json``,
``-effective.json``, ``-resources.json``, ``-teardown.json``, the log ``<server>.log``), and stopped (the whole
process tree) when the run lets go of it, a launched one only: an attached server is left running, its line
and ``-teardown.json`` say so (:data:`ATTACHED_TEARDOWN`). A launched server's stop waits until the accelerator's
memory is back to its reading before the launch (serve/resources.py ``settle``); ``-teardown.json`` holds that record
(``gpu_settle``) and the stop line says by how much it is not back, and which processes loadgen did not
start still hold the accelerator.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import httpx

from loadgen.errors import RunFailed
from loadgen.measure.replicas import replica_note, replica_signs, sighting
from loadgen.prom import exposition as prom
from loadgen.prom.scrape import scrape
from loadgen.records.runparts import LaunchFile
from loadgen.records.server import StartupRecord
from loadgen.records.serverfacts import Sighting
from loadgen.records.usage import AttachedTeardown, ServerUsage, Teardown
from loadgen.run import arms as arm_specs
from loadgen.run.arms import Arm
from loadgen.serve import modeproof, resources, servers
from loadgen.store.rundir import write_text
from loadgen.store.serverfiles import write_effective, write_launch, write_minimal, write_resources, write_teardown
from loadgen.util.redact import redact_argv, redact_env, redact_url

Log = Callable[[str], None]
#: Why an attached server is not stopped, and its ``-teardown.json`` record (nothing was stopped).
LEFT_RUNNING = "attached: loadgen does not stop a server it did not start"
ATTACHED_TEARDOWN = AttachedTeardown(attached=True, stopped=False, reason=LEFT_RUNNING)
#: ``/metrics`` scrapes of an attached server at start-up, to see whether one process answers them all.
REPLICA_SCRAPES = 4


def mode_role(arm: Arm) -> str:
    """The role modeproof.py proves: ``speculative`` for a speculative arm, ``plain`` for the others."""
    return "speculative" if arm.speculative else "plain"


class Bench:
    """Open servers by key. ``open(arm)`` launches or attaches the arm's server (once per key) and returns
    it; ``close(key)`` records its resources after the load and stops it; ``close_all()`` every one, also
    when the run stops early (the teardown report is written in any case)."""

    def __init__(self, run_dir: Path, log: Log, api_key: str | None) -> None:
        self.run_dir, self.log, self.api_key = run_dir, log, api_key
        self._open: dict[str, tuple[servers.Server, contextlib.ExitStack, StartupRecord, dict[str, ServerUsage]]] = {}

    def open(self, arm: Arm) -> servers.Server:
        """The running server of ``arm`` (started, proven and recorded on first use). Raises ServerError,
        FallbackDetected or RunFailed as servers.running and modeproof.py do."""
        if arm.server in self._open:
            return self._open[arm.server][0]
        return self._enter(arm, self._announce(arm))

    def open_together(self, arms: Sequence[Arm]) -> None:
        """Open the servers of ``arms`` with every launched one started at once, then each waited for, proven
        and recorded in turn (as :meth:`open`), so their start-up times overlap. Only for servers that size
        their memory from a declaration, not by profiling what is free (the CPU build of vLLM reserves
        ``VLLM_CPU_KVCACHE_SPACE``, docs/vllm-notes.md): vLLM's GPU memory profiling must see each server
        alone. A server launched but never waited for (one before it failed) is stopped. Raises as
        :meth:`open`."""
        first: dict[str, Arm] = {}  # a server shared by arms (plain and placebo) is proven as its first arm, as open()
        for a in arms:
            first.setdefault(a.server, a)
        todo = [a for a in first.values() if a.server not in self._open]
        specs = {a.server: self._announce(a) for a in todo}
        launched: dict[str, servers.Server] = {}
        try:
            for a in todo:
                if specs[a.server].attach_url is None:
                    launched[a.server] = servers.launch(specs[a.server])
            for a in todo:
                self._enter(a, specs[a.server], launched.pop(a.server, None))
        finally:
            for key, server in launched.items():
                self._on_stop(key, specs[key])(server.stop())

    def _on_stop(self, key: str, spec: servers.LaunchSpec) -> Callable[[Teardown | None], None]:
        """What a server's stop says and records: its line, and ``<server>-teardown.json``."""

        def on_stop(report: Teardown | None) -> None:
            if spec.attach_url is None:  # said before the record is written: a full disk must not hide it
                settled = resources.settle_line(report.gpu_settle if report else None)
                survivors = list(report.survivors) if report else []
                self.log(
                    f"[{key}] stopped"
                    + (f"; SURVIVORS {survivors}" if survivors else "")
                    + (f"; {settled}" if settled else "")
                )
                record: Teardown | AttachedTeardown | None = report
            else:  # loadgen never stops a server it did not start
                record = ATTACHED_TEARDOWN
                self.log(f"[{key}] left running at {redact_url(spec.base_url)} ({LEFT_RUNNING})")
            write_teardown(self.run_dir, key, record)

        return on_stop

    def _announce(self, arm: Arm) -> servers.LaunchSpec:
        """Write ``<server>-launch.json`` and say that the arm's server starts (or is attached); its spec."""
        spec = arm_specs.arm_spec(arm, self.run_dir, self.api_key)
        write_launch(
            self.run_dir,
            arm.server,
            LaunchFile(
                argv=None if spec.attach_url else tuple(redact_argv(spec.argv)),
                env=redact_env(spec.env),
                base_url=redact_url(spec.base_url),
                attached=spec.attach_url is not None,
                metrics_url=redact_url(spec.metrics_base) if spec.metrics_url else None,
            ),
        )
        self.log(
            f"[{arm.server}] attaching to {redact_url(spec.base_url)}"
            + (f" (/metrics read at {redact_url(spec.metrics_base)})" if spec.metrics_url else "")
            if spec.attach_url
            else f"[{arm.server}] starting: {' '.join(redact_argv(spec.argv))}"
        )
        return spec

    def _enter(self, arm: Arm, spec: servers.LaunchSpec, launched: servers.Server | None = None) -> servers.Server:
        """Wait for the arm's server (``launched`` already, or launched or attached here), prove its mode,
        record it and keep it open until :meth:`close`."""
        key = arm.server
        stack = contextlib.ExitStack()
        try:
            server = stack.enter_context(servers.running(spec, self._on_stop(key, spec), launched))
            self.log(f"[{key}] ready after {server.ready_s:.0f} s at {redact_url(server.base_url)}")
            effective = self._startup_proof(arm, server)
            usage = {"ready": self._resources(server, effective)}
            write_resources(self.run_dir, key, usage)
        except BaseException:
            stack.close()
            raise
        self._open[key] = (server, stack, effective, usage)
        return server

    def open_keys(self) -> list[str]:
        """The keys of the servers open now, in the order they were opened."""
        return list(self._open)

    def close(self, key: str) -> None:
        """Record the resources of server ``key`` after its load and stop it (a no-op when it is not open)."""
        if key not in self._open:
            return
        server, stack, effective, usage = self._open.pop(key)
        try:
            usage["after_load"] = self._resources(server, effective)
            write_resources(self.run_dir, key, usage)
        finally:
            stack.close()

    def close_all(self) -> None:
        """Close every open server, the last opened first; the first error is raised after all are closed."""
        error: BaseException | None = None
        for key in reversed(list(self._open)):
            try:
                self.close(key)
            except BaseException as exc:  # every server is stopped even when one teardown fails
                error = error or exc
        if error is not None:
            raise error

    def _startup_proof(self, arm: Arm, server: servers.Server) -> StartupRecord:
        """Scrape /metrics once and prove the mode, or, without Prometheus text, from the startup log and the
        minimal completion (modeproof.py); the startup log's method must match the declared one."""
        role, pair = mode_role(arm), arm.pair
        config = server.effective_config()
        try:
            text, snap = scrape(server.metrics_base, headers=server.spec.headers)
        except RunFailed as exc:
            self.log(f"[{arm.server}] {exc}: measuring without server-side figures")
            proof = modeproof.prove_without_metrics(
                role,
                config.speculative_config_log,
                server.minimal_response,
                server.process is not None,
                str(exc),
                config.server_facts.stream_interval if config.server_facts else None,
            )
            snap = prom.parse_metrics("")
        else:
            write_text(self.run_dir / "metrics" / f"{arm.server}__startup.prom", text)
            proof = modeproof.prove_mode(role, snap, pair.num_speculative_tokens)
            config = replace(config, replicas=self._who_answers(arm.server, server, snap))
        modeproof.check_effective_method(role, pair.method, config.speculative_config_log, pair.num_speculative_tokens)
        write_minimal(self.run_dir, arm.server, server.minimal_request, server.minimal_response)
        effective = StartupRecord(config, proof, server.ready_s, prom.cache_config_info(snap))
        write_effective(self.run_dir, arm.server, effective)
        return effective

    def _who_answers(self, key: str, server: servers.Server, first: prom.Snapshot) -> tuple[str, ...]:
        """The signs that more than one server answers at an attached server's URL (measure/replicas.py), from
        :data:`REPLICA_SCRAPES` scrapes of its ``/metrics`` (``first`` the proof's) and its minimal completion's
        ``system_fingerprint``; said in one line when found. A launched server is one process: only its
        first scrape is kept, for the run's later ones to be read against."""
        server.sightings.append(sighting(first))
        for _ in range(REPLICA_SCRAPES - 1 if server.process is None else 0):
            with contextlib.suppress(RunFailed):
                server.sightings.append(sighting(scrape(server.metrics_base, headers=server.spec.headers)[1]))
        printed = server.minimal_response.system_fingerprint if server.minimal_response else None
        server.sightings += [Sighting(fingerprint=printed)] if printed else []
        signs = replica_signs(server.sightings)
        if signs:
            self.log(f"[{key}] at {redact_url(server.base_url)}: {replica_note(server.spec.role, signs)}")
        return tuple(signs)

    @staticmethod
    def _resources(server: servers.Server, effective: StartupRecord) -> ServerUsage:
        pid = server.process.pid if server.process is not None else None
        url = httpx.URL(server.base_url)
        if pid is None and url.host in ("127.0.0.1", "localhost", "::1") and url.port is not None:
            pid = resources.pid_listening_on(url.port)  # an attached server on this machine
        return resources.usage(pid, effective.cache_config_info, effective.config.kv_cache_tokens_log)
