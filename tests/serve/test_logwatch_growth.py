"""serve/startup.py's LogWatch on a log that a real writer grows: a line cut mid-write is judged once complete,
a fatal line already reported is not reported again, and a log that does not exist yet is no verdict."""

from __future__ import annotations

from pathlib import Path

from loadgen.serve.startup import LogWatch


def test_a_growing_log_is_judged_line_by_line(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    watch = LogWatch(log)
    assert watch.fatal() is None  # no log yet
    with log.open("ab", buffering=0) as fh:
        fh.write(b"(APIServer pid=1) INFO starting\n(EngineCore_DP0 pid=2) ERROR EngineCore fai")
        assert watch.fatal() is None  # the line is not complete yet
        fh.write(b"led to start.\n(APIServer pid=1) INFO still here\n")
        assert watch.fatal() == "(EngineCore_DP0 pid=2) ERROR EngineCore failed to start."
        assert watch.fatal() is None  # read once
        fh.write("(EngineCore_DP0 pid=2) ImportError: café \xff\n".encode("latin-1"))
        assert watch.fatal() == "(EngineCore_DP0 pid=2) ImportError: caf\ufffd \ufffd"  # undecodable bytes replaced
