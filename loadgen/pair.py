"""Pair and workload profiles: frozen dataclasses and strict TOML loading.

A pair file (``profiles/pairs/<name>.toml``) declares the target, the speculative config, how to start
the engine, the sampling, the workloads and concurrency levels, and the stop rule. Every key is
documented in ``profiles/README.md``. Unknown keys and wrong types are errors (:class:`ProfileError`,
exit 2) with one line naming the file, the key and the fix.

Relative model paths and engine commands are resolved against the current working directory (the
repository root when run through ``make``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadgen.errors import ProfileError

PAIRS_DIR = Path("profiles/pairs")
WORKLOADS_DIR = Path("profiles/workloads")

#: Fields of vLLM's ``SpeculativeConfig`` accepted in ``[speculative]`` (union over vLLM 0.15-0.33,
#: vllm/config/speculative.py). Per-version checks live in validate.py.
SPECULATIVE_KEYS = frozenset(
    {
        "method", "model", "num_speculative_tokens", "draft_tensor_parallel_size", "quantization",
        "max_model_len", "revision", "code_revision", "prompt_lookup_max", "prompt_lookup_min",
        "enforce_eager", "disable_padded_drafter_batch", "parallel_drafting", "rejection_sample_method",
        "draft_sample_method", "use_heterogeneous_vocab", "num_speculative_tokens_per_batch_size",
        "suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
        "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob", "attention_backend",
        "kv_cache_dtype", "synthetic_acceptance_rates", "synthetic_acceptance_length",
    }
)


@dataclass(frozen=True)
class ModelRef:
    """A model as the engine loads it: a local directory or a hub id, with an optional revision."""

    model: str
    revision: str | None = None


@dataclass(frozen=True)
class Engine:
    """How to start a vLLM OpenAI server. ``command`` is argv up to (not including) ``--model``."""

    command: tuple[str, ...]
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8300
    startup_timeout_s: float = 600.0
    seed: int = 0


@dataclass(frozen=True)
class Sampling:
    """Sampling sent identically to both servers (temperature 0 = greedy)."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0
    ignore_eos: bool = True


@dataclass(frozen=True)
class StopRule:
    """Per-cell stop rule, identical on both servers.

    A cell sends ``max(min_requests, rounds * concurrency)`` measured requests, after
    ``warmup_requests`` requests that are excluded from statistics.
    """

    min_requests: int = 8
    rounds: int = 2
    warmup_requests: int = 1

    def measured_requests(self, concurrency: int) -> int:
        """Number of measured requests in a cell at ``concurrency`` (int >= 1)."""
        return max(self.min_requests, self.rounds * concurrency)


@dataclass(frozen=True)
class Workload:
    """A synthetic prompt set (``profiles/workloads/<name>.toml``)."""

    name: str
    kind: str  # "short-homogeneous" | "long-diverse"
    endpoint: str  # "completions" | "chat"
    output_tokens: int
    seed: int = 0
    description: str = ""


@dataclass(frozen=True)
class Pair:
    """A draft/target pair to verify, with everything needed to measure it."""

    name: str
    path: Path
    target: ModelRef
    speculative: Mapping[str, Any]
    engine: Engine
    sampling: Sampling
    workloads: tuple[Workload, ...]
    concurrency: tuple[int, ...]
    stop: StopRule
    description: str = ""

    @property
    def num_speculative_tokens(self) -> int:
        """K, the declared number of speculative tokens per step."""
        return int(self.speculative["num_speculative_tokens"])

    @property
    def method(self) -> str:
        """The declared speculative method (``draft_model``, ``ngram``, ...)."""
        return str(self.speculative["method"])

    @property
    def draft(self) -> ModelRef | None:
        """The draft model, or None for methods without one (ngram, suffix)."""
        model = self.speculative.get("model")
        if model is None:
            return None
        return ModelRef(str(model), self.speculative.get("revision"))


def available_pairs(pairs_dir: Path = PAIRS_DIR) -> list[str]:
    """Names of the pair files in ``pairs_dir`` (sorted)."""
    return sorted(p.stem for p in pairs_dir.glob("*.toml"))


def resolve_pair_path(name_or_path: str, pairs_dir: Path = PAIRS_DIR) -> Path:
    """Map a pair name (``demo-cpu``) or a path to its TOML file.

    Raises ProfileError listing the available pairs when nothing matches.
    """
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" and candidate.is_file():
        return candidate
    by_name = pairs_dir / f"{name_or_path}.toml"
    if by_name.is_file():
        return by_name
    names = ", ".join(available_pairs(pairs_dir)) or "(none)"
    raise ProfileError(
        f"unknown pair {name_or_path!r}: no {by_name}; available pairs: {names} "
        f"(use PAIR=<name> or a path to a .toml file)"
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ProfileError(f"{path}: file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML ({exc}); fix the syntax") from None


class _Table:
    """Strict reader of one TOML table: every key read once, leftovers are errors."""

    def __init__(self, path: Path, where: str, data: Any) -> None:
        if not isinstance(data, dict):
            raise ProfileError(f"{path}: {where} must be a table")
        self.path, self.where, self.data, self.seen = path, where, data, set[str]()

    def _fail(self, key: str, expected: str) -> ProfileError:
        return ProfileError(
            f"{self.path}: {self.where}.{key} must be {expected}, got {self.data[key]!r}"
        )

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ..., expected: str = "") -> Any:
        self.seen.add(key)
        if key not in self.data:
            if default is ...:
                raise ProfileError(f"{self.path}: missing key {self.where}.{key}; add it (see profiles/README.md)")
            return default
        value = self.data[key]
        if isinstance(value, bool) and kind in (int, float, (int, float)):
            raise self._fail(key, expected or getattr(kind, "__name__", "a number"))
        if not isinstance(value, kind):
            raise self._fail(key, expected or getattr(kind, "__name__", str(kind)))
        return value

    def positive_int(self, key: str, default: Any = ...) -> int:
        value = self.get(key, int, default, "a positive integer")
        if value is not None and value < 1:
            raise self._fail(key, "a positive integer")
        return int(value)

    def str_list(self, key: str, default: Any = ...) -> tuple[str, ...]:
        value = self.get(key, list, default, "a list of strings")
        if not all(isinstance(v, str) for v in value):
            raise self._fail(key, "a list of strings")
        return tuple(value)

    def table(self, key: str, default: Any = ...) -> _Table:
        return _Table(self.path, f"[{key}]" if self.where == "" else f"{self.where}.{key}",
                      self.get(key, dict, default))

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.seen)
        if unknown:
            where = self.where or "top level"
            raise ProfileError(
                f"{self.path}: unknown key {unknown[0]!r} in {where}; "
                f"known keys: {', '.join(sorted(self.seen))} (see profiles/README.md)"
            )


def load_workload(name: str, workloads_dir: Path = WORKLOADS_DIR) -> Workload:
    """Load ``workloads_dir/<name>.toml`` strictly. Raises ProfileError."""
    path = workloads_dir / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in workloads_dir.glob("*.toml"))) or "(none)"
        raise ProfileError(f"unknown workload {name!r}: no {path}; available workloads: {known}")
    top = _Table(path, "", _read_toml(path))
    kind = top.get("kind", str)
    if kind not in ("short-homogeneous", "long-diverse"):
        raise ProfileError(f"{path}: kind must be 'short-homogeneous' or 'long-diverse', got {kind!r}")
    endpoint = top.get("endpoint", str, "completions")
    if endpoint not in ("completions", "chat"):
        raise ProfileError(f"{path}: endpoint must be 'completions' or 'chat', got {endpoint!r}")
    workload = Workload(
        name=top.get("name", str, name),
        kind=kind,
        endpoint=endpoint,
        output_tokens=top.positive_int("output_tokens"),
        seed=top.get("seed", int, 0),
        description=top.get("description", str, ""),
    )
    top.finish()
    return workload


def load_pair(name_or_path: str, pairs_dir: Path = PAIRS_DIR, workloads_dir: Path = WORKLOADS_DIR) -> Pair:
    """Load a pair profile strictly (unknown keys, wrong types and missing keys raise ProfileError)."""
    path = resolve_pair_path(name_or_path, pairs_dir)
    top = _Table(path, "", _read_toml(path))

    tgt = top.table("target")
    target = ModelRef(tgt.get("model", str), tgt.get("revision", str, None))
    tgt.finish()

    spec_table = top.table("speculative")
    spec = dict(spec_table.data)
    for key in spec:
        if key not in SPECULATIVE_KEYS:
            raise ProfileError(
                f"{path}: unknown key {key!r} in [speculative]; it is not a field of vLLM's speculative config "
                f"(known: {', '.join(sorted(SPECULATIVE_KEYS))})"
            )
    spec_table.seen.update(spec)
    method = spec_table.get("method", str)
    spec_table.positive_int("num_speculative_tokens")
    if method == "draft_model" and "model" not in spec:
        raise ProfileError(f"{path}: [speculative] method 'draft_model' needs model = <draft path or hub id>")

    eng = top.table("engine")
    env = eng.get("env", dict, {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ProfileError(f"{path}: [engine].env must map names to strings, e.g. {{ HF_HUB_OFFLINE = \"1\" }}")
    engine = Engine(
        command=eng.str_list("command"),
        args=eng.str_list("args", []),
        env=dict(env),
        host=eng.get("host", str, "127.0.0.1"),
        port=eng.positive_int("port", 8300),
        startup_timeout_s=float(eng.get("startup_timeout_s", (int, float), 600.0, "a number of seconds")),
        seed=eng.get("seed", int, 0),
    )
    if not engine.command:
        raise ProfileError(f"{path}: [engine].command must not be empty, e.g. [\"vllm\", \"serve\"]")
    eng.finish()

    smp = top.table("sampling", {})
    sampling = Sampling(
        temperature=float(smp.get("temperature", (int, float), 0.0, "a number")),
        top_p=float(smp.get("top_p", (int, float), 1.0, "a number")),
        seed=smp.get("seed", int, 0),
        ignore_eos=smp.get("ignore_eos", bool, True),
    )
    smp.finish()

    run = top.table("run")
    levels = run.get("concurrency", list, expected="a list of positive integers")
    if not levels or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in levels):
        raise ProfileError(f"{path}: [run].concurrency must be a non-empty list of positive integers, e.g. [1, 2, 4]")
    workload_names = run.str_list("workloads")
    if not workload_names:
        raise ProfileError(f"{path}: [run].workloads must name at least one workload")
    run.finish()

    st = top.table("stop", {})
    stop = StopRule(
        min_requests=st.positive_int("min_requests", 8),
        rounds=st.positive_int("rounds", 2),
        warmup_requests=int(st.get("warmup_requests", int, 1, "an integer >= 0")),
    )
    st.finish()

    pair = Pair(
        name=top.get("name", str, path.stem),
        description=top.get("description", str, ""),
        path=path,
        target=target,
        speculative=spec,
        engine=engine,
        sampling=sampling,
        workloads=tuple(load_workload(w, workloads_dir) for w in workload_names),
        concurrency=tuple(levels),
        stop=stop,
    )
    top.finish()
    return pair
