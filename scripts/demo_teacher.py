"""The demo draft's teacher data (used by ``scripts/build_demo_models.py``): the target's greedy continuations
of the distillation prompts, shipped as token ids in ``scripts/demo_teacher.json``, and the target's top-k
logits on them by teacher forcing.

The continuations are a deterministic function of the pinned GGUF (de-quantized to float32, greedy
decoding on the CPU, EOS masked as under vLLM's ``min_tokens``) and of the prompts
(``demo_distill.prompts``): generating them took about 77 s of a 2-core build, so the default CPU build
reads them from the file instead. The file records the GGUF's sha256 and ``generation_sha256``, a sha256 of
the prompts' token ids, their output lengths and these settings; a build refuses a file that does not
match. ``build_demo_models.py --regenerate-teacher`` generates them again and checks that the bytes are
identical to the shipped file (the proof that the recipe is reproducible bit for bit). Builds on another
device, in another dtype or from another target generate their own continuations as before.

The draft learns the target's top-k next-token distribution at every generated position; those logits
come from one forward pass of the target over prompt + continuation (teacher forcing: the same causal
positions ``generate`` scored one at a time), with the LM head applied only to the generated positions.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from demo_distill import DRAFT_LAYERS, GEN_BATCH, TOP_K, TRAIN_LAYERS, prompts

TEACHER_FILE = Path(__file__).resolve().parent / "demo_teacher.json"
#: what ``generation_sha256`` covers besides the prompts: the decoding that produced the continuations
GENERATION = {"decoding": "greedy", "eos": "masked (min_new_tokens = max_new_tokens)", "dtype": "float32",
              "device": "cpu"}
FORWARD_BATCH = 32  # sequences per teacher-forcing forward pass


class TeacherError(Exception):
    """The shipped teacher file is missing, unreadable or made for another target or recipe: one line."""


def generation_sha256(prompt_ids: list[list[int]], lengths: list[int]) -> str:
    """sha256 (hex) of the prompts' token ids, their output lengths and ``GENERATION``: what the
    continuations depend on besides the target's weights."""
    blob = json.dumps({"prompts": prompt_ids, "lengths": lengths, **GENERATION}, sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def encode(continuations: list[list[int]], gguf_sha256: str, recipe_sha256: str) -> bytes:
    """The teacher file's bytes: a JSON object with one continuation (token ids) per line, so the same
    continuations always give the same bytes."""
    head = {"about": "greedy continuations of the demo target (scripts/demo_teacher.py)",
            "gguf_sha256": gguf_sha256, "generation_sha256": recipe_sha256,
            "prompts": len(continuations), "tokens": sum(len(c) for c in continuations)}
    first = json.dumps(head, separators=(", ", ": "))[:-1] + ', "continuations": ['
    rows = [json.dumps(c, separators=(",", ":")) for c in continuations]
    return "\n".join([first, ",\n".join(rows), "]}\n"]).encode()


def load(path: Path, gguf_sha256: str, recipe_sha256: str, lengths: list[int]) -> list[list[int]]:
    """The continuations in the teacher file at ``path``, checked against the GGUF's and the generation's
    sha256 and the expected output length of each prompt; TeacherError otherwise."""
    try:
        data = json.loads(path.read_text())
        found = (data["gguf_sha256"], data["generation_sha256"])
        continuations = data["continuations"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TeacherError(f"{path}: not a readable teacher file ({exc}); restore it from git or rebuild "
                           "it with --regenerate-teacher") from exc
    if found != (gguf_sha256, recipe_sha256):
        raise TeacherError(f"{path}: made for GGUF sha256 {found[0]} and generation {found[1]}, not this "
                           f"build's {gguf_sha256} and {recipe_sha256}; rebuild it with --regenerate-teacher")
    shapes = [len(c) if isinstance(c, list) and all(type(t) is int for t in c) else -1 for c in continuations]
    if shapes != lengths:
        raise TeacherError(f"{path}: continuations of lengths {shapes[:4]}... do not match the prompts' "
                           f"{lengths[:4]}...; restore it from git or rebuild it with --regenerate-teacher")
    return [list(c) for c in continuations]


def encoded_prompts(tok: Any) -> tuple[list[list[int]], list[int]]:
    """The distillation prompts' token ids (no special tokens) and each one's output length."""
    texts, lengths = prompts(tok)
    return [list(tok(t, add_special_tokens=False).input_ids) for t in texts], lengths


def generate(model: Any, tok: Any, device: str = "cpu", gen_batch: int = GEN_BATCH) -> list[list[int]]:
    """The target's greedy continuations (token ids) of every distillation prompt, in prompt order
    (``model`` on ``device``; left padding, in batches of one output length)."""
    import torch

    encoded, lengths = encoded_prompts(tok)
    # transformers 5.x loads the GGUF's tokenizer without a pad token (seen with 5.17 on the GPU image): the
    # padding is masked out, so any id will do; the end-of-sequence token is the usual choice
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    rows: dict[int, list[int]] = {}
    for n in sorted(set(lengths)):
        group = sorted((i for i in range(len(encoded)) if lengths[i] == n), key=lambda i: len(encoded[i]))
        for start in range(0, len(group), gen_batch):
            batch = group[start:start + gen_batch]
            width = max(len(encoded[i]) for i in batch)
            ids = torch.full((len(batch), width), pad)
            mask = torch.zeros_like(ids)
            for j, i in enumerate(batch):  # left padding
                ids[j, width - len(encoded[i]):] = torch.tensor(encoded[i])
                mask[j, width - len(encoded[i]):] = 1
            with torch.no_grad():
                out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), max_new_tokens=n,
                                     min_new_tokens=n, do_sample=False, pad_token_id=pad)
            for j, i in enumerate(batch):
                rows[i] = [int(t) for t in out[j, width:].cpu()]
    return [rows[i] for i in range(len(encoded))]


def top_k(model: Any, tok: Any, continuations: list[list[int]], device: str = "cpu") -> list[dict[str, Any]]:
    """Teacher forcing: for each prompt, ``ids`` (prompt + continuation), ``prompt_len`` and the target's
    top-``TOP_K`` logits ``top_v`` (float32) and token ids ``top_i`` at each position that predicts a
    continuation token, shape (continuation length, TOP_K), and ``frozen``, the output of the target's layer
    ``DRAFT_LAYERS - TRAIN_LAYERS`` (the draft's frozen layers are the target's first ones) at every position
    but the last, shape (length - 1, hidden size), so the distillation need not run them again. One forward
    pass per batch of similar length (right padding: causal attention keeps it from real tokens); rows come
    back on the CPU."""
    import torch

    encoded, _ = encoded_prompts(tok)
    frozen_out = model.model.layers[DRAFT_LAYERS - TRAIN_LAYERS - 1]
    seqs = [torch.tensor(p + c) for p, c in zip(encoded, continuations, strict=True)]
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    rows: dict[int, dict[str, Any]] = {}
    for start in range(0, len(order), FORWARD_BATCH):
        batch = order[start:start + FORWARD_BATCH]
        width = max(len(seqs[i]) for i in batch) - 1  # the last token predicts nothing kept
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        sel = torch.zeros((len(batch), width), dtype=torch.bool)
        for j, i in enumerate(batch):
            p, n = len(encoded[i]), len(continuations[i])
            ids[j, :p + n - 1] = seqs[i][:-1]
            sel[j, p - 1:p + n - 1] = True
        seen: list[Any] = []
        hook = frozen_out.register_forward_hook(lambda _m, _a, out, seen=seen: seen.append(
            out[0] if isinstance(out, tuple) else out))
        try:
            with torch.no_grad():
                last = model.model(input_ids=ids.to(device)).last_hidden_state[sel.to(device)]
                top_v, top_i = model.lm_head(last).float().topk(TOP_K, -1)
        finally:
            hook.remove()
        top_v, top_i, frozen, at = top_v.cpu(), top_i.cpu(), seen[0].cpu(), 0
        for j, i in enumerate(batch):
            n = len(continuations[i])
            rows[i] = {"ids": seqs[i], "prompt_len": len(encoded[i]), "top_v": top_v[at:at + n],
                       "top_i": top_i[at:at + n], "frozen": frozen[j, :len(seqs[i]) - 1].clone()}
            at += n
    return [rows[i] for i in range(len(seqs))]
