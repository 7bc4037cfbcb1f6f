"""Pair profiles: finding and strictly loading ``profiles/pairs/<name>.toml`` into a
:class:`~loadgen.profile.pair.Pair`.

A pair file (``profiles/pairs/<name>.toml``) declares the target, the speculative config, how to start
the engine, the sampling, the workloads and concurrency levels, and the stop rule. Every key is
documented in ``profiles/README.md``. Unknown keys and wrong types are errors (:class:`ProfileError`,
exit 2) with one line naming the file, the key and the fix.

Relative model paths and engine commands are resolved against the current working directory (the
repository root when run through ``make``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from loadgen.errors import ProfileError
from loadgen.profile.cells import PLACEBO, ROLES
from loadgen.profile.domains import PAIR_DOMAINS, check_document
from loadgen.profile.fields import ALL_FIELDS, FIELD_RANGES, LAST_KNOWN, history, parse_version
from loadgen.profile.overrides import Overrides, apply_overrides
from loadgen.profile.pair import SLO, Engine, Load, ModelRef, Pair, RoleServer, Sampling, StopRule, check_run_size
from loadgen.profile.pairpath import PAIRS_DIR, available_pairs, resolve_pair_path
from loadgen.profile.schedule import ARRIVALS
from loadgen.profile.tomlread import Table, read_toml
from loadgen.profile.workload import WORKLOADS_DIR
from loadgen.profile.workloadset import pair_workloads
from loadgen.records.candidates import is_sweep
from loadgen.records.criteria import Criteria, parse_criteria
from loadgen.records.design import Design, parse_design
from loadgen.records.speculative import SpeculativeConfig
from loadgen.records.wire import Where

#: Every field vLLM's ``SpeculativeConfig`` has had in 0.10-0.33 (profile/fields.py); per-version checks of
#: the installed engine happen in `loadgen check`.
SPECULATIVE_KEYS = ALL_FIELDS
__all__ = ["PAIRS_DIR", "available_pairs", "load_pair", "pair_name", "resolve_pair_path"]


def check_scope(criteria: Criteria | None, workloads: Sequence[str], concurrency: Sequence[int], path: Path) -> None:
    """Raise ProfileError when ``[criteria].workloads`` names a workload the pair does not run, or the
    ``[criteria].concurrency`` range holds none of the pair's levels (the verdict could judge nothing).
    No criteria: nothing to check."""
    if criteria is None:
        return
    missing = [w for w in criteria.workloads or () if w not in workloads]
    if missing:
        raise ProfileError(
            f"{path}: [criteria].workloads names {missing[0]!r}, which [run].workloads does not run "
            f"({', '.join(workloads)})"
        )
    if criteria.concurrency and not any(criteria.concurrency[0] <= c <= criteria.concurrency[1] for c in concurrency):
        raise ProfileError(
            f"{path}: [criteria].concurrency {list(criteria.concurrency)} holds none of the levels "
            f"{list(concurrency)}; widen it or add a level"
        )


def _load(run: Table, path: Path) -> Load:
    # element types and ranges: domains.PAIR_DOMAINS (checked before any table is read)
    levels = run.get("concurrency", list, [], "a list of positive integers")
    rates = run.get("rates_rps", list, [], "a list of request rates (req/s)")
    if not levels and not rates:
        raise ProfileError(
            f"{path}: [run] needs concurrency = [...] (closed loop) and/or rates_rps = [...] (open loop)"
        )
    arrival = run.get("arrival", str, "poisson")
    if arrival not in ARRIVALS:
        raise ProfileError(f"{path}: [run].arrival must be one of {', '.join(ARRIVALS)}, got {arrival!r}")
    burstiness = run.number("burstiness", 1.0, "a number > 0")
    return Load(
        concurrency=tuple(levels),
        rates_rps=tuple(float(r) for r in rates),
        arrival=arrival,
        burstiness=burstiness,
        max_concurrency=run.positive_int("max_concurrency", 256),
        repetitions=run.positive_int("repetitions", 1),
    )


def _seconds(t: Table, key: str) -> float | None:
    value = t.get(key, (int, float), None, "a number of seconds > 0")
    if value is not None and value <= 0:
        raise ProfileError(f"{t.path}: {t.where}.{key} must be a number of seconds > 0, got {value!r}")
    return None if value is None else float(value)


def _role_server(roles: Table, role: str, path: Path) -> RoleServer:
    t = roles.table(role)
    env = t.get("env", dict, {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ProfileError(
            f'{path}: [servers.{role}].env must map names to strings, e.g. {{ CUDA_VISIBLE_DEVICES = "0" }}'
        )
    url, metrics_url = t.get("url", str, None), t.get("metrics_url", str, None)
    for key, value in (("url", url), ("metrics_url", metrics_url)):
        if value is not None and not value.startswith(("http://", "https://")):
            raise ProfileError(f"{path}: [servers.{role}].{key} must start with http:// or https://, got {value!r}")
    log = t.get("log", str, None)
    if log is not None:
        log = str(Path(log) if Path(log).is_absolute() else path.parent / log)
        if not Path(log).is_file():
            raise ProfileError(
                f"{path}: [servers.{role}].log {log!r} is not a file; give the attached server's startup log "
                "(its stdout as vLLM printed it) or drop the key"
            )
    out = RoleServer(
        args=t.str_list("args", []),
        env=dict(env),
        port=t.positive_int("port", None) if "port" in t.data else None,
        url=url,
        log=log,
        metrics_url=metrics_url,
    )
    t.finish()
    return out


def pair_name(name: str, path: Path) -> str:
    """The pair's name, which names its run folders (``runs/<name>/``): letters, digits, ``.``, ``_``, ``-``."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ProfileError(
            f"{path}: name = {name!r} cannot name a run folder; use letters, digits, '.', '_' and '-' "
            "(starting with a letter or digit)"
        )
    return name


def _target(top: Table) -> ModelRef:
    tgt = top.table("target")
    target = ModelRef(tgt.get("model", str), tgt.get("revision", str, None))
    tgt.finish()
    return target


def _speculative(top: Table, path: Path) -> SpeculativeConfig:
    spec_table = top.table("speculative")
    spec = dict(spec_table.data)
    for key in spec:
        if key not in SPECULATIVE_KEYS:
            why = history(key, FIELD_RANGES, parse_version(LAST_KNOWN))
            raise ProfileError(
                f"{path}: unknown key {key!r} in [speculative]: not a field of vLLM's speculative "
                f"config ({why}); see profiles/README.md"
            )
    spec_table.seen.update(spec)
    method = spec_table.get("method", str)
    spec_table.positive_int("num_speculative_tokens")
    if method == "draft_model" and "model" not in spec:
        raise ProfileError(f"{path}: [speculative] method 'draft_model' needs model = <draft path or hub id>")
    return SpeculativeConfig.read_at(spec, Where(str(path), "[speculative]", "fix the pair file (profiles/README.md)"))


def _engine(top: Table, path: Path) -> Engine:
    eng = top.table("engine")
    env = eng.get("env", dict, {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ProfileError(f'{path}: [engine].env must map names to strings, e.g. {{ HF_HUB_OFFLINE = "1" }}')
    engine = Engine(
        command=eng.str_list("command"),
        args=eng.str_list("args", []),
        env=dict(env),
        host=eng.get("host", str, "127.0.0.1"),
        port=eng.positive_int("port", 8300),
        startup_timeout_s=eng.number("startup_timeout_s", 600.0, "a number of seconds"),
        seed=eng.get("seed", int, 0),
    )
    if not engine.command:
        raise ProfileError(f'{path}: [engine].command must not be empty, e.g. ["vllm", "serve"]')
    eng.finish()
    return engine


def _sampling(top: Table) -> Sampling:
    smp = top.table("sampling", {})
    sampling = Sampling(
        temperature=smp.number("temperature", 0.0),
        top_p=smp.number("top_p", 1.0),
        seed=smp.get("seed", int, 0),
        ignore_eos=smp.get("ignore_eos", bool, True),
        top_k=smp.get("top_k", int, -1),
        min_p=smp.number("min_p", 0.0),
        repetition_penalty=smp.number("repetition_penalty", 1.0),
        presence_penalty=smp.number("presence_penalty", 0.0),
        frequency_penalty=smp.number("frequency_penalty", 0.0),
    )
    smp.finish()
    return sampling


def _run(top: Table, path: Path) -> tuple[Load, tuple[str, ...], int | None, int | None, bool]:
    """[run]: the load, the workload names, the output / input token overrides and whether prompt-file lines
    may be skipped (``allow_skipped_lines``, check/promptlines.py)."""
    run = top.table("run")
    load = _load(run, path)
    workload_names = run.str_list("workloads")
    if not workload_names:
        raise ProfileError(f"{path}: [run].workloads must name at least one workload")
    output_tokens = run.positive_int("output_tokens", None) if "output_tokens" in run.data else None
    input_tokens = run.positive_int("input_tokens", None) if "input_tokens" in run.data else None
    allow_skipped = run.get("allow_skipped_lines", bool, False)
    run.finish()
    return load, workload_names, output_tokens, input_tokens, allow_skipped


def _stop(top: Table, path: Path) -> StopRule:
    st = top.table("stop", {})
    warmup = st.get("warmup_requests", int, 1, "an integer >= 0")
    duration = st.get("duration_s", (int, float), None, "a number of seconds > 0")
    read_timeout = st.get("read_timeout_s", (int, float), None, "a number of seconds > 0")
    if read_timeout is not None and not read_timeout > 0:
        raise ProfileError(f"{path}: [stop].read_timeout_s must be a number of seconds > 0, e.g. 60")
    if warmup < 0 or (duration is not None and duration <= 0):
        raise ProfileError(f"{path}: [stop].warmup_requests must be >= 0 and duration_s > 0")
    stop = StopRule(
        min_requests=st.positive_int("min_requests", 8),
        rounds=st.positive_int("rounds", 2),
        warmup_requests=warmup,
        duration_s=None if duration is None else float(duration),
        max_requests=st.positive_int("max_requests", 1000),
        cooldown=st.get("cooldown", bool, True),
        max_error_rate=st.number("max_error_rate", 0.0, "a fraction between 0 and 1"),
        on_error_budget=st.get("on_error_budget", str, "stop"),
        read_timeout_s=None if read_timeout is None else float(read_timeout),
    )
    if not 0 <= stop.max_error_rate <= 1 or stop.on_error_budget not in ("stop", "continue"):
        raise ProfileError(f"{path}: [stop].max_error_rate must be in [0, 1] and on_error_budget 'stop' or 'continue'")
    st.finish()
    return stop


def _slo(top: Table) -> SLO:
    slo_table = top.table("slo", {})
    slo = SLO(
        percentile=slo_table.number("percentile", 99.0, "a percentile (0-100]"),
        **{k: _seconds(slo_table, k) for k in ("ttft_s", "tpot_s", "e2e_s")},
    )
    slo_table.finish()
    return slo


def _servers(top: Table, path: Path) -> dict[str, RoleServer]:
    roles = top.table("servers", {})
    role_servers = {role: _role_server(roles, role, path) for role in (*ROLES, PLACEBO) if role in roles.data}
    roles.finish()
    return role_servers


def _design(top: Table, load: Load, path: Path) -> Design:
    """[design] (records/design.py); an older file's ``[run].repetitions`` gives the blocks when [design] does
    not."""
    table = top.get("design", dict, None)
    if load.repetitions > 1 and "blocks" not in (table or {}):
        table = {**(table or {}), "blocks": load.repetitions}
    return parse_design(table, path)


def load_pair(
    name_or_path: str,
    pairs_dir: Path = PAIRS_DIR,
    workloads_dir: Path = WORKLOADS_DIR,
    beside: Path | None = None,
    overrides: Overrides | None = None,
) -> Pair:
    """Load a pair profile strictly (unknown keys, wrong types and missing keys raise ProfileError), one
    table at a time in the file's order of checks; ``overrides`` (the command line's, profile/overrides.py)
    are written into the document first and checked like the file's own values. A workload given as a
    relative path is looked up from the current directory, else from ``beside`` (default: the pair file's
    folder; a run folder's copy passes the original's, profile/locate.py)."""
    path = resolve_pair_path(name_or_path, pairs_dir)
    doc = apply_overrides(read_toml(path), overrides, path)
    if is_sweep(doc):
        raise ProfileError(
            f"{path} is a sweep pair file (a K list or [[candidates]]): run `loadgen sweep "
            f"{shlex.quote(name_or_path)}` (make sweep PAIR=...), or give [speculative] one K"
        )
    check_document(path, doc, PAIR_DOMAINS)
    top = Table(path, "", doc)
    target, spec, engine, sampling = _target(top), _speculative(top, path), _engine(top, path), _sampling(top)
    load, workload_names, output_tokens, input_tokens, allow_skipped = _run(top, path)
    stop = _stop(top, path)
    table = top.get("criteria", dict, None)
    criteria = None if table is None else parse_criteria(table, path)
    slo = _slo(top)
    design = _design(top, load, path)
    role_servers = _servers(top, path)
    check_run_size(path, load, stop, engine.port, role_servers.get("speculative"))
    pair = Pair(
        name=pair_name(top.get("name", str, path.stem), path),
        description=top.get("description", str, ""),
        path=path,
        target=target,
        speculative=spec,
        engine=engine,
        sampling=sampling,
        workloads=pair_workloads(
            workload_names, workloads_dir, target.model, engine.args, output_tokens, input_tokens, beside or path.parent
        ),
        load=load,
        stop=stop,
        criteria=criteria,
        slo=slo,
        servers=role_servers,
        design=design,
        allow_skipped_lines=allow_skipped,
        overrides=overrides or None,
    )
    top.finish()
    names = [n for w in pair.workloads for n in (w.name, w.name.split("@")[0])]
    check_scope(criteria, names, [lv.concurrency for lv in load.levels()], path)
    return pair
