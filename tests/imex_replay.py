"""Shared by the IMEX tests: a tray's fact commands answered from the simulated NVL72
tool output (the real 18-node ``nvidia-imex-ctl -N`` capture, some nodes down), and the
Slurm backend's host facts with its srun step faked by those answers."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from types import SimpleNamespace

from sncheck.vendors import registry
from sncheck.vendors.nvidia import sim as nvidia_sim
from sncheck.vendors.sim import HostState, own_ids


def replay_runner(host: str, position: int, plat, down: tuple[int, ...]) -> Callable:
    """What each NVL72 fact command (of the platform ``plat``) prints on ``host``, the
    ``position``-th tray of its rack as cabled, while the IMEX nodes ``down`` are not READY (its
    GPUs its own: :func:`sncheck.vendors.sim.own_ids`)."""
    state = HostState(host, plat.cards_per_host, plat.name, domain_hosts=plat.domain_hosts, index=position,
                      down_in_domain=down)
    by_argv = {tuple(c.argv): own_ids(out.stdout, host) for c in registry.vendor_of(plat).commands_for(plat)
               if (out := nvidia_sim.render(c.name, state)) is not None}

    def run(argv: list[str], timeout: float):
        text = by_argv.get(tuple(argv))
        return SimpleNamespace(ok=text is not None, exit_code=0 if text is not None else 127,
                               stdout=text or "", stderr="" if text is not None else "not found",
                               timed_out=False, duration=0.01)
    return run


def slurm_fact_rows(inv, runner_for: Callable[[str], Callable], monkeypatch) -> list[dict]:
    """The Slurm backend's host facts, its srun step faked: each tray's own rows from
    ``runner_for(tray)``, then the backend's rack-wide domain step."""
    from sncheck.backends import slurm
    from sncheck.topology import Topology

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)  # srun need not exist
    backend = slurm.SlurmBackend(Topology(inv))

    def step(hosts: list[str], reached, lost) -> None:
        for h in hosts:  # each node's outcomes, as the srun step would collect them
            run = runner_for(h)
            outcomes = []
            for cmd in backend.fact_judge.commands(h):
                res = run(list(cmd.argv), 10)
                outcomes.append({"argv": list(cmd.argv), "rc": res.exit_code, "out": res.stdout,
                                 "err": res.stderr, "to": False})
            reached(h, "srun", "srun step ran", backend._reader(h, outcomes))

    monkeypatch.setattr(backend, "_read_hosts", step)
    rows: list[dict] = []
    backend.host_facts(tuple(inv.hosts), rows.append)
    return rows
