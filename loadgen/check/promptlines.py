"""The lines of the pair's prompt files that would be skipped (pure; profile/promptfile.py names them).

A ``file`` workload's unusable lines (the other endpoint's shape, a conversation without a human turn or a
reply, one too long for the serving context, ...) are skipped, never sent in another shape. The pair check
names every one of them and refuses them (a blocking finding, exit 2) unless the pair file allows skipping
(``[run].allow_skipped_lines = true``; then a warning), so a file is not sampled from fewer lines than the
user wrote without them agreeing to it.
"""

from __future__ import annotations

from loadgen.check.finding import Finding
from loadgen.profile.pair import Pair


def skipped_line_findings(pair: Pair) -> list[Finding]:
    """One finding per ``file`` workload of ``pair`` (context-length variants once) with skipped lines,
    naming each ``line N: reason``; blocking unless ``pair.allow_skipped_lines``. [] when none skips a line."""
    out: list[Finding] = []
    seen: set[str] = set()
    for w in pair.workloads:
        if w.kind != "file" or not w.skipped or w.path in seen:
            continue
        seen.add(w.path or "")
        how = (
            "allowed by [run].allow_skipped_lines"
            if pair.allow_skipped_lines
            else "fix them, or set [run].allow_skipped_lines = true in the pair file to sample the other lines"
        )
        out.append(
            Finding(
                "prompt file",
                False,
                not pair.allow_skipped_lines,
                f"workload {w.name}: {len(w.skipped)} of the {w.source_lines} lines of {w.path} would be "
                f"skipped: {'; '.join(w.skipped)}; {how}",
                {"workload": w.name, "path": w.path, "skipped": list(w.skipped)},
            )
        )
    return out
