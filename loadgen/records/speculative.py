"""The speculative config (vLLM's ``--speculative-config`` JSON): :class:`SpeculativeConfig`, read from a pair
file's ``[speculative]`` table (profile/pairfile.py, after profile/domains.py checked its types), a sweep
candidate (records/candidates.py) or protocol.json's ``speculative_config`` (records/protocol.py).

The fields loadgen reads are typed (vLLM's ``SpeculativeConfig`` field types, vllm/config/speculative.py,
0.10-0.33; each may be absent: None); every other key the engine takes is kept as given in ``extra``, and
``keys`` keeps the table's own key order, so :meth:`SpeculativeConfig.to_json` gives back the same JSON
(protocol.json, the ``--speculative-config`` flag and committed examples stay byte-identical). A value of the
wrong kind raises BadInput (exit 2) with one line naming the source and the field, e.g.
``runs/x/protocol.json: speculative_config.num_speculative_tokens: expected an integer or null, got '3'; ...``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from loadgen.records.cardwire import Whole

#: vLLM 0.24+ per-batch-size K schedule key (vllm/config/speculative.py; docs/vllm-notes.md, fields table).
SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"


@dataclass(frozen=True)
class SpeculativeConfig(Whole):
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
    #: Written as read, or for one built in code its typed fields set, then ``extra`` (the engine's other keys).
    SPARSE: ClassVar[bool] = True
    TITLE: ClassVar[str] = "speculative config"
