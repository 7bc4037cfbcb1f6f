"""Ctrl-C or SIGTERM in the middle of a cell, with real signals to the main thread (SIGINT as a terminal
has it): the requests that finished in the interrupted cell are on the INCOMPLETE card, marked partial,
and the message names ``loadgen compare --resume RUN_DIR``; a second signal while the card is written is
held off (the card is finished), a third stops the writing and the message says no card was written and
that ``loadgen report RUN_DIR`` writes it."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loadgen.cli import _sigterm_as_interrupt
from loadgen.run import flow
from tests.support.fakerun import attach_roles, cell, execute_roles, measured_on_disk, run_folder, stream, when_measured
from tests.support.scripted_server import scripted_server

SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}


@pytest.fixture(autouse=True)
def _terminal_handlers() -> Iterator[None]:
    # SIGINT as in a terminal (a shell starts background jobs with it ignored); SIGTERM as the CLI sets it
    before = {
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
        signal.SIGTERM: signal.signal(signal.SIGTERM, _sigterm_as_interrupt),
    }
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


def _interrupted_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sig: int, signals_during_card: int
) -> tuple[Path, KeyboardInterrupt]:
    """Run two plain cells; ``sig`` once 5 requests of the second (c4) are on disk, then
    ``signals_during_card`` more while the card is written."""
    cells = [cell(2, 6, "a"), cell(4, 400, "b")]
    pair, run_dir = run_folder(tmp_path, cells)
    main = threading.main_thread().ident
    assert main is not None
    real_finish = flow.finish_card

    def finish_card_under_fire(run: Path, log: Any) -> dict[str, Any]:
        for _ in range(signals_during_card):
            signal.pthread_kill(main, sig)
            time.sleep(0.2)  # the handler runs here
        return real_finish(run, log)

    monkeypatch.setattr(flow, "finish_card", finish_card_under_fire)
    with scripted_server({"*": stream(0.01)}) as url:
        attach_roles(monkeypatch, url)
        threading.Thread(
            target=when_measured, args=(run_dir, "c4", 5, lambda: signal.pthread_kill(main, sig)), daemon=True
        ).start()
        with pytest.raises(KeyboardInterrupt) as err:
            execute_roles(pair, run_dir, {"plain": cells})
    return run_dir, err.value


@pytest.mark.parametrize("name", SIGNALS)
def test_the_interrupted_cell_is_on_the_card_marked_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    run_dir, err = _interrupted_run(tmp_path, monkeypatch, SIGNALS[name], 0)
    cut = measured_on_disk(run_dir, "c4")
    assert 5 <= cut < 400
    card = json.loads((run_dir / "card.json").read_text())
    assert card["complete"] is False
    first, second = card["cells"]
    assert first["plain"]["requests"] == 6 and first["plain"]["failure"] is None and "partial" not in first["plain"]
    assert "plain" in second, "the cell cut short is missing from the card"
    assert second["plain"]["requests"] == cut and second["plain"]["partial_requests"] == cut
    assert second["plain"]["partial"] is True and second["complete"] is False
    assert card["requests_on_disk"] == {"measured": 6 + cut, "partial": cut, "torn_lines": 0, "not_written": 0}
    md = (run_dir / "card.md").read_text()
    assert f"INCOMPLETE: interrupted (Ctrl-C or SIGTERM); {cut} of {6 + cut} measured requests on disk" in md
    assert f"**plain cell FAILED**: partial: {cut} measured requests finished before the cell was cut short" in md
    message = str(err)
    assert "\n" not in message
    assert message.startswith(f"interrupted; the {6 + cut} measured requests that finished are on disk in {run_dir}")
    assert f"card: {run_dir / 'card.md'}" in message and f"`loadgen compare --resume {run_dir}`" in message


@pytest.mark.parametrize("name", SIGNALS)
def test_a_second_interrupt_while_the_card_is_written_is_held_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], name: str
) -> None:
    run_dir, err = _interrupted_run(tmp_path, monkeypatch, SIGNALS[name], 1)
    card = json.loads((run_dir / "card.json").read_text())
    cut = measured_on_disk(run_dir, "c4")
    assert card["cells"][1]["plain"]["partial_requests"] == cut
    assert f"card: {run_dir / 'card.md'}" in str(err)
    assert "writing the card before stopping (a moment); interrupt again to stop without it" in capfd.readouterr().err


def test_a_third_interrupt_stops_the_card_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir, err = _interrupted_run(tmp_path, monkeypatch, signal.SIGINT, 2)
    assert not (run_dir / "card.json").exists()
    message = str(err)
    assert (
        f"no card was written (interrupted again while it was written); `loadgen report {run_dir}` writes it" in message
    ) and "card: " not in message
    status = json.loads((run_dir / "status.json").read_text())
    assert status == {"complete": False, "failure": "interrupted (Ctrl-C or SIGTERM)"}
    # the report writes it from the folder alone, the cut cell included
    monkeypatch.undo()
    card = flow.finish_card(run_dir, lambda _: None).to_json()
    assert card["requests_on_disk"]["partial"] == measured_on_disk(run_dir, "c4") > 0
