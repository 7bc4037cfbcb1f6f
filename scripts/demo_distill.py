"""The demo draft's distillation recipe (used by ``scripts/build_demo_models.py``): the seeded prompts, the
target's greedy teacher data, and the layer-cut draft trained against it.

The draft keeps the target's first ``DRAFT_LAYERS`` layers and tied embeddings. A cut alone agrees with
the target on about 5% of greedy tokens, so its last ``TRAIN_LAYERS`` layers and final norm are
distilled: the target writes greedy continuations (EOS masked, as under vLLM's ``min_tokens``) of seeded
raw-text and chat prompts, and the draft learns the target's top-``TOP_K`` next-token distribution at
every generated position (soft cross-entropy, AdamW, linear decay). The teacher data comes from
``scripts/demo_teacher.py``: for the default build the continuations and the target's top-k on them are
shipped, so the build runs the target only through the draft's frozen layers (they are the target's first
ones, under bf16 autocast), once, and a training step runs only the trained layers and the LM head (bf16
autocast, on the GPU or a CPU with bf16 instructions; float32 on a CPU without them: :func:`native_bf16`).

Where the numbers come from: on a 2-core CPU a 12-layer cut trained this way on ~10k target tokens
reached about 30% greedy agreement on held-out prompts and more data helped more than more trained
layers or more steps (sweeps of layer count, trained layers, lr, steps and data size). Version 2 of the
recipe kept the data and traded 300 steps on the top-32 at lr 3e-3 (held-out agreement 0.515) for 200
steps on the top-8 at lr 5e-3 (0.480) and read the shipped continuations. Version 3 reads the shipped top-8
too, runs the frozen layers under bf16 autocast and trains 200 steps of 6 sequences at lr 6e-3 (0.494), for
a cold build of both models in under 60 s on 2 cores. At the same number of sequences trained on, smaller
batches did better: 150 steps of 8 at lr 7e-3 gave 0.463 (12% less time), 300 of 4 at 5e-3 0.528 (1.25x
the time); 200 of 8 at 5e-3 gave 0.477, 180 of 8 at 6e-3 0.472, 150 of 8 at 1e-2 0.447, 120 of 8 at 5e-3
0.407 (profiles/README.md, "Build time, and what was traded").

On a GPU (``device="cuda"``) the same steps run there, with the seeded batch order drawn on the CPU as
before; the teacher generates ``gen_batch`` prompts at a time. The numbers differ in the last bits
from a CPU build, so the build marker records the device (``build_demo_models.recipes``).
"""

from __future__ import annotations

import copy
import functools
import random
import time
from pathlib import Path
from typing import Any

DRAFT_LAYERS = 12  # layers kept from the target's 30
TRAIN_LAYERS = 2  # last layers of the draft that are trained (plus the final norm)
TOP_K = 8  # teacher distribution kept per position
TRAIN_VOCAB = "teacher"  # "teacher": score only tokens seen in some teacher top-k; "full": all
GEN_BATCH = 64  # prompts per teacher generate() call on the CPU
GPU_GEN_BATCH = 256  # on a GPU: every prompt of one output length in one call
RAW_PROMPTS, RAW_TOKENS = 224, 36
CHAT_PROMPTS, CHAT_TOKENS = 40, 64
HELD_OUT = 16  # raw + chat prompts generated but never trained on: the reported agreement
STEPS, BATCH, LR, SEED = 200, 6, 6e-3, 0
PROGRESS_EVERY = 50  # distillation steps between two progress lines
RECIPE: dict[str, Any] = {
    "version": 3,
    "draft_layers": DRAFT_LAYERS,
    "train_layers": TRAIN_LAYERS,
    "top_k": TOP_K,
    "train_vocab": TRAIN_VOCAB,
    "raw": [RAW_PROMPTS, RAW_TOKENS],
    "chat": [CHAT_PROMPTS, CHAT_TOKENS],
    "held_out": HELD_OUT,
    "steps": STEPS,
    "batch": BATCH,
    "lr": LR,
    "seed": SEED,
}

# Distillation prompts: continuations in the style of the benchmark's workloads (loadgen/profile/workload.py) but
# never its templates or fill-ins, and chat questions. The benchmark's own prompts stay unseen.
RAW_TEMPLATES = (
    "The story of {topic} started when",
    "A brief history of {topic}: it all began when",
    "The early history of {topic} goes back to",
    "Here is a tale about a {adj} {animal}:",
    "Here is a little story about a {adj} {animal} and its friends:",
    "Below is a bedtime story about a {adj} {animal}:",
    "In a few words, {city} is famous for",
    "In one paragraph, {city} can be described as",
    "Put simply, {city} is best known for",
    "The first thing you should know about {topic} is that",
    "The most surprising fact about {topic} is that",
    "One thing everyone should know about {topic} is that",
    "Long ago, a {adj} {animal} lived near {city}. One morning,",
    "There once was a {adj} {animal} who lived in {city}. Every day,",
    "Once, in the city of {city}, there lived a {adj} {animal}. One evening,",
    "{city} is a city where",
    "Q: What is {topic}?\nA:",
    "Scientists who study {topic} have found that",
)
CHAT_TEMPLATES = (
    "Give me a few practical tips for {subject}.",
    "Explain {subject} in simple words.",
    "Write a short note to a friend about {subject}.",
    "Write a few lines of verse about {subject}.",
    "What are the pros and cons of {subject}?",
    "How should a beginner start with {subject}?",
    "Write a small Python example about {subject} and explain it.",
    "What is {topic}?",
)
FILL_INS = {
    "topic": (
        "the radio",
        "windmills",
        "the alphabet",
        "volcanoes",
        "honey bees",
        "the calendar",
        "silk",
        "rockets",
        "the microscope",
        "soap",
        "umbrellas",
        "lighthouses",
        "the submarine",
        "kites",
        "the typewriter",
        "salt",
        "the telephone",
        "mathematics",
        "chocolate",
        "the guitar",
        "cotton",
        "the airplane",
        "cheese",
        "paper",
        "the wheel",
        "electricity",
        "sugar",
        "the camera",
    ),
    "adj": (
        "shy",
        "wise",
        "hungry",
        "gentle",
        "proud",
        "quiet",
        "silly",
        "young",
        "fearless",
        "patient",
        "clumsy",
        "cheerful",
    ),
    "animal": (
        "penguin",
        "wolf",
        "elephant",
        "frog",
        "goat",
        "parrot",
        "lion",
        "mouse",
        "deer",
        "octopus",
        "hedgehog",
        "squirrel",
    ),
    "city": (
        "Berlin",
        "Madrid",
        "Mumbai",
        "Seoul",
        "Dublin",
        "Vienna",
        "Bangkok",
        "Chicago",
        "Istanbul",
        "Prague",
        "Athens",
        "Havana",
    ),
    "person": ("Marie", "a village baker", "Professor Lee", "my uncle", "the committee", "Sam"),
    "food": ("sushi", "pancakes", "lentil soup", "mango salad", "dumplings", "apple pie"),
    "subject": (
        "cooking rice",
        "learning to swim",
        "painting a room",
        "running a small shop",
        "walking a dog",
        "keeping a diary",
        "fixing a leaky tap",
        "growing herbs indoors",
        "saving energy at home",
        "reading more books",
        "counting words in a text",
        "organising a bookshelf",
    ),
}


class DistillError(Exception):
    """The target does not fit the recipe (shape or weights): reported as one line."""


def native_bf16(device: str, cpuinfo: str | None = None) -> bool:
    """Whether bf16 autocast runs on native bf16 instructions on ``device``: always on a GPU; on a CPU only with
    AVX512-BF16 or AMX (the ``avx512_bf16`` / ``amx_bf16`` flags of ``cpuinfo``, default Linux's
    /proc/cpuinfo; no file: False). Elsewhere torch emulates bf16: on an AVX-512 Xeon without those flags the
    LM head's product (1,800 x 576 by 576 x 49,152) took 2.32 s under bf16 autocast and 0.49 s in float32
    (measured 2026-12-03), so the build runs in float32 there (profiles/README.md, "Build time")."""
    if not device.startswith("cpu"):
        return True
    flags = _cpu_flags() if cpuinfo is None else frozenset(cpuinfo.split())
    return bool(flags & {"avx512_bf16", "amx_bf16"})


@functools.cache
def _cpu_flags() -> frozenset[str]:
    """The words of /proc/cpuinfo (empty without it), read once a process: autocast asks on every step."""
    path = Path("/proc/cpuinfo")
    return frozenset(path.read_text().split()) if path.is_file() else frozenset()


def autocast(device: str) -> Any:
    """bf16 autocast on ``device`` where it is native (:func:`native_bf16`), float32 (autocast off) elsewhere."""
    import torch

    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=native_bf16(device))


def prompts(tok: Any) -> tuple[list[str], list[int]]:
    """Seeded distillation prompts (raw text, then chat-formatted) and each one's output length."""
    rng = random.Random(SEED)

    def fill(template: str) -> str:
        return template.format(**{k: rng.choice(v) for k, v in FILL_INS.items()})

    raw = [fill(RAW_TEMPLATES[i % len(RAW_TEMPLATES)]) for i in range(RAW_PROMPTS + HELD_OUT)]
    chat = [
        tok.apply_chat_template(
            [{"role": "user", "content": fill(CHAT_TEMPLATES[i % len(CHAT_TEMPLATES)])}],
            tokenize=False,
            add_generation_prompt=True,
        )
        for i in range(CHAT_PROMPTS + HELD_OUT // 2)
    ]
    return raw + chat, [RAW_TOKENS] * len(raw) + [CHAT_TOKENS] * len(chat)


def _cut(target: Any, device: str) -> Any:
    """The draft: the target's first DRAFT_LAYERS layers and tied embeddings, on ``device``, frozen."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(SEED)
    config = copy.deepcopy(target.config)
    config.num_hidden_layers = DRAFT_LAYERS
    draft = LlamaForCausalLM(config)
    keep = {
        k: v
        for k, v in target.state_dict().items()
        if not k.startswith("model.layers.") or int(k.split(".")[2]) < DRAFT_LAYERS
    }
    missing, unexpected = draft.load_state_dict(keep, strict=False)
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise DistillError(f"draft weights do not match the target's: {missing} {unexpected}")
    draft.tie_weights()
    return draft.to(device).eval().requires_grad_(False)


def _tensors(data: list[dict[str, Any]], device: str) -> tuple[Any, Any, Any, Any]:
    """ids, teacher top-k values and indices, and the distilled positions' mask, padded, on ``device``."""
    import torch

    width = max(int(d["ids"].numel()) for d in data)
    ids = torch.full((len(data), width), 0)
    top_v = torch.zeros(len(data), width, TOP_K)
    top_i = torch.zeros(len(data), width, TOP_K, dtype=torch.long)
    mask = torch.zeros(len(data), width)
    for j, d in enumerate(data):  # position t predicts token t + 1
        n, p = int(d["ids"].numel()), d["prompt_len"]
        ids[j, :n] = d["ids"]
        top_v[j, p - 1 : n - 1], top_i[j, p - 1 : n - 1], mask[j, p - 1 : n - 1] = d["top_v"], d["top_i"], 1
    return ids.to(device), top_v.to(device), top_i.to(device), mask.to(device)


def distill(
    target: Any, data: list[dict[str, Any]], dest: Path, device: str = "cpu", save_dtype: str = "float32"
) -> float:
    """Cut the target to DRAFT_LAYERS layers, distill the last TRAIN_LAYERS on ``device``, save the draft
    to ``dest`` in ``save_dtype``; returns the greedy agreement on the held-out prompts."""
    import torch
    import torch.nn.functional as F

    draft = _cut(target, device)
    config = draft.config
    trained = draft.model.layers[DRAFT_LAYERS - TRAIN_LAYERS :]
    params = [p for layer in trained for p in layer.parameters()] + [draft.model.norm.weight]
    for p in params:
        p.requires_grad_(True)

    def run(layers: Any, x: Any) -> Any:
        pos = torch.arange(x.shape[1], device=x.device)[None].expand(x.shape[0], -1)
        emb = draft.model.rotary_emb(x, pos)
        for layer in layers:  # causal attention; right padding never reaches real tokens
            x = layer(x, position_ids=pos, position_embeddings=emb)
        return x

    ids, top_v, top_i, mask = _tensors(data, device)
    lengths = torch.tensor([int(d["top_v"].shape[0]) for d in data])
    hidden = torch.zeros(len(data), ids.shape[1], config.hidden_size, device=device)
    for j, d in enumerate(data):  # the frozen layers' output: the target's, from teacher forcing (demo_teacher)
        hidden[j, : d["frozen"].shape[0]] = d["frozen"].to(device)
    held_out = set(range(RAW_PROMPTS, RAW_PROMPTS + HELD_OUT)) | set(range(len(data) - HELD_OUT // 2, len(data)))
    held = torch.tensor(sorted(held_out)).to(device)
    train = torch.tensor([i for i in range(len(data)) if i not in held_out])

    # Training scores only the tokens that appear in some teacher top-k (about a third of the vocabulary):
    # the LM head is most of a step's cost. Agreement is measured over the full vocabulary.
    vocab = top_i[mask > 0].unique() if TRAIN_VOCAB == "teacher" else torch.arange(config.vocab_size, device=device)
    index = torch.full((config.vocab_size,), -1, dtype=torch.long, device=device)
    index[vocab] = torch.arange(len(vocab), device=device)
    head_sub = draft.lm_head.weight[vocab]

    def logits(rows: Any, full: bool = False) -> tuple[Any, Any]:
        """Draft logits (fp32) at the rows' distilled positions, and those positions' mask."""
        end = int(mask[rows].sum(0).nonzero().max()) + 1
        sel = mask[rows, :end] > 0
        with autocast(device):
            h = draft.model.norm(run(trained, hidden[rows, :end])[sel])
            z = draft.lm_head(h) if full else h @ head_sub.T
        return z.float(), sel

    def agreement() -> float:
        with torch.no_grad():
            z, sel = logits(held, full=True)
        return float((z.argmax(-1) == ids[held, 1 : sel.shape[1] + 1][sel]).float().mean())

    before = agreement()
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10) * (1 - s / STEPS))
    gen = torch.Generator().manual_seed(SEED)  # the batch order is drawn on the CPU on every device
    groups = [train[lengths[train] == n] for n in lengths[train].unique()]  # one output length per batch
    sizes = torch.tensor([float(len(g)) for g in groups])
    t0 = time.monotonic()
    for i in range(STEPS):
        if i and i % PROGRESS_EVERY == 0:  # a line now and then: a newcomer watching must see it move
            print(f"         step {i}/{STEPS} after {time.monotonic() - t0:.1f} s", flush=True)
        group = groups[int(torch.multinomial(sizes, 1, generator=gen))]
        rows = group[torch.randint(0, len(group), (BATCH,), generator=gen)].to(device)
        z, sel = logits(rows)
        end = sel.shape[1]
        teacher = F.softmax(top_v[rows, :end][sel], -1)
        loss = (torch.logsumexp(z, -1) - (teacher * z.gather(-1, index[top_i[rows, :end][sel]])).sum(-1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    after = agreement()
    print(f"         greedy agreement with the target on held-out prompts: {before:.3f} -> {after:.3f}")
    draft.requires_grad_(False)
    draft.to("cpu", dtype=getattr(torch, save_dtype)).save_pretrained(dest)
    return after
