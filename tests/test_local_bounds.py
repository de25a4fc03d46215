"""Commands run on this machine are bounded by what they read (reviews13 on d8d2e1b): the fleet's
control-plane reads (fabric discovery, Slurm's node lists) take what a 131,072-card fabric prints
(ibnetdiscover past 64 MiB was cut, 'failed (exit None)'); a host's own fact tools under node-check
keep the 64 MiB bound of the SSH path; a read cut is said as cut, never as a failed exit."""

from __future__ import annotations

import contextlib

import pytest

from sncheck.actions.base import LocalRunner
from sncheck.cli import fabric
from sncheck.errors import HarnessError
from sncheck.transport.result import CONTROL_OUTPUT_BYTES, MAX_OUTPUT_BYTES

BIG = MAX_OUTPUT_BYTES + (1 << 20)  # 65 MiB: more than a fact tool may print, far less than a fabric read


def test_a_control_plane_read_past_64_mib_is_read_whole() -> None:
    res = LocalRunner().run(["head", "-c", str(BIG), "/dev/zero"])
    assert res.ok and res.cut_at is None and len(res.stdout) == BIG  # before: cut at 64 MiB, killed
    assert CONTROL_OUTPUT_BYTES > BIG


def test_node_checks_fact_tools_keep_the_64_mib_bound() -> None:
    from sncheck.run import nodecheck

    seen: list[LocalRunner] = []
    real = nodecheck.LocalRunner

    def spy(*args, **kwargs):
        seen.append(real(*args, **kwargs))
        return seen[-1]

    with pytest.MonkeyPatch.context() as mp, contextlib.suppress(Exception):  # only its runners are looked at
        mp.setattr(nodecheck, "LocalRunner", spy)
        nodecheck.node_check(node="nodeX", cards=1, budget_s=1, drain=False, collectives=False)
    assert seen and all(r.max_output == MAX_OUTPUT_BYTES for r in seen)


def test_a_fabric_read_cut_is_said_as_cut(monkeypatch) -> None:
    monkeypatch.setattr(fabric, "LocalRunner", lambda: LocalRunner(max_output=1000))
    with pytest.raises(HarnessError, match=r"head -c 5000 /dev/zero printed more than 1000 bytes: cut and stopped"):
        fabric._run(("head", "-c", "5000", "/dev/zero"))
