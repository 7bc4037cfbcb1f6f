"""Profile domains: non-finite or absurd numbers, ports, run sizes, sampling and speculative-config fields
are refused with one line (ProfileError, exit 2) naming the key, never loaded or crashed on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadgen.cli import main
from loadgen.errors import ProfileError
from loadgen.profile.pairfile import load_pair

DEMO = Path("profiles/pairs/demo-cpu.toml").read_text()


def _pair(tmp_path: Path, old: str, new: str) -> Path:
    assert old in DEMO
    path = tmp_path / "p.toml"
    path.write_text(DEMO.replace(old, new, 1))
    return path


RUN = "concurrency = [1, 2, 4]"
BAD = [
    (RUN, RUN + "\nrates_rps = [inf]", r"\[run\]\.rates_rps\[0\] must be a finite"),
    (RUN, RUN + "\nrates_rps = [1e308]", r"\[run\]\.rates_rps\[0\] = 1e\+308 is out"),
    (RUN, RUN + "\nrates_rps = [1e9]", r"rates_rps\[0\] must be a number > 0 and <= 100,000"),
    (RUN, RUN + "\nburstiness = nan", r"\[run\]\.burstiness must be a finite"),
    ("startup_timeout_s = 600", "startup_timeout_s = nan", r"\[engine\]\.startup_timeout_s must be a finite"),
    (
        "startup_timeout_s = 600",
        "startup_timeout_s = 0",
        r"startup_timeout_s must be a number of seconds > 0 and <= 604,800 \(at most one week\)",
    ),
    ("min_speedup = 1.0", "min_speedup = inf", r"\[criteria\]\.min_speedup must be a finite"),
    ("ttft_s = 1.0", "ttft_s = nan", r"\[slo\]\.ttft_s must be a finite"),
    ("percentile = 99", "percentile = -inf", r"\[slo\]\.percentile must be a finite"),
    ("port = 8310", "port = 0", r"\[engine\]\.port must be an integer >= 1 and <= 65,535 \(a TCP port\)"),
    ("port = 8310", "port = 70000", r"\[engine\]\.port must be an integer >= 1 and <= 65,535"),
    ("port = 8310", "port = 65535", r"leaves no port for the speculative server"),
    (RUN, "concurrency = [1, 2, 1000000]", r"concurrency\[2\] must be an integer >= 1 and <= 100,000"),
    (RUN, RUN + "\nmax_concurrency = 10000000", r"max_concurrency must be an integer >= 1 and <= 100,000"),
    (RUN, "concurrency = [1, 2, 99999999999999999]", r"concurrency\[2\] must be an integer"),
    ("min_requests = 4", "min_requests = 100000000", r"min_requests must be an integer >= 1 and <= 10,000,000"),
    (
        "min_requests = 4",
        "min_requests = 10000000",
        r"cell c1 would send 10,000,001 requests; a cell holds at most "
        r"10,000,000",
    ),
    ("temperature = 0.0", "temperature = -0.5", r"\[sampling\]\.temperature must be a number >= 0 and <= 100"),
    ("top_p = 1.0", "top_p = 0", r"\[sampling\]\.top_p must be a number > 0 and <= 1"),
    ("top_p = 1.0", "top_p = 1.5", r"\[sampling\]\.top_p must be a number > 0 and <= 1"),
    (RUN, RUN + "\noutput_tokens = 0", r"output_tokens must be an integer >= 1 and"),
    (
        'model = ".models/smollm2-135m-draft"',
        "model = [1, 2]",
        r"\[speculative\]\.model must be a string, got \[1, 2\]",
    ),
    (
        "num_speculative_tokens = 2",
        "num_speculative_tokens = 0",
        r"num_speculative_tokens must be an integer >= 1 and <= 1,024",
    ),
    ("num_speculative_tokens = 2", "num_speculative_tokens = -3", r"num_speculative_tokens must be an integer"),
    ("num_speculative_tokens = 2", "num_speculative_tokens = 2.0", r"num_speculative_tokens must be an integer"),
    (
        "num_speculative_tokens = 2",
        "num_speculative_tokens = 2\nprompt_lookup_max = -1",
        r"\[speculative\]\.prompt_lookup_max must be an integer >= 1, got -1",
    ),
    (
        "num_speculative_tokens = 2",
        'num_speculative_tokens = 2\nuse_heterogeneous_vocab = "yes"',
        r"use_heterogeneous_vocab must be true or false",
    ),
    ("max_kv_capacity_loss = 0.5", "max_kv_capacity_loss = nan", r"max_kv_capacity_loss must be a finite"),
    (
        "max_regression = { ttft_p99 = 3.0 }",
        "max_regression = { ttft_p99 = inf }",
        r"\[criteria\.max_regression\]\.ttft_p99 must be a finite",
    ),
]


@pytest.mark.parametrize(("old", "new", "message"), BAD)
def test_out_of_domain_values_are_refused_with_one_line(tmp_path: Path, old: str, new: str, message: str) -> None:
    with pytest.raises(ProfileError) as info:
        load_pair(str(_pair(tmp_path, old, new)))
    text = str(info.value)
    assert re.search(message, text), text
    assert "\n" not in text and text.startswith(str(tmp_path / "p.toml"))


def test_limits_themselves_load(tmp_path: Path) -> None:
    text = (
        DEMO.replace("port = 8310", "port = 65534")
        .replace("top_p = 1.0", "top_p = 1")
        .replace(RUN, RUN + "\nmax_concurrency = 100000\nrates_rps = [100000]")
        .replace("temperature = 0.0", "temperature = 0")
    )
    path = tmp_path / "p.toml"
    path.write_text(text)
    pair = load_pair(str(path))
    path.write_text(text.replace("port = 65534", "port = 65535") + "\n[servers.speculative]\nport = 8000\n")
    assert load_pair(str(path)).engine.port == 65535
    assert pair.engine.port == 65534 and pair.load.max_concurrency == 100_000 and pair.load.rates_rps == (1e5,)


def test_workload_domains(tmp_path: Path) -> None:
    pairs, workloads = tmp_path / "pairs", tmp_path / "workloads"
    pairs.mkdir()
    workloads.mkdir()
    (pairs / "p.toml").write_text(DEMO.replace('["short-homogeneous", "long-diverse"]', '["w"]'))
    (workloads / "w.toml").write_text('kind = "short-homogeneous"\noutput_tokens = 32\nseed = nan\n')
    with pytest.raises(ProfileError, match=r"w\.toml: seed must be a finite number, got nan"):
        load_pair("p", pairs, workloads)
    (workloads / "w.toml").write_text('kind = "short-homogeneous"\noutput_tokens = 100000000\n')
    with pytest.raises(ProfileError, match=r"output_tokens must be an integer >= 1 and <= 10,000,000 \(tokens\)"):
        load_pair("p", pairs, workloads)


def test_cli_exits_2_with_one_line(tmp_path: Path) -> None:
    path = _pair(tmp_path, "startup_timeout_s = 600", "startup_timeout_s = nan")
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "startup_timeout_s must be a finite number" in result.output


def test_missing_table_is_named_as_a_table(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(DEMO.replace('[target]\nmodel = ".models/smollm2-135m-instruct"\n', ""))
    with pytest.raises(ProfileError, match=r"missing table \[target\]; add it"):
        load_pair(str(path))
