"""The trace formats people publish, read as they are (pure apart from the caller's read of the file).

- ``mooncake``: JSONL, ``{"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]}``
  (https://github.com/kvcache-ai/Mooncake, FAST'25 traces); read by profile/trace.py, as are ``prompts``
  (prompt-file lines with a ``timestamp``).
- ``azure``: the Azure LLM inference traces 2023 and 2024 (https://github.com/Azure/AzurePublicDataset,
  ``AzureLLMInferenceTrace_{code,conv}.csv`` and the 2024 week-long ``AzureLLMInferenceTrace_*_1week.csv``): CSV
  with the header ``TIMESTAMP,ContextTokens,GeneratedTokens``, ``TIMESTAMP`` a date and time
  (``2023-11-16 18:15:46.6805900``: fractions past microseconds are cut, a time without a zone is UTC).
- ``burstgpt``: BurstGPT (https://github.com/HPMLL/BurstGPT, ``BurstGPT_*.csv``): CSV with the header
  ``Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type``, ``Timestamp`` in seconds from the
  trace's start.

A CSV request becomes a Mooncake-shaped one (input and output lengths in tokens, no shared prefix blocks):
its prompt is natural words of exactly its input length (profile/trace.py ``mooncake_text``). ``format =
"auto"`` (the default) detects the format from the first line: ``{`` starts JSONL, else the CSV header names
it. A row that cannot be read is a bad line, counted and named (``line N: reason``). A request with 0 output
tokens (BurstGPT logs failed requests so) is refused unless the workload says ``zero_output = "skip"`` (left
out, counted and named) or ``zero_output = N`` (sent with N output tokens, a declared floor; counted and named as
floored, on the card's workload line beside the skipped ones).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from loadgen.errors import ProfileError
from loadgen.profile.domains import MAX_TOKENS

FORMATS = ("auto", "mooncake", "prompts", "azure", "burstgpt")
JSONL_FORMATS = ("mooncake", "prompts")
#: Each CSV format's columns: timestamp, input tokens, output tokens (the header names as published).
COLUMNS = {
    "azure": ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    "burstgpt": ("Timestamp", "Request tokens", "Response tokens"),
}
#: Bad lines named in a message; the rest are counted.
SHOWN = 3
_WHEN = re.compile(r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})(?:\.(\d+))?\s*(Z|[+-]\d{2}:?\d{2})?$")

#: One request of a CSV trace: its line, timestamp (ms), input and output tokens.
Row = tuple[int, float, int, int]


def detect(path: str, text: str) -> str:
    """The format of a trace whose text is ``text``: ``mooncake`` or ``prompts`` for JSONL (by the first
    record), else the CSV format its header names. Raises ProfileError naming the header and the formats known."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first.startswith("{"):
        return "mooncake" if '"input_length"' in first else "prompts"
    header = {h.strip() for h in next(csv.reader([first]), [])}
    for name, columns in COLUMNS.items():
        if set(columns) <= header:
            return name
    raise ProfileError(
        f"{path}: line 1 is neither a JSON object (Mooncake, prompt lines) nor the header of a known CSV trace "
        f"(got {first[:80]!r}); the CSV traces read are Azure LLM inference ({','.join(COLUMNS['azure'])}) and "
        f"BurstGPT ({','.join(COLUMNS['burstgpt'])}); or set format in the workload"
    )


def _ms(fmt: str, value: str) -> float:
    """A timestamp cell in ms: Azure's date and time (UTC without a zone), BurstGPT's seconds."""
    if fmt == "burstgpt":
        seconds = float(value)
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError
        return seconds * 1000.0
    m = _WHEN.match(value.strip())
    if m is None:
        raise ValueError
    zone = (m.group(3) or "+00:00").replace("Z", "+00:00")
    when = datetime.fromisoformat(f"{m.group(1)}.{(m.group(2) or '0')[:6].ljust(6, '0')}{zone}")
    return when.astimezone(UTC).timestamp() * 1000.0


def _tokens(value: str, low: int) -> int:
    n = float(value)
    if not n.is_integer() or not low <= n <= MAX_TOKENS:
        raise ValueError
    return int(n)


def csv_rows(path: str, text: str, fmt: str) -> tuple[list[Row], list[str], int]:
    """The requests of a ``fmt`` CSV trace (module docstring), its bad lines (``line N: reason``) and its
    number of data rows. Raises ProfileError when the header lacks the format's columns."""
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader, [])]
    columns = COLUMNS[fmt]
    if missing := [c for c in columns if c not in header]:
        raise ProfileError(
            f"{path}: line 1: a {fmt} trace's header has {', '.join(columns)}; missing {', '.join(missing)} "
            f"(got {','.join(header)[:80]!r})"
        )
    at = [header.index(c) for c in columns]
    rows: list[Row] = []
    bad: list[str] = []
    count = 0
    for cells in reader:
        line = reader.line_num
        if not any(c.strip() for c in cells):
            continue
        count += 1
        try:
            ts, n_in, n_out = (cells[i].strip() for i in at)
        except IndexError:
            bad.append(f"line {line}: {len(cells)} columns, the header has {len(header)}")
            continue
        try:
            stamp = _ms(fmt, ts)
        except ValueError:
            want = "seconds >= 0" if fmt == "burstgpt" else "a date and time such as 2023-11-16 18:15:46.68"
            bad.append(f"line {line}: {columns[0]} {ts!r} is not {want}")
            continue
        try:
            rows.append((line, stamp, _tokens(n_in, 1), _tokens(n_out, 0)))
        except ValueError:
            bad.append(f"line {line}: {columns[1]} {n_in!r} / {columns[2]} {n_out!r}: token counts must be integers")
    return rows, bad, count


def zero_output(value: object, where: str) -> str | int:
    """The workload's ``zero_output`` (``"refuse"``, ``"skip"`` or a floor N >= 1 of output tokens). Raises
    ProfileError for anything else."""
    if value in ("refuse", "skip") or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    raise ProfileError(
        f'{where}: zero_output must be "refuse", "skip" or a number of output tokens >= 1 (a floor), got {value!r}'
    )


def zero_line(line: int) -> str:
    """The bad-line reason of a request with 0 output tokens under ``zero_output = "refuse"``."""
    return (
        f'line {line}: 0 output tokens (a request that produced nothing); set zero_output = "skip" to leave such '
        "requests out, or zero_output = 1 to send them with a floor"
    )


def floor_line(line: int, floor: int) -> str:
    """The floored-line reason of a request of 0 output tokens sent with the declared floor ``zero_output = floor``."""
    return f"line {line}: 0 output tokens, sent with {floor} (zero_output = {floor})"


def bad_lines(path: str, bad: Sequence[str], total: int) -> ProfileError:
    """The error of a trace with ``bad`` lines of ``total``: the line's own reason when it is the only one, else
    how many, the first :data:`SHOWN` named."""
    if len(bad) == 1:
        return ProfileError(f"{path}: {bad[0]}")
    more = len(bad) - SHOWN
    shown = "; ".join(bad[:SHOWN]) + (f"; and {more} more" if more > 0 else "")
    return ProfileError(f"{path}: {len(bad)} of {total} lines cannot be read: {shown}; fix or remove them")
