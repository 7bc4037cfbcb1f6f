"""Will the speculative server lose vLLM's asynchronous scheduling that the plain one keeps? (pure rules)

vLLM settles ``async_scheduling`` in ``VllmConfig.__post_init__`` (vllm/config/vllm.py):

- **left unset** (the default), it is on unless the speculative method is outside the EAGLE/MTP family and
  ``ngram_gpu``: vLLM 0.24.0 then logs ``Async scheduling not supported with <method>-based speculative
  decoding and will be disabled.`` for ``draft_model`` and ``ngram`` (seen on one H200,
  docs/examples/h200/README.md). vLLM PR #48341 ("Auto-enable async scheduling for draft models") made
  ``draft_model`` default to on; 0.32.0's source has it. ``ngram`` stays off in 0.32.0.
- **set explicitly** (``--async-scheduling``), vLLM 0.24.0 and 0.32.0 accept it with ``draft_model`` and
  ``ngram_gpu`` and refuse to start with ``ngram`` (``ValueError: Currently, async scheduling is only
  supported with EAGLE/MTP/Draft Model/NGram GPU kind of speculative decoding``).

A plain server keeps async scheduling on, so a speculative server without it pays for the lost overlap of
CPU scheduling with GPU work as well as for its draft: the step-time ratio of the card measures both. That
matters most for small, fast models, whose decode step is CPU- and launch-bound (a 135M target's step is
about 2 ms on an H200). The card shows what the server really did (its "engine path" line, from the
startup log); this check says it before anything starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from loadgen.check.finding import Finding
from loadgen.profile.fields import Version, parse_version

#: The releases whose rules above were read from the source or seen in a startup log.
KNOWN = (parse_version("0.24.0"), parse_version("0.32.0"))
#: vLLM PR #48341: draft_model defaults to async scheduling on (in 0.32.0; 0.24.0 lacks it).
DRAFT_DEFAULT_ON = parse_version("0.32.0")
CHECK = "async scheduling"


def explicit(args: Sequence[str]) -> bool | None:
    """``--async-scheduling`` (True) or ``--no-async-scheduling`` (False) in ``args``, the last one winning
    as in argparse; None when neither is given (vLLM decides)."""
    found = None
    for arg in args:
        flag, _, value = arg.partition("=")
        if flag == "--async-scheduling":
            found = value.lower() not in ("false", "0") if value else True
        elif flag == "--no-async-scheduling":
            found = False
    return found


def cpu_engine(engine_version: str | None, env: Mapping[str, str]) -> bool:
    """True for vLLM's CPU build, as loadgen can tell without starting it: a ``+cpu`` version suffix or a
    ``VLLM_CPU_*`` setting in the server's environment (every CPU pair sets ``VLLM_CPU_KVCACHE_SPACE``)."""
    return "+cpu" in (engine_version or "") or any(k.startswith("VLLM_CPU_") for k in env)


def async_findings(
    method: str | None,
    engine_version: str | None,
    plain_args: Sequence[str],
    spec_args: Sequence[str],
    env: Mapping[str, str] | None = None,
) -> list[Finding]:
    """The findings for the speculative ``method`` on vLLM ``engine_version`` with each server's whole
    argument list (``[engine].args`` + ``[servers.<role>].args``) and the speculative server's environment
    ``env``. A blocking finding when vLLM would refuse to start (``--async-scheduling`` with ``ngram``); a
    warning when the speculative server would run without async scheduling while the plain one keeps it;
    none otherwise, for a version outside 0.24-0.32 (the rules were not read there: the card's engine-path
    line says what happened), or on the CPU build, which runs every server without async scheduling
    (vllm/platforms/cpu.py, ``check_and_update_config``)."""
    try:
        version: Version | None = parse_version(engine_version) if engine_version else None
    except ValueError:
        version = None
    if version is None or not KNOWN[0][:2] <= version[:2] <= KNOWN[1][:2] or method not in ("ngram", "draft_model"):
        return []
    if cpu_engine(engine_version, env or {}):
        return []
    spec, plain = explicit(spec_args), explicit(plain_args)
    if method == "ngram" and spec is True:
        return [
            Finding(
                CHECK,
                False,
                True,
                f"vLLM {engine_version} refuses --async-scheduling with method ngram "
                "(only EAGLE/MTP, draft_model and ngram_gpu; vllm/config/vllm.py); remove the flag, or use "
                'method = "ngram_gpu", which keeps async scheduling',
            )
        ]
    if spec is not None or plain is False:  # set on purpose, or both servers run without it
        return []
    both_off = "or put --no-async-scheduling in [engine].args to compare without it on both"
    if method == "ngram":
        return [
            Finding(
                CHECK,
                False,
                False,
                f"vLLM {engine_version} turns async scheduling off for method ngram "
                "while the plain server keeps it, so the step-time ratio includes that loss; method = "
                f'"ngram_gpu" keeps it, {both_off}',
            )
        ]
    if version[:2] >= DRAFT_DEFAULT_ON[:2]:
        return []
    seen = "turns" if version[:2] == KNOWN[0][:2] else "may turn (0.24 does; PR #48341 made it default on)"
    return [
        Finding(
            CHECK,
            False,
            False,
            f"vLLM {engine_version} {seen} async scheduling off for draft_model by "
            "default although it supports it, while the plain server keeps it; add --async-scheduling to "
            f"[servers.speculative].args, {both_off}",
        )
    ]
