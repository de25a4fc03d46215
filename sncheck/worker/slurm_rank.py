"""One rank of the torch probe started by ``srun``: Slurm's environment -> torchrun's.

    srun -N 2 -n 8 --ntasks-per-node 4 -w node[1-2] python3 -m sncheck.worker.slurm_rank --job J --out O

Each task finds its card from Slurm's variables: ``SLURMD_NODENAME`` (its node) and
``SLURM_LOCALID`` (its place on the node) name the ``SLURM_LOCALID``-th card the job lists
on that node: ``<node>/gpu<localid>`` in a step over every card of its hosts, and card k
of each host in a rail step (one task per node). Its rank is that card's place in the
job's card list (so ranks follow the job, whatever order Slurm gives the tasks),
``WORLD_SIZE`` the list's length, checked against ``SLURM_NTASKS``. ``LOCAL_RANK`` is the
card's index on its host (the probe's ``cuda:LOCAL_RANK``: a step is given the job's GPUs
on its nodes, and ``CUDA_VISIBLE_DEVICES`` lists them in that order).
The rendezvous (rank 0's card's node) comes from ``SNCHECK_MASTER_ADDR`` and
``SNCHECK_MASTER_PORT``, set by the launcher; ``SLURM_NODEID`` and ``SLURM_PROCID`` are
recorded for the log. Then it is :func:`sncheck.worker.torchdist.main`.
"""

from __future__ import annotations

import os
import sys

from sncheck.model import host_of, rail_of
from sncheck.worker.job import Job


def torch_env(job_cards: list[str], env: dict[str, str]) -> dict[str, str]:
    """The torchrun variables for this task, from Slurm's; ValueError when they do not fit the job."""
    node, local = env.get("SLURMD_NODENAME"), env.get("SLURM_LOCALID")
    if not node or local is None:
        raise ValueError("not a Slurm task: SLURMD_NODENAME or SLURM_LOCALID is missing")
    mine = [c for c in job_cards if host_of(c) == node]
    if not 0 <= int(local) < len(mine):
        raise ValueError(f"task {env.get('SLURM_PROCID')} on {node} (local id {local}) has no card: the job "
                         f"lists {len(mine)} on {node}")
    card = mine[int(local)]
    ntasks = env.get("SLURM_NTASKS") or env.get("SLURM_NPROCS")
    if ntasks is not None and int(ntasks) != len(job_cards):
        raise ValueError(f"the step has {ntasks} tasks but the job lists {len(job_cards)} cards")
    return {"RANK": str(job_cards.index(card)), "WORLD_SIZE": str(len(job_cards)),
            "LOCAL_RANK": str(rail_of(card)), "LOCAL_WORLD_SIZE": str(len(mine)),
            "GROUP_RANK": env.get("SLURM_NODEID", "0"),
            "MASTER_ADDR": env["SNCHECK_MASTER_ADDR"], "MASTER_PORT": env["SNCHECK_MASTER_PORT"]}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    job_path = args[args.index("--job") + 1]
    try:
        os.environ.update(torch_env(list(Job.load(job_path).cards), dict(os.environ)))
    except (ValueError, KeyError) as e:
        print(f"sncheck.worker.slurm_rank: {e}", file=sys.stderr)
        return 2
    from sncheck.worker.torchdist import main as probe_main  # noqa: PLC0415 -- torch: worker.torchdist imports it; this module starts without it

    return probe_main(args)


if __name__ == "__main__":
    sys.exit(main())
