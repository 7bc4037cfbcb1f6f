"""An interrupted run resumes to the card an uninterrupted run writes (issue: attached runs could not be
resumed). Black box, as a user runs it: ``loadgen compare`` in a subprocess on scripted engines, either
attached (started by hand) or launched by loadgen, cut by Ctrl-C (SIGINT), SIGTERM, SIGKILL or a full disk (the
runs folder a small tmpfs filled to its last byte, then given room again) once a given slot is under way, then
``loadgen compare --resume RUN_DIR``. The user sees the cut run name the resume command, the resume finish with
exit 0 and the card; an attached run's resume launches nothing; every finished request is on the card, whose
counts (requests, errors, tokens, blocks, pairs of every ratio and of the A/A floor) equal an uninterrupted
run's."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakerun import small_tmpfs
from tests.support.faultrun import SIGNALS, counts, engines, fill, loadgen, run_dir, write_pair
from tests.support.promstack import free_port_block

pytestmark = pytest.mark.slow

#: [design].placebo, and whether the placebo has an attached server of its own ([servers.placebo].url).
PLACEBOS = {
    "server": ("server", False),
    "own-server": ("server", True),
    "blocks": ("blocks", False),
    "off": ("off", False),
}
SLOTS = {"off": 4}  # slots of a run: 2 blocks x (plain, placebo, speculative); 4 without the placebo
FULL_DISK = "full disk"
CUTS = [*SIGNALS, FULL_DISK]
#: The size of the runs folder's tmpfs for a full disk (KiB): a run folder of the fault pair takes about 600 KiB.
DISK_KIB = 4096


def _compare(
    tmp: Path, placebo: str, attach: bool, cut: str | None = None, at_slot: int = 0
) -> tuple[Path, list[str], dict[str, Any]]:
    """One run of the fault pair in ``tmp`` (attached or launched), cut by ``cut`` (a signal's name, or
    :data:`FULL_DISK`) at ``at_slot`` and then resumed when ``cut`` is given; its folder, what each command
    printed and its card's counts (faultrun.counts)."""
    mode, own = PLACEBOS[placebo]
    port = free_port_block(6)
    ports = {"plain": port + 3, "speculative": port + 4} | ({"placebo": port + 5} if own else {})
    with contextlib.ExitStack() as stack:
        urls = stack.enter_context(engines(tmp, ports if attach else {}))
        pair = write_pair(tmp, port, mode, urls.get("placebo"))
        args = ["compare", str(pair), "--allow-unpinned", "--no-progress", "--runs-dir", str(tmp / "runs")]
        if attach:
            args += ["--attach-plain", urls["plain"], "--attach-speculative", urls["speculative"]]
        if cut == FULL_DISK:
            runs = stack.enter_context(small_tmpfs(tmp, DISK_KIB, "runs"))
            first = loadgen(tmp, args, lambda: fill(runs), at_slot)
            assert (runs / "filler").exists(), f"the run ended before slot {at_slot}: {first.output}"
            (runs / "filler").unlink()  # room again
        else:
            first = loadgen(tmp, args, SIGNALS[cut] if cut else None, at_slot)
        outputs = [first.output]
        if cut is None:
            assert first.code == 0, first.output
            return run_dir(tmp), outputs, counts(run_dir(tmp))
        assert first.code != 0, first.output  # cut short (an interrupt or a full disk exits 1; SIGKILL -9)
        resumed = loadgen(tmp, ["compare", "--resume", str(run_dir(tmp)), "--no-progress"])
        outputs.append(resumed.output)
        assert resumed.code == 0, resumed.output
        return run_dir(tmp), outputs, counts(run_dir(tmp))  # read while a tmpfs is mounted


_REFERENCE: dict[tuple[str, bool], dict[str, object]] = {}


def _reference(tmp_path_factory: pytest.TempPathFactory, placebo: str, attach: bool) -> dict[str, object]:
    """The counts of an uninterrupted run of (``placebo``, ``attach``), measured once per test session."""
    if (placebo, attach) not in _REFERENCE:
        _REFERENCE[(placebo, attach)] = _compare(tmp_path_factory.mktemp("reference"), placebo, attach)[2]
    return _REFERENCE[(placebo, attach)]


def _check(tmp: Path, factory: pytest.TempPathFactory, placebo: str, attach: bool, cut: str, at_slot: int) -> None:
    run, (first, resumed), got = _compare(tmp, placebo, attach, cut, at_slot)
    if cut != "SIGKILL":  # a killed process prints nothing
        assert f"`loadgen compare --resume {run}`" in first, first
    if cut == FULL_DISK:  # one line: the folder, the reason, and the way on once there is room
        (line,) = [line for line in first.splitlines() if line.startswith("loadgen: error: ")]
        assert f"in {run} (No space left on device; " in line, first
        assert line.endswith(f"once there is room, `loadgen compare --resume {run}` runs the cells left"), line
        assert "Traceback" not in first
    if attach:  # nothing launched on resume: every arm on the server protocol.json names
        assert "starting:" not in resumed and "attaching to http://127.0.0.1:" in resumed, resumed
    lines = resumed.splitlines()
    if cut == "SIGKILL":  # the killed process's lock is taken over, and said so
        assert lines.pop(0).startswith(f"{run}: took over the lock of pid "), resumed
    assert lines[0].startswith(f"resuming {run}: "), resumed
    assert f"card: {run / 'card.md'}" in resumed
    assert got["complete"] is True
    assert got == _reference(factory, placebo, attach)


#: (placebo, attached) of the runs cut at every slot: attached with a placebo server, attached with placebo blocks
#: (on the attached plain server), launched with a placebo server.
EVERY_SLOT = [("server", True), ("blocks", True), ("server", False)]


@pytest.mark.parametrize("at_slot", range(6))
@pytest.mark.parametrize(("placebo", "attach"), EVERY_SLOT, ids=["attached-server", "attached-blocks", "launched"])
def test_a_run_interrupted_at_any_slot_resumes_to_the_uninterrupted_counts(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, placebo: str, attach: bool, at_slot: int
) -> None:
    _check(tmp_path, tmp_path_factory, placebo, attach, "SIGTERM", at_slot)


@pytest.mark.parametrize("at_slot", [1, 4])
@pytest.mark.parametrize("attach", [True, False], ids=["attached", "launched"])
def test_a_full_disk_at_another_slot_resumes_to_the_uninterrupted_counts(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, attach: bool, at_slot: int
) -> None:
    _check(tmp_path, tmp_path_factory, "blocks", attach, FULL_DISK, at_slot)


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("placebo", PLACEBOS)
@pytest.mark.parametrize("attach", [True, False], ids=["attached", "launched"])
def test_every_interruption_in_every_mode_resumes_to_the_uninterrupted_counts(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, placebo: str, attach: bool, cut: str
) -> None:
    if placebo == "own-server" and not attach:
        pytest.skip("a placebo server of its own is attached by its URL")
    _check(tmp_path, tmp_path_factory, placebo, attach, cut, SLOTS.get(placebo, 6) // 2)
