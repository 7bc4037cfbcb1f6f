"""The arms of a resumed run, as its protocol.json recorded them (``loadgen compare --resume``, ``loadgen sweep
--resume``; run/flow.py, run/sweep.py).

protocol.json's ``design.arms`` (run/arms.py ``describe``) says, for every arm, the server it measured, its port
and whether that server was attached; ``attach`` (serve/attached.py ``attach_record``) the URLs given on the
command line. A resumed run measures each arm on that same server: an arm recorded as attached is attached again
(to the URL given now, else the recorded one; a placebo run as blocks on the attached plain server takes the plain
server's URL), never launched, and an arm recorded as launched is launched again. The arms are rebuilt from the
pair file first (run/arms.py ``build_arms``, with the URLs), so a protocol of older code without ``design.arms``
resumes as that run was planned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from loadgen.errors import BadInput
from loadgen.records.protoparts import RunDesign
from loadgen.records.runparts import ArmRecord
from loadgen.run.arms import Arm

#: The arms whose servers the command line can attach (``--attach-plain``, ``--attach-speculative``).
FLAGGED = ("plain", "speculative")


def recorded_arms(design: RunDesign | None) -> dict[str, ArmRecord]:
    """protocol.json's ``design.arms`` (checked when protocol.json was read) by arm name; empty for a protocol
    of older code without them."""
    return {r.arm: r for r in (design.arms if design is not None and design.arms is not None else ())}


def _where(server: str) -> str:
    return f"--attach-{server} URL" if server in FLAGGED else f"[servers.{server}].url in the run's pair.toml"


def resume_arms(
    arms: Iterable[Arm], records: Mapping[str, ArmRecord], given: Mapping[str, str], used: Iterable[str]
) -> list[Arm]:
    """``arms`` (built from the run's pair file and the attach URLs) on the servers ``records`` name: each arm
    takes its recorded server and port; one recorded as attached takes the URL its server was attached at (the
    arm's own, else the arm's of that name: a placebo on the plain server's blocks); one recorded as launched
    has no URL. ``given``: the URLs given on the command line now; ``used``: the arms with slots left.

    Raises BadInput (exit 2) when an arm with slots left was recorded as attached and no URL for its server is
    known (the fix: give it again), or when a URL is given for a server the run launched (a resumed run keeps
    its protocol: measure anew to attach)."""
    arms = list(arms)
    urls = {a.name: a.attach_url for a in arms}
    left = set(used)
    out: list[Arm] = []
    for arm in arms:
        rec = records.get(arm.name)
        if rec is None:  # a protocol of older code: the arm as the pair file and the URLs plan it
            out.append(arm)
            continue
        url = (urls.get(rec.server) or arm.attach_url) if rec.attached else None
        if rec.attached and url is None and arm.name in left:
            raise BadInput(
                f"protocol.json records the {arm.name} arm on an attached {rec.server} server, whose URL was "
                f"not saved; give it again with {_where(rec.server)} (a resumed run never launches a server "
                "it attached to)"
            )
        if not rec.attached and arm.name in left and rec.server in given:
            raise BadInput(
                f"this run launched its {rec.server} server (protocol.json design.arms), so --resume launches it "
                f"again; drop --attach-{rec.server}, or measure anew with `loadgen compare PAIR "
                f"--attach-{rec.server} URL`"
            )
        out.append(replace(arm, server=rec.server, port=rec.port, attach_url=url))
    return out
