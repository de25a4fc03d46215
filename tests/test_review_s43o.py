"""Review s43o: an adversarial read of this session's ops changes (hostile round 12's Slurm
reading, 450e48b). Each test names the defect it shows; the report lists what held."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_actions import FakeCluster
from test_hostile_r9 import _act
from test_hostile_r12 import _wrap

from sncheck.store.state import StateStore

HOSTS = [f"node{i:03d}" for i in range(1, 17)]


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCluster:  # fake sinfo, scontrol, kubectl
    fc = FakeCluster.create(tmp_path / "fake", HOSTS)
    monkeypatch.setenv("PATH", f"{fc.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return fc


def _real(tool: str) -> str:
    """The fake cluster's ``tool``, for a wrapper placed before it on PATH."""
    for d in os.environ["PATH"].split(os.pathsep):
        if (Path(d) / tool).is_file():
            return str(Path(d) / tool)
    raise AssertionError(tool)


def test_a_drain_done_whose_wrapper_echoes_a_reason_with_the_word_error_is_a_drain(
        tmp_path: Path, cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """A site wrapper that logs the command it runs and exits 0 with the drain done: the
    rule 'pcie-error' (a rules file's name, the drain reason's text) put the word 'error' on
    that line, and 450e48b's
    ``\\berror\\b`` anywhere read it as scontrol's refusal: exit 3, 'not applied' in the store,
    while Slurm held the node drained. Slurm's refusals are 'X error: ...' (slurm_perror) and
    'X: error: ...' (error()) at a line's start."""
    real = _real("scontrol")
    _wrap(tmp_path, monkeypatch, "scontrol", f'echo "running: scontrol $*"\nexec {real} "$@"')
    state = tmp_path / "state"
    r = _act(state, "isolate", "node003", "--via", "slurm", "--apply", "--rule", "pcie-error")
    assert cluster.slurm("node003")["state"] == "DRAIN"
    assert r.exit_code == 0 and "drained node003" in r.output, r.output
    with StateStore(state) as st:
        assert [(s["entity"], s["applied"]) for s in st.current_status()] == [("node003", True)]


@pytest.mark.parametrize("printed", ['echo "slurm_load_node: Unable to contact slurm controller (connect failure)"',
                                     'echo "slurm_load_node: Unable to contact slurm controller (connect failure)" >&2',
                                     'echo "sinfo: error: Invalid node name specified" >&2'],
                         ids=["stdout", "stderr", "error-stderr"])
@pytest.mark.parametrize("action", ["isolate", "release"])
def test_sinfo_exiting_0_beside_its_error_is_no_reading(tmp_path: Path, cluster: FakeCluster,
                                                       monkeypatch: pytest.MonkeyPatch, printed: str,
                                                       action: str) -> None:
    """hostile round 12 left it open: an ``sinfo`` (a wrapper, an older build) that prints
    slurm_perror's line and exits 0. On stdout it was a foreign drain reason (skipped, exit 0);
    on stderr an empty reading, so a release said 'not drained; nothing to resume' (exit 0)
    and an isolate drained with the reason never read. Both are 'reading the drain reason
    failed', exit 3, nothing done."""
    cluster.set_slurm("node005", state="DRAIN", reason="sncheck: manual (run 20261201T000000Z-ffff)")
    _wrap(tmp_path, monkeypatch, "sinfo", f"{printed}\nexit 0")
    state = tmp_path / "state"
    r = _act(state, action, "node005", "--via", "slurm", "--apply")
    assert r.exit_code == 3, r.output
    assert "reading the drain reason of node005 failed" in r.output, r.output
    assert cluster.slurm("node005")["state"] == "DRAIN"
    assert [a[0] for a in cluster.log() if a[0] == "scontrol"] == []


def test_an_operators_reason_starting_error_colon_stays_a_foreign_reason(tmp_path: Path, cluster: FakeCluster) -> None:
    """What must hold beside the fix: an operator's reason 'error: xid 79 on gpu2' is a reason
    (skipped, exit 0, untouched), not a failed sinfo."""
    cluster.set_slurm("node006", state="DRAIN", reason="error: xid 79 on gpu2")
    state = tmp_path / "state"
    for action in ("isolate", "release"):
        r = _act(state, action, "node006", "--via", "slurm", "--apply")
        assert r.exit_code == 0 and "not sncheck's" in r.output, r.output
    assert cluster.slurm("node006") == {"state": "DRAIN", "reason": "error: xid 79 on gpu2"}


# -- ssh_gateway (eb623eb): the name the other hosts dial ------------------------------------------

def test_a_gateway_hosts_name_that_another_host_is_dialled_at_is_refused(tmp_path: Path) -> None:
    """Behind the gateway the other hosts reach a host by its inventory name (peer_address). Where
    that name is the address sncheck dials for another host (node3 at 'node1', or the gateway's own
    name 'gw'), the rendezvous, mpirun's hostfile and perftest's server for node1 went to node3's
    machine (or the gateway's): two machines read as one, with no word. Refused, exit 2, nothing run."""
    from click.testing import CliRunner
    from test_hardening import one_line_error
    from test_ssh_endpoints import _inventory

    from sncheck.cli.main import main

    inv = _inventory(tmp_path / "inv.yaml", {
        "node1": "address: gw, port: 2222, user: a, ssh_gateway: true",
        "node2": "address: gw, port: 2222, user: b, ssh_gateway: true", "node3": "address: node1, port: 22"})
    r = CliRunner().invoke(main, ["connectivity", "-i", str(inv), "--backend", "ssh", "-q",
                                  "--out", str(tmp_path / "run")])
    line = one_line_error(r)
    assert r.exit_code == 2 and "node1 is reached by the other hosts at its name, which is node3's address" in line, line
    assert not (tmp_path / "run").exists()
    inv = _inventory(tmp_path / "inv.yaml", {
        "gw": "address: gw, port: 2222, user: a, ssh_gateway: true",
        "node2": "address: gw, port: 2222, user: b, ssh_gateway: true"})
    r = CliRunner().invoke(main, ["connectivity", "-i", str(inv), "--backend", "ssh", "-q",
                                  "--out", str(tmp_path / "run2")])
    line = one_line_error(r)
    assert r.exit_code == 2 and "gw is reached by the other hosts at its name, which is gw's address" in line, line


def test_a_gateway_hosts_name_that_does_not_resolve_ends_the_job_at_once_naming_it(
        sshd_cluster, tmp_path: Path) -> None:
    """peer_address by inventory name where the name resolves nowhere (this machine knows no
    'node1'): the torch job's rendezvous is on the first host at its name, so the free-port read
    there fails and the job is not run, naming node1 and the name, at once; no rendezvous is
    waited on until the job's timeout (held on main; the other hosts' names are not dialled by the
    torch job)."""
    pytest.importorskip("torch")
    from test_ssh_backend import all_reduce_rows, backend_for, gateway_pair, skip_where_resolves

    from sncheck.probeplan import Group

    skip_where_resolves("node1")
    cluster, inv = gateway_pair(sshd_cluster, tmp_path, ("node1",))
    backend = backend_for(inv, cluster, job_timeout_s=300)
    rows, took = all_reduce_rows(backend, Group("domain:sn0", "domain", ("node1/gpu0", "node2/gpu0")))
    assert took < 120
    not_run = [r for r in rows if r["kind"] == "not_run"]
    assert not_run and all("cannot find a free port on node1" in r["message"] for r in not_run), not_run
    assert [r for r in rows if r["kind"] == "collective" and r["status"] == "ok"] == []
