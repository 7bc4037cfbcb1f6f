"""An interrupted run resumes to the card an uninterrupted run writes (issue: attached runs could not be
resumed). Black box, as a user runs it: ``loadgen compare`` in a subprocess on scripted engines, either
attached (started by hand) or launched by loadgen, cut by Ctrl-C (SIGINT), SIGTERM or SIGKILL once a given
slot is under way, then ``loadgen compare --resume RUN_DIR``. The user sees the resume finish with exit 0 and
the card; an attached run's resume launches nothing; every finished request is on the card, whose counts
(requests, errors, tokens, blocks, pairs of every ratio and of the A/A floor) equal an uninterrupted run's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.faultrun import SIGNALS, counts, engines, loadgen, run_dir, write_pair
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


def _compare(tmp: Path, placebo: str, attach: bool, sig: int | None = None, at_slot: int = 0) -> tuple[Path, list[str]]:
    """One run of the fault pair in ``tmp`` (attached or launched), cut by ``sig`` at ``at_slot`` and then
    resumed when ``sig`` is given; its folder and what each command printed."""
    mode, own = PLACEBOS[placebo]
    port = free_port_block(6)
    ports = {"plain": port + 3, "speculative": port + 4} | ({"placebo": port + 5} if own else {})
    with engines(tmp, ports if attach else {}) as urls:
        pair = write_pair(tmp, port, mode, urls.get("placebo"))
        args = ["compare", str(pair), "--allow-unpinned", "--no-progress", "--runs-dir", str(tmp / "runs")]
        if attach:
            args += ["--attach-plain", urls["plain"], "--attach-speculative", urls["speculative"]]
        first = loadgen(tmp, args, sig, at_slot)
        outputs = [first.output]
        if sig is None:
            assert first.code == 0, first.output
            return run_dir(tmp), outputs
        assert first.code != 0, first.output  # cut short (an interrupt exits 1; SIGKILL -9)
        resumed = loadgen(tmp, ["compare", "--resume", str(run_dir(tmp)), "--no-progress"])
        outputs.append(resumed.output)
        assert resumed.code == 0, resumed.output
    return run_dir(tmp), outputs


_REFERENCE: dict[tuple[str, bool], dict[str, object]] = {}


def _reference(tmp_path_factory: pytest.TempPathFactory, placebo: str, attach: bool) -> dict[str, object]:
    """The counts of an uninterrupted run of (``placebo``, ``attach``), measured once per test session."""
    if (placebo, attach) not in _REFERENCE:
        run, _ = _compare(tmp_path_factory.mktemp("reference"), placebo, attach)
        _REFERENCE[(placebo, attach)] = counts(run)
    return _REFERENCE[(placebo, attach)]


def _check(tmp: Path, factory: pytest.TempPathFactory, placebo: str, attach: bool, name: str, at_slot: int) -> None:
    run, (cut, resumed) = _compare(tmp, placebo, attach, SIGNALS[name], at_slot)
    if name != "SIGKILL":  # a killed process prints nothing
        assert f"`loadgen compare --resume {run}`" in cut, cut
    if attach:  # nothing launched on resume: every arm on the server protocol.json names
        assert "starting:" not in resumed and "attaching to http://127.0.0.1:" in resumed, resumed
    lines = resumed.splitlines()
    if name == "SIGKILL":  # the killed process's lock is taken over, and said so
        assert lines.pop(0).startswith(f"{run}: took over the lock of pid "), resumed
    assert lines[0].startswith(f"resuming {run}: "), resumed
    assert f"card: {run / 'card.md'}" in resumed
    got = counts(run)
    assert got["complete"] is True
    assert got == _reference(factory, placebo, attach)


@pytest.mark.parametrize("at_slot", range(6))
def test_an_attached_run_interrupted_at_any_slot_resumes_to_the_uninterrupted_counts(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, at_slot: int
) -> None:
    _check(tmp_path, tmp_path_factory, "server", True, "SIGTERM", at_slot)


@pytest.mark.parametrize("name", SIGNALS)
@pytest.mark.parametrize("placebo", PLACEBOS)
@pytest.mark.parametrize("attach", [True, False], ids=["attached", "launched"])
def test_every_interruption_in_every_mode_resumes_to_the_uninterrupted_counts(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, placebo: str, attach: bool, name: str
) -> None:
    if placebo == "own-server" and not attach:
        pytest.skip("a placebo server of its own is attached by its URL")
    _check(tmp_path, tmp_path_factory, placebo, attach, name, SLOTS.get(placebo, 6) // 2)
