"""Every phase of a compare says when it starts and when it ends, with its elapsed time (README.md, "The two
commands"): the pair check, each server start, each cell. A real compare of the scripted engine pair (two
real server processes on loopback), one block per arm."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from loadgen.profile.pairfile import load_pair
from loadgen.run.flow import run_compare
from tests.support.promstack import free_port_block
from tests.support.scripted_engine import PAIR, REPO, WORKLOAD


def test_a_compare_prints_start_and_end_lines_for_each_phase(tmp_path: Path) -> None:
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "w.toml").write_text(WORKLOAD)
    text = (
        PAIR.format(name="phases", k=1, python=sys.executable, repo=REPO)
        .replace("port = 8300", f"port = {free_port_block()}")
        .replace("min_requests = 6", "min_requests = 2")
        + '[design]\nblocks = 1\nplacebo = "off"\nco_resident = true\n'
    )
    (tmp_path / "phases.toml").write_text(text)
    lines: list[str] = []
    run_compare(
        load_pair(str(tmp_path / "phases.toml"), workloads_dir=tmp_path / "workloads"),
        tmp_path / "runs",
        log=lines.append,
        allow_unpinned=True,
    )

    def at(pattern: str) -> int:
        found = [i for i, line in enumerate(lines) if re.fullmatch(pattern, line)]
        assert len(found) == 1, (pattern, lines)
        return found[0]

    assert at(r"pair check: started") < at(r"pair check: done in \d+\.\d s") < at(r"\[plain\] starting: .*")
    for arm in ("plain", "speculative"):
        start = at(rf"\[{arm}\] starting: .*")
        assert start < at(rf"\[{arm}\] ready after \d+ s at .*")
        begun = at(rf"\[{arm}\] w c1 block 0: started")
        assert start < begun < at(rf"\[{arm}\] w c1 block 0: \d+/\d+ ok in \d+\.\d s.*")
