"""store/refused.py: the marker of a run folder refused before its first request, written, read (also when
unreadable), cleared, and the one-line refusal of ``loadgen report`` naming the command that resumes it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from loadgen.errors import BadInput, ServerError
from loadgen.store.refused import REFUSED_NAME, Refusal, clear_refusal, mark_refused, no_card_for_refused, read_refusal


def test_a_refusal_is_written_read_and_cleared(tmp_path: Path) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    written = mark_refused(tmp_path, ServerError("speculative server: connection refused at http://h:1"))
    assert written is not None and (written.reason, written.exit_code) == (
        "speculative server: connection refused at http://h:1",
        ServerError("x").exit_code,
    )
    assert before <= datetime.fromisoformat(written.refused_utc) <= datetime.now(UTC)
    assert read_refusal(tmp_path) == written
    with pytest.raises(BadInput) as info:
        no_card_for_refused(tmp_path)
    assert str(info.value) == (
        f"{tmp_path} was refused before measuring (speculative server: connection refused at "
        f"http://h:1); there is no card to write: fix that and run `loadgen compare --resume "
        f"{tmp_path}`"
    )
    (tmp_path / "sweep.toml").write_text("")
    with pytest.raises(BadInput, match=f"run `loadgen sweep --resume {tmp_path}`"):
        no_card_for_refused(tmp_path)
    clear_refusal(tmp_path)
    clear_refusal(tmp_path)  # twice: nothing to remove is fine
    assert read_refusal(tmp_path) is None and not (tmp_path / REFUSED_NAME).exists()
    no_card_for_refused(tmp_path)


def test_a_folder_that_measured_before_is_not_marked(tmp_path: Path) -> None:
    (tmp_path / "status.json").write_text("{}")
    assert mark_refused(tmp_path, BadInput("x")) is None and not (tmp_path / REFUSED_NAME).exists()


@pytest.mark.parametrize(
    "text", ["{", '{"reason": "r"}', '{"reason": "r", "exit_code": "two", "refused_utc": ""}', "[]"]
)
def test_an_unreadable_marker_still_refuses(tmp_path: Path, text: str) -> None:
    (tmp_path / REFUSED_NAME).write_text(text)
    assert read_refusal(tmp_path) == Refusal("unknown (refused.json is unreadable)", 2, "")
