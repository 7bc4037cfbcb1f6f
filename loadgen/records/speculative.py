"""The speculative config (vLLM's ``--speculative-config`` JSON): :class:`SpeculativeConfig`, read from a pair
file's ``[speculative]`` table (profile/pairfile.py, after profile/domains.py checked its types), a sweep
candidate (records/candidates.py) or protocol.json's ``speculative_config`` (records/protocol.py).

The fields loadgen reads are typed (vLLM's ``SpeculativeConfig`` field types, vllm/config/speculative.py,
0.10-0.33; each may be absent: None); every other key the engine takes is kept as given in ``rest``, and
``keys`` keeps the table's own key order, so :meth:`SpeculativeConfig.to_json` gives back the same JSON
(protocol.json, the ``--speculative-config`` flag and committed examples stay byte-identical). A value of the
wrong kind raises BadInput (exit 2) with one line naming the source and the field, e.g.
``runs/x/protocol.json: speculative_config.num_speculative_tokens: expected an integer, got '3'; ...``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Self

from loadgen.records.wire import BOOL, INT, LIST, RESTORE, STR, Kind, Where, maybe, obj
from loadgen.records.wire import field as read

#: vLLM 0.24+ per-batch-size K schedule key (vllm/config/speculative.py; docs/vllm-notes.md, fields table).
SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"


@dataclass(frozen=True)
class SpeculativeConfig:
    """vLLM's speculative config (module docstring); every typed field None when the key is absent (or null).

    ``num_speculative_tokens`` is K (draft tokens per step); ``num_speculative_tokens_per_batch_size`` the
    vLLM 0.24+ schedule, a list of ``[low, high, K]`` rows as given (profile/pair.py ``k_at`` skips a
    malformed row); ``draft_tensor_parallel_size``, ``max_model_len`` (tokens), ``prompt_lookup_min`` /
    ``_max`` (tokens) and ``disable_by_batch_size`` (running requests) are integers as the engine takes them,
    range-checked by check/specconfig.py, not here."""

    method: str | None = None
    model: str | None = None
    revision: str | None = None
    num_speculative_tokens: int | None = None
    num_speculative_tokens_per_batch_size: list[Any] | None = None
    disable_by_batch_size: int | None = None
    draft_tensor_parallel_size: int | None = None
    max_model_len: int | None = None
    prompt_lookup_min: int | None = None
    prompt_lookup_max: int | None = None
    draft_sample_method: str | None = None
    rejection_sample_method: str | None = None
    use_heterogeneous_vocab: bool | None = None
    use_local_argmax_reduction: bool | None = None
    enable_adaptive_verification: bool | None = None
    #: The engine's other keys, free-form, as given.
    rest: Mapping[str, Any] = field(default_factory=dict)
    #: The keys in their order as given (empty for one built in code: typed fields first, then ``rest``).
    keys: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The config as vLLM takes it: the keys as given, in their order (typed fields set, then ``rest``, for
        one built in code)."""
        order = self.keys or (*(k for k in _KINDS if getattr(self, k) is not None), *self.rest)
        return {k: getattr(self, k) if k in _KINDS else self.rest[k] for k in order}

    @classmethod
    def from_json(cls, data: object, *, source: str, where: Where | None = None) -> Self:
        """Inverse of :meth:`to_json`, checked: a typed field of the wrong kind raises BadInput naming
        ``source`` (or ``where``, the place so far) and the field."""
        here = where or Where(source, fix=RESTORE)
        d = obj(data, here)
        typed = {k: read(d, k, kind, here, None) for k, kind in _KINDS.items()}
        return cls(**typed, rest={k: v for k, v in d.items() if k not in _KINDS}, keys=tuple(d))

    def with_values(self, **values: Any) -> Self:
        """This config with typed ``values`` set (a new key is written after the config's own)."""
        own = self.keys or tuple(self.to_json())
        return replace(self, **values, keys=(*own, *(k for k in values if k not in own)))


_STR, _INT, _BOOL = maybe(STR), maybe(INT), maybe(BOOL)
#: Each typed field's kind, in declared order (every one may be null: absent).
_KINDS: dict[str, Kind] = {
    "method": _STR,
    "model": _STR,
    "revision": _STR,
    "num_speculative_tokens": _INT,
    SCHEDULE_KEY: maybe(LIST),
    "disable_by_batch_size": _INT,
    "draft_tensor_parallel_size": _INT,
    "max_model_len": _INT,
    "prompt_lookup_min": _INT,
    "prompt_lookup_max": _INT,
    "draft_sample_method": _STR,
    "rejection_sample_method": _STR,
    "use_heterogeneous_vocab": _BOOL,
    "use_local_argmax_reduction": _BOOL,
    "enable_adaptive_verification": _BOOL,
}
