"""pair.load_pair table by table on a minimal pair file: what each table loads to (defaults included) and
each table's one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.errors import ProfileError
from loadgen.profile.pair import Level, Load, RoleServer, Sampling, StopRule
from loadgen.profile.pairfile import load_pair, resolve_pair_path

BASE = """name = "mini"
[target]
model = "t"
[speculative]
method = "ngram"
num_speculative_tokens = 3
prompt_lookup_max = 4
[engine]
command = ["vllm", "serve"]
[run]
workloads = ["short-homogeneous"]
concurrency = [1, 2]
"""


def write(tmp_path: Path, text: str = BASE, extra: str = "") -> str:
    path = tmp_path / "mini.toml"
    path.write_text(text + extra)
    return str(path)


def test_a_minimal_pair_takes_every_default(tmp_path: Path) -> None:
    pair = load_pair(write(tmp_path))
    assert (pair.name, pair.description, pair.method, pair.num_speculative_tokens) == ("mini", "", "ngram", 3)
    assert pair.draft is None and pair.target.model == "t" and pair.target.revision is None
    assert (pair.engine.command, pair.engine.args, pair.engine.host, pair.engine.port) == (
        ("vllm", "serve"),
        (),
        "127.0.0.1",
        8300,
    )
    assert pair.engine.startup_timeout_s == 600.0 and pair.engine.env == {}
    assert pair.sampling == Sampling(0.0, 1.0, 0, True)
    assert pair.load == Load((1, 2), (), "poisson", 1.0, 256, 1)
    assert pair.stop == StopRule()
    assert pair.criteria is None and pair.slo.limits() == {} and pair.servers == {}
    assert [w.name for w in pair.workloads] == ["short-homogeneous"]


def test_the_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    assert load_pair(write(tmp_path, BASE.replace('name = "mini"\n', ""))).name == "mini"


def test_a_draft_model_pair_names_its_draft(tmp_path: Path) -> None:
    text = BASE.replace('method = "ngram"', 'method = "draft_model"\nmodel = "d"\nrevision = "abc"').replace(
        "prompt_lookup_max = 4\n", ""
    )
    pair = load_pair(write(tmp_path, text))
    assert pair.draft is not None and (pair.draft.model, pair.draft.revision) == ("d", "abc")


def test_open_loop_rates_come_after_closed_loop_levels(tmp_path: Path) -> None:
    pair = load_pair(
        write(
            tmp_path,
            BASE.replace(
                "concurrency = [1, 2]",
                'concurrency = [2]\nrates_rps = [0.5, 3]\nmax_concurrency = 16\narrival = "gamma"\nburstiness = 0.5',
            ),
        )
    )
    assert pair.load.levels() == (Level(2), Level(16, 0.5), Level(16, 3.0))
    assert [lv.label for lv in pair.load.levels()] == ["c2", "r0.5", "r3"]
    assert (pair.load.arrival, pair.load.burstiness) == ("gamma", 0.5)


def test_run_level_token_counts_override_every_workload(tmp_path: Path) -> None:
    pair = load_pair(
        write(tmp_path, BASE.replace("concurrency = [1, 2]", "concurrency = [1]\noutput_tokens = 5\ninput_tokens = 7"))
    )
    assert [(w.output_tokens, w.input_tokens) for w in pair.workloads] == [(5, 7)]


def test_stop_rule_counts_by_rounds_or_duration(tmp_path: Path) -> None:
    stop = load_pair(write(tmp_path, extra="[stop]\nmin_requests = 3\nrounds = 4\ncooldown = false\n")).stop
    assert [stop.measured_requests(c) for c in (1, 2)] == [4, 8] and stop.cooldown_requests(4) == 0
    assert StopRule().cooldown_requests(4) == 12
    timed = load_pair(write(tmp_path, extra="[stop]\nduration_s = 30\nmax_requests = 50\n")).stop
    assert timed.duration_s == 30.0 and timed.measured_requests(1) == 50


def test_servers_tables_per_role(tmp_path: Path) -> None:
    pair = load_pair(
        write(
            tmp_path,
            extra='[servers.speculative]\nargs = ["--x"]\nenv = { A = "1" }\nport = 8400\n'
            '[servers.plain]\nurl = "http://h:1"\nmetrics_url = "http://h:2/metrics"\n',
        )
    )
    assert pair.servers == {
        "plain": RoleServer(url="http://h:1", metrics_url="http://h:2/metrics"),
        "speculative": RoleServer(("--x",), {"A": "1"}, 8400, None),
    }


def test_sampling_slo_and_criteria_tables(tmp_path: Path) -> None:
    pair = load_pair(
        write(
            tmp_path,
            extra="[sampling]\ntemperature = 0.7\ntop_p = 0.9\nseed = 5\nignore_eos = false\n"
            "[slo]\npercentile = 90\nttft_s = 2\n"
            '[criteria]\nprimary = ["ttft_p50"]\n',
        )
    )
    assert pair.sampling == Sampling(0.7, 0.9, 5, False)
    assert (pair.slo.percentile, pair.slo.limits()) == (90.0, {"ttft_s": 2.0})
    assert pair.criteria is not None and pair.criteria.primary == ("ttft_p50",)


def test_a_path_or_a_name_resolves(tmp_path: Path) -> None:
    path = write(tmp_path)
    assert resolve_pair_path(path) == Path(path)
    assert resolve_pair_path("demo-cpu") == Path("profiles/pairs/demo-cpu.toml")
    with pytest.raises(
        ProfileError, match="unknown pair 'mini': .*available pairs: none in .*run loadgen from the repository root"
    ):
        resolve_pair_path("mini", tmp_path / "empty")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('model = "t"\n', "", "model"),
        ("num_speculative_tokens = 3\n", "", "num_speculative_tokens"),
        ('method = "ngram"', 'method = "draft_model"', "method 'draft_model' needs model = <draft path or hub id>"),
        ('command = ["vllm", "serve"]', "command = []", "\\[engine\\].command must not be empty"),
        ('command = ["vllm", "serve"]', 'command = ["v"]\nenv = { A = 1 }', "env"),
        ('workloads = ["short-homogeneous"]', "workloads = []", "\\[run\\].workloads must name at least one workload"),
        ("concurrency = [1, 2]", "", "\\[run\\] needs concurrency = \\[...\\] \\(closed loop\\) and/or rates_rps"),
        ("concurrency = [1, 2]", 'concurrency = [1]\narrival = "burst"', "\\[run\\].arrival must be one of"),
    ],
)
def test_each_table_names_its_error(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert old in BASE
    with pytest.raises(ProfileError, match=message) as err:
        load_pair(write(tmp_path, BASE.replace(old, new)))
    assert "\n" not in str(err.value) and "mini.toml" in str(err.value)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("[stop]\nread_timeout_s = 0\n", "read_timeout_s must be a number of seconds > 0"),
        ("[stop]\nwarmup_requests = -1\n", "\\[stop\\].warmup_requests must be an integer >= 0 and <= 10,000,000"),
        ("[stop]\nmax_error_rate = 2\n", "\\[stop\\].max_error_rate must be a number >= 0 and <= 1, got 2"),
        ('[stop]\non_error_budget = "ignore"\n', "on_error_budget 'stop' or 'continue'"),
        ("[slo]\nttft_s = -1\n", "ttft_s must be a number of seconds > 0"),
        ('[servers.plain]\nurl = "h:1"\n', "\\[servers.plain\\].url must start with http:// or https://"),
        ('[servers.plain]\ncolour = "red"\n', "colour"),
        ('[criteria]\nworkloads = ["other"]\n', "\\[criteria\\].workloads names 'other'"),
        ("[criteria]\nconcurrency = [8, 16]\n", "holds none of the levels \\[1, 2\\]"),
    ],
)
def test_each_optional_table_names_its_error(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(ProfileError, match=message) as err:
        load_pair(write(tmp_path, extra=extra))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", ["../escaped", "", "a/b", ".hidden", "with space"])
def test_a_name_that_cannot_name_a_run_folder_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(BASE.replace('name = "mini"', f"name = {name!r}", 1))
    with pytest.raises(ProfileError, match="cannot name a run folder"):
        load_pair(str(path))


def test_a_path_that_is_no_file_is_reported_as_that_path(tmp_path: Path) -> None:
    (tmp_path / "pairs").mkdir()
    (tmp_path / "pairs" / "mini.toml").write_text("")
    with pytest.raises(ProfileError) as missing:
        resolve_pair_path("profiles/pairs/nonexistent.toml", tmp_path / "pairs")
    assert str(missing.value) == (
        "no pair file profiles/pairs/nonexistent.toml (no such file); pass an existing .toml file or a pair name "
        "(available: mini)"
    )
    # with no pair files at all, where they were looked for (not "(-)")
    with pytest.raises(ProfileError, match=r"a pair name \(available: none in .*empty \(pair names are read from"):
        resolve_pair_path("profiles/pairs/nonexistent.toml", tmp_path / "empty")
    with pytest.raises(ProfileError) as elsewhere:
        resolve_pair_path(str(tmp_path / "mini.toml"), tmp_path / "pairs")
    assert str(elsewhere.value) == (
        f"no pair file {tmp_path / 'mini.toml'} (no such file); did you mean {tmp_path / 'pairs' / 'mini.toml'}?"
    )
    with pytest.raises(ProfileError, match="^no pair file .*/pairs \\(a folder\\)"):
        resolve_pair_path(str(tmp_path / "pairs"), tmp_path / "pairs")


def test_a_name_that_is_no_pair_lists_the_pairs_and_the_closest_one(tmp_path: Path) -> None:
    (tmp_path / "mini.toml").write_text("")
    (tmp_path / "other.toml").write_text("")
    with pytest.raises(ProfileError) as unknown:
        resolve_pair_path("minii", tmp_path)
    assert str(unknown.value) == (
        f"unknown pair 'minii': no {tmp_path / 'minii.toml'}; did you mean 'mini'? "
        "available pairs: mini, other (give a pair name or the path to a .toml file)"
    )
