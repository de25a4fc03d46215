"""The torch probe's job (``schema: sncheck.job/1``): one builder for every backend that
launches :mod:`sncheck.worker.torchdist` (local, SSH and Slurm).

A job tells each rank which card it is, the layer's plan, the faults the probe acts
out and the run's knobs; the fields are documented with the worker that reads them
(:mod:`sncheck.worker.torchdist`). Backends differ only in where the ranks run and how
they are started (worker processes here, torchrun over SSH, an srun step); what a rank
is told is built here, so one job means the same on every backend.

Pure: nothing here starts a process or touches a file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

JOB_SCHEMA = "sncheck.job/1"
LAYERS = ("calibrate", "p2p", "collectives", "golden")


def plan_payload(plan: Any) -> dict:
    """A layer's plan as job data: a plan's own ``to_dict`` (a connectivity plan's rounds
    as lists) where it has one, else its dataclass fields; a dict is taken as it is."""
    if isinstance(plan, dict):
        return dict(plan)
    to_dict = getattr(plan, "to_dict", None)
    return to_dict() if callable(to_dict) else dataclasses.asdict(plan)


def cards_of_hosts(topo: Any, hosts: Iterable[str]) -> list[str]:
    """The cards of ``hosts``, host by host in the given order: the ranks of a job whose
    node rank is the host's position (torchrun's static rendezvous, an srun step)."""
    return [c for h in hosts for c in topo.cards_of_host(h)]


def build_job(backend: Any, layer: str, cards: Sequence[str], plan: Any, *,
              heartbeat_dir: str | None = None, golden_config: dict | None = None,
              serialize_pairs: bool = False) -> dict:
    """The job for ``layer`` over ``cards`` (rank i is ``cards[i]``).

    ``backend`` gives what every backend has: its topology, the faults in effect that the
    probe acts out (``probe_faults()``), its seed, per-operation timeout and
    torch.distributed backend. The keyword arguments are what a launcher may add:
    a heartbeat directory its watchdog reads, golden model overrides, one pair of a
    round at a time (CPU ranks sharing a few cores).
    """
    if layer not in LAYERS:
        raise ValueError(f"unknown layer {layer!r}; known: {', '.join(LAYERS)}")
    topo = backend.topo
    from sncheck.topology import host_of  # here, not at the top: the worker imports this module too
    from sncheck.vendors import registry
    hosts = list(dict.fromkeys(host_of(c) for c in cards))
    return {
        "schema": JOB_SCHEMA, "layer": layer, "cards": list(cards), "plan": plan_payload(plan),
        "faults": backend.probe_faults(), "seed": backend.seed, "op_timeout_s": backend.op_timeout_s,
        "dist_backend": backend.dist_backend,
        "torch_device": registry.torch_device(topo.inventory, hosts),  # the vendor's (npu: torch_npu)
        "supernode_of_host": {h: topo.supernode_of_host(h) for h in topo.hosts},
        "heartbeat_dir": None if heartbeat_dir is None else str(heartbeat_dir),
        "golden_config": dict(golden_config or {}),
        "serialize_pairs": bool(serialize_pairs),
    }
