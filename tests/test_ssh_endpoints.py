"""Hosts dialled at one SSH endpoint (hostile round 10's H10-09, and what it left).

One machine reached under two inventory names would be measured and judged as two hosts and
the second name's machine never: the SSH backend refuses it before anything runs (exit 2),
naming every such host at once."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from test_hardening import one_line_error

from sncheck.cli.main import main

DESIGN = '  scale_up: {bandwidth: "0.001 GB/s", latency: "100 ms"}\n'


def _inventory(path: Path, hosts: dict[str, str]) -> Path:
    """An SSH inventory of ``hosts`` (name -> its overrides' text), one card each."""
    path.write_text("name: ends\ndesign:\n" + DESIGN
                    + f"supernodes:\n  - {{name: sn0, hosts: \"{','.join(hosts)}\", cards_per_host: 1}}\n"
                    + "backend: {type: ssh, dist_backend: gloo}\nhosts:\n"
                    + "".join(f"  {h}: {{{over}}}\n" for h, over in hosts.items()))
    return path


def test_every_host_at_an_earlier_hosts_endpoint_is_named_in_one_error(tmp_path: Path) -> None:
    """node2 at node1's endpoint and node4 and node5 at node3's: one error names all three, so the
    inventory is mended in one pass (it named node2 only, and node4 after the next run, ...)."""
    inv = _inventory(tmp_path / "inv.yaml", {
        "node1": "address: 10.9.0.1, port: 22", "node2": "address: 10.9.0.1, port: 22",
        "node3": "address: 10.9.0.3, port: 22", "node4": "address: 10.9.0.3, port: 22",
        "node5": "address: 10.9.0.3, port: 22", "node6": "address: 10.9.0.6, port: 22"})
    r = CliRunner().invoke(main, ["connectivity", "-i", str(inv), "--backend", "ssh", "-q",
                                  "--out", str(tmp_path / "run")])
    line = one_line_error(r)
    assert "hosts node1 and node2 are both reached at 10.9.0.1 port 22, node3 and node4 at 10.9.0.3 port 22, " \
        "node3 and node5 at 10.9.0.3 port 22: each such machine would be measured and judged as two hosts or " \
        "more, and the own machines of node2, node4, node5 never; give each host its own address" in line, line
    assert "node6" not in line and not (tmp_path / "run").exists()


# -- a gateway that routes SSH by user (sshpiper): allowed only when the inventory says so ---------

def _gateway_inventory(tmp_path: Path, cluster, users: tuple[str, str], marked: tuple[bool, bool]) -> Path:
    """node1 and node2 both at node1's sshd (the gateway), as ``users``, ``ssh_gateway`` as ``marked``."""
    from test_ssh_backend import install_profile

    one = cluster["node1"]
    install_profile(one, "a100", cards=1)
    over = {h: f"address: {one.address}, port: {one.port}, user: {u}" + (", ssh_gateway: true" if m else "")
            for h, u, m in zip(("node1", "node2"), users, marked)}
    return _inventory(tmp_path / "gw.yaml", over)


def test_hosts_at_one_endpoint_with_their_own_users_are_refused_without_the_gateway_key(
        sshd_cluster, tmp_path: Path) -> None:
    """Two users at one address and port are one machine by default (3555e01): refused, exit 2,
    the fix naming the gateway key; a host behind the gateway beside one that is not, and two
    gateway hosts with one user (one upstream), are refused too."""
    cluster = sshd_cluster(1, ["node1"])
    common = ["--backend", "ssh", "--known-hosts", str(cluster.known_hosts), "-q"]
    one = cluster["node1"]
    for marked in ((False, False), (True, False), (False, True)):
        inv = _gateway_inventory(tmp_path, cluster, (cluster.user, "gwuser2"), marked)
        line = one_line_error(CliRunner().invoke(main, ["connectivity", "-i", str(inv), *common,
                                                        "--out", str(tmp_path / "r")]))
        assert f"hosts node1 and node2 are both reached at {one.address} port {one.port}: one machine would be " \
            "measured and judged as two hosts" in line and "ssh_gateway: true" in line, (marked, line)
    inv = _gateway_inventory(tmp_path, cluster, (cluster.user, cluster.user), (True, True))
    line = one_line_error(CliRunner().invoke(main, ["connectivity", "-i", str(inv), *common,
                                                    "--out", str(tmp_path / "r")]))
    assert f"reached at {one.address} port {one.port} as user {cluster.user}: one machine" in line, line
    assert not (tmp_path / "r").exists()


def test_hosts_behind_a_gateway_that_routes_by_user_are_each_dialled_as_their_own_user(
        sshd_cluster, tmp_path: Path) -> None:
    """With ``ssh_gateway: true`` on both, node1 and node2 at one sshd are two hosts: each is
    dialled there as its own user (this sshd lets in only node1's: node2 is unreachable, a
    finding, never node1's machine answering for it), and the other hosts reach each by its
    inventory name, not the gateway's address."""
    from test_ssh_backend import backend_for, collect

    cluster = sshd_cluster(1, ["node1"])
    inv = _gateway_inventory(tmp_path, cluster, (cluster.user, "gwuser2"), (True, True))
    backend = backend_for(inv, cluster)
    try:
        rows = collect(backend.host_facts, ("node1", "node2"))
        assert (backend.peer_address("node1"), backend.peer_address("node2")) == ("node1", "node2")
    finally:
        backend.close()
    status = {}
    for r in rows:
        status.setdefault(r["host"], set()).add(r["status"])
    assert status["node1"] == {"ok"}, [r for r in rows if r["host"] == "node1" and r["status"] != "ok"]
    assert status["node2"] == {"unreachable"}, status
    assert any("gwuser2" in r["message"] for r in rows if r["host"] == "node2"), \
        [r["message"] for r in rows if r["host"] == "node2"]
