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
from sncheck.vendors.sim import own_ids

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def real(rel: str) -> str:
    return strip_source_header((REAL / rel).read_text(encoding="utf-8"))


def install_replay(host: SshdHost, tool: str, by_args: dict[str, str]) -> None:
    """A fake ``tool`` on the host: ``by_args`` maps its exact argument string to the text
    it prints ("" = no arguments), its GPU UUIDs made the host's own (one capture replayed on many
    hosts: :func:`sncheck.vendors.sim.own_ids`); other arguments exit 2 with a message on stderr."""
    data = host.directory / "replay" / tool
    data.mkdir(parents=True, exist_ok=True)
    cases = []
    for i, (args, text) in enumerate(by_args.items()):
        (data / str(i)).write_text(own_ids(text, host.name))
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


def host_facts(inventory: Path, cluster: SshdCluster, outputs: dict[str, list[dict]] | None = None,
               **options) -> tuple[list[dict], list]:
    """Host facts of every host over real SSH, and the findings the shipped rules make of them;
    ``outputs`` (if given) gets each host's raw outputs, as the backend kept them."""
    topo = Topology(load_inventory(inventory))
    backend = SshBackend(topo, known_hosts=str(cluster.known_hosts), ssh_config=str(cluster.ssh_config), **options)
    rows: list[dict] = []
    try:
        backend.host_facts(tuple(topo.inventory.hosts), rows.append)
    finally:
        backend.close()
    if outputs is not None:
        outputs.update({h: backend.raw_outputs(h) for h in topo.inventory.hosts})
    ctx = DetectContext(topo, topo.inventory.design)
    findings = evaluate(load_rules("default").rules, pd.DataFrame(rows), ctx)
    return rows, findings


def facts_of(rows: list[dict], host: str) -> dict[str, dict]:
    return {r["fact"]: r for r in rows if r["kind"] == "host_fact" and r["host"] == host}


def disagreements(outputs: dict[str, list[dict]], rows: list[dict], commands: dict, cards: int,
                  design_only: frozenset[str] = frozenset()) -> tuple[list[str], int]:
    """One parser, one judgement (issue 28): for every command a host ran, whether ``sncheck
    parse VIEW --expect CARDS`` of the output the run read exits 1 exactly where the run's facts
    of that command fail. The lines where they differ, and how many outputs were compared. A
    fact the run judges against what no output carries (the platform's design) is named in
    ``design_only`` and left out."""
    from sncheck.errors import ParseError
    from sncheck.vendors.hostjudge import bind
    from sncheck.vendors.parsers import failures, parse_text

    by_display = {c.display: c for c in (bind(c) for c in commands.values())}
    wrong, compared = [], 0
    for host, outs in outputs.items():
        for out in outs:
            cmd = by_display.get(out["command"])
            if cmd is None or cmd.view is None or out["exit_code"] not in (0, None):
                continue
            facts = [r for r in rows if r.get("host") == host and r.get("fact") in cmd.facts and r.get("tool") == cmd.tool]
            if not facts:
                continue
            compared += 1
            expect = cards if cmd.listing is not None and cmd.listing.cards else None
            try:
                parse_fails = bool(failures(parse_text(cmd.view, out["stdout"], expect=expect)))
            except ParseError:
                parse_fails = True
            run_fails = [r["fact"] for r in facts if not r["ok"] and r["fact"] not in design_only]
            if parse_fails != bool(run_fails):
                wrong.append(f"{host} `{out['command']}` ({cmd.view}): parse {'exits 1' if parse_fails else 'exits 0'}, "
                             f"run {'fails ' + ', '.join(run_fails) if run_fails else 'passes'} "
                             f"({[r['message'][:160] for r in facts]})")
    return wrong, compared
