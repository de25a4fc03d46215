"""Operations (ops3): the state store's record of a run whose outputs fail; the names behind SSH
gateways that mpirun's hostfile and perftest's servers are dialled at, checked before they run."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.config.playbook import single_layer
from sncheck.errors import HarnessError
from sncheck.run.inputs import load_inventory
from sncheck.run.runner import Run
from sncheck.store import rundir

ROOT = Path(__file__).resolve().parents[1]
SMALL = ("name: small\ndesign:\n  scale_up: {bandwidth: '450 GB/s', latency: '3 us'}\n"
         "supernodes:\n  - {name: sn0, hosts: 'h[1-3]', cards_per_host: 2}\n")


def _cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def _runs(state: Path) -> list[dict]:
    r = _cli("history", "--runs", "--state-dir", state, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    p = tmp_path / "small.yaml"
    p.write_text(SMALL)
    return p


def test_a_report_template_that_fails_is_not_recorded_passed_in_the_state_dir(tmp_path: Path, small: Path) -> None:
    """An operator's own report template that fails (a name it does not have): the run exits 2 naming
    the template's line (bad input since hostile round 25; it was 3, an internal error) and
    results.json says the error, but the state store kept `pass` (its record was written before the
    reports), so `history --runs` listed a pass and `baseline make --from-state --passed-only`, a
    `baseline: last-pass` run and the drift op took the run as known-good."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "report.html").write_text("{{ no_such_name.field }}\n")
    state = tmp_path / "state"
    r = _cli("connectivity", "-i", small, "--backend", "mock", "--seed", 1, "-q", "--out", tmp_path / "run",
             "--format", "html", "--templates", templates, "--state-dir", state)
    assert r.exit_code == 2 and f"{templates / 'report.html'}:1: " in r.output, r.output
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record["verdict"] == "error" and "cannot write the reports" in record["error"], record.get("error")
    [run] = _runs(state)
    assert (run["run_id"], run["verdict"]) == (record["run_id"], "error"), run
    made = _cli("baseline", "make", "--from-state", state, "--passed-only", "--out", tmp_path / "b.json")
    assert made.exit_code == 2 and not (tmp_path / "b.json").exists(), made.output


@dataclass(frozen=True)
class _Refused:
    """A report whose file the system refuses."""

    name: str = "junit"
    filename: str = "junit.xml"

    @property
    def write(self) -> Any:
        def refuse(_record: Any, _rows: Any, path: Path, _templates: Any) -> None:
            raise PermissionError(13, "Permission denied", str(path))
        return refuse


def _api_run(tmp_path: Path, small: Path, **options: Any) -> Run:
    return Run.build(single_layer("connectivity", {}), load_inventory(small), state_dir=str(tmp_path / "state"),
                     backend="mock", seed=1, out=str(tmp_path / "run"), **options)


def test_a_refused_report_through_the_api_leaves_the_failed_verdict_in_the_state_store(tmp_path, small):
    with pytest.raises(PermissionError):
        _api_run(tmp_path, small, reports=(_Refused(),)).execute()
    [run] = _runs(tmp_path / "state")
    assert run["verdict"] == "error", run


def test_a_final_results_json_the_disk_refuses_leaves_the_failed_verdict_in_the_state_store(tmp_path, small,
                                                                                         monkeypatch):
    """The reports written, then the final results.json refused (the disk filled up in between):
    exit 3 with the last layer's snapshot on disk, and the state store must not keep the pass."""
    write = rundir.RunStore.write_results

    def full(self: rundir.RunStore, record: Any) -> Path:
        if record.finished:
            raise HarnessError(f"run directory: cannot write {self.dir / 'results.json'}: No space left on device")
        return write(self, record)

    monkeypatch.setattr(rundir.RunStore, "write_results", full)
    with pytest.raises(HarnessError):
        _api_run(tmp_path, small).execute()
    [run] = _runs(tmp_path / "state")
    assert run["verdict"] == "error", run



def test_a_watch_whose_report_the_disk_refuses_is_not_recorded_passed(tmp_path: Path, monkeypatch) -> None:
    """`watch --state-dir` of a RAS dump (exit 0: a pass) whose JUnit report the disk refuses.
    main wrote results.json before the reports and the state store's record before both: the
    run exited 3 but results.json said `pass`, no error, the state store too (`history --runs`, and
    a later `watch --baseline` of that run, took it as known-good). Now as a run: the reports
    first, results.json and the state store's verdict `error` naming the report."""
    import errno

    from sncheck.report import junit

    def full(_record: Any, _rows: Any, path: Path, *_more: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(junit, "write", full)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "ras.txt").write_bytes((ROOT / "fixtures/real/nccl-ras/01_mismatch_allgather_2.26.2_issue1911.txt")
                                    .read_bytes())
    r = _cli("watch", dumps, "--once", "--out", tmp_path / "out", "--state-dir", tmp_path / "state",
             "--format", "junit")
    assert r.exit_code == 3, r.output
    record = json.loads((tmp_path / "out" / "results.json").read_text())
    assert record["verdict"] == "error", record.get("error")
    assert record["error"].startswith("cannot write the reports (") and "No space left" in record["error"], record
    [run] = _runs(tmp_path / "state")
    assert (run["run_id"], run["verdict"]) == (record["run_id"], "error"), run

# -- names behind SSH gateways: mpirun's hostfile, perftest's servers --------------------------------

def _mark(inv: Path, cluster: Any, hosts: tuple[str, ...]) -> Path:
    """``inv`` with ``hosts`` marked ``ssh_gateway: true`` (reached by the others at their names)."""
    text = inv.read_text()
    for h in hosts:
        text = text.replace(f"port: {cluster[h].port}}}", f"port: {cluster[h].port}, ssh_gateway: true}}")
    assert text.count("ssh_gateway: true") == len(hosts), text
    out = inv.with_name(f"{inv.stem}-{'-'.join(hosts)}.yaml")
    out.write_text(text)
    return out


def test_mpirun_is_not_started_with_a_gateway_name_the_first_host_cannot_resolve(sshd_cluster, tmp_path) -> None:
    """node2 behind an SSH gateway: mpirun on node1 reaches it by the name 'node2' (its hostfile
    line), which node1 cannot resolve. main started mpirun anyway and the group failed with
    mpirun's own words (or its wait), never naming the gateway. Now node1 is asked first: the
    group is not run, one line naming node1, the name node2 and the gateway, and mpirun never
    starts. node1 marked instead (its own line of the hostfile, dialled by no peer): mpirun runs."""
    from sshd_harness import install_fake_tool
    from test_ssh_backend import FAKE_MPIRUN, REAL, backend_for, install_python, sh_quote, skip_where_resolves, \
        write_inventory

    from sncheck.probeplan import Group, StressPlan
    from sncheck.vendors.parsers import strip_source_header

    skip_where_resolves("node2")
    cluster = sshd_cluster(2)
    for host in cluster:
        install_python(host)
    tests_dir = tmp_path / "nccl-tests"
    tests_dir.mkdir()
    out = tests_dir / "all_reduce_perf.out"
    out.write_text(strip_source_header(
        (REAL / "nccl-tests/all_reduce_perf/01_h100_16ranks_2nodes_float_newcols.txt").read_text()))
    (tests_dir / "all_reduce_perf").write_text(f"#!/bin/sh\nexec cat {sh_quote(out)}\n")
    (tests_dir / "all_reduce_perf").chmod(0o755)
    log = tmp_path / "mpirun.log"
    install_fake_tool(cluster["node1"], "mpirun", FAKE_MPIRUN.format(log=sh_quote(log)))
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=1, extra=(
        f"launcher:\n  type: mpirun\n  nccl_tests_dir: {json.dumps(str(tests_dir))}\n"))
    plan = StressPlan(groups=(Group("domain:sn0", "domain", ("node1/gpu0", "node2/gpu0")),),
                      collectives=("all_reduce",), sizes=(8, 16), warmup=1, iters=1)

    def rows(marked: tuple[str, ...]) -> list[dict]:
        backend = backend_for(_mark(inv, cluster, marked), cluster)
        got: list[dict] = []
        try:
            backend.collectives(plan, got.append)
        finally:
            backend.close()
        return got

    got = rows(("node2",))
    assert not log.exists(), log.read_text()
    [row] = got
    assert (row["kind"], row["entity"], row["status"]) == ("not_run", "domain:sn0", "error"), row
    assert row["message"].startswith(
        f"domain:sn0: nccl-tests not run: node1 cannot resolve node2, the name the hosts reach node2 at behind its "
        f"SSH gateway ({cluster['node2'].address} port {cluster['node2'].port}, ssh_gateway: true): "), row
    assert "make node2 resolve on every host" in row["message"] and "\n" not in row["message"], row

    ran = rows(("node1",))
    assert log.exists() and "node1 slots=1\n" in (tmp_path / "mpirun.log.hostfiles").read_text()
    assert [r for r in ran if r["kind"] == "collective" and r["status"] == "ok"], ran


def test_a_perftest_server_behind_a_gateway_its_client_cannot_resolve_is_not_started(sshd_cluster, tmp_path) -> None:
    """n2 (the server of both rail pairs) behind an SSH gateway: its client n1 dials it at 'n2',
    which n1 cannot resolve. main started the server, the client failed to connect five times and
    the server waited for it until the command timeout, a row per rail naming no gateway. Now n1 is
    asked first: each rail pair is not run, naming n1, the name n2 and the gateway, and no perftest
    starts. n1 marked instead (a client, dialled by nobody): both rails are measured."""
    from fake_tool import install_fake_tools
    from sshd_harness import install_fake_tool
    from test_scaleout_ssh import FAKE, _inventory, _replay
    from test_ssh_backend import backend_for, skip_where_resolves

    from sncheck.probeplan import connectivity_plan

    skip_where_resolves("n2")
    cluster = sshd_cluster(2, ["n1", "n2"])
    started = tmp_path / "perftest-started"
    for h in cluster:
        install_fake_tools(h, 2)
        install_fake_tool(h, "ib_write_bw", (
            f"#!/bin/sh\necho {h.name} >> {shlex.quote(str(started))}\nexec {shlex.quote(sys.executable)} "
            f"{shlex.quote(str(FAKE))} {shlex.quote(str(_replay(h, cluster)))} ib_write_bw \"$@\"\n"))
    inv = _inventory(tmp_path, cluster, "  scale_up: {bandwidth: 270 GB/s, latency: 3 us}\n"
                                         "  scale_out: {bandwidth: 400 Gb/s, latency: 15 us}\n", 2, "n1", "n2")

    def rows(marked: tuple[str, ...]) -> list[dict]:
        backend = backend_for(_mark(inv, cluster, marked), cluster, command_timeout=20)
        got: list[dict] = []
        try:
            backend.scale_out(connectivity_plan(backend.topo, tools=("ib_write_bw",)), got.append)
        finally:
            backend.close()
        return got

    got = rows(("n2",))
    assert not started.exists(), started.read_text()
    not_run = sorted((r["entity"], r["status"], r["message"]) for r in got if r["kind"] == "not_run")
    assert [(e, s) for e, s, _ in not_run] == [("n1/gpu0<->n2/gpu0", "error"), ("n1/gpu1<->n2/gpu1", "error")], got
    for entity, _, message in not_run:
        assert message.startswith(
            f"{entity}: ib_write_bw not run: n1 cannot resolve n2, the name the hosts reach n2 at behind its SSH "
            f"gateway ({cluster['n2'].address} port {cluster['n2'].port}, ssh_gateway: true): "), message
    assert not [r for r in got if r["kind"] == "host_fact" and r.get("fact") == "ib_bw"], got

    measured = [r for r in rows(("n1",)) if r["kind"] == "host_fact" and r.get("fact") == "ib_bw"]
    assert sorted(r["entity"] for r in measured) == ["n1/gpu0<->n2/gpu0", "n1/gpu1<->n2/gpu1"], measured


# -- watch's rank map from Slurm's environment: a step's own shape, never the job's nodes with its tasks --

_WHERE = ("import json, os\n"
          "from sncheck.watch.rankmap import from_slurm\n"
          "m = from_slurm()\n"
          "p = m and m.placements.get(int(os.environ['SLURM_PROCID']))\n"
          "print(json.dumps([os.environ['SLURM_PROCID'], os.environ['SLURMD_NODENAME'], os.environ['SLURM_LOCALID'],"
          " p and [p.host, p.local_rank], m and len(m.placements)]))\n")


@pytest.mark.slurm
@pytest.mark.parametrize("job, step", [(["-N3", "-n6"], ["-N2", "-n3"]),
                                       (["-N2", "-n4"], ["--preserve-env", "-m", "block", "-N2", "-n2"]),
                                       (["-N2", "-n4"], ["-m", "cyclic", "-N2", "-n4"]),
                                       (["-N2", "-n4"], ["-m", "plane=3", "-N2", "-n4"]),
                                       (["-N3", "-n3"], ["-N3", "-n3"]),
                                       (["-N2", "-n2"], ["--overcommit", "-m", "cyclic", "-N2", "-n7"]),
                                       (["-N3", "-n4"], ["--overcommit", "-m", "cyclic", "-N3", "-n10"])],
                         ids=["a-step-on-part-of-the-job", "preserve-env", "cyclic", "plane", "srun-default-cyclic",
                              "cyclic-overcommit", "cyclic-overcommit-uneven-cpus"])
def test_the_slurm_rank_map_is_the_steps_own_as_srun_placed_it(slurm_cluster, job: list[str],
                                                              step: list[str]) -> None:
    """Inside a job step srun sets the step's shape in SLURM_STEP_NODELIST and
    SLURM_STEP_TASKS_PER_NODE; SLURM_JOB_NODELIST stays the job's, and SLURM_TASKS_PER_NODE is the
    step's (the job's under --preserve-env). main paired the job's node list with
    SLURM_TASKS_PER_NODE: a step on part of the job had no map at all (ranks named as ranks), and
    under --preserve-env every rank was placed as the job's tasks are (the job's 3,1: rank 1 on
    node1, where srun ran it on node2: the wrong card named). Cyclic (srun's default where tasks
    are no more than nodes) and plane distributions are dealt as srun deals them, cyclic under
    --overcommit too (ops4: main gave no map there). Each rank of the step, on the loopback cluster, must
    find itself in the map where srun ran it (its node and SLURM_LOCALID)."""
    cluster = slurm_cluster(nodes=3)
    env = {**cluster.env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    r = cluster.run(["salloc", *job, "srun", *step, sys.executable, "-c", _WHERE], env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-1500:]
    seen = sorted(json.loads(line) for line in r.stdout.splitlines() if line.startswith("["))
    tasks = int(step[-1][2:])
    assert len(seen) == tasks, r.stdout
    for rank, node, local, placed, size in seen:
        assert (placed, size) == ([node, int(local)], tasks), (rank, node, local, placed, size)


def test_a_step_environment_that_contradicts_itself_makes_no_rank_map() -> None:
    """The step's variables as srun set them for `srun -N2 -n3` in a 3-node job (seen on the
    loopback cluster) give the step's map; a step listing a node its job does not hold, or its
    tasks against SLURM_STEP_NUM_TASKS or its nodes against SLURM_STEP_NUM_NODES, is no map."""
    from sncheck.watch.rankmap import from_slurm

    step = {"SLURM_JOB_NODELIST": "node[1-3]", "SLURM_NODELIST": "node[1-3]", "SLURM_JOB_NUM_NODES": "3",
            "SLURM_NNODES": "2", "SLURM_NTASKS": "3", "SLURM_TASKS_PER_NODE": "2,1", "SLURM_DISTRIBUTION": "block",
            "SLURM_STEP_NODELIST": "node[1-2]", "SLURM_STEP_TASKS_PER_NODE": "2,1", "SLURM_STEP_NUM_NODES": "2",
            "SLURM_STEP_NUM_TASKS": "3"}
    m = from_slurm(step)
    assert m is not None and [(p.host, p.local_rank) for p in m.placements.values()] == \
        [("node1", 0), ("node1", 1), ("node2", 0)]
    for lie in ({"SLURM_STEP_NODELIST": "node[3-4]"}, {"SLURM_STEP_NUM_TASKS": "4"}, {"SLURM_STEP_NUM_NODES": "3"},
                {"SLURM_STEP_TASKS_PER_NODE": ""}):
        assert from_slurm({**step, **lie}) is None, lie
