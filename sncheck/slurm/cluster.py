"""Reading a Slurm cluster: parsers for ``scontrol show nodes -o``, ``scontrol show topology``
and GRES strings, and the inventory that ``sncheck inventory from-slurm`` writes from them.

Pure functions over the commands' text (tested on the loopback cluster's real output);
:func:`read_cluster` runs the commands through a :class:`~sncheck.actions.base.CommandRunner`.

Supernodes, in order of preference:

1. block topology (``topology/block``, Slurm 23.02+): one supernode per ``BlockName``;
2. tree topology (``topology/tree``): one supernode per leaf switch (``Level=0``), the
   switch its nodes share the fastest links through;
3. no topology plugin: one supernode of all the nodes, said in the output's comment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sncheck.config import hostlist
from sncheck.config.inventory import MAX_CARDS_PER_HOST, is_address
from sncheck.errors import ConfigError, HarnessError

if TYPE_CHECKING:  # the runner is the caller's (actions sit above the backends that read Slurm)
    from sncheck.actions.base import CommandRunner

_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:.]*)=")
_GRES_ITEM = re.compile(r"^gpu(?::([^:(,]+))?(?::(\d+))?(?:\(.*\))?$")


def parse_scontrol_records(text: str) -> list[dict[str, str]]:
    """Records of ``scontrol show ... -o`` (one per line) or of the multi-line form (blank-line separated).

    Values may hold spaces (``Reason=maintenance by ops [root@...]``, ``OS=Linux 6.1 #1 SMP``):
    a value runs to the next `` Key=``.
    """
    blocks = re.split(r"\n\s*\n", text.strip()) if "\n\n" in text.strip() else text.strip().splitlines()
    out = []
    for block in blocks:
        line = " ".join(block.split("\n")).strip()
        if not line or "=" not in line:
            continue
        keys = list(_KEY.finditer(line))
        rec: dict[str, str] = {}
        for i, m in enumerate(keys):
            end = keys[i + 1].start() if i + 1 < len(keys) else len(line)
            rec.setdefault(m.group(1), line[m.end():end].strip())
        out.append(rec)
    return out


def parse_gres_gpus(gres: str) -> int | None:
    """GPUs in a GRES string: ``gpu:4`` -> 4, ``gpu:a100:8(S:0-1)`` -> 8, ``gpu:a:2,gpu:b:2,mps:100`` -> 4.

    None when the string names no GPU (``(null)``, ``mps:100``); a ``gpu`` without a count is 1.
    """
    total, seen = 0, False
    for item in _split_gres(gres):
        m = _GRES_ITEM.match(item)
        if not m:
            continue
        seen = True
        count = m.group(2)
        if count is None and m.group(1) and m.group(1).isdecimal():
            count = m.group(1)  # gpu:4 (no type)
        total += int(count) if count else 1
    return total if seen else None


def _split_gres(gres: str) -> list[str]:
    # Commas separate items, but not inside "(S:0-1)".
    items, depth, cur = [], 0, ""
    for ch in gres.strip():
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        items.append(cur.strip())
    return items


def compress(names: Iterable[str]) -> str:
    """A Slurm hostlist expression for ``names``: ``node1,node2,node3`` -> ``node[1-3]``.

    Runs of consecutive numbers with the same prefix and zero padding are merged; the
    result expands (``hostlist.expand``) back to the same names in natural order.
    """
    groups: dict[tuple[str, int, str], list[int]] = {}
    plain: list[str] = []
    order: list[Any] = []
    for name in names:
        m = re.match(r"^(.*?)(\d+)$", name)
        if not m:
            plain.append(name)
            order.append(name)
            continue
        prefix, digits = m.group(1), m.group(2)
        width = len(digits) if digits.startswith("0") else 0
        key = (prefix, width, "")
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(digits))
    parts = []
    for item in order:
        if isinstance(item, str):
            parts.append(item)
            continue
        prefix, width, _ = item
        nums = sorted(set(groups[item]))
        runs, start, prev = [], nums[0], nums[0]
        for n in [*nums[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            runs.append((start, prev))
            if n is not None:
                start = prev = n
        fmt = (lambda v: str(v).zfill(width)) if width else str
        if len(runs) == 1 and runs[0][0] == runs[0][1]:
            parts.append(f"{prefix}{fmt(runs[0][0])}")
            continue
        body = ",".join(fmt(a) if a == b else f"{fmt(a)}-{fmt(b)}" for a, b in runs)
        parts.append(f"{prefix}[{body}]")
    return ",".join(parts)


@dataclass
class SlurmView:
    nodes: dict[str, dict[str, str]]                  # name -> scontrol record, in natural order
    groups: dict[str, list[str]] = field(default_factory=dict)  # supernode name -> nodes
    grouping: str = "none"                            # block | tree | none
    partition: str | None = None


def supernode_groups(topology_text: str, nodes: list[str]) -> tuple[dict[str, list[str]], str]:
    """Supernodes from ``scontrol show topology``: blocks, else leaf switches, else one group."""
    recs = parse_scontrol_records(topology_text) if topology_text.strip() else []
    wanted = set(nodes)
    for kind, key in (("block", "BlockName"), ("tree", "SwitchName")):
        chosen: dict[str, list[str]] = {}
        seen: set[str] = set()
        home: dict[str, str] = {}  # node -> the block or leaf switch that listed it
        for rec in recs:
            if key not in rec or not rec.get("Nodes"):
                continue
            if kind == "tree" and rec.get("Level", "0") != "0":
                continue
            name = rec[key]
            # one name twice (two answers run together) or one node under two leaves or in two blocks:
            # which supernode is whose cannot be told; the first was kept, the second's nodes dropped or
            # the first's written 'unplaced' (hostile round 26, H26-07)
            if name in seen:
                raise ConfigError(f"{key}={hostlist.quoted(name)} is listed twice: the supernodes cannot be told; "
                                  "nothing written", "scontrol show topology")
            seen.add(name)
            members = [n for n in _listed(rec["Nodes"], f"{key}={name[:60]} Nodes") if n in wanted]
            for n in members:
                if n in home:
                    raise ConfigError(f"node {n} is under both {hostlist.quoted(home[n])} and "
                                      f"{hostlist.quoted(name)}: one supernode a node; nothing written",
                                      "scontrol show topology")
                home[n] = name
            if members:
                chosen[name] = members
        if chosen:
            left = [n for n in nodes if n not in {m for ms in chosen.values() for m in ms}]
            if left:
                chosen["unplaced"] = left
            return chosen, kind
    return {"all": list(nodes)}, "none"


def _listed(expr: str, whose: str, command: str = "scontrol show topology") -> list[str]:
    """A Slurm answer's hostlist (``Nodes=``, sinfo's ``%N``) as Slurm's parser reads it; one that is
    none, or names more hosts than an inventory may hold, is refused naming the command and the
    record (an internal error, exit 3, with a crash log: hostile round 24, H24-02)."""
    try:
        return hostlist.expand(expr)
    except ValueError as e:  # HostlistTooLarge is one
        raise ConfigError(f"{whose} {hostlist.quoted(expr)} is no hostlist an inventory takes: {e}",
                          command) from e


def read_cluster(runner: CommandRunner, partition: str | None = None) -> SlurmView:
    """Ask Slurm for its nodes (in ``partition``, else all) and topology."""
    res = runner.run(["scontrol", "show", "nodes", "-o"])
    if not res.ok:
        raise HarnessError(f"could not read Slurm's nodes: {res}")
    nodes = _one_record_each([r for r in parse_scontrol_records(res.stdout) if r.get("NodeName")])
    _refuse_unusable(nodes)
    if partition is not None:
        res = runner.run(["sinfo", "-h", "-N", "-p", partition, "-o", "%N"])
        if not res.ok:
            raise HarnessError(f"could not read partition {partition!r}: {res}")
        names = _partition_nodes(res.stdout, partition, nodes)
        nodes = {n: nodes[n] for n in names}
    if not nodes:
        raise HarnessError("Slurm reports no nodes")
    order = sorted(nodes, key=_natural)
    nodes = {n: nodes[n] for n in order}
    topo = runner.run(["scontrol", "show", "topology"])
    _refuse_unread_topology(topo)
    groups, kind = supernode_groups(topo.stdout if topo.ok else "", order)
    return SlurmView(nodes, groups, kind, partition)


def _refuse_unread_topology(res: Any) -> None:
    """A topology that was not read is no 'no topology plugin'. scontrol's scontrol_print_topo says a
    failed read only as slurm_perror("slurm_load_topo error") on stderr and exits 0 (checked on this
    machine: no controller, exit 0, 'slurm_load_topo error: Unable to contact slurm controller'); one
    that never answers is cut at the command timeout. Both wrote one supernode of every node, 'no Slurm
    topology plugin', exit 0 (hostile round 24, H24-20). With no topology plugin scontrol prints nothing,
    or 'No topology information available' on stderr (topology_p_topology_print)."""
    failed = [ln.strip() for ln in res.stderr.splitlines() if "slurm_load_topo error" in ln]
    if res.timed_out or failed:
        why = failed[0][:200] if failed else "it did not answer in time"
        raise HarnessError(f"could not read Slurm's topology (scontrol show topology: {why}): the supernodes "
                           "cannot be told; nothing written")


def _partition_nodes(text: str, partition: str, nodes: dict[str, dict[str, str]]) -> list[str]:
    """The nodes ``sinfo -h -N -p P -o %N`` lists. ``%N`` is a hostlist (one node a line with ``-N``;
    a wrapper or another version prints ``g[1-4]``, which read as no node: 'Slurm reports no nodes',
    exit 3). A node scontrol does not list is refused: two reads of a changing cluster, or one of them
    lying; the inventory left it out, exit 0 (hostile round 24, H24-03)."""
    command = f"sinfo -h -N -p {partition} -o %N"
    names = list(dict.fromkeys(n for ln in text.splitlines() if ln.strip()
                               for n in _listed(ln.strip(), f"partition {partition!r}: node", command)))
    if not names:
        raise ConfigError(f"Slurm partition {partition!r} has no nodes (or does not exist)")
    unknown = [n for n in names if n not in nodes]
    if unknown:
        raise ConfigError(f"partition {partition!r} lists {hostlist.quoted(compress(unknown))}, which "
                          "'scontrol show nodes -o' does not: two reads of a changing cluster, or one of them "
                          "lying; an inventory of the partition would leave them out", command)
    return names


def _one_record_each(records: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    """Node name -> its record; a node listed twice, or in two spellings DNS takes for one
    (``g1``/``G1``, ``g1.``), is refused naming the command: two reads spliced, or one node
    answering as two (the last record was kept, 8 GPUs for a node of 4; ``g1`` and ``G1`` wrote an
    inventory that does not load: hostile round 18, H18-18)."""
    nodes: dict[str, dict[str, str]] = {}
    spelt: dict[str, str] = {}
    for rec in records:
        name = rec["NodeName"]
        first = spelt.setdefault(name.lower().rstrip("."), name)
        if first in nodes:
            as_written = "" if first == name else f" (as {first!r}: names are compared as DNS does)"
            raise ConfigError(f"node {name!r} is listed twice{as_written}: two reads spliced, or one node "
                              "answering as two; an inventory of it would not say which", "scontrol show nodes -o")
        nodes[name] = rec
    return nodes


def _refuse_unusable(nodes: dict[str, dict[str, str]]) -> None:
    """A node whose name or address is no host name or address an inventory takes (a blank, a
    shell metacharacter, a leading '-') is refused, naming the command and the node: the
    inventory written from it would not load (from-slurm wrote 'gpu$(id)' and an address
    'a;touch x', exit 0)."""
    for name, rec in nodes.items():
        addr = rec.get("NodeAddr")
        if not hostlist.is_host_name(name):
            why = (f"NodeName {name!r} is not a host name (letters, digits, '.', '_', '-'; never a leading '-'; "
                   "DNS labels of 1 to 63 characters, no '-' at either end)")
        elif addr and not is_address(addr):
            why = f"node {name}: NodeAddr {addr!r} is not an address (a name, IPv4 or IPv6)"
        elif (gpus := parse_gres_gpus(rec.get("Gres", ""))) is not None and gpus > MAX_CARDS_PER_HOST:
            # an inventory of 10^11 cards per host was written, exit 0 (hostile round 18, H18-17)
            why = f"node {name}: Gres={rec.get('Gres', '')[:60]} counts {gpus} GPUs, past {MAX_CARDS_PER_HOST} per host"
        else:
            continue
        raise ConfigError(f"{why}: an inventory of it would not load; fix the node in slurm.conf",
                          "scontrol show nodes -o")


def _natural(name: str) -> list[Any]:
    return [int(t) if i % 2 else t for i, t in enumerate(re.split(r"([0-9]+)", name))]  # ASCII digit runs, as model.natural_key


def inventory_dict(cluster: SlurmView, name: str, design: dict[str, Any]) -> dict[str, Any]:
    """The inventory YAML document for ``cluster`` (see DESIGN.md "Inventory").

    ``backend: slurm``: written on a Slurm login node, it runs from there through srun;
    ``hosts:`` keeps each node's ``NodeAddr`` for the SSH backend (``--backend ssh``).
    """
    supernodes: list[dict[str, Any]] = []
    for group, members in cluster.groups.items():
        by_cards: dict[int, list[str]] = {}
        for n in members:
            cards = parse_gres_gpus(cluster.nodes[n].get("Gres", "")) or 0
            by_cards.setdefault(cards, []).append(n)
        if len(by_cards) == 1:
            (cards, ms), = by_cards.items()
            supernodes.append({"name": group, "hosts": compress(ms), "cards_per_host": cards})
        else:  # nodes with different GPU counts: one supernode each kind, named apart
            for cards, ms in by_cards.items():
                supernodes.append({"name": f"{group}-{cards}gpu", "hosts": compress(ms), "cards_per_host": cards})
    no_gpu = [s for s in supernodes if s["cards_per_host"] == 0]
    if no_gpu:
        raise ConfigError("no GPUs in Slurm's GRES for " + ", ".join(s["hosts"] for s in no_gpu)
                          + " (Gres=gpu:N in slurm.conf); choose a GPU partition with --partition")
    hosts = {}
    for n, rec in cluster.nodes.items():
        addr = rec.get("NodeAddr")
        if addr and addr != n:
            hosts[n] = {"address": addr}
    doc: dict[str, Any] = {"name": name, "design": design, "supernodes": supernodes, "backend": {"type": "slurm"}}
    if hosts:
        doc["hosts"] = hosts
    return doc
