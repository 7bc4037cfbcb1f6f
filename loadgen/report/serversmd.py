"""The pair card's "Servers" section (pure): per role where it ran, its launch line, the effective speculative
config, engine path, metrics, KV capacity, the proof of mode and the server facts read
(records/serverfacts.py), and the note when plain and speculative ran different engine paths."""

from __future__ import annotations

from typing import Any

from loadgen.measure.replicas import replica_note
from loadgen.records.card import PairCard
from loadgen.records.server import EnginePath, Placement
from loadgen.records.serverfacts import facts_line
from loadgen.records.wire import JsonValue
from loadgen.serve.enginepath import engine_path_line, engine_path_note
from loadgen.serve.modeproof import proof_line
from loadgen.util.numbers import num as _num

__all__ = ["servers_rows"]


def _or_dash(value: Any) -> str:
    return "–" if value is None else str(value)


def _code_or_dash(value: Any) -> str:
    return "–" if value is None else f"`{value}`"


def _strings(value: JsonValue) -> list[str]:
    """A list's items as text (a launch line, replica signs); empty for anything else (a file of other code)."""
    return [str(v) for v in value] if isinstance(value, list) else []


def _number(value: JsonValue) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _listed(card: Any) -> str:
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


def servers_rows(card: PairCard) -> list[str]:
    """The "Servers" section's Markdown lines, one subsection per role of ``card.servers``."""
    out: list[str] = ["## Servers", ""]
    for role, server in card.servers.items():
        launch, eff = server.launch or {}, server.effective or {}
        where = _where(card.placement.get(role), bool(card.hardware and card.hardware.gpus))
        out += [
            f"### {role}",
            "",
            f"- placement: {where}",
            f"- launch: `{' '.join(_strings(launch.get('argv'))) or 'not launched'}`",
            *[f"- /metrics read at {url} (apart from the API URL)" for url in [launch.get("metrics_url")] if url],
            f"- effective speculative config (startup log): {_code_or_dash(eff.get('speculative_config_log'))}",
            f"- {engine_path_line(EnginePath.of(eff.get('engine_path')))}",
            f"- spec-decode metrics on /metrics: {eff.get('spec_decode_metrics')}, position labels: "
            f"{eff.get('spec_positions')}",
            f"- KV-cache capacity (startup log): {_or_dash(eff.get('kv_cache_tokens_log'))} tokens; ready after "
            f"{_num(_number(eff.get('ready_s')), 0)} s",
            *[f"- {line}" for line in [proof_line(dict(eff)), facts_line(eff)] if line],
            *[f"- at start-up, {replica_note(role, signs)}" for signs in [_strings(eff.get("replicas"))] if signs],
            *[f"- /v1/models: {_listed(card)}" for card in [eff.get("model_card")] if card],
            *[
                f"- not read in attach mode without a startup log (give it as [servers.{role}].log): "
                + ", ".join(unread)
                for unread in [_strings(eff.get("unread"))]
                if unread
            ],
            "",
        ]
    none = EnginePath.of(None)
    paths = {r: EnginePath.of((s.effective or {}).get("engine_path")) for r, s in card.servers.items()}
    note = engine_path_note(paths.get("plain", none), paths.get("speculative", none))
    return out + ([f"> {note}", ""] if note else [])
