"""Helpers for the per-platform SSH runs: real sshd hosts whose fake tools replay real
captures (one shell script per tool, choosing the capture by its arguments), the SSH
backend's host facts over them, and the shipped rules turning the rows into findings."""

from __future__ import annotations

import shlex
from pathlib import Path

import pandas as pd
from sshd_harness import SshdCluster, SshdHost, install_fake_tool

from sncheck.backends.ssh import SshBackend
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import evaluate, load_rules
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology
from sncheck.vendors.parsers import strip_source_header

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def real(rel: str) -> str:
    return strip_source_header((REAL / rel).read_text(encoding="utf-8"))


def install_replay(host: SshdHost, tool: str, by_args: dict[str, str]) -> None:
    """A fake ``tool`` on the host: ``by_args`` maps its exact argument string to the text
    it prints ("" = no arguments); other arguments exit 2 with a message on stderr."""
    data = host.directory / "replay" / tool
    data.mkdir(parents=True, exist_ok=True)
    cases = []
    for i, (args, text) in enumerate(by_args.items()):
        (data / str(i)).write_text(text)
        cases.append(f"  {shlex.quote(args)}) exec cat {shlex.quote(str(data / str(i)))} ;;")
    install_fake_tool(host, tool, "#!/bin/sh\ncase \"$*\" in\n" + "\n".join(cases)
                      + f"\nesac\necho \"fake {tool}: unexpected arguments: $*\" >&2\nexit 2\n")


def write_inventory(path: Path, cluster: SshdCluster, platform: str, supernodes: dict[str, list[str]]) -> Path:
    """An inventory naming only the platform: no design, no cards_per_host."""
    sns = "\n".join(f"  - {{name: {sn}, hosts: \"{','.join(hs)}\"}}" for sn, hs in supernodes.items())
    hosts = "\n".join(f"  {h.name}: {{address: {h.address}, port: {h.port}}}" for h in cluster)
    path.write_text(f"name: {platform}-ssh\nplatform: {platform}\nsupernodes:\n{sns}\n"
                    f"backend: {{type: ssh, dist_backend: gloo}}\nhosts:\n{hosts}\n")
    return path


def host_facts(inventory: Path, cluster: SshdCluster, **options) -> tuple[list[dict], list]:
    """Host facts of every host over real SSH, and the findings the shipped rules make of them."""
    topo = Topology(load_inventory(inventory))
    backend = SshBackend(topo, known_hosts=str(cluster.known_hosts), ssh_config=str(cluster.ssh_config), **options)
    rows: list[dict] = []
    try:
        backend.host_facts(tuple(topo.inventory.hosts), rows.append)
    finally:
        backend.close()
    ctx = DetectContext(topo, topo.inventory.design)
    findings = evaluate(load_rules("default").rules, pd.DataFrame(rows), ctx)
    return rows, findings


def facts_of(rows: list[dict], host: str) -> dict[str, dict]:
    return {r["fact"]: r for r in rows if r["kind"] == "host_fact" and r["host"] == host}
