"""Slurm-side commands: ``sncheck node-check`` and ``sncheck inventory from-slurm``.

``sncheck.cli.main`` loads them when they are invoked (``from-slurm`` under ``inventory``).
The work lives in :mod:`sncheck.run.nodecheck` and :mod:`sncheck.slurm.cluster`, free of Click.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import click
import yaml

from sncheck.actions.base import LocalRunner
from sncheck.cli.main import handle_errors
from sncheck.cli.paths import input_file, output_file
from sncheck.cli.numbers import whole
from sncheck.config.fileio import write_atomic
from sncheck.errors import ConfigError
from sncheck.run.inputs import load_inventory, load_inventory_text
from sncheck.config.units import parse_bandwidth, parse_latency
from sncheck.run.nodecheck import node_check
from sncheck.slurm.cluster import inventory_dict, read_cluster
from sncheck.config.hostlist import expand

# Typical values (DESIGN.md "Numbers worth knowing"): NVLink 4 per direction, a 400G NIC.
DEFAULT_SCALE_UP = "450 GB/s,3 us"
DEFAULT_SCALE_OUT = "400 Gb/s,15 us"


def parse_budget(text: str) -> float:
    """``30s``, ``2m``, ``90``, ``1.5m`` -> seconds."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|min)?\s*", text or "")  # ASCII: '٣٠s' was 30 s
    if not m:
        digits = " (ASCII digits 0-9)" if text and not text.isascii() else ""
        raise click.BadParameter(f"{text!r} is not a duration like 30s or 2m{digits}")
    value = float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "min": 60, None: 1}[m.group(2)]
    if not 0 < value <= 3600:
        raise click.BadParameter(f"the budget must be above 0 and at most 1 hour, got {text!r}")
    return value


@click.command("node-check")
@click.option("--budget", default="30s", show_default=True, help="Time for the whole check (30s, 2m).")
@click.option("--node", help="This node's name (default $SLURMD_NODENAME, else the short host name).")
@click.option("-i", "--inventory", "inventory_path", type=input_file("yaml"),
              help="Inventory: the node's expected cards and design values (judges bandwidth and latency too).")
@click.option("--cards", type=whole(1, 4096), help="Expected cards (default: the inventory, Slurm's GRES, "
              "else what the vendor's card listing shows).")
@click.option("--no-collectives", is_flag=True, help="Host facts only (a fast prolog); no card pairs, no all-reduce.")
@click.option("--no-drain", is_flag=True, help="Report only; never drain or resume this node.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def node_check_cmd(budget: str, node: str | None, inventory_path: str | None, cards: int | None,
                   no_collectives: bool, no_drain: bool, as_json: bool) -> None:
    """Check THIS node only, for Slurm's HealthCheckProgram or a prolog (NHC practice).

    Host facts (nvidia-smi, ibstat, dcgmi), every pair of its cards and a small all-reduce
    over them, within the budget. On a failure it drains its own node with a reason that
    names the culprit card and rule (sncheck: node-check: node3/gpu2 remapped_rows: ...);
    on a pass it resumes the node only if node-check drained it. A node drained for another
    reason is never touched. Exit: 0 healthy, 1 unhealthy, 2 bad input, 3 could not run.

    \b
    slurm.conf:
      HealthCheckProgram=/usr/local/sbin/sncheck-node-check   # a wrapper: PATH, then
      HealthCheckInterval=300                                 #   exec sncheck node-check
    \b
    Examples:
      sncheck node-check
      sncheck node-check --budget 60s -i cluster.yaml --json
    """

    seconds = parse_budget(budget)
    inventory = load_inventory(inventory_path) if inventory_path else None
    report = node_check(node, seconds, inventory, cards, collectives=not no_collectives, drain=not no_drain)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        verdict = {0: "healthy", 1: "UNHEALTHY", 3: "could not check"}[report.exit_code]
        click.echo(f"node-check {report.node}: {verdict} ({report.cards} cards from {report.cards_source}, "
                   f"{report.elapsed_s:.1f}s of {seconds:g}s)")
        for p in report.problems:
            click.echo(f"  FAIL {p.entity} {p.rule}: {p.message}")
        for w in report.warnings:
            click.echo(f"  warning: {w}")
        if report.error:
            click.echo(f"  error: {report.error}")
        if report.slurm:
            click.echo(f"  slurm: {report.slurm}")
    sys.exit(report.exit_code)


def _tier(text: str, option: str) -> dict[str, Any]:
    try:
        bw, lat = (t.strip() for t in text.split(","))
        return {"bandwidth": f"{parse_bandwidth(bw):g} GB/s", "latency": f"{parse_latency(lat):g} us"}
    except (ValueError, ConfigError) as e:
        raise ConfigError(f"{option} must be 'BANDWIDTH,LATENCY' like '450 GB/s,3 us', got {text!r}") from e


@click.command("from-slurm")
@click.option("--partition", "-p", help="Only this partition's nodes.")
@click.option("--out", "-o", "out", type=output_file(), help="Write here (default: stdout).")
@click.option("--name", help="Inventory name (default: slurm-<partition> or slurm).")
@click.option("--scale-up", default=DEFAULT_SCALE_UP, show_default=True,
              help="Design bandwidth,latency per card pair inside a supernode (Slurm does not know it).")
@click.option("--scale-out", default=DEFAULT_SCALE_OUT, show_default=True,
              help="Design bandwidth,latency between supernodes.")
@handle_errors
def from_slurm(partition: str | None, out: str | None, name: str | None, scale_up: str, scale_out: str) -> None:
    """Write an inventory from Slurm: nodes (scontrol show nodes), cards (GRES gpu), supernodes.

    Supernodes: one per topology block (topology/block), else one per leaf switch
    (topology/tree, topology.conf), else all nodes in one. Slurm knows no link speeds: the
    design values are --scale-up/--scale-out (typical NVLink 4 and 400G NIC by default),
    written with a comment saying so; set them for your platform.

    \b
    Examples:
      sncheck inventory from-slurm --partition gpu --out cluster.yaml
      sncheck inventory check cluster.yaml
    """

    view = read_cluster(LocalRunner(), partition)
    design = {"scale_up": _tier(scale_up, "--scale-up"), "scale_out": _tier(scale_out, "--scale-out")}
    doc = inventory_dict(view, name or (f"slurm-{partition}" if partition else "slurm"), design)
    how = {"block": "one supernode per Slurm topology block",
           "tree": "one supernode per leaf switch of Slurm's topology.conf",
           "none": "no Slurm topology plugin: all nodes in one supernode"}[view.grouping]
    defaults = scale_up == DEFAULT_SCALE_UP and scale_out == DEFAULT_SCALE_OUT
    head = (f"# Written by `sncheck inventory from-slurm{' --partition ' + partition if partition else ''}`.\n"
            f"# Nodes and cards (GRES gpu) from scontrol show nodes; {how}.\n"
            + ("# Design values are sncheck's defaults (NVLink 4: 450 GB/s, 3 us; 400G NIC), not Slurm's:\n"
               "# set them for your platform (--scale-up/--scale-out).\n" if defaults else
               "# Design values from --scale-up/--scale-out.\n"))
    text = head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)
    _loads(text, view.grouping)
    if out:
        write_atomic(out, text)
        cards = sum(len(_expand(s["hosts"])) * s["cards_per_host"] for s in doc["supernodes"])
        click.echo(f"{out}: {len(view.nodes)} nodes, {cards} cards, {len(doc['supernodes'])} supernodes ({how})",
                   err=True)
    else:
        click.echo(text, nl=False)


def _loads(text: str, grouping: str) -> None:
    """What from-slurm writes is an inventory the loader takes, or nothing: a switch or block named
    '' or 'a;rm' by Slurm's topology wrote one that `inventory check` refused, exit 0 (hostile round 24,
    H24-04). Refused naming the command whose answer made it."""
    try:
        load_inventory_text(text, "the inventory written from it")
    except ConfigError as e:
        command = "scontrol show topology" if grouping != "none" else "scontrol show nodes -o"
        raise ConfigError(f"{e}; nothing written: fix it in Slurm's configuration", command) from e


def _expand(expr: str) -> list[str]:
    return expand(expr)
