"""Rank -> card.

A rank map is a JSON list of ``{rank, host, local_rank}`` (what every launcher knows;
:mod:`sncheck.watch.torch` writes one as ``ranks.json``, with the ``job`` too). The card
is ``<host>/gpu<local_rank>``, where ``host`` is the inventory's name for it: an
inventory host of that name, or the one whose ``address`` it is, or whose name is its
short name (``node3`` for ``node3.cluster``). Without a map: the Slurm environment (a job
step's ``SLURM_STEP_NODELIST`` and ``SLURM_STEP_TASKS_PER_NODE``, else the job's
``SLURM_JOB_NODELIST`` and ``SLURM_TASKS_PER_NODE``; block, cyclic or plane distribution), or
what the dumps themselves say (NCCL RAS names the node and GPU of each rank it reports).

A rank none of these cover is named as the rank (``rank7``) and says so.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sncheck.config.jsonio import read_json
from sncheck.config.hostlist import expand as expand_hostlist
from sncheck.config.inventory import Inventory
from sncheck.errors import ConfigError
from sncheck.model import card_id
from sncheck.config.inventory import Host, Supernode

MAX_RANKS = 1 << 20
# A host as a rank map, RAS, Inspector or nccl-tests may name it: a name or an address
# (IPv4, IPv6). It becomes part of a card id, a state store key and the confirmation
# command printed for an operator to run, so nothing else is taken: no space, quote, slash,
# semicolon or leading dash.
_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$")


def safe_host(name: object) -> str | None:
    """``name`` when it is a host name or address sncheck may use, else None."""
    return name if isinstance(name, str) and _HOST.match(name) else None


@dataclass(frozen=True)
class Placement:
    rank: int
    host: str
    local_rank: int
    job: str | None = None


@dataclass(frozen=True)
class RankMap:
    placements: dict[int, Placement]
    source: str                 # "rank map FILE", "Slurm environment", "none"

    @property
    def jobs(self) -> set[str]:
        return {p.job for p in self.placements.values() if p.job}


def load_rank_map(path: str | Path) -> RankMap:
    p = Path(path)
    data = read_json(p, "the rank map", kind="rank map")
    if isinstance(data, dict) and isinstance(data.get("ranks"), list):
        data = data["ranks"]
    if not isinstance(data, list) or len(data) > MAX_RANKS:
        raise ConfigError("the rank map must be a JSON list of {rank, host, local_rank}", str(p))
    out: dict[int, Placement] = {}
    cards: dict[tuple[str | None, str, int], int] = {}
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise ConfigError(f"entry {i} is not an object", str(p))
        rank, local = entry.get("rank"), entry.get("local_rank")
        if not (isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0):
            raise ConfigError(f"entry {i}: rank must be an integer from 0, got {rank!r}", str(p))
        host = safe_host(entry.get("host"))
        if host is None:
            raise ConfigError(f"entry {i}: host must be a host name or address, got {str(entry.get('host'))[:80]!r}",
                              str(p))
        if not (isinstance(local, int) and not isinstance(local, bool) and 0 <= local < 4096):
            raise ConfigError(f"entry {i}: local_rank must be an integer from 0, got {local!r}", str(p))
        if rank in out:
            raise ConfigError(f"entry {i}: rank {rank} appears twice", str(p))
        job = entry.get("job")
        # One card a rank: NCCL refuses two ranks on one GPU, so a map placing two there is wrong, and
        # watch named the card of the one for the other's stall (hostile round 24, H24-06). Names are
        # compared as DNS does (n1, N1, n1.).
        card = (str(job) if job is not None else None, host.lower().rstrip("."), local)
        if (other := cards.setdefault(card, rank)) != rank:
            raise ConfigError(f"entry {i}: rank {rank} is on {host} local_rank {local}, as rank {other} is: one "
                              "card a rank (NCCL refuses two ranks on one GPU); the map is wrong", str(p))
        out[rank] = Placement(rank, host, local, str(job) if job is not None else None)
    return RankMap(out, f"rank map {p}")


# Slurm prints the counts as C prints integers ('2(x3),1'): ASCII digits. '\d' and int() take
# every script's, so a tasks-per-node of '٢(x٢)' dealt four ranks no Slurm placed
# (hostile round 21, H21-01): no map rather than a wrong one, as for every other lie here
_TASKS = re.compile(r"^([0-9]+)(?:\(x([0-9]+)\))?$")


# Which of Slurm's variables describe the ranks (srun(1), sbatch(1), salloc(1) "OUTPUT ENVIRONMENT
# VARIABLES"; src/common/env.c env_array_for_step and setup_env). In a job step (srun):
#   SLURM_STEP_NODELIST        "List of nodes allocated to the step."
#   SLURM_STEP_TASKS_PER_NODE  "Number of processes per node within the step."
#   SLURM_STEP_NUM_NODES       "Number of nodes allocated to the step."
#   SLURM_STEP_NUM_TASKS       "Number of processes in the job step or whole heterogeneous job step."
# while SLURM_JOB_NODELIST ("List of nodes allocated to the job."), SLURM_JOB_NUM_NODES and
# SLURM_NODELIST stay the job's, and SLURM_TASKS_PER_NODE, SLURM_NNODES, SLURM_NTASKS are
# overwritten with the step's, unless srun --preserve-env keeps the job's (env_array_for_step's
# preserve_env). Outside a step (the batch script, an salloc shell) the job's: SLURM_JOB_NODELIST
# (SLURM_NODELIST "Included for backwards compatibility"), SLURM_TASKS_PER_NODE ("Number of
# tasks to be initiated on each node ... in the same order as SLURM_JOB_NODELIST"), SLURM_NTASKS
# (SLURM_NPROCS), SLURM_JOB_NUM_NODES (SLURM_NNODES). Seen so on the loopback cluster (Slurm
# 22.05: salloc -N3 -n6, then srun -N2 -n3: job list node[1-3], step list node[1-2],
# SLURM_TASKS_PER_NODE 2,1, SLURM_NNODES 2, SLURM_JOB_NUM_NODES 3).
_STEP = ("SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE",
         (("SLURM_STEP_NUM_TASKS", "tasks"), ("SLURM_STEP_NUM_NODES", "nodes")))
_JOB = ("SLURM_JOB_NODELIST", "SLURM_TASKS_PER_NODE",
        (("SLURM_NTASKS", "tasks"), ("SLURM_NPROCS", "tasks"), ("SLURM_NNODES", "nodes"),
         ("SLURM_JOB_NUM_NODES", "nodes")))


def from_slurm(env: dict[str, str] | None = None) -> RankMap | None:
    """The ranks' places from Slurm's environment, dealt as ``SLURM_DISTRIBUTION`` says
    (:func:`_plane`): a job step's own shape inside a step (``SLURM_STEP_NODELIST``, ``SLURM_STEP_TASKS_PER_NODE``), the job's outside one
    (``SLURM_JOB_NODELIST``, ``SLURM_TASKS_PER_NODE``), never the job's nodes with a step's
    tasks (see ``_STEP``/``_JOB`` for which variable is which). None outside Slurm, and None
    where the environment contradicts itself (the job's two node lists, a node listed twice, a step's
    nodes outside its job's, the tasks against their count, the nodes against theirs) or counts more than a
    rank map may hold (a node of more than 4096 tasks, more than :data:`MAX_RANKS` in all): no
    map rather than a wrong one, and never a list built from a count as written
    (``1(x999999999999)`` was a MemoryError, ``50000000`` on one node a hang)."""
    env = dict(os.environ) if env is None else env
    in_step = bool(env.get("SLURM_STEP_NODELIST"))
    list_var, tasks_var, counts = _STEP if in_step else _JOB
    job_nodes = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    nodes, tasks = env.get(list_var) or job_nodes, env.get(tasks_var)
    if not nodes or not tasks:
        return None
    if env.get("SLURM_NODELIST") and job_nodes and env["SLURM_NODELIST"] != job_nodes:
        return None
    plane = _plane(env)
    if plane is None:
        return None  # arbitrary placement (a hostfile), or a distribution not told whole
    try:
        hosts = expand_hostlist(nodes)
        if in_step and job_nodes and not set(hosts) <= set(expand_hostlist(job_nodes)):
            return None  # a step runs on nodes of its job's allocation
    except (ConfigError, ValueError):
        return None
    if any(safe_host(h) is None for h in hosts) or len(set(hosts)) != len(hosts):
        return None  # an allocation holds a node once: a list naming one twice put two ranks on one card
    per_node: list[int] = []
    for part in tasks.split(","):
        m = _TASKS.match(part.strip())
        if not m or int(m[1]) > 4096 or int(m[2] or 1) > len(hosts) - len(per_node):
            return None  # a node of more tasks than cards a host has, or more nodes than the list
        per_node += [int(m[1])] * int(m[2] or 1)
    if len(per_node) != len(hosts) or sum(per_node) > MAX_RANKS:
        return None
    for var, what in counts:
        if env.get(var) and env[var].strip() != str(sum(per_node) if what == "tasks" else len(hosts)):
            return None
    out = {rank: Placement(rank, hosts[node], local, env.get("SLURM_JOB_ID"))
           for rank, (node, local) in enumerate(_dealt(per_node, plane))}
    return RankMap(out, "Slurm environment")


def _plane(env: dict[str, str]) -> int | None:
    """How many consecutive ranks a node takes in turn, from ``SLURM_DISTRIBUTION`` (srun's
    ``-m``; its first level places tasks on nodes, what follows a ``:`` places them within
    one): ``block`` all of a node's (0: no limit), ``cyclic`` one (round-robin), ``plane=N`` (or
    ``plane`` with ``SLURM_DIST_PLANESIZE``) N. None where the layout is not told by the
    environment: ``arbitrary`` (a hostfile's order) and a plane without its size or with two
    (``plane=N`` beside another ``SLURM_DIST_PLANESIZE``).

    Cyclic is dealt from the node counts alone, with or without ``--overcommit``
    (``SLURM_OVERCOMMIT``): ``_task_layout_cyclic`` (src/common/slurm_step_layout.c,
    slurm-22-05-8-1 l.723-760, unchanged at master 2026-08) gives node i a task in round j
    exactly when ``j < cpus[i]``, or, once over-subscribing, ``j < cpus[i] +
    max_over_subscribe`` (l.742-744), in node order, until the tasks run out. Every node has
    one limit over all rounds: ``max_over_subscribe`` is fixed before the first round (l.731-736)
    and is 0 unless the tasks outnumber the CPUs from the start, so the ``over_subscribe`` a
    full round sets later (l.756-757) changes no limit. A node with limit L therefore takes a task
    in exactly the rounds j below its count (L, or fewer where the tasks ran out), which is
    ``SLURM_STEP_TASKS_PER_NODE``: the CPUs, which the environment does not give, are not
    needed (checked against a transcription of l.723-760 on random CPU and task counts,
    tests/test_ops4.py, and on the loopback cluster, tests/test_ops3.py). Block and plane are
    dealt from the counts as srun deals them ("the number of tasks distributed to each node is
    the same as for cyclic distribution, but the taskids assigned to each node depend on the
    plane size", srun(1))."""
    dist = (env.get("SLURM_DISTRIBUTION") or "block").split(":")[0].strip()
    if dist in ("block", "", "*"):
        return 0
    if dist == "cyclic":
        return 1
    if dist.split("=")[0] == "plane":
        size, other = dist.partition("=")[2], env.get("SLURM_DIST_PLANESIZE", "")
        if size and other.strip() and other.strip() != size.strip():
            return None  # srun sets both from one '-m plane=N': two sizes contradict
        size = size or other
        return int(size) if re.fullmatch(r"[0-9]+", size.strip()) and 0 < int(size) <= 4096 else None
    return None


def _dealt(per_node: list[int], plane: int) -> list[tuple[int, int]]:
    """(node, local rank) of each rank in turn: the nodes dealt ``plane`` ranks each per round,
    in the node list's order, a node leaving the round when it holds its count (0: a node's
    whole count at once, block)."""
    if plane == 0:
        return [(node, local) for node, n in enumerate(per_node) for local in range(n)]
    out: list[tuple[int, int]] = []
    held = [0] * len(per_node)
    dealing = [node for node, n in enumerate(per_node) if n]
    while dealing:  # each round deals a rank at least to each node still dealt: O(ranks) in all
        for node in dealing:
            take = min(plane, per_node[node] - held[node])
            out += [(node, held[node] + k) for k in range(take)]
            held[node] += take
        dealing = [node for node in dealing if held[node] < per_node[node]]
    return out


class CardNames:
    """Names cards for ranks and for (node, GPU) pairs, through the inventory."""

    def __init__(self, inventory: Inventory, rank_map: RankMap) -> None:
        self.inventory, self.map = inventory, rank_map
        self._host = {}
        for name, h in inventory.hosts.items():
            self._host[name] = name
            if h.address:
                self._host.setdefault(h.address, name)
            self._host.setdefault(name.split(".")[0], name)

    def host(self, name: str | None) -> str | None:
        if not name:
            return None
        return self._host.get(name) or self._host.get(name.split(".")[0])

    def card(self, host: str | None, index: int | None) -> tuple[str, bool]:
        """``<host>/gpu<index>`` with the inventory's host name, and whether the inventory knows it."""
        if safe_host(host) is None:
            return "", False  # a name no card id may carry (a hostile or broken dump): the rank is not named
        known = self.host(host)
        if known is not None and index is not None and 0 <= index < self.inventory.hosts[known].cards:
            return card_id(known, index), True
        if host and index is not None:
            return card_id(host, index), False
        return "", False

    def of_rank(self, rank: int) -> tuple[str, bool, str]:
        """(entity, mapped, note) for a global rank."""
        p = self.map.placements.get(rank)
        if p is None:
            return f"rank{rank}", False, f"rank {rank} is not in the {self.map.source or 'rank map'}"
        card, known = self.card(p.host, p.local_rank)
        if not known:
            return card, False, f"rank {rank} maps to {card}, which the inventory does not list"
        return card, True, ""


def inventory_from_map(rank_map: RankMap) -> Inventory:
    """An inventory of just the job's hosts (one supernode), when none is given."""

    cards: dict[str, int] = {}
    for p in rank_map.placements.values():
        cards[p.host] = max(cards.get(p.host, 0), p.local_rank + 1)
    hosts = tuple(sorted(cards))
    return Inventory(name="job", supernodes=(Supernode("job", hosts),),
                     hosts={h: Host(h, "job", cards[h]) for h in hosts}, source=f"<{rank_map.source}>")
