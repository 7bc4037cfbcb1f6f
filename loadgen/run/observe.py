"""What watches a run while it happens: loadgen's own exporter and Pushgateway pushes, the PromQL
cross-check against an existing Prometheus server, and the terminal progress bar (the run's slot counter and
time left, run/slotcount.py, then the cell's requests done, tokens per second, errors and elapsed time).

The flow calls :class:`Observers` at four points (request finished, cell started, cell finished, run
over); each sink is optional and none can stop a run: a failed push or PromQL query becomes one warning
line and a note in ``cells.jsonl``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from loadgen.errors import BadInput
from loadgen.measure.metrics import CellStats
from loadgen.prom.deltas import SpecDecodeCounters
from loadgen.records.cellparts import PromqlCheck
from loadgen.records.request import RequestRecord

#: A failed push that took this long (s) waited out a timeout: later cells are not pushed (a slow Pushgateway
#: would add its timeout, export.py ``push``'s 10 s, to every cell).
PUSH_GIVE_UP_S = 5.0


@dataclass(frozen=True)
class ObserveOptions:
    """Command-line choices. ``prometheus_selector`` may use ``{hostport}`` (the server's host:port)."""

    metrics_port: int | None = None
    metrics_addr: str = "127.0.0.1"
    pushgateway: str | None = None
    prometheus_url: str | None = None
    prometheus_selector: str = 'instance="{hostport}"'
    progress: bool = True


class Observers:
    """The optional sinks of one run (see the module docstring)."""

    def __init__(self, pair: str, options: ObserveOptions, log: Callable[[str], None]) -> None:
        self.options, self.log = options, log
        self._gateway_down: str | None = None  # why pushes stopped (a push that waited out its timeout)
        self.exporter = None
        if options.metrics_port is not None or options.pushgateway:
            from loadgen.run.export import Exporter

            self.exporter = Exporter(pair)
            if options.metrics_port is not None:
                try:
                    self.exporter.serve(options.metrics_port, options.metrics_addr)
                except (OSError, OverflowError) as exc:
                    raise BadInput(
                        f"--metrics-addr {options.metrics_addr} --metrics-port {options.metrics_port}: "
                        f"cannot listen there ({exc}); choose a free port in 1..65535 and a local "
                        "address"
                    ) from None
                log(f"loadgen metrics: {self.exporter.url}/metrics")
        self.reader = None
        if options.prometheus_url:
            from loadgen.prom.promql import PromQLReader

            self.reader = PromQLReader(options.prometheus_url)
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._tokens = 0
        self._errors = 0
        self._started = 0.0
        self._window: tuple[float, str] | None = None
        self._slot = ""

    def slot_started(self, line: str) -> None:
        """The run's slot counter and time left (run/slotcount.py), shown before the next cell's label."""
        self._slot = line

    # -- per cell -------------------------------------------------------------------------------------
    def cell_started(self, label: str, total: int) -> None:
        """A cell's measured phase is about to start with ``total`` requests (closed loop, count rule)."""
        self._tokens, self._errors, self._started = 0, 0, time.monotonic()
        if self.options.progress:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[tps]:.0f} tok/s, {task.fields[errors]} errors"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._progress.start()
            described = f"{self._slot}: {label}" if self._slot else label
            self._task = self._progress.add_task(described, total=total, tps=0.0, errors=0)

    def measured_window_start(self, hostport: str) -> None:
        """Right after the before-scrape: remember the instant for the PromQL window (waits one scrape)."""
        if self.reader is None:
            return
        from loadgen.prom.promql import PromQLError

        selector = self.options.prometheus_selector.format(hostport=hostport)
        try:
            self._window = (self.reader.wait_for_scrape(time.time(), selector), selector)
        except PromQLError as exc:
            self._window = None
            self.log(f"warning: {exc}")

    def request_finished(self, record: RequestRecord) -> None:
        """A request finished (any phase)."""
        if self.exporter is not None:
            self.exporter.observe_request(record)
        if record.warmup:
            return
        self._tokens += record.output_tokens
        self._errors += record.error is not None
        if self._progress is not None and self._task is not None:
            elapsed = max(time.monotonic() - self._started, 1e-9)
            self._progress.update(self._task, advance=1, tps=self._tokens / elapsed, errors=self._errors)

    def cell_finished(
        self,
        role: str,
        workload: str,
        concurrency: int,
        level_label: str,
        stats: CellStats,
        direct: SpecDecodeCounters | None,
    ) -> tuple[str | None, PromqlCheck | None]:
        """A cell ended: update the exporter, push, cross-check with PromQL. Returns the fields for the cell's
        ``cells.jsonl`` entry: ``push_error`` (None: pushed, or no Pushgateway) and ``promql`` (the deltas
        Prometheus saw and the disagreements; None without a PromQL reader or direct counters)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        push_error: str | None = None
        if self.exporter is not None:
            self.exporter.cell_finished(role, workload, concurrency, stats, level_label=level_label)
            if self.options.pushgateway:
                from loadgen.run.export import PushError

                if self._gateway_down is not None:  # a timed-out gateway is not waited for again
                    push_error = self._gateway_down
                else:
                    started = time.monotonic()
                    try:
                        self.exporter.push(self.options.pushgateway, role, workload, concurrency, level_label)
                    except PushError as exc:
                        push_error = str(exc)
                        if time.monotonic() - started >= PUSH_GIVE_UP_S:
                            self._gateway_down = f"not pushed: an earlier push waited out its timeout ({exc})"
                            push_error += "; later cells are not pushed, so the run is not held up by the gateway"
                        self.log(f"warning: {push_error}")
        promql: PromqlCheck | None = None
        if self.reader is not None and self._window is not None and direct is not None:
            promql = self._cross_check(direct)
        self._window = None
        return push_error, promql

    def _cross_check(self, direct: SpecDecodeCounters) -> PromqlCheck:
        from dataclasses import asdict

        from loadgen.prom.promql import PromQLError, cross_check

        assert self.reader is not None and self._window is not None
        start, selector = self._window
        try:
            end = self.reader.wait_for_scrape(time.time(), selector)
            seen = self.reader.spec_decode_delta_at_instants(start, end, selector)
        except PromQLError as exc:
            self.log(f"warning: {exc}")
            return PromqlCheck(error=str(exc))
        problems = cross_check(direct, seen)
        for line in problems:
            self.log(f"warning: Prometheus and the direct scrape disagree: {line}")
        checked = PromqlCheck(selector, (start, end), asdict(seen) if seen else None, tuple(problems))
        return checked.keyed("selector", "window", "counters", "disagreements")

    def close(self) -> None:
        """Stop the live endpoint and the progress bar."""
        if self._progress is not None:
            self._progress.stop()
        if self.exporter is not None:
            self.exporter.close()
        if self.reader is not None:
            self.reader.close()
