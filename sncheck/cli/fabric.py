"""``sncheck fabric``: the scale-out fabric read from the fabric itself (InfiniBand:
ibnetdiscover and perfquery, through the plug-in), against the inventory's."""

from __future__ import annotations

import json
from typing import Any

import click
import yaml

from sncheck.actions.base import LocalRunner
from sncheck.cli.paths import input_file, input_ref, output_file
from sncheck.config.jsonio import read_json
from sncheck.config.fileio import read_input, write_atomic
from sncheck.config.inventory import Inventory
from sncheck.run.inputs import load_inventory
from sncheck.errors import ConfigError, HarnessError, ParseError
from sncheck.fabric import Cabling, inventory_block
from sncheck.health.cabling import cabling_findings, counter_growth_findings, growth_bars
from sncheck.model import Finding
from sncheck.store.results import finding_to_json
from sncheck.cli.main import handle_errors
from sncheck.topology import Topology
from sncheck.vendors import registry
from sncheck.vendors.delivery import decode

COUNTERS_SCHEMA = "sncheck.fabric-counters/1"


def _run(argv: tuple[str, ...]) -> str:
    """A fabric tool's stdout, run on this machine (a host on the fabric)."""
    res = LocalRunner().run(list(argv))
    if res.exit_code == 127:
        raise HarnessError(f"{argv[0]} not found on this machine: run sncheck fabric on a host of the fabric with "
                           f"its diagnostic tools installed, or give the topology with --topology FILE")
    if res.cut_at is not None:
        raise HarnessError(f"{' '.join(argv)} printed more than {res.cut_at} bytes: cut and stopped, not read")
    if not res.ok:
        raise HarnessError(f"{' '.join(argv)} failed (exit {res.exit_code}): {res.tail(3)!r}")
    return res.stdout


def _topology(disc: Any, topology: str | None) -> dict:
    text = decode(read_input(topology, "log")) if topology else _run(disc.TOPOLOGY_ARGV)
    source = topology or " ".join(disc.TOPOLOGY_ARGV)
    try:
        parsed = disc.parse_topology(text)
    except ParseError as e:  # nothing of a topology in it (an empty file): the same as a garbled one
        raise HarnessError(f"the fabric's topology ({source}) does not read: {e}") from e
    if parsed["errors"]:  # a cut or garbled topology is never judged as the fabric
        raise HarnessError(f"the fabric's topology ({source}) does not read whole: {'; '.join(parsed['errors'][:3])}")
    return parsed


def _cards(inventory: Inventory | None, parsed: dict) -> dict[str, int]:
    if inventory is not None:
        return {h: spec.cards for h, spec in inventory.hosts.items()}
    hosts: dict[str, int] = {}
    for n in parsed["nodes"]:
        if n["type"] == "ca":
            host = n["desc"].strip().partition(" ")[0]
            hosts[host] = hosts.get(host, 0) + 1
    return hosts


def _counters(disc: Any, parsed: dict) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for switch, argv in disc.counter_commands(parsed):
        ports, errors = disc.port_counters(switch, _run(argv))
        if errors:
            raise HarnessError(f"{' '.join(argv)} ({switch}) does not read whole: {'; '.join(errors[:3])}")
        out.update(ports)
    return out


def _load_counters(path: str) -> dict[str, dict[str, int]]:
    data = read_json(path, "the counters file")
    if not isinstance(data, dict) or data.get("schema") != COUNTERS_SCHEMA or not isinstance(data.get("ports"), dict):
        raise ConfigError(f"not a counters file of sncheck fabric check --save (schema {COUNTERS_SCHEMA})", path)
    out: dict[str, dict[str, int]] = {}
    for port, vals in data["ports"].items():
        # a value that is not a count (text, a bool, a float) was dropped, and so was its port's
        # judgement: the growth of a counter no longer read before is never judged
        bad = next((c for c, v in vals.items() if isinstance(v, bool) or not isinstance(v, int) or v < 0), None) \
            if isinstance(vals, dict) else "(not a mapping of counters)"
        if bad is not None:
            raise ConfigError(f"port {port!r}: counter {bad!r} is not a count (a whole number from 0)", path)
        out[str(port)] = {str(c): v for c, v in vals.items()}
    return out


def growth_findings(before: dict[str, dict[str, int]], counters: dict[str, dict[str, int]], found: Cabling,
                    since: str, rules_ref: str) -> list[Finding]:
    """The ports whose counters grew since ``before``. What judges nothing is never a pass: no
    port read now (exit 3), or a counters file that shares no counter of any port read now
    (another fabric's, or emptied; exit 2)."""
    if not counters:
        raise HarnessError("no switch port's counters were read now: no growth since the saved file could be judged")
    shared = sum(1 for port, vals in counters.items() for c in vals if c in before.get(port, {}))
    if not shared:
        raise ConfigError(f"holds no counter of the {len(counters)} switch ports read now (another fabric's?): "
                          "no counter's growth could be judged", since)
    from sncheck.health.rules import load_rules  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them

    return counter_growth_findings(before, counters, found, growth_bars(load_rules(rules_ref).rules))


@click.group("fabric")
def fabric_group() -> None:
    """The scale-out fabric as the fabric itself reports it (InfiniBand)."""


@fabric_group.command("check")
@click.option("-i", "--inventory", "inventory_path", type=input_file("yaml"), required=True,
              help="The inventory whose fabric (declared, or derived) the cabling is held to.")
@click.option("--topology", type=input_file("log"), help="The fabric's topology file (its discovery tool's output) to read instead of running the tool.")
@click.option("--save", type=output_file(), help="Write the switch ports' error counters read now.")
@click.option("--since", type=input_file("json"),
              help="Counters saved by an earlier check: name every switch port whose error counters grew "
                   "beyond the rules' bars.")
@click.option("--rules", "rules_ref", type=input_ref("yaml"),
              help="--since: the rules whose counter_growth rules on fabric_counters judge each counter's growth "
                   "(default: the shipped rules).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@handle_errors
def check_cmd(inventory_path: str, topology: str | None, save: str | None, since: str | None,
              rules_ref: str | None, as_json: bool) -> None:
    """Compare the fabric's cabling with the inventory's; with --save/--since, read every switch
    port's error counters (exit 0: as declared, 1: findings, 2: bad input, 3: the fabric
    could not be read).

    \b
    Examples:
      sncheck fabric check -i cluster.yaml
      sncheck fabric check -i cluster.yaml --save before.json     # then run the workload, then:
      sncheck fabric check -i cluster.yaml --since before.json --json
    """
    if rules_ref is not None and since is None:
        raise ConfigError("--rules judges the counters' growth since an earlier read: give --since FILE", rules_ref)
    inventory = load_inventory(inventory_path)
    fabric = Topology(inventory).fabric
    disc = registry.fabric_discovery()
    before = _load_counters(since) if since else None
    parsed = _topology(disc, topology)
    found: Cabling = disc.cabling(parsed, _cards(inventory, parsed))
    findings: list[Finding] = cabling_findings(fabric, found)
    if save or before is not None:
        counters = _counters(disc, parsed)
        if before is not None:
            findings += growth_findings(before, counters, found, str(since), rules_ref or "default")
        if save:
            write_atomic(save, json.dumps({"schema": COUNTERS_SCHEMA, "ports": counters}, indent=1) + "\n")
    summary = {"nics_found": len(found.nics), "nics_declared": len(fabric.declared_cabling().nics),
               "uplinks_found": len(found.uplinks), "strays": len(found.strays)}
    if as_json:
        click.echo(json.dumps({"findings": [finding_to_json(f) for f in findings], "summary": summary}, indent=2))
    else:
        for f in findings:
            click.echo(f"[{f.severity}] {f.entity_kind} {f.entity}: {f.rule}: {f.message}")
        click.echo(f"sncheck fabric: {len(findings)} findings; {summary['nics_found']} of "
                   f"{summary['nics_declared']} NICs and {summary['uplinks_found']} uplinks found"
                   + (f"; {summary['strays']} adapters of other hosts" if summary["strays"] else ""), err=True)
    if findings:
        raise click.exceptions.Exit(1)


@fabric_group.command("discover")
@click.option("-i", "--inventory", "inventory_path", type=input_file("yaml"),
              help="Name rails for this inventory's hosts (default: every adapter the fabric shows).")
@click.option("--topology", type=input_file("log"), help="The fabric's topology file (its discovery tool's output) to read instead of running the tool.")
@handle_errors
def discover_cmd(inventory_path: str | None, topology: str | None) -> None:
    """Print the fabric as found, as the inventory's fabric: block (YAML)."""
    inventory = load_inventory(inventory_path) if inventory_path else None
    disc = registry.fabric_discovery()
    parsed = _topology(disc, topology)
    found: Cabling = disc.cabling(parsed, _cards(inventory, parsed))
    for host, why in found.unread.items():
        click.echo(f"sncheck fabric: {host}: {why}: left out", err=True)
    click.echo(yaml.safe_dump(inventory_block(found), sort_keys=False, default_flow_style=None), nl=False)
