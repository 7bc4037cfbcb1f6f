"""The candidates of a sweep pair file (``loadgen sweep``): pure expansion of ``[speculative]`` with a K
list and of ``[[candidates]]`` into one speculative config per candidate, and the plain pair document
of each candidate (``candidate_doc``), which is then read and checked like any pair file.

A sweep pair file is a pair file where ``[speculative].num_speculative_tokens`` may be a list of K
values, and/or ``[[candidates]]`` lists further speculative configs (the keys of ``[speculative]`` plus
an optional ``name``; their ``num_speculative_tokens`` may be a list too). profiles/README.md documents
the keys. Raises ProfileError (exit 2) with one line naming the file, the candidate and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadgen.errors import ProfileError
from loadgen.records.speculative import SpeculativeConfig
from loadgen.records.wire import Where

_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class Candidate:
    """One speculative config of a sweep: its folder ``name``, the config and its K."""

    name: str
    speculative: SpeculativeConfig = field(default_factory=SpeculativeConfig)

    @property
    def k(self) -> int:
        """K, the number of speculative tokens per step."""
        return int(self.speculative.num_speculative_tokens or 0)

    @property
    def draft_weights(self) -> bool:
        """True when the candidate loads draft weights (a ``model``); ngram and suffix do not."""
        return self.speculative.model is not None

    def cost_key(self) -> tuple[int, int, str]:
        """Cheaper first: no draft weights, then smaller K (the sweep's tie rule), then the name."""
        return int(self.draft_weights), self.k, self.name


def _ks(value: Any, path: Path, where: str) -> list[int]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        raise ProfileError(
            f"{path}: {where}.num_speculative_tokens must be a positive integer or a list of them "
            f"(e.g. [1, 2, 3]), got {value!r}"
        )
    if len(set(values)) != len(values):
        raise ProfileError(f"{path}: {where}.num_speculative_tokens lists a K twice: {value!r}")
    return list(values)


def _expand(table: Mapping[str, Any], path: Path, where: str) -> list[Candidate]:
    if not isinstance(table, Mapping):
        raise ProfileError(f"{path}: {where} must be a table of speculative-config keys")
    config = {k: v for k, v in table.items() if k != "name"}
    if "method" not in config or "num_speculative_tokens" not in config:
        raise ProfileError(f"{path}: {where} needs method = ... and num_speculative_tokens = K or [K, ...]")
    label = table.get("name", Path(str(config["model"])).name if config.get("model") else config["method"])
    if not isinstance(label, str) or not _NAME.match(label):
        raise ProfileError(
            f"{path}: {where}.name must be letters, digits, '.', '_' or '-' (a folder name), got {label!r}"
        )
    at = Where(str(path), where, "fix the sweep file (profiles/README.md, Sweeps)")
    return [
        Candidate(f"{label}-k{k}", SpeculativeConfig.read_at({**config, "num_speculative_tokens": k}, at))
        for k in _ks(config["num_speculative_tokens"], path, where)
    ]


def is_sweep(doc: Mapping[str, Any]) -> bool:
    """True for a sweep pair file: ``[[candidates]]``, or a list of K in ``[speculative]``."""
    spec = doc.get("speculative")
    return "candidates" in doc or (isinstance(spec, Mapping) and isinstance(spec.get("num_speculative_tokens"), list))


def expand_candidates(doc: Mapping[str, Any], path: Path) -> list[Candidate]:
    """Every candidate of the sweep document ``doc`` (read from ``path``): ``[speculative]``'s K values
    first, then each ``[[candidates]]`` entry's, in file order. Raises ProfileError when there is none,
    a name repeats, or a table lacks method / num_speculative_tokens."""
    found = _expand(doc["speculative"], path, "[speculative]") if "speculative" in doc else []
    extra = doc.get("candidates", [])
    if not isinstance(extra, list):
        raise ProfileError(f"{path}: candidates must be an array of tables: write [[candidates]] per config")
    for i, table in enumerate(extra):
        found += _expand(table, path, f"[[candidates]] #{i + 1}")
    if not found:
        raise ProfileError(
            f"{path}: a sweep needs [speculative] with num_speculative_tokens = [K, ...] and/or "
            "[[candidates]] tables (see profiles/README.md, Sweeps)"
        )
    names = [c.name for c in found]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ProfileError(f"{path}: two candidates are both named {dup!r}; give one a different name = ...")
    return found


def candidate_doc(doc: Mapping[str, Any], candidate: Candidate, pair_name: str) -> dict[str, Any]:
    """The pair document of ``candidate``: the sweep document without ``[[candidates]]``, with the
    candidate's ``[speculative]`` and the name ``<pair>-<candidate>`` (``pair_name``: the sweep's name
    when the document has no ``name``)."""
    out = {k: v for k, v in doc.items() if k != "candidates"}
    out["speculative"] = candidate.speculative.to_json()
    out["name"] = f"{doc.get('name', pair_name)}-{candidate.name}"
    return out
