"""The Slurm campaign's parts that need no cluster (issue 31, item 4): how a layer's plan is
split into steps (a supernode's, a rail's, the span), which card a task of a rail step
is, what srun and slurmstepd print about a step that ended badly, and the step runner:
its bound, its card rule, rows passed on while a step runs, timeouts and Ctrl-C.
The steps on the real loopback cluster are tests/test_slurm_campaign.py."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from sncheck.launch.campaign import RAIL, SPAN, SUPERNODE, classify, split_connectivity, split_groups
from sncheck.model import host_of, rail_of
from sncheck.run.inputs import load_inventory_text
from sncheck.probeplan import (ConnectivityPlan, GoldenPlan, Group, Round, StressPlan, connectivity_plan,
                               golden_groups, stress_groups)
from sncheck.topology import Topology

FLEET = """\
name: campaign-split
design:
  scale_up:  {bandwidth: "450 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "15 us"}
supernodes:
  - {name: a, hosts: "a[01-06]", cards_per_host: 4}
  - {name: b, hosts: "b[01-06]", cards_per_host: 4}
  - {name: c, hosts: "c[01-05]", cards_per_host: 4}
backend: {type: mock}
"""


@pytest.fixture(scope="module")
def topo() -> Topology:
    return Topology(load_inventory_text(FLEET))


def _pairs(steps) -> list[tuple[int, str, str, str]]:  # type: ignore[no-untyped-def]
    return [(r.index, r.phase, a, b) for s in steps for r in s.plan.rounds for a, b in r.pairs]


@pytest.mark.parametrize("cross", ["bounded", "all-pairs"])
def test_every_pair_runs_in_exactly_one_step_of_its_kind(topo: Topology, cross: str) -> None:
    plan = connectivity_plan(topo, cross_supernode=cross)
    steps = split_connectivity(topo, plan)
    want = sorted((r.index, r.phase, a, b) for r in plan.rounds for a, b in r.pairs)
    assert sorted(_pairs(steps)) == want  # none lost, none twice, rounds keep index and phase
    assert [(s.kind, s.key) for s in steps] == [(SUPERNODE, "a"), (SUPERNODE, "b"), (SUPERNODE, "c")] + [
        (RAIL, f"gpu{k}") for k in range(4)]
    for s in steps:
        used = {c for r in s.plan.rounds for pair in r.pairs for c in pair}
        assert used <= set(s.cards) and s.plan.hosts == s.hosts
        if s.kind == SUPERNODE:  # a small world: the supernode's cards, all of them
            assert s.cards == tuple(topo.cards_of_supernode(s.key)) and s.per_host == 4
            assert all(topo.supernode_of_host(host_of(c)) == s.key for c in used)
        else:  # one rank per host: card k, and only pairs across supernodes on rail k
            assert s.per_host == 1 and {rail_of(c) for c in s.cards} == {int(s.key[3:])}
            assert all(topo.supernode_of_host(host_of(x)) != topo.supernode_of_host(host_of(y))
                       for r in s.plan.rounds for x, y in r.pairs)
            assert s.entities() == [(c, "card") for c in s.cards]
    # supernodes share no card, nor do rails: each kind can run all at once
    for kind in (SUPERNODE, RAIL):
        held = [set(s.cards) for s in steps if s.kind == kind]
        assert sum(map(len, held)) == len(set().union(*held))


def test_hand_made_rounds_split_as_a_fleet_plan_does(topo: Topology) -> None:
    """Rounds of (src, dst) tuples (a confirmation retest's) split as Pairs rounds do; a
    pair across supernodes off the rails goes to the span step, over every card of its hosts."""
    plan = connectivity_plan(topo)
    as_tuples = ConnectivityPlan(rounds=tuple(Round(r.index, r.phase, tuple(r.pairs)) for r in plan.rounds),
                                 hosts=plan.hosts)
    assert sorted(_pairs(split_connectivity(topo, as_tuples))) == sorted(_pairs(split_connectivity(topo, plan)))
    odd = ConnectivityPlan(rounds=(Round(0, "scale_out", (("a01/gpu1", "b03/gpu2"), ("a02/gpu0", "a03/gpu0"))),),
                           hosts=())
    steps = split_connectivity(topo, odd)
    assert [(s.kind, s.key) for s in steps] == [(SUPERNODE, "a"), (SPAN, SPAN)]
    span = steps[1]
    assert span.cards == tuple(topo.cards_of_host("a01") + topo.cards_of_host("b03"))
    assert span.entities() == [("a01", "host"), ("b03", "host")]
    assert steps[0].cards == tuple(topo.cards_of_host("a02") + topo.cards_of_host("a03"))


def test_groups_go_to_their_supernode_their_rail_or_the_span(topo: Topology) -> None:
    plan = StressPlan(groups=stress_groups(topo) + (Group("pair:a01/gpu0<->c02/gpu3", "pair",
                                                          ("a01/gpu0", "c02/gpu3")),))
    steps = split_groups(topo, plan)
    assert [(s.kind, s.key) for s in steps] == [(SUPERNODE, "a"), (SUPERNODE, "b"), (SUPERNODE, "c"),
                                                (RAIL, "gpu0"), (RAIL, "gpu1"), (RAIL, "gpu2"), (RAIL, "gpu3"),
                                                (SPAN, SPAN)]  # every rail's scale-out stressed (reviews19 #2)
    by_key = {s.key: s for s in steps}
    assert [g.id for g in by_key["a"].plan.groups] == [
        g.id for g in stress_groups(topo) if {topo.supernode_of_host(host_of(m)) for m in g.members} == {"a"}]
    assert len(by_key["a"].plan.groups) == 6 + 4 + 1  # its hosts, its rails, its domain
    assert [g.id for g in by_key["gpu0"].plan.groups] == ["cross:gpu0"]
    assert by_key["gpu0"].cards == tuple(f"{h}/gpu0" for h in topo.hosts)
    assert [g.id for g in by_key["gpu3"].plan.groups] == ["cross:gpu3"]
    assert by_key["gpu3"].cards == tuple(f"{h}/gpu3" for h in topo.hosts)
    assert [g.id for g in by_key[SPAN].plan.groups] == ["pair:a01/gpu0<->c02/gpu3"]
    golden = split_groups(topo, GoldenPlan(groups=golden_groups(topo)))
    assert [(s.kind, s.key, len(s.plan.groups)) for s in golden] == [(SUPERNODE, "a", 6), (SUPERNODE, "b", 6),
                                                                     (SUPERNODE, "c", 5)]
    assert classify(topo, ("a01/gpu2",)) == (SUPERNODE, "a")
    assert classify(topo, ("a01/gpu2", "a01/gpu2")) == (SUPERNODE, "a")
    assert classify(topo, ("a01/gpu2", "b01/gpu2", "b01/gpu2")) == (SPAN, SPAN)  # a host twice: not one rank a host


# --------------------------------------------------------------------------- a task's card


def test_a_task_is_the_localid_th_card_of_its_node_in_the_job() -> None:
    from sncheck.worker.slurm_rank import torch_env

    base = {"SNCHECK_MASTER_ADDR": "10.0.0.1", "SNCHECK_MASTER_PORT": "29500"}
    full = ["n1/gpu0", "n1/gpu1", "n2/gpu0", "n2/gpu1"]
    env = torch_env(full, {**base, "SLURMD_NODENAME": "n2", "SLURM_LOCALID": "1", "SLURM_NTASKS": "4"})
    assert (env["RANK"], env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"], env["WORLD_SIZE"]) == ("3", "1", "2", "4")
    rail = ["n1/gpu3", "n2/gpu3", "n3/gpu3"]  # a rail step: one task a node, card 3, device 3
    env = torch_env(rail, {**base, "SLURMD_NODENAME": "n2", "SLURM_LOCALID": "0", "SLURM_NTASKS": "3"})
    assert (env["RANK"], env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == ("1", "3", "1")
    with pytest.raises(ValueError, match="has no card"):
        torch_env(rail, {**base, "SLURMD_NODENAME": "n2", "SLURM_LOCALID": "1"})
    with pytest.raises(ValueError, match="has no card"):
        torch_env(rail, {**base, "SLURMD_NODENAME": "n9", "SLURM_LOCALID": "0"})
    with pytest.raises(ValueError, match="the step has 8 tasks but the job lists 3"):
        torch_env(rail, {**base, "SLURMD_NODENAME": "n1", "SLURM_LOCALID": "0", "SLURM_NTASKS": "8"})


# --------------------------------------------------------------------------- srun's and slurmstepd's lines

# srun's stderr of a step cancelled with scancel on the loopback cluster (Slurm 22.05.8)
SCANCELLED = """\
srun: Job step aborted: Waiting up to 4 seconds for job step to finish.
slurmstepd-node1: error: *** STEP 5.0 ON node1 CANCELLED AT 2026-12-04T22:41:12 ***
srun: error: node1: tasks 0-1: Killed
srun: launch/slurm: _step_signal: Terminating StepId=5.0
srun: error: node2: tasks 2-3: Killed
"""


def test_srun_and_slurmstepd_lines_are_read_by_their_grammar() -> None:
    from sncheck.slurm.steps import allocation_gone, cancelled, failed_nodes

    c = cancelled(SCANCELLED)
    assert c is not None and (c.step, c.node, c.at, c.due_to) == ("5.0", "node1", "2026-12-04T22:41:12", None)
    assert c.describe() == "Slurm cancelled step 5.0 at 2026-12-04T22:41:12 (scancel)"
    assert failed_nodes(SCANCELLED) == {"node1": "task 0-1: Killed", "node2": "task 2-3: Killed"}
    # req.c's other endings, as its format strings print them
    for tail, due in ((" DUE TO TIME LIMIT", "TIME LIMIT"), (" DUE TO PREEMPTION", "PREEMPTION"),
                      (" DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS", "NODE FAILURE"),
                      (" DUE TO JOB REQUEUE", "JOB REQUEUE")):
        got = cancelled(f"slurmstepd: error: *** STEP 77.3+1 ON gpu-a017 CANCELLED AT 2025-01-02T03:04:05{tail} ***\n")
        assert got is not None and (got.step, got.node, got.due_to) == ("77.3+1", "gpu-a017", due)
    assert cancelled("slurmstepd: error: *** JOB 77 ON n1 CANCELLED AT 2025-01-02T03:04:05 ***").step == "77"
    assert cancelled("srun: error: node3: task 2: Exited with exit code 1\n") is None
    # tasks on several nodes are named by a hostlist (launch_slurm.c's _task_ids_to_host_list)
    assert failed_nodes("srun: error: node[3-4]: tasks 2-5: Exited with exit code 3\n"
                        "srun: error: node1: tasks 0-1: Terminated\n"
                        "srun: error: Node failure on node7\n") == {
        "node3": "task 2-5: Exited with exit code 3", "node4": "task 2-5: Exited with exit code 3",
        "node7": "node failure: Slurm lost the node during the step"}
    # srun_job.c's existing_allocation, as srun 22.05 printed them on the loopback cluster
    assert allocation_gone("srun: error: Slurm job 12 has expired\nsrun: Check SLURM_JOB_ID environment "
                           "variable. Expired or invalid job 12\n") == "Slurm job 12 has expired"
    assert allocation_gone("srun: error: Unable to confirm allocation for job 999: Invalid job id specified\n"
                           ) == "Unable to confirm allocation for job 999: Invalid job id specified"
    assert allocation_gone("srun: error: node3: task 2: Exited with exit code 1\n") is None


# --------------------------------------------------------------------------- what a lost step leaves


@pytest.fixture
def backend(topo: Topology, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    from sncheck.backends.slurm import SlurmBackend

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)  # srun need not exist here
    return SlurmBackend(topo, shared_dir=str(tmp_path), job_timeout_s=30)


def _ended(stderr: str, rc: int = 137, timed_out: bool = False):  # type: ignore[no-untyped-def]
    from sncheck.backends.slurmsteps import Ended

    return Ended(rc, stderr, timed_out, 0.0, 1.0)


def test_a_cancelled_step_is_not_run_for_its_supernode_only(topo: Topology, backend) -> None:  # type: ignore[no-untyped-def]
    steps = {s.key: s for s in split_connectivity(topo, connectivity_plan(topo))}
    rows: list[dict] = []
    backend._step_ended("connectivity", steps["b"], _ended(SCANCELLED), rows.append)
    assert [(r["entity"], r["entity_kind"], r["status"]) for r in rows] == [
        (h, "host", "not_run") for h in topo.hosts_of_supernode("b")]
    assert all("the connectivity step of supernode b did not finish: Slurm cancelled step 5.0" in r["message"]
               for r in rows)
    rows = []  # a rail step: its cards, not the hosts' other cards
    backend._step_ended("connectivity", steps["gpu2"], _ended("", timed_out=True), rows.append)
    assert [(r["entity"], r["status"]) for r in rows] == [(f"{h}/gpu2", "timeout") for h in topo.hosts]
    assert "rail gpu2 across supernodes ran past 30s" in rows[0]["message"]
    rows = []  # a task that failed names its node; its mates were stopped with it
    backend._step_ended("connectivity", steps["c"], _ended("srun: error: c03: task 8: Exited with exit code 3\n"
                                                           "srun: error: c01: tasks 0-3: Terminated\n", rc=3),
                        rows.append)
    got = {r["entity"]: r for r in rows}
    assert set(got) == set(topo.hosts_of_supernode("c"))
    assert got["c03"]["status"] == "error" and "exit code 3" in got["c03"]["message"]
    assert got["c01"]["status"] == "not_run" and "stopped when it failed on c03" in got["c01"]["message"]
    rows = []  # the allocation's time limit is a timeout; an ended-well step leaves nothing
    backend._step_ended("stress", steps["a"], _ended(SCANCELLED.replace("22:41:12", "22:41:12 DUE TO TIME LIMIT").replace("node1", "a01")),
                        rows.append)
    assert {r["status"] for r in rows} == {"timeout"} and len(rows) == 6
    backend._step_ended("stress", steps["a"], _ended("", rc=0), rows.append)
    assert len(rows) == 6
    rows = []  # after Slurm's cancel a task's exit code is the cancel's doing (a SIGTERM handler that exits);
    # Slurm's own word about a node (a task out of memory: the step's cgroup) still names it
    cancel_b = ("slurmstepd-b01: error: *** STEP 5.1 ON b01 CANCELLED AT 2026-12-04T22:41:12 ***\n"
                "srun: error: b02: task 4: Exited with exit code 143\n"
                "srun: launch/slurm: _step_signal: Terminating StepId=5.1\nsrun: error: b03: task 8: Out Of Memory\n")
    backend._step_ended("stress", steps["b"], _ended(cancel_b), rows.append)
    got = {r["entity"]: r for r in rows}
    assert got["b03"]["status"] == "error" and "Out Of Memory" in got["b03"]["message"], got["b03"]
    assert got["b02"]["status"] == "not_run" and "stopped when it failed on b03" in got["b02"]["message"], got["b02"]
    rows = []  # exit 0 without a row is not a pass: a lost rail step's pairs are covered by nothing else
    backend._step_ended("connectivity", steps["gpu1"], _ended("", rc=0), rows.append, 0)
    assert [(r["entity"], r["status"]) for r in rows] == [(f"{h}/gpu1", "not_run") for h in topo.hosts]
    assert "rail gpu1 across supernodes exited 0 but its rank 0 wrote no row" in rows[0]["message"]


# srun's stderr of steps cancelled on the loopback cluster under load (Slurm 22.05.8, 6 busy loops
# beside it; ops4): slurmstepd's CANCELLED line lost (srun drops the tasks' unread output once a task
# ended by a signal), srun's own "Job step aborted" kept. The first is a job's scancel (the tasks get
# SIGTERM); the second the same with a step's scancel (SIGKILL), where CI's random-order suite saw
# both hosts `error` ("failed there: task 0: Killed").
LOST_CANCEL_LINE = ("srun: Job step aborted: Waiting up to 4 seconds for job step to finish.\n"
                    "srun: error: b02: task 1: Terminated\n"
                    "srun: launch/slurm: _step_signal: Terminating StepId=1.3\n"
                    "srun: error: b01: task 0: Terminated\n")


@pytest.mark.parametrize("signal", ["Terminated", "Killed"])
def test_a_cancel_whose_slurmstepd_line_srun_dropped_is_still_slurms_cancel(
        topo: Topology, backend, signal: str) -> None:  # type: ignore[no-untyped-def]
    from sncheck.slurm.steps import cancelled

    stderr = LOST_CANCEL_LINE.replace("Terminated", signal)
    c = cancelled(stderr)
    assert c is not None and (c.step, c.node, c.at, c.due_to) == ("1.3", None, None, None), c
    steps = {s.key: s for s in split_connectivity(topo, connectivity_plan(topo))}
    rows: list[dict] = []
    backend._step_ended("stress", steps["b"], _ended(stderr, rc=143 if signal == "Terminated" else 137), rows.append)
    assert [(r["entity"], r["status"]) for r in rows] == [(h, "not_run") for h in topo.hosts_of_supernode("b")], rows
    assert all("the stress step of supernode b did not finish: Slurm cancelled step 1.3 (srun: \"Job step aborted\""
               in r["message"] for r in rows), rows
    # srun's own aborts print their reason first (step_launch.c, launch_slurm.c, srun_job.c): not Slurm's cancel
    for own in ("srun: error: Task launch for StepId=1.3 failed on node b02: Communication connection failure\n",
                "srun: error: timeout waiting for task launch, started 1 of 2 tasks\n",
                "srun: forcing job termination\n", "srun: error: Application launch failed: Invalid job credential\n",
                # step_launch.c l.1742 prints the function's name first (the reviewer's case of stop 46)
                "srun: error: step_launch_notify_io_failure: aborting, io error with slurmstepd on node 2\n"):
        assert cancelled(own + stderr) is None, own
    assert cancelled(stderr.replace("srun: Job step aborted", "srun: Force Terminated StepId=1.3\nsrun: x")) is None


# srun's stderr of a step whose task on node2 exited 3 (tests/test_srun_launcher.py on the loopback
# cluster): srun's --kill-on-bad-exit signals the step, and slurmstepd prints the same CANCELLED line
# a scancel makes, after srun's "Terminating"; srun got no word from slurmctld ("Force Terminated")
KILL_ON_BAD_EXIT = ("CUDA error: uncorrectable ECC error\nsrun: error: b02: tasks 2-3: Exited with exit code 3\n"
                    "srun: launch/slurm: _step_signal: Terminating StepId=1.0\n"
                    "slurmstepd-b01: error: *** STEP 1.0 ON b01 CANCELLED AT 2026-12-06T13:14:57 ***\n"
                    "srun: error: b04: tasks 6-7: Terminated\nsrun: error: b01: tasks 0-1: Terminated\n"
                    "srun: Force Terminated StepId=1.0\n")


def test_srun_kill_on_bad_exit_is_no_cancel_and_the_task_that_failed_is_named(topo: Topology, backend) -> None:  # type: ignore[no-untyped-def]
    from sncheck.slurm.steps import cancelled

    assert cancelled(KILL_ON_BAD_EXIT) is None
    steps = {s.key: s for s in split_connectivity(topo, connectivity_plan(topo))}
    rows: list[dict] = []
    backend._step_ended("stress", steps["b"], _ended(KILL_ON_BAD_EXIT, rc=3), rows.append)
    got = {r["entity"]: r for r in rows}
    assert got["b02"]["status"] == "error" and "exit code 3" in got["b02"]["message"], got["b02"]
    assert {got[h]["status"] for h in got if h != "b02"} == {"not_run"}, rows
    # the same CANCELLED line before srun's "Terminating" (or with a DUE TO) is Slurm's
    before = KILL_ON_BAD_EXIT.replace("srun: launch/slurm: _step_signal: Terminating StepId=1.0\n", "")
    assert cancelled(before.replace("Force Terminated", "launch/slurm: _step_signal: Terminating")) is not None
    assert cancelled(KILL_ON_BAD_EXIT.replace(":57 ***", ":57 DUE TO TIME LIMIT ***")).due_to == "TIME LIMIT"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- the runner


def _sh(tmp_path: Path, name: str, script: str) -> list[str]:
    path = tmp_path / f"{name}.sh"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return [str(path)]


def _step(tmp_path: Path, name: str, script: str, holds: set[str], ended: dict, timeout: float = 30, **kw):  # type: ignore[no-untyped-def]
    from sncheck.backends.slurmsteps import Step

    return Step(name, _sh(tmp_path, name, script), frozenset(holds), timeout, tmp_path / name,
                on_end=lambda end: ended.__setitem__(name, end), **kw)


def _wait_for(path: Path) -> str:
    # wait (bounded) for a file another step creates: a step that must run beside another
    return f'i=0; while [ ! -e {path} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; [ -e {path} ]\n'


def test_steps_run_side_by_side_within_the_bound_and_never_share_a_card(tmp_path: Path) -> None:
    from sncheck.backends.slurmsteps import StepRunner

    ended: dict = {}
    m = tmp_path / "m"
    steps = [  # a and b wait for each other: they end well only if they ran at once
        _step(tmp_path, "a", f"touch {m}-a\n" + _wait_for(Path(f"{m}-b")), {"n1/gpu0", "n1/gpu1"}, ended),
        _step(tmp_path, "b", f"touch {m}-b\n" + _wait_for(Path(f"{m}-a")), {"n2/gpu0", "n2/gpu1"}, ended),
        _step(tmp_path, "rail", "exit 0\n", {"n1/gpu0", "n2/gpu0"}, ended),   # after a and b: their cards
        _step(tmp_path, "c", "exit 0\n", {"n3/gpu0"}, ended),
        _step(tmp_path, "rail-again", "exit 0\n", {"n2/gpu0"}, ended),        # never before "rail"
        _step(tmp_path, "d", "exit 0\n", {"n4/gpu0"}, ended),                  # waits for a slot
    ]
    runner = StepRunner(parallel=3, poll_s=0.02)  # a slot for "rail" while a and b run: only its cards stop it
    runner.run(steps)
    assert {k: e.rc for k, e in ended.items()} == dict.fromkeys(("a", "b", "rail", "c", "rail-again", "d"), 0)
    spans = {r["step"]: (r["start"], r["end"]) for r in runner.records}
    times = sorted({t for s in spans.values() for t in s})
    for t in times:  # never more than the bound running
        assert sum(1 for s, e in spans.values() if s <= t < e) <= 3
    assert spans["rail"][0] >= max(spans["a"][1], spans["b"][1])
    assert spans["rail-again"][0] >= spans["rail"][1]


def test_rows_are_passed_on_while_the_step_runs(tmp_path: Path) -> None:
    """The step writes a row, then waits for the file the row handler makes: it ends well
    only if its rows were read while it ran. A line cut by its end is passed on as text."""
    from sncheck.backends.slurmsteps import StepRunner

    rows_file, seen, ended = tmp_path / "rows.jsonl", [], {}
    rows_file.touch()
    got = tmp_path / "got-the-first-row"

    def on_rows(items: list) -> None:
        seen.extend(items)
        got.touch()

    script = (f'echo \'{{"kind": "p2p", "n": 1}}\' >> {rows_file}\n' + _wait_for(got) + "[ $? = 0 ] || exit 9\n"
              + f'echo \'{{"kind": "p2p", "n": 2}}\' >> {rows_file}\nprintf \'{{"kind": "p2p", "n"\' >> {rows_file}\n')
    StepRunner(1, poll_s=0.02).run([_step(tmp_path, "s", script, {"x"}, ended, rows=rows_file, on_rows=on_rows)])
    assert ended["s"].rc == 0, ended["s"]
    assert seen == [{"kind": "p2p", "n": 1}, {"kind": "p2p", "n": 2}, '{"kind": "p2p", "n"']


def test_a_step_past_its_timeout_is_interrupted_and_the_others_go_on(tmp_path: Path) -> None:
    from sncheck.backends.slurmsteps import StepRunner

    ended: dict = {}
    start = time.monotonic()
    StepRunner(4, poll_s=0.02).run([_step(tmp_path, "hang", "exec sleep 60\n", {"x"}, ended, timeout=1.0),
                                    _step(tmp_path, "fine", "echo done >&2\n", {"y"}, ended)])
    assert time.monotonic() - start < 10
    assert ended["hang"].timed_out and not ended["hang"].ok and ended["hang"].rc != 0
    assert ended["fine"].ok and ended["fine"].stderr == "done\n"


def test_an_error_while_gathering_stops_every_running_step(tmp_path: Path) -> None:
    from sncheck.backends.slurmsteps import StepRunner

    rows_file, pid_file = tmp_path / "rows.jsonl", tmp_path / "pid"
    rows_file.touch()

    def boom(items: list) -> None:
        raise KeyboardInterrupt

    step = _step(tmp_path, "s", f'echo $$ > {pid_file}; echo "{{}}" >> {rows_file}; exec sleep 60\n', {"x"}, {},
                 rows=rows_file, on_rows=boom)
    with pytest.raises(KeyboardInterrupt):
        StepRunner(1, poll_s=0.02).run([step])
    assert step.proc is not None and step.proc.poll() is not None  # stopped, not left behind


def test_parallel_steps_is_an_inventory_key(tmp_path: Path) -> None:
    from sncheck.errors import ConfigError

    def load(extra: str):  # type: ignore[no-untyped-def]
        return load_inventory_text(FLEET + extra)

    assert load("").launcher.parallel_steps == 32
    assert load("launcher: {parallel_steps: 4}\n").launcher.parallel_steps == 4
    with pytest.raises(ConfigError, match="parallel_steps"):
        load("launcher: {parallel_steps: 0}\n")


def test_the_worker_module_runs_without_the_control_side() -> None:
    """slurm_rank's new mapping imports only the worker's own modules (it runs on the nodes)."""
    import subprocess

    code = ("import sys, sncheck.worker.slurm_rank as m; "
            "bad = [k for k in sys.modules if k.startswith(('sncheck.backends', 'sncheck.launch', 'pandas'))]; "
            "print(json.dumps(bad))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True,
                         cwd=str(Path(__file__).resolve().parents[1]), timeout=60)
    assert out.returncode == 0 and json.loads(out.stdout) == [], out.stderr


TAKEN = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
         "address. port: 33971, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use")


def _port_step(tmp_path: Path, name: str, fail_times: int, ended: dict, **kw):  # type: ignore[no-untyped-def]
    """A step that says its port was taken (torch's line, rank 0's stderr through srun) on its
    first ``fail_times`` starts, then writes a row; ``env()`` gives a new port each start."""
    rows, count = tmp_path / f"{name}.rows", tmp_path / f"{name}.starts"
    rows.touch()
    ports = iter(range(30001, 30100))
    script = (f'echo "$PORT" >> {count}\n'
              f'if [ $(wc -l < {count}) -le {fail_times} ]; then echo "{TAKEN}" >&2; exit 143; fi\n'
              f'echo \'{{"kind": "p2p", "port": \'$PORT\'}}\' >> {rows}\n')
    seen: list = []
    step = _step(tmp_path, name, script, {name}, ended, rows=rows, on_rows=seen.extend,
                 env=lambda: {"PORT": str(next(ports))}, **kw)
    return step, count, seen


def test_a_step_whose_rendezvous_port_was_taken_starts_again_on_a_fresh_port(tmp_path: Path) -> None:
    """CI of stop 54: a supernode's step exited 143 because a socket took the port chosen for
    its rank 0 in the seconds before rank 0 bound it (torch: EADDRINUSE). The step is started
    again with a fresh env (a new port) and its end is the second start's; the first is kept in
    the records."""
    from sncheck.backends.slurmsteps import StepRunner

    ended: dict = {}
    step, count, seen = _port_step(tmp_path, "sn0", 1, ended, rendezvous=True)
    runner = StepRunner(1, poll_s=0.02)
    runner.run([step])
    assert ended["sn0"].ok, ended["sn0"]
    assert count.read_text().split() == ["30001", "30002"]   # a fresh port for the second start
    assert seen == [{"kind": "p2p", "port": 30002}]
    assert [r.get("again") for r in runner.records] == ["rendezvous port taken", None], runner.records


@pytest.mark.parametrize("case", ["not-rendezvous", "rows-passed", "every-try", "other-failure"])
def test_a_step_is_started_again_only_for_a_taken_port_before_any_row_and_a_bounded_number_of_times(
        tmp_path: Path, case: str) -> None:
    """Harsher: a step that is no rendezvous (host facts), one whose rank 0 already passed rows
    (started again, it would measure them twice), one whose port is taken at every start (never
    a loop) and one that failed otherwise: each ends as it ended, the failure handed to on_end."""
    from sncheck.backends.slurmsteps import PORT_ATTEMPTS, StepRunner

    ended: dict = {}
    if case == "rows-passed":
        rows = tmp_path / "r.rows"
        rows.touch()
        step = _step(tmp_path, "s", f'echo "{{}}" >> {rows}\nsleep 0.3\necho "{TAKEN}" >&2\nexit 1\n', {"x"}, ended,
                     rows=rows, on_rows=lambda items: None, rendezvous=True)
        count = None
    elif case == "other-failure":
        step = _step(tmp_path, "s", 'echo "srun: error: node1: task 0: Exited with exit code 1" >&2\nexit 1\n',
                     {"x"}, ended, rendezvous=True)
        count = None
    else:
        step, count, _ = _port_step(tmp_path, "s", 99, ended, rendezvous=case == "every-try")
    runner = StepRunner(1, poll_s=0.02)
    runner.run([step])
    assert not ended["s"].ok
    starts = {"every-try": PORT_ATTEMPTS}.get(case, 1)
    assert len(runner.records) == starts, runner.records
    if count is not None:
        assert len(count.read_text().split()) == starts
