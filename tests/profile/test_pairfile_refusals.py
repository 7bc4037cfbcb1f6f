"""Pair files: the refusals test_pairfile.py leaves out, each the whole one line with exit code 2 (a sweep file
given to compare, a per-role env that is not strings, a duration of 0, [design] below its blocks, a speculative
key vLLM never had), an older file's [run].repetitions as [design].blocks, and `loadgen pairs` on a folder of
none."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen.errors import BadInput, ProfileError
from loadgen.profile.pairfile import load_pair
from loadgen.profile.pairkind import pair_lines

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


def _refusal(tmp_path: Path, text: str) -> str:
    path = tmp_path / "mini.toml"
    path.write_text(text)
    with pytest.raises(ProfileError) as err:
        load_pair(str(path))
    assert err.value.exit_code == 2 and "\n" not in str(err.value)
    return str(err.value).removeprefix(f"{path}").removeprefix(": ")


def test_a_sweep_pair_file_points_to_the_sweep_command(tmp_path: Path) -> None:
    got = _refusal(tmp_path, BASE.replace("num_speculative_tokens = 3", "num_speculative_tokens = [1, 3]"))
    assert got == (
        f" is a sweep pair file (a K list or [[candidates]]): run `loadgen sweep {tmp_path}/mini.toml` "
        "(make sweep PAIR=...), or give [speculative] one K"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "[servers.speculative]\nenv = { CUDA_VISIBLE_DEVICES = 0 }\n",
            '[servers.speculative].env must map names to strings, e.g. { CUDA_VISIBLE_DEVICES = "0" }',
        ),
        (
            "[design]\nblocks = 4\nmax_blocks = 2\n",
            "[design].max_blocks = 2 is below blocks = 4; raise it or lower blocks",
        ),
        (
            '[servers.placebo]\nurl = "ftp://h"\n',
            "[servers.placebo].url must start with http:// or https://, got 'ftp://h'",
        ),
        (
            '[servers.speculative]\nmetrics_url = "decode:8000"\n',
            "[servers.speculative].metrics_url must start with http:// or https://, got 'decode:8000'",
        ),
        (
            "[slo]\ne2e_s = 0\n",
            "[slo].e2e_s must be a number of seconds > 0 and <= 604,800 (at most one week), got 0 "
            "(see profiles/README.md)",
        ),
    ],
)
def test_an_optional_table_refuses_with_the_fix(tmp_path: Path, extra: str, message: str) -> None:
    assert _refusal(tmp_path, BASE + extra) == message


def test_a_speculative_key_that_is_no_vllm_field_says_so(tmp_path: Path) -> None:
    got = _refusal(tmp_path, BASE.replace("prompt_lookup_max = 4", "draft_lookahead = 4"))
    assert got.startswith("unknown key 'draft_lookahead' in [speculative]: not a field of vLLM's speculative config (")
    assert got.endswith("); see profiles/README.md")


def test_a_draft_model_without_its_model_is_refused(tmp_path: Path) -> None:
    got = _refusal(tmp_path, BASE.replace('method = "ngram"', 'method = "draft_model"'))
    assert got == "[speculative] method 'draft_model' needs model = <draft path or hub id>"


def test_older_repetitions_become_the_blocks_unless_design_gives_them(tmp_path: Path) -> None:
    path = tmp_path / "mini.toml"
    older = BASE.replace("concurrency = [1, 2]", "concurrency = [1, 2]\nrepetitions = 4")
    path.write_text(older)
    pair = load_pair(str(path))
    assert (pair.load.repetitions, pair.design.blocks, pair.design.max_blocks) == (4, 4, 12)
    path.write_text(older + "[design]\nblocks = 2\n")
    assert load_pair(str(path)).design.blocks == 2
    path.write_text(BASE + '[design]\nplacebo = "off"\n')
    assert (load_pair(str(path)).design.blocks, load_pair(str(path)).design.placebo) == (3, "off")


def test_the_slo_percentile_and_seconds_are_read_as_floats(tmp_path: Path) -> None:
    path = tmp_path / "mini.toml"
    path.write_text(BASE + "[slo]\npercentile = 95\nttft_s = 1\ntpot_s = 0.05\n")
    slo = load_pair(str(path)).slo
    assert (slo.percentile, slo.limits()) == (95.0, {"ttft_s": 1.0, "tpot_s": 0.05})
    assert all(isinstance(v, float) for v in (slo.percentile, *slo.limits().values()))


def test_listing_a_folder_without_pair_files_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as err:
        pair_lines(tmp_path)
    assert err.value.exit_code == 2
    assert str(err.value) == (
        f"no pair profiles in {tmp_path.resolve()}; run loadgen from the repository root, or "
        "pass a pair file's path to check / compare"
    )
    (tmp_path / "a-long-name.toml").write_text(BASE)
    (tmp_path / "b.toml").write_text("[engine\n")
    lines = pair_lines(tmp_path)
    assert lines[0] == "a-long-name  device not stated"
    assert lines[1].startswith("b            unreadable: ") and "not valid TOML" in lines[1]
