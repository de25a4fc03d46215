"""Building the torch probe's job (:class:`sncheck.worker.job.Job`): one builder for every
backend that launches :mod:`sncheck.worker.torchdist` (local, SSH and Slurm).

A job tells each rank which card it is, the layer's plan, the faults the probe acts
out and the run's knobs; the fields and their defaults are stated once, on the
:class:`~sncheck.worker.job.Job` that the worker reads back. Backends differ only in where
the ranks run and how they are started (worker processes here, torchrun over SSH, an
srun step); what a rank is told is built here, so one job means the same on every backend.

Pure: nothing here starts a process or touches a file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from sncheck.config.faultplan import with_defaults
from sncheck.model import host_of
from sncheck.vendors import registry
from sncheck.worker.job import JOB_SCHEMA, LAYERS, Job

__all__ = ["JOB_SCHEMA", "LAYERS", "Job", "build_job", "cards_of_hosts", "plan_payload"]


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
              serialize_pairs: bool = False) -> Job:
    """The job for ``layer`` over ``cards`` (rank i is ``cards[i]``).

    ``backend`` gives what every backend has: its topology, the faults in effect that the
    probe acts out (``probe_faults()``, sent with their type's defaults filled in), its
    seed, per-operation timeout and torch.distributed backend. The keyword arguments are
    what a launcher may add: a heartbeat directory its watchdog reads, golden model
    overrides, one pair of a round at a time (CPU ranks sharing a few cores).
    """
    if layer not in LAYERS:
        raise ValueError(f"unknown layer {layer!r}; known: {', '.join(LAYERS)}")
    topo = backend.topo
    hosts = list(dict.fromkeys(host_of(c) for c in cards))
    return Job(
        layer=layer, cards=tuple(cards), plan=plan_payload(plan),
        faults=tuple(with_defaults(f) for f in backend.probe_faults()),
        seed=backend.seed, op_timeout_s=backend.op_timeout_s, dist_backend=backend.dist_backend,
        torch_device=registry.torch_device(topo.inventory, hosts),  # the vendor's (npu: torch_npu)
        vendor_dist_backend=registry.dist_backend(topo.inventory, hosts),  # and its backend on it
        supernode_of_host={h: topo.supernode_of_host(h) for h in topo.hosts},
        heartbeat_dir=None if heartbeat_dir is None else str(heartbeat_dir),
        golden_config=dict(golden_config or {}), serialize_pairs=bool(serialize_pairs))
