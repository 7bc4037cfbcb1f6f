"""vLLM command-line arguments, read the way vLLM's argparse reads them (pure).

``--tensor_parallel_size`` and ``--tensor-parallel-size`` are the same flag (vLLM's FlexibleArgumentParser
turns underscores into dashes), ``--flag=value`` and ``--flag value`` the same value, and the last
occurrence wins (argparse).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def flag_name(arg: str) -> str:
    """The flag's canonical name: ``--a_b=1`` -> ``--a-b``; a short flag (``-tp``) as given."""
    name = arg.partition("=")[0]
    return "--" + name[2:].replace("_", "-") if name.startswith("--") else name


def flag_value(args: Sequence[str], *names: str) -> str | None:
    """The value of the last of ``names`` (canonical, e.g. ``--max-model-len``, ``-tp``) in ``args``;
    None when absent or given last without a value."""
    value = None
    for i, arg in enumerate(args):
        if flag_name(arg) in names:
            _, eq, inline = arg.partition("=")
            value = inline if eq else (args[i + 1] if i + 1 < len(args) else None)
    return value


def flags(args: Sequence[str], takes_value: Callable[[str], bool]) -> list[tuple[str, str | None]]:
    """Every flag of ``args`` as ``(canonical name, value or None)``; a flag written without ``=`` takes the
    next argument as its value when ``takes_value(name)`` and that argument is not itself a ``--`` flag."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, (_, eq, inline) = flag_name(arg), arg.partition("=")
        if eq:
            out.append((name, inline))
        elif takes_value(name) and i + 1 < len(args) and not args[i + 1].startswith("--"):
            out.append((name, args[i + 1]))
            i += 1
        elif arg.startswith("-"):
            out.append((name, None))
        i += 1
    return out


def vllm_int(text: str | None) -> int | None:
    """vLLM's human-readable ints: ``2048``, ``2k`` (x1000), ``2K`` (x1024), ``1m``/``1M``; None when not one."""
    if not text:
        return None
    scale = {"k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2}.get(text[-1], 1)
    digits = text[:-1] if scale > 1 else text
    return int(digits) * scale if digits.isdigit() else None
