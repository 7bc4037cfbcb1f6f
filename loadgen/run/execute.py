"""Running an order of slots (run/design.py) on the arms' servers, appending to one run folder.

Co-resident: every server is opened before the first slot, in the arms' base order (one after the other;
CPU servers all started at once, run/bench.py ``Bench.open_together``), and stays up to the end; only the
server of the slot being measured gets load. One server at a time: each phase opens its server and closes it
when the next slot is on another. Every attached server is checked (reachable, serving the model, in its
declared mode) before the first slot, so a broken one is not found halfway; every launched server's port is
checked and held against other loadgen runs before the first server starts, until its server answers
(serve/portlock.py), so a busy port is not found after a whole phase. protocol.json's ``design`` records the
order (``order``: every slot, ``[arm, workload, level, block]``), rewritten when blocks are added
(run/sizing.py), so ``--protocol`` repeats it and ``--resume`` finishes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loadgen.records.protoparts import RunDesign
from loadgen.run import arms as arm_specs
from loadgen.run.arms import Arm
from loadgen.run.bench import Bench, mode_role
from loadgen.run.cell import RunContext, run_cell_on, warm_up
from loadgen.run.design import Slot
from loadgen.run.observe import Observers
from loadgen.run.slotcount import SlotCount
from loadgen.serve import attached, modeproof, servers
from loadgen.serve.portlock import PortHolds
from loadgen.store.files import read_protocol, write_protocol
from loadgen.store.rundir import JsonlAppender

Log = Callable[[str], None]


@dataclass
class Session:
    """One run folder's measurement: its arms (by name), whether their servers are co-resident (and then
    whether they start at once: ``start_together``, Bench.open_together), the open servers, the sinks every
    arm appends to, the slots run so far (``done``), the slot counter (``count``, run/slotcount.py: each
    slot's start and end, a server start of its phase included) and the arms warmed by ``[design].warmup_pass``
    (each before its first slot, over the prompts of its slots in that call: run/cell.py ``warm_up``)."""

    run_dir: Path
    arms: dict[str, Arm]
    co_resident: bool
    log: Log
    requests: JsonlAppender
    cells_log: JsonlAppender
    observers: Observers
    api_key: str | None = None
    start_together: bool = False
    done: list[Slot] = field(default_factory=list)
    count: SlotCount | None = None
    warmed: set[str] = field(default_factory=set)  # the arms whose warm-up pass ran ([design].warmup_pass)
    bench: Bench = field(init=False)
    holds: PortHolds = field(init=False)

    def __post_init__(self) -> None:
        self.bench, self.holds = Bench(self.run_dir, self.log, self.api_key), PortHolds()

    def _open(self, arm: Arm) -> servers.Server:
        """The arm's server (Bench.open), its port held from before its launch (again for a server started
        anew, one at a time) until it answers."""
        if arm.server not in self.bench.open_keys():
            spec = arm_specs.arm_spec(arm, self.run_dir, self.api_key)
            self.holds.take([] if spec.attach_url else [(arm.server, spec.host, spec.port)])
        server = self.bench.open(arm)
        self.holds.answered(arm.server)
        return server

    def _open_together(self, arms: Sequence[Arm]) -> None:
        """Every arm's server started at once (Bench.open_together); their ports, held since :meth:`hold_ports`,
        released once they answer."""
        self.bench.open_together(arms)
        for a in arms:
            self.holds.answered(a.server)

    def context(self, arm: Arm) -> RunContext:
        """The run context of one arm's slots (its pair: stop rule, sampling, method and K)."""
        return RunContext(arm.pair, self.run_dir, self.requests, self.cells_log, self.log, self.observers, self.api_key)

    def hold_ports(self, slots: Sequence[Slot]) -> None:
        """Hold the port of every server the slots launch, before any starts (ServerError when one is busy or
        held by another loadgen run, serve/portlock.py); each is released once its server answers."""
        used = {s.arm for s in slots}
        specs = {
            a.server: arm_specs.arm_spec(a, self.run_dir, self.api_key) for a in self.arms.values() if a.name in used
        }
        self.holds.take((key, spec.host, spec.port) for key, spec in specs.items() if not spec.attach_url)

    def run(self, slots: Sequence[Slot]) -> None:
        """Measure ``slots`` in order (module docstring). Raises what a cell or a server raises; the servers
        stay open for more slots (co-resident) until :meth:`close`."""
        if not slots:
            return
        if self.co_resident:  # every server up before the first slot, in the base order
            used = [a for a in self.arms.values() if a.name in {s.arm for s in slots}]
            if self.start_together:
                self._open_together(used)
            else:
                for arm in used:
                    self._open(arm)
        if self.count is not None:
            self.count.expect(slots)
        for slot in slots:
            arm = self.arms[slot.arm]
            cell = slot.cell  # its end line, with the elapsed time, is run/cell.py's
            label = f"[{arm.name}] {cell.workload} {cell.level.label} block {cell.repetition}"
            if self.count is not None:
                self.observers.slot_started(self.count.started(slot, label).line())
            if not self.co_resident:
                for key in [k for k in self.bench.open_keys() if k != arm.server]:
                    self.bench.close(key)
            server = self._open(arm)
            if arm.pair.design.warmup_pass and arm.name not in self.warmed:
                self.warmed.add(arm.name)
                warm_up(self.context(arm), arm.name, server, [s.cell for s in slots if s.arm == arm.name])
            self.log(f"{label}: started")
            run_cell_on(self.context(arm), arm.name, server, cell)
            self.done.append(slot)
            if self.count is not None:
                self.count.finished(slot)

    def close(self) -> None:
        """Stop every server still open (records after load, teardown) and release the ports still held."""
        try:
            self.bench.close_all()
        finally:
            self.holds.release_all()


def check_attached(
    arms: Mapping[str, Arm], slots: Sequence[Slot], run_dir: Path, log: Log, api_key: str | None
) -> None:
    """Check every attached server ``slots`` use before any is measured (serve/attached.py ``probe_attached``);
    writes nothing. Raises BadInput, ServerError or FallbackDetected as that does."""
    used = {s.arm for s in slots}
    specs = {a.server: (a, arm_specs.arm_spec(a, run_dir, api_key)) for a in arms.values() if a.name in used}
    checks = [(a, spec) for a, spec in specs.values() if spec.attach_url]
    by_role = {spec.role: a for a, spec in checks}
    workloads = {w.name: (w.name, w.input_tokens, w.output_tokens) for a, _ in checks for w in a.pair.workloads}
    attached.probe_attached(
        [spec for _, spec in checks],
        lambda role, snap: modeproof.prove_mode(
            mode_role(by_role[role]), snap, by_role[role].pair.num_speculative_tokens
        ),
        log,
        list(workloads.values()),
        sorted({w.name for a, _ in checks for w in a.pair.workloads if w.endpoint == "chat"}),
    )


def append_order(run_dir: Path, slots: Sequence[Slot]) -> None:
    """Append ``slots`` to protocol.json's ``design.order`` (blocks added by run/sizing.py)."""
    proto = read_protocol(run_dir / "protocol.json")
    design = proto.design or RunDesign()
    order = (*(design.order or ()), *(tuple(s.to_json()) for s in slots))
    write_protocol(run_dir, proto.with_fields(design=design.with_fields(order=order)))
