"""The pair card's "Servers" section (pure): per role where it ran, its launch line, the effective speculative
config, engine path, metrics, KV capacity, the proof of mode and the server facts read
(records/serverfacts.py), and the note when plain and speculative ran different engine paths."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadgen.measure.replicas import replica_note
from loadgen.records.card import PairCard
from loadgen.records.server import EnginePath, Placement
from loadgen.records.serverfacts import facts_line
from loadgen.records.serverparts import EffectiveFile
from loadgen.serve.enginepath import engine_path_line, engine_path_note
from loadgen.serve.modeproof import proof_line
from loadgen.util.numbers import num as _num

__all__ = ["servers_rows"]


def _or_dash(value: Any) -> str:
    return "–" if value is None else str(value)


def _code_or_dash(value: Any) -> str:
    return "–" if value is None else f"`{value}`"


def _listed(card: Mapping[str, str | int]) -> str:
    """A ``/v1/models`` entry's fields as the card shows them: ``root `x`, owned_by y, max_model_len N``."""
    shown = {"root": "root `{}`", "owned_by": "owned_by {}", "max_model_len": "max_model_len {}"}
    return ", ".join(form.format(card[k]) for k, form in shown.items() if k in card)


def _where(place: Placement | None, gpus: bool) -> str:
    """Where a server ran (its placement; None on a card without one) on a machine with or without ``gpus``."""
    if place is not None and place.attached:
        return f"attached to {place.base_url}"
    if not gpus:
        return "launched by loadgen on the CPU (no GPU visible)"
    devices, tp, fraction = (
        (place.cuda_visible_devices, place.tensor_parallel_size, place.gpu_memory_utilization) if place else (None,) * 3
    )
    return f"launched by loadgen; CUDA_VISIBLE_DEVICES={devices}, tensor parallel size {tp}, memory fraction {fraction}"


#: The engine path of a server whose effective file does not say it: every part unknown.
_UNKNOWN_PATH = EnginePath.of(None)
#: What the card shows for a server without an effective file: nothing known.
_NO_EFFECTIVE = EffectiveFile(
    base_url="",
    speculative_config_log=None,
    kv_cache_tokens_log=None,
    spec_decode_metrics=None,
    spec_positions=None,
    metric_families=(),
    ready_s=None,
    cache_config_info={},
)


def servers_rows(card: PairCard) -> list[str]:
    """The "Servers" section's Markdown lines, one subsection per role of ``card.servers``."""
    out: list[str] = ["## Servers", ""]
    for role, server in card.servers.items():
        launch, eff = server.launch, server.effective or _NO_EFFECTIVE
        where = _where(card.placement.get(role), bool(card.hardware and card.hardware.gpus))
        argv = (launch.argv if launch else None) or ()
        metrics_url = launch.metrics_url if launch else None
        out += [
            f"### {role}",
            "",
            f"- placement: {where}",
            f"- launch: `{' '.join(argv) or 'not launched'}`",
            *([f"- /metrics read at {metrics_url} (apart from the API URL)"] if metrics_url else []),
            f"- effective speculative config (startup log): {_code_or_dash(eff.speculative_config_log)}",
            f"- {engine_path_line(eff.engine_path or _UNKNOWN_PATH)}",
            f"- spec-decode metrics on /metrics: {eff.spec_decode_metrics}, position labels: {eff.spec_positions}",
            f"- KV-cache capacity (startup log): {_or_dash(eff.kv_cache_tokens_log)} tokens; ready after "
            f"{_num(eff.ready_s, 0)} s",
            *[f"- {line}" for line in [proof_line(eff), facts_line(eff.server_facts)] if line],
            *([f"- at start-up, {replica_note(role, eff.replicas)}"] if eff.replicas else []),
            *([f"- /v1/models: {_listed(eff.model_card)}"] if eff.model_card else []),
            *(
                [
                    f"- not read in attach mode without a startup log (give it as [servers.{role}].log): "
                    + ", ".join(eff.unread)
                ]
                if eff.unread
                else []
            ),
            "",
        ]
    paths = {r: (s.effective.engine_path if s.effective else None) or _UNKNOWN_PATH for r, s in card.servers.items()}
    note = engine_path_note(paths.get("plain", _UNKNOWN_PATH), paths.get("speculative", _UNKNOWN_PATH))
    return out + ([f"> {note}", ""] if note else [])
