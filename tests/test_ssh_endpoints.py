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
