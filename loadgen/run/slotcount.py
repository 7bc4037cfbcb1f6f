"""The slot counter of a measuring run: which slot of how many runs now and the time left
(measure/timeleft.py), on the terminal progress line (run/observe.py) and in the run folder's
``progress.json`` (records/runparts.py ``ProgressFile``, written atomically at every slot's start and end),
which ``loadgen runs`` reads for a running folder.

The total is the slots planned so far: the design order (a resumed run counts the slots done before it as
done), plus every block sizing adds (run/sizing.py) as it is added; while the run sizes its cells the
total is a floor and says so (``18+``). A progress file that cannot be written is one warning line; the
run goes on (the measurement never depends on it).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from loadgen.errors import RunDirUnwritable
from loadgen.measure.timeleft import time_left_s
from loadgen.records.runparts import ProgressFile
from loadgen.run.design import Slot
from loadgen.store.files import write_progress

SlotKey = tuple[str, str, str]


def _key(slot: Slot) -> SlotKey:
    """What a slot's duration is estimated by: its arm, workload and level (measure/timeleft.py)."""
    return slot.arm, slot.cell.workload, slot.cell.level.label


def _ident(slot: Slot) -> tuple[str | int, ...]:
    return tuple(slot.to_json())


class SlotCount:
    """The counter of one run folder: ``planned`` the slots this process is to measure, ``before`` the slots
    an earlier process measured (``--resume``), ``sizing`` whether blocks may be added."""

    def __init__(
        self, run_dir: Path, planned: Sequence[Slot], before: int, sizing: bool, log: Callable[[str], None]
    ) -> None:
        self.folder, self.log, self.sizing = run_dir, log, sizing
        self.before = before
        self.left: Counter[tuple[str | int, ...]] = Counter(_ident(s) for s in planned)
        self.keys: dict[tuple[str | int, ...], SlotKey] = {_ident(s): _key(s) for s in planned}
        self.measured: list[tuple[SlotKey, float]] = []
        self._started: float | None = None
        self._warned = False

    def expect(self, slots: Sequence[Slot]) -> None:
        """Count ``slots`` as planned where they are not yet (blocks sizing added)."""
        wanted = Counter(_ident(s) for s in slots)
        for ident, n in wanted.items():
            self.left[ident] = max(self.left[ident], n)
        self.keys.update({_ident(s): _key(s) for s in slots})

    def started(self, slot: Slot, label: str) -> ProgressFile:
        """``slot`` (``label``: ``[arm] workload level block N``) starts: the progress written and returned."""
        self._started = time.monotonic()
        return self._write(label)

    def finished(self, slot: Slot) -> ProgressFile:
        """``slot`` ended: its duration counts for the estimate; the progress written and returned."""
        if self._started is not None:
            self.measured.append((_key(slot), time.monotonic() - self._started))
        self._started = None
        ident = _ident(slot)
        if self.left[ident] > 0:
            self.left[ident] -= 1
        return self._write(None)

    def sizing_ended(self) -> ProgressFile:
        """Sizing added its last block: the total is exact from here."""
        self.sizing = False
        return self._write(None)

    def progress(self, current: str | None) -> ProgressFile:
        """Where the run is now (records/runparts.py ``ProgressFile``)."""
        left = [self.keys[ident] for ident, n in self.left.items() for _ in range(n)]
        done = self.before + len(self.measured)
        remaining = time_left_s(self.measured, left)
        if remaining is not None and current is not None and self._started is not None:
            remaining = max(remaining - (time.monotonic() - self._started), 0.0)
        return ProgressFile(
            slots_done=done,
            slots_planned=done + len(left),
            sizing=self.sizing,
            left_s=None if remaining is None else round(remaining, 1),
            current=current,
            updated_utc=datetime.now(UTC).isoformat(timespec="seconds"),
        ).in_full()

    def _write(self, current: str | None) -> ProgressFile:
        now = self.progress(current)
        try:
            write_progress(self.folder, now)
        except RunDirUnwritable as exc:
            if not self._warned:
                self.log(f"warning: the progress file is not kept ({exc}); the run goes on")
                self._warned = True
        return now
