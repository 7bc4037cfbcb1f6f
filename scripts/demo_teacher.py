"""The demo draft's teacher data (used by ``scripts/build_demo_models.py``): the target's greedy continuations
of the distillation prompts, shipped as token ids in ``scripts/demo_teacher.json``, the target's top-k
logits on them by teacher forcing, shipped in ``scripts/demo_teacher_topk.npy``, and the output of the
target's first layers on them, which the build computes.

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
positions ``generate`` scored one at a time), with the LM head applied only to the generated positions
(``top_k``: about 38 s on 2 cores). The default build reads them from the top-k file, which
``--regenerate-teacher`` computes again and checks byte for byte as well; a build refuses a top-k file that
does not hold one record per continuation token with the continuation's token as the best (``load_top_k``).
The distillation then needs only the output of the draft's frozen layers, the target's first ones
(``frozen``: about 9 s on 2 cores under bf16 autocast, or in float32 on a CPU without bf16 instructions).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from demo_distill import DRAFT_LAYERS, GEN_BATCH, TOP_K, TRAIN_LAYERS, autocast, prompts

TEACHER_FILE = Path(__file__).resolve().parent / "demo_teacher.json"
#: the target's top-k on the shipped continuations (``top_k``), one ``TOP_K_DTYPE`` record per token
TOP_K_FILE = Path(__file__).resolve().parent / "demo_teacher_topk.npy"
#: a top-k record: token ids (uint16: the vocabulary has 49,152 entries) and logits minus the best (float16)
TOP_K_DTYPE = [("top_i", "<u2", (TOP_K,)), ("top_v", "<f2", (TOP_K,))]
#: what ``generation_sha256`` covers besides the prompts: the decoding that produced the continuations
GENERATION = {
    "decoding": "greedy",
    "eos": "masked (min_new_tokens = max_new_tokens)",
    "dtype": "float32",
    "device": "cpu",
}
FORWARD_BATCH = 32  # sequences per teacher-forcing forward pass


class TeacherError(Exception):
    """The shipped teacher file is missing, unreadable or made for another target or recipe: one line."""


def generation_sha256(prompt_ids: list[list[int]], lengths: list[int]) -> str:
    """sha256 (hex) of the prompts' token ids, their output lengths and ``GENERATION``: what the
    continuations depend on besides the target's weights."""
    blob = json.dumps({"prompts": prompt_ids, "lengths": lengths, **GENERATION}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def encode(continuations: list[list[int]], gguf_sha256: str, recipe_sha256: str) -> bytes:
    """The teacher file's bytes: a JSON object with one continuation (token ids) per line, so the same
    continuations always give the same bytes."""
    head = {
        "about": "greedy continuations of the demo target (scripts/demo_teacher.py)",
        "gguf_sha256": gguf_sha256,
        "generation_sha256": recipe_sha256,
        "prompts": len(continuations),
        "tokens": sum(len(c) for c in continuations),
    }
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
        raise TeacherError(
            f"{path}: not a readable teacher file ({exc}); restore it from git or rebuild it with --regenerate-teacher"
        ) from exc
    if found != (gguf_sha256, recipe_sha256):
        raise TeacherError(
            f"{path}: made for GGUF sha256 {found[0]} and generation {found[1]}, not this "
            f"build's {gguf_sha256} and {recipe_sha256}; rebuild it with --regenerate-teacher"
        )
    shapes = [len(c) if isinstance(c, list) and all(type(t) is int for t in c) else -1 for c in continuations]
    if shapes != lengths:
        raise TeacherError(
            f"{path}: continuations of lengths {shapes[:4]}... do not match the prompts' "
            f"{lengths[:4]}...; restore it from git or rebuild it with --regenerate-teacher"
        )
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
            batch = group[start : start + gen_batch]
            width = max(len(encoded[i]) for i in batch)
            ids = torch.full((len(batch), width), pad)
            mask = torch.zeros_like(ids)
            for j, i in enumerate(batch):  # left padding
                ids[j, width - len(encoded[i]) :] = torch.tensor(encoded[i])
                mask[j, width - len(encoded[i]) :] = 1
            with torch.no_grad():
                out = model.generate(
                    input_ids=ids.to(device),
                    attention_mask=mask.to(device),
                    max_new_tokens=n,
                    min_new_tokens=n,
                    do_sample=False,
                    pad_token_id=pad,
                )
            for j, i in enumerate(batch):
                rows[i] = [int(t) for t in out[j, width:].cpu()]
    return [rows[i] for i in range(len(encoded))]


def top_k(model: Any, tok: Any, continuations: list[list[int]], device: str = "cpu") -> Any:
    """Teacher forcing: one forward pass of the target over each prompt + continuation (the same causal
    positions ``generate`` scored one at a time; batches of similar length, right padding, which causal
    attention keeps from real tokens), the LM head applied only at the positions that predict a continuation
    token. Returns the target's top-``TOP_K`` there as ``TOP_K_DTYPE`` records, one per continuation token in
    prompt order, shape (total continuation tokens,): ``top_i`` the token ids (best first, so ``top_i[:, 0]``
    is the greedy token), ``top_v`` the logits minus the best one's, rounded to float16 (softmax is unchanged
    by the shift, and the shift keeps float16's precision where the probability mass is)."""
    import numpy as np
    import torch

    encoded, _ = encoded_prompts(tok)
    seqs = [p + c for p, c in zip(encoded, continuations, strict=True)]
    starts = np.cumsum([0] + [len(c) for c in continuations])
    out = np.zeros(int(starts[-1]), dtype=TOP_K_DTYPE)
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    for first in range(0, len(order), FORWARD_BATCH):
        batch = order[first : first + FORWARD_BATCH]
        width = max(len(seqs[i]) for i in batch) - 1  # the last token predicts nothing kept
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        sel = torch.zeros((len(batch), width), dtype=torch.bool)
        for j, i in enumerate(batch):
            p, n = len(encoded[i]), len(continuations[i])
            ids[j, : p + n - 1] = torch.tensor(seqs[i][:-1])
            sel[j, p - 1 : p + n - 1] = True
        with torch.no_grad():
            last = model.model(input_ids=ids.to(device)).last_hidden_state[sel.to(device)]
            values, index = model.lm_head(last).float().topk(TOP_K, -1)
        values, index, at = (values - values[:, :1]).cpu().numpy(), index.cpu().numpy(), 0
        for i in batch:  # sel is row-major: the batch's rows in order, each its continuation's positions
            n = len(continuations[i])
            out["top_v"][starts[i] : starts[i] + n] = values[at : at + n]
            out["top_i"][starts[i] : starts[i] + n] = index[at : at + n]
            at += n
    return out


def encode_top_k(records: Any) -> bytes:
    """The top-k file's bytes: ``records`` (``TOP_K_DTYPE``) as one ``.npy`` array (numpy's format: a fixed
    header, then the records little-endian), so the same records always give the same bytes."""
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(records, dtype=TOP_K_DTYPE), allow_pickle=False)
    return buffer.getvalue()


def load_top_k(path: Path, continuations: list[list[int]], eos: int) -> Any:
    """The top-k records in the file at ``path``, checked against the continuations they were computed on:
    one record per continuation token, ``TOP_K_DTYPE``, and each record's best token is the continuation's
    token (the continuations are the target's greedy choices), or is ``eos`` with the continuation's token
    second (EOS was masked while generating); TeacherError otherwise."""
    import numpy as np

    try:
        records = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise TeacherError(
            f"{path}: not a readable top-k file ({exc}); restore it from git or rebuild it with --regenerate-teacher"
        ) from exc
    tokens = np.array([t for c in continuations for t in c], dtype=np.int64)
    if records.dtype != np.dtype(TOP_K_DTYPE) or records.shape != tokens.shape:
        raise TeacherError(
            f"{path}: {records.shape} records of {records.dtype}, not {tokens.shape} of "
            f"{TOP_K_DTYPE} (one top-{TOP_K} per continuation token); rebuild it with "
            "--regenerate-teacher"
        )
    best, second = records["top_i"][:, 0], records["top_i"][:, 1]
    wrong = int(((best != tokens) & ((best != eos) | (second != tokens))).sum())
    if wrong:
        raise TeacherError(
            f"{path}: the best token differs from the continuation's at {wrong} of {tokens.size} "
            f"positions (made from other continuations); rebuild it with --regenerate-teacher"
        )
    return records


def frozen(
    model: Any, tok: Any, continuations: list[list[int]], records: Any, device: str = "cpu"
) -> list[dict[str, Any]]:
    """The distillation rows, one per prompt: ``ids`` (prompt + continuation), ``prompt_len``, ``top_v``
    (float32) and ``top_i`` (int64), shape (continuation length, TOP_K), from ``records``, and ``frozen``, the
    output of the target's layer ``DRAFT_LAYERS - TRAIN_LAYERS`` at every position but the last, shape
    (length - 1, hidden size): the draft's frozen layers are the target's first ones, so only those layers
    run here (under bf16 autocast: about half the float32 time on a CPU with bf16 instructions; the output is
    returned in float32; batches of similar length, right padding under causal attention as in ``top_k``);
    the distillation need not run them again. Rows come back on the CPU."""
    import torch

    encoded, _ = encoded_prompts(tok)
    seqs = [torch.tensor(p + c) for p, c in zip(encoded, continuations, strict=True)]
    layers = model.model.layers[: DRAFT_LAYERS - TRAIN_LAYERS]
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    hidden: dict[int, Any] = {}
    for first in range(0, len(order), FORWARD_BATCH):
        batch = order[first : first + FORWARD_BATCH]
        width = max(len(seqs[i]) for i in batch) - 1
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        for j, i in enumerate(batch):
            ids[j, : len(seqs[i]) - 1] = seqs[i][:-1]
        with torch.no_grad(), autocast(device):
            x = model.model.embed_tokens(ids.to(device))
            pos = torch.arange(width, device=x.device)[None].expand(len(batch), -1)
            emb = model.model.rotary_emb(x, pos)
            for layer in layers:
                x = layer(x, position_ids=pos, position_embeddings=emb)
        for j, i in enumerate(batch):
            hidden[i] = x[j, : len(seqs[i]) - 1].float().cpu()
    top_v = torch.from_numpy(records["top_v"].astype("float32"))
    top_i = torch.from_numpy(records["top_i"].astype("int64"))
    rows, at = [], 0
    for i, seq in enumerate(seqs):
        n = len(continuations[i])
        rows.append(
            {
                "ids": seq,
                "prompt_len": len(encoded[i]),
                "top_v": top_v[at : at + n],
                "top_i": top_i[at : at + n],
                "frozen": hidden[i],
            }
        )
        at += n
    return rows
