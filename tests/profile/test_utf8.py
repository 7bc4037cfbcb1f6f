"""A prompt file or a trace with bytes that are not UTF-8 (a Latin-1 export) is refused naming the line and the
byte, rather than read with the bytes replaced (``caf\\ufffd`` sent where the user wrote ``café``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.promptfile import read_prompt_file
from loadgen.profile.trace import read_trace

LATIN1 = '{"prompt": "a coffee"}\n{"prompt": "un café"}\n{"prompt": "déjà"}\n'.encode("latin-1")


def test_a_prompt_file_that_is_not_utf8_is_refused_naming_line_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_bytes(LATIN1)
    with pytest.raises(ProfileError) as info:
        read_prompt_file(path, None)
    assert str(info.value) == (
        f"{path}: line 2 (byte 19: 0xe9) is not UTF-8; 2 line(s) hold such bytes; save the file as UTF-8 "
        "(e.g. iconv -f latin1 -t utf-8)"
    )
    path.write_bytes(b"\xef\xbb\xbf" + LATIN1.decode("latin-1").encode())  # the same file as UTF-8, with a BOM
    assert [e.text for e in read_prompt_file(path, None).entries] == ["a coffee", "un café", "déjà"]


def test_a_trace_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"timestamp": 0, "prompt": "caf\xe9"}\n')
    with pytest.raises(ProfileError, match=r"t.jsonl: line 1 \(byte 32: 0xe9\) is not UTF-8"):
        read_trace(path)
