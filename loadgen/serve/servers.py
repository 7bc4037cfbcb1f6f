"""Launch, readiness, proof of mode and teardown of vLLM OpenAI servers.

A server is started in its own process session (``start_new_session``) so that teardown can signal
the whole tree: the API server and its EngineCore children. Readiness is ``/health`` 200, the served
model listed in ``/v1/models``, and one minimal successful completion, which is saved
(docs/architecture.md). Two servers on one GPU must start one after the other (docs/vllm-notes.md: started together,
the second one's memory profiling fails). After a launched server is stopped, teardown waits until the
accelerator's memory is back to its reading before the launch, or records by how much it is not
(resources.settle).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from loadgen.errors import ServerError
from loadgen.records.server import EffectiveConfig, MinimalRequest, MinimalResponse
from loadgen.records.serverfacts import ServerFacts, Sighting
from loadgen.records.usage import Teardown
from loadgen.serve import readiness, resources
from loadgen.serve.attached import ATTACH_REFUSED_S, listed_card, listing_problem, unreachable
from loadgen.serve.enginepath import cudagraph_ceiling, parse_engine_path
from loadgen.serve.launchspec import LaunchSpec, build_argv, port_in_use
from loadgen.serve.startup import LogWatch
from loadgen.util.redact import redact_url
from loadgen.util.tls import tls_context

#: What only a startup log says of a server (attach mode without ``[servers.<role>].log`` reads none of it).
LOG_ONLY = (
    "stream interval",
    "max-num-seqs",
    "max-num-batched-tokens",
    "data/tensor parallel size",
    "API server count",
    "eager mode",
    "engine path (async scheduling, model runner)",
    "echoed speculative config",
    "KV-cache size",
)
#: The startup log line that echoes the speculative config (vllm/v1/engine/core.py, 0.10-0.33):
#: ``... speculative_config=SpeculativeConfig(method='draft_model', model='...', num_spec_tokens=3), ...``
#: or ``speculative_config=None`` on a plain server.
_SPEC_LOG_RE = re.compile(r"speculative_config=(None|SpeculativeConfig\([^)]*\))")
_KV_TOKENS_RE = re.compile(r"KV cache size: ([\d,]+) tokens")
__all__ = ["LOG_ONLY", "LaunchSpec", "Server", "attach", "build_argv", "launch", "port_in_use", "running", "tail"]


def tail(path: Path, lines: int = 15) -> str:
    """The last ``lines`` lines of a text file ('' if it does not exist)."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class Server:
    """A running (launched or attached) server and what was recorded about it."""

    spec: LaunchSpec
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    ready_s: float | None = None
    minimal_request: MinimalRequest | None = None
    minimal_response: MinimalResponse | None = None
    effective: EffectiveConfig | None = None  # what effective_config() read last
    gpu_before: list[int] | None = None  # each device's memory used before the launch (resources.gpu_used)
    #: What its answers and scrapes said of who answered, in order (measure/replicas.py reads them).
    sightings: list[Sighting] = field(default_factory=list)
    listing: object = None  # its ``/v1/models`` answer at readiness (parsed JSON; None: not read)

    @property
    def base_url(self) -> str:
        return self.spec.base_url

    @property
    def metrics_base(self) -> str:
        """Where its ``/metrics`` is read (LaunchSpec.metrics_base)."""
        return self.spec.metrics_base

    def alive(self) -> bool:
        """True while the launched process runs (attached servers are assumed alive)."""
        return self.process is None or self.process.poll() is None

    def gone(self, within_s: float = 3.0) -> bool:
        """True when the server died: a launched process exits within ``within_s`` (a killed process
        closes its sockets a moment before its exit status can be read), an attached one stops answering
        ``/health``."""
        if self.process is None:
            try:
                return self.fetch("/health", timeout_s=within_s).status_code != 200
            except httpx.HTTPError:
                return True
        deadline = time.monotonic() + within_s
        while self.alive():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def _fail(self, what: str) -> ServerError:
        if self.process is None:  # attached: loadgen writes no log of it
            return ServerError(
                f"{self.spec.role} server at {redact_url(self.base_url)} {what}; loadgen keeps no "
                f"log of an attached server (see its own output); saved records: "
                f"{self.spec.log_path.parent}"
            )
        log = tail(self.spec.log_path)
        last = log.splitlines()[-1] if log else "(empty log)"
        return ServerError(f"{self.spec.role} server {what}; last log line: {last!r}; full log: {self.spec.log_path}")

    def wait_ready(self, minimal_prompt: str = "Hello") -> None:
        """Block until /health, /v1/models and one minimal completion (retried until it streams a token,
        readiness.py) succeed.

        Raises ServerError (with the log's last line) when the process exits, its log shows a fatal
        start-up line (quoted, :mod:`loadgen.startup`), an attached server refuses the connection (for
        :data:`ATTACH_REFUSED_S`), or the time limit passes.
        """
        deadline = self.started_at + self.spec.startup_timeout_s
        watch = LogWatch(self.spec.log_path) if self.process is not None else None
        with httpx.Client(timeout=10.0, headers=self.spec.headers, verify=tls_context()) as http:
            while True:
                if not self.alive():
                    raise self._fail(
                        f"exited with code {self.process.returncode if self.process else '?'} before it was ready"
                    )
                if watch is not None and (line := watch.fatal()) is not None:
                    raise ServerError(f"{self.spec.role} server failed to start: {line!r} in {self.spec.log_path}")
                if time.monotonic() > deadline:
                    raise self._fail(
                        f"not ready after {self.spec.startup_timeout_s:.0f} s "
                        "(raise [engine].startup_timeout_s if it is just slow)"
                    )
                try:
                    if http.get(self.base_url + "/health").status_code == 200:
                        break
                except httpx.ConnectError as exc:
                    if self.process is None and time.monotonic() > self.started_at + ATTACH_REFUSED_S:
                        raise ServerError(unreachable(self.spec, exc)) from None
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)
            listing = http.get(self.base_url + "/v1/models")
            if (problem := listing_problem(self.spec, listing)) is not None:
                raise self._fail(problem)
            with contextlib.suppress(ValueError):
                self.listing = listing.json()
            # completions can fail for a while after /health and /v1/models answer: retried (readiness.py)
            self.minimal_request = readiness.minimal_body(self.spec.served_model, minimal_prompt)
            self.minimal_response = readiness.minimal_completion(
                http, self.base_url, self.minimal_request, deadline, self.alive, self._fail
            )
        self.ready_s = time.monotonic() - self.started_at

    def stop(self, grace_s: float = 20.0) -> Teardown | None:
        """Terminate the whole tree (API server and EngineCore children): SIGTERM to the process group,
        SIGKILL to whatever is left after ``grace_s``, then verify nothing survived and wait for the accelerator's
        memory (up to resources.SETTLE_S).

        Returns the records/usage.py ``Teardown`` (the survivors' PIDs, the GPU memory after, resources.settle);
        a no-op (None) for attached servers.
        """
        proc = self.process
        if proc is None:
            return None
        tree = [p.pid for p in resources.process_tree(proc.pid)]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
        # Children can outlive the leader: kill whatever is left in the group and the tree.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5.0)
        deadline = time.monotonic() + 10.0
        survivors = resources.alive(tree) + resources.group_members(proc.pid)
        while survivors and time.monotonic() < deadline:
            time.sleep(0.2)
            survivors = resources.alive(tree) + resources.group_members(proc.pid)
        return Teardown(
            tuple(sorted(set(survivors))), resources.gpu_memory(tree), resources.settle(self.gpu_before, tree)
        )

    def fetch(self, path: str, timeout_s: float = 10.0) -> httpx.Response:
        """GET ``path`` on the server."""
        return httpx.get(self.base_url + path, timeout=timeout_s, headers=self.spec.headers, verify=tls_context())

    def effective_config(self) -> EffectiveConfig:
        """What the server says it runs: ``/version``, its ``/v1/models`` entry (``root``, ``owned_by``,
        ``max_model_len``: vLLM's ``ModelCard``), the startup log's ``speculative_config=...``,
        the KV-cache size line (vllm/v1/core/kv_cache_utils.py: ``KV cache size: N tokens``) and the engine
        path (``engine_path``: async scheduling, model runner, fallback reasons; enginepath.py), unknown for
        an attached server unless its startup log was given (``startup_log``; without it ``unread`` names
        :data:`LOG_ONLY`); records/server.py ``EffectiveConfig``."""
        version = None
        with contextlib.suppress(httpx.HTTPError, ValueError, AttributeError):
            answer = self.fetch("/version").json().get("version")
            version = answer if isinstance(answer, str) else None
        given = self.spec.startup_log if self.process is None else None
        path = given or self.spec.log_path
        log = path.read_text(errors="replace") if path.exists() else ""
        match, kv = _SPEC_LOG_RE.search(log), _KV_TOKENS_RE.search(log)
        self.effective = EffectiveConfig(
            redact_url(self.base_url),
            match.group(1) if match else None,
            int(kv.group(1).replace(",", "")) if kv else None,
            parse_engine_path(log if self.process is not None or given else ""),
            cudagraph_ceiling(log),
            version=version,
            server_facts=self.facts(log),
            model_card=listed_card(self.listing, self.spec.served_model),
            unread=LOG_ONLY if self.process is None and not given else (),
        )
        return self.effective

    def facts(self, log: str) -> ServerFacts | None:
        """The configuration facts (records/serverfacts.py) of the launch line loadgen built, each missing one
        from the startup log (an attached server's: the file given for it, else none); None when nothing says."""
        facts = ServerFacts.from_args(self.spec.argv if self.process is not None else []).merged(
            ServerFacts.from_log(log)
        )
        return facts if facts.said() else None


def die_with_parent() -> None:
    """In the child before exec: ask Linux to send SIGTERM when loadgen dies (even by SIGKILL), so a
    crashed loadgen leaves no server behind (prctl PR_SET_PDEATHSIG; a no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def launch(spec: LaunchSpec) -> Server:
    """Start the server described by ``spec`` (not waiting for readiness).

    Raises ServerError when the port is already taken or the command cannot be executed.
    """
    if port_in_use(spec.host, spec.port):
        raise ServerError(
            f"port {spec.port} on {spec.host} is already in use; stop what listens there "
            "or set [engine].port to a free port"
        )
    spec.log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **spec.env}
    log, before = spec.log_path.open("wb"), resources.gpu_used()
    try:
        proc = subprocess.Popen(
            spec.argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, preexec_fn=die_with_parent
        )
    except OSError as exc:
        raise ServerError(
            f"cannot start {spec.argv[0]!r}: {exc.strerror}; check [engine].command "
            "(`make engine` creates .venv-vllm for the embedded CPU pairs)"
        ) from None
    finally:
        log.close()
    return Server(spec=spec, process=proc, started_at=time.monotonic(), gpu_before=before)


def attach(spec: LaunchSpec) -> Server:
    """A server already running at ``spec.base_url``; readiness is still checked by the caller."""
    return Server(spec=spec, process=None, started_at=time.monotonic())


@contextlib.contextmanager
def running(
    spec: LaunchSpec, on_stop: Callable[[Teardown | None], None] = lambda _: None, launched: Server | None = None
) -> Iterator[Server]:
    """Launch (or attach, when ``spec.attach_url`` is set; or take ``launched``, started by :func:`launch`
    already), wait until ready, yield, and always tear down what was launched (also on Ctrl-C); ``on_stop``
    receives the teardown report (:meth:`Server.stop`). Raises ServerError when a process survives its teardown."""
    server = launched or (attach(spec) if spec.attach_url else launch(spec))
    try:
        server.wait_ready()
        yield server
    finally:
        report = server.stop()
        on_stop(report)
        if report is not None and report.survivors:
            raise ServerError(
                f"{spec.role} server: processes {list(report.survivors)} survived SIGKILL; "
                "kill them by hand before the next run"
            )
