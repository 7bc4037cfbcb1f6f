"""The lines of the pair's prompt files that would be skipped (pure; profile/promptfile.py names them).

A ``file`` workload's unusable lines (the other endpoint's shape, a conversation without a human turn or a
reply, one too long for the serving context, ...) are skipped, never sent in another shape. The pair check
names every one of them and refuses them (a blocking finding, exit 2) unless the pair file allows skipping
(``[run].allow_skipped_lines = true``; then a warning), so a file is not sampled from fewer lines than the
user wrote without them agreeing to it. A ``trace`` workload's lines left out (``zero_output = "skip"``, too long
for the serving context) and its requests of 0 output tokens sent with the declared floor (``zero_output = N``)
are named too, as one warning per trace: the replay is not the trace as recorded (the card's workload line
counts them).
"""

from __future__ import annotations

from loadgen.check.finding import Finding
from loadgen.profile.pair import Pair


def skipped_line_findings(pair: Pair) -> list[Finding]:
    """One finding per ``file`` workload of ``pair`` (context-length variants once) with skipped lines,
    naming each ``line N: reason``; blocking unless ``pair.allow_skipped_lines``; then one warning per ``trace``
    file that skips or floors a line. [] when none does."""
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
    return out + _trace_findings(pair)


def _trace_findings(pair: Pair) -> list[Finding]:
    """One warning per ``trace`` file of ``pair`` that skips or floors a line, naming each."""
    out: list[Finding] = []
    seen: set[str] = set()
    for w in pair.workloads:
        if w.kind != "trace" or not (w.skipped or w.floored) or w.path in seen:
            continue
        seen.add(w.path or "")
        parts = [f"{len(w.skipped)} skipped: {'; '.join(w.skipped)}"] if w.skipped else []
        parts += [f"{len(w.floored)} sent with the declared floor: {'; '.join(w.floored)}"] if w.floored else []
        out.append(
            Finding(
                "trace lines",
                False,
                False,
                f"workload {w.name}: of the {w.source_lines} lines of {w.path}, {'; '.join(parts)}",
                {"workload": w.name, "path": w.path, "skipped": list(w.skipped), "floored": list(w.floored)},
            )
        )
    return out
