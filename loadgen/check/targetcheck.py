"""Pre-flight checks of the target checkpoint (pure over its files; the caller locates the directory):
a speculators-format checkpoint used as the plain target, and the chat template that chat workloads need.

- **Speculators checkpoint as target**: a config.json with ``speculators_config`` makes vLLM serve the
  verifier it names with speculation on (``maybe_override_with_speculators``, vllm/transformers_utils/config.py,
  0.11+, https://github.com/vllm-project/vllm/pull/25250), so the "plain" server would speculate. The fix is
  the verifier (``speculators_config.verifier.name_or_path``) as ``[target].model``.
- **Chat template**: ``/v1/chat/completions`` renders the messages with the tokenizer's chat template
  (``--chat-template``, else ``chat_template`` in tokenizer_config.json or a ``chat_template.jinja`` /
  ``chat_template.json`` file beside it); without one vLLM answers each chat request with an error
  ("default chat template is no longer allowed", transformers 4.44+; vLLM docs "Chat Template",
  serving/openai_compatible_server.md). Read from the docs and code, not verified on a running engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from loadgen.check.finding import Finding
from loadgen.profile.pair import Pair
from loadgen.records.modelconfig import ModelConfig, read_model_json
from loadgen.util.argv import flag_value

#: Files beside the tokenizer that carry a chat template (transformers 4.43+ saves ``chat_template.jinja``).
TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")


def speculators_target(config: ModelConfig, where: str) -> list[Finding]:
    """Blocking finding when the target's config.json ``config`` (at ``where``) is a speculators-format
    checkpoint (has ``speculators_config``), naming its verifier as the fix; empty otherwise."""
    if not config.speculators:
        return []
    name = config.speculators_verifier
    algorithm = config.speculators_algorithm or config.speculators_model_type or "speculator"
    fix = (
        f'set [target].model = "{name}" (the verifier named in its speculators_config)'
        if isinstance(name, str) and name
        else "set [target].model to its verifier model (speculators_config.verifier names none)"
    )
    return [
        Finding(
            "target kind",
            False,
            True,
            f"{where} is a speculators-format checkpoint ({algorithm} draft, "
            "config.json speculators_config): vLLM 0.11+ serves it with speculation on, so the plain server "
            f"would not be plain; {fix} and put this checkpoint in [speculative].model",
            {"speculators_algorithm": algorithm, "verifier": name},
        )
    ]


def template_source(tokenizer_dir: Path) -> str | None:
    """Where ``tokenizer_dir`` keeps a chat template (``"tokenizer_config.json chat_template"`` or a
    :data:`TEMPLATE_FILES` name); None when it has none (an empty string or list counts as none)."""
    template = read_model_json(tokenizer_dir / "tokenizer_config.json").get("chat_template")
    if isinstance(template, str | list) and template:
        return "tokenizer_config.json chat_template"
    return next((name for name in TEMPLATE_FILES if (tokenizer_dir / name).is_file()), None)


def chat_template_findings(pair: Pair, target_dir: Path | None) -> list[Finding]:
    """Whether every launched server of ``pair`` can render its chat workloads: ``--chat-template`` in its
    args (``[engine].args`` + ``[servers.<role>].args``), else the chat template of its tokenizer
    (``--tokenizer`` when a local directory, else ``target_dir``). Attached servers (``url``) and a target
    that is not a local directory are not checked. Empty without chat workloads; else one finding."""
    chat = [w.name for w in pair.workloads if w.endpoint == "chat"]
    if not chat or target_dir is None:
        return []
    missing, sources = [], set()
    for role in ("plain", "speculative"):
        extra = pair.servers.get(role)
        if extra is not None and extra.url:
            continue
        args: Sequence[str] = [*pair.engine.args, *(extra.args if extra else ())]
        if flag_value(args, "--chat-template"):
            sources.add("--chat-template")
            continue
        tokenizer = flag_value(args, "--tokenizer")
        tok_dir = Path(tokenizer) if tokenizer and Path(tokenizer).is_dir() else target_dir
        found = template_source(tok_dir)
        if found is None:
            missing.append((role, tok_dir))
        else:
            sources.add(f"{tok_dir}: {found}")
    names = ", ".join(chat)
    if not missing:
        return (
            [
                Finding(
                    "chat template",
                    True,
                    False,
                    f"chat workloads ({names}) rendered with the chat template from {'; '.join(sorted(sources))}",
                )
            ]
            if sources
            else []
        )
    roles = " and ".join(r for r, _ in missing)
    return [
        Finding(
            "chat template",
            False,
            True,
            f"workload(s) {names} use the chat endpoint but the tokenizer "
            f"{missing[0][1]} has no chat template (no chat_template in tokenizer_config.json, no "
            f"chat_template.jinja) and the pair file gives none for the {roles} server: vLLM would refuse "
            'every chat request; add "--chat-template", "<template file>" to [engine].args, or use '
            "completions workloads",
            {"workloads": chat, "roles": [r for r, _ in missing]},
        )
    ]
