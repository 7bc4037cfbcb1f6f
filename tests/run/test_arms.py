"""Whether the servers of a run stay up together (run/arms.py ``co_resident``): declared, attached, the CPU
build's host memory, or the GPU memory shares the launched servers declare."""

from __future__ import annotations

import dataclasses

from loadgen.profile.pair import Pair, RoleServer
from loadgen.profile.pairfile import load_pair
from loadgen.run.arms import CPU_SERVER_OVERHEAD, GIB, build_arms, co_resident


def _pair(
    env: dict[str, str] | None = None, args: tuple[str, ...] | None = None, co: str = "auto", placebo: str = "server"
) -> Pair:
    pair = load_pair("demo-cpu")
    engine = dataclasses.replace(
        pair.engine, env=pair.engine.env if env is None else env, args=pair.engine.args if args is None else list(args)
    )
    return dataclasses.replace(
        pair, engine=engine, design=dataclasses.replace(pair.design, co_resident=co, placebo=placebo)
    )


def test_declared_choices_win() -> None:
    for co, want in (("yes", True), ("no", False)):
        arms = build_arms(_pair(co=co), {"speculative": _pair(co=co)}, {})
        assert co_resident(arms, 0, 1 << 40)[0] is want


def test_every_server_attached_is_co_resident() -> None:
    pair = _pair()
    arms = build_arms(
        pair, {"speculative": pair}, {"plain": "http://a:1", "speculative": "http://b:2", "placebo": "http://c:3"}
    )
    assert co_resident(arms, 0, 0) == (True, "every server is attached")


def test_cpu_servers_share_the_host_when_their_kv_cache_and_overhead_fit() -> None:
    pair = _pair()  # demo-cpu: VLLM_CPU_KVCACHE_SPACE = 1 (GiB); plain, placebo server, speculative
    need = 3 * (GIB + CPU_SERVER_OVERHEAD)
    arms = build_arms(pair, {"speculative": pair}, {})
    ok, why = co_resident(arms, 0, int(need / 0.95) + GIB)
    assert ok and "3 CPU servers need about 13.5 GiB" in why
    ok, why = co_resident(arms, 0, need)  # 0.95 of it is not enough
    assert not ok and "one server at a time" in why
    no_kv = _pair(env={"HF_HUB_OFFLINE": "1"})
    ok, why = co_resident(build_arms(no_kv, {"speculative": no_kv}, {}), 0, 1 << 40)
    assert not ok and "declares no VLLM_CPU_KVCACHE_SPACE" in why


def test_gpu_servers_share_when_their_declared_memory_shares_fit() -> None:
    fits = _pair(args=("--gpu-memory-utilization", "0.3"))
    assert co_resident(build_arms(fits, {"speculative": fits}, {}), 1)[0] is True  # 3 x 0.3 = 0.9
    over = _pair(args=("--gpu-memory-utilization=0.4",))
    ok, why = co_resident(build_arms(over, {"speculative": over}, {}), 1)
    assert not ok and "sum to 1.20 > 0.95" in why
    undeclared = _pair(args=())
    assert co_resident(build_arms(undeclared, {"speculative": undeclared}, {}), 1)[0] is False
    own = dataclasses.replace(fits, servers={"placebo": RoleServer(url="http://p:1")})
    arms = build_arms(own, {"speculative": fits}, {})  # an attached placebo takes no share of the sum ...
    assert co_resident(arms, 1)[0] is True
    ok, why = co_resident(arms, 1, gpu_free=0.5)  # ... but holds its memory: 0.6 launched > 0.5 free
    assert not ok and "more than the 0.50 of the GPU free now" in why
    assert co_resident(arms, 1, gpu_free=0.7) == (
        True,
        "the declared memory shares sum to 0.60 <= 0.95 and to at most the 0.70 of the GPU free now",
    )


def test_a_placebo_on_blocks_measures_the_plain_server_even_when_it_is_attached() -> None:
    pair = _pair(placebo="blocks")
    arms = {a.name: a for a in build_arms(pair, {"speculative": pair}, {"plain": "http://p:1"})}
    assert (arms["placebo"].server, arms["placebo"].attach_url, arms["placebo"].port) == (
        "plain",
        "http://p:1",
        arms["plain"].port,
    )
    # placebo = "server" with the plain server attached and no placebo URL: blocks on the attached plain server
    pair = _pair()
    arms = {a.name: a for a in build_arms(pair, {"speculative": pair}, {"plain": "http://p:1"})}
    assert (arms["placebo"].server, arms["placebo"].attach_url) == ("plain", "http://p:1")
    arms = {a.name: a for a in build_arms(pair, {"speculative": pair}, {})}  # launched: a server of its own
    assert arms["placebo"].server == "placebo" and arms["placebo"].attach_url is None
