"""NCCL RAS status text, from the nccl-ras grammar (sncheck/vendors/nccl_ras.py GRAMMAR, read in
NVIDIA/nccl src/ras/client_support.cc 2.24-2.30): the three job-summary forms, outlier nodes,
groups of communicators with their status and errors, and the Errors / Warnings blocks each
group's errors promise (INCOMPLETE with its missing ranks, MISMATCH with operation counts,
DEAD processes, TIMEOUT); optionally PyTorch's watchdog lines pasted after it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import Variant, generator


def _summary(rng: random.Random, nodes: int, ppn: int, gpp: int, odd: bool) -> tuple[list[str], list, int, int]:
    """Job summary lines, their values, and the totals (processes, GPUs)."""
    out = ["Job summary", "===========", ""]
    if not odd:
        procs, gpus = nodes * ppn, nodes * ppn * gpp
        out += ["  Nodes  Processes         GPUs  Processes     GPUs", "(total)   per node  per process    (total)  (total)",
                f"{nodes:7d}  {ppn:9d}  {gpp:11d}  {procs:9d}  {gpus:7d}"]
        return out, [("job.nodes", nodes), ("job.processes_per_node", ppn), ("job.gpus", gpus)], procs, gpus
    # one node short of processes: the per-node distribution, then totals and the outlier node
    short = ppn - 2
    procs, gpus = (nodes - 1) * ppn + short, ((nodes - 1) * ppn + short) * gpp
    out += ["  Nodes  Processes         GPUs", "          per node  per process",
            f"{nodes - 1:7d}  {ppn:9d}  {gpp:11d}", f"{1:7d}  {short:9d}  {gpp:11d}", "",
            "  Nodes  Processes         GPUs", "(total)    (total)      (total)", f"{nodes:7d}  {procs:9d}  {gpus:11d}",
            "", "The outlier node:", "  Node 10.4.109.13 running processes " + ",".join(str(60000 + i) for i in range(short))]
    return out, [("job.nodes", nodes), ("job.processes", procs), ("job.gpus", gpus),
                 ("outlier_nodes[0].node", "10.4.109.13"), (f"node_groups[processes_per_node={short}].nodes", 1)], \
        procs, gpus


@generator("nccl-ras")
def nccl_ras(rng: random.Random) -> Iterator[Variant]:
    # RCCL 2.28 prints its own banner (projects/rccl src/ras/client_support.cc rasClientRunInit), the rest NCCL's
    for version, lib in (("2.24.3", "NCCL"), ("2.26.2", "NCCL"), ("2.27.3", "NCCL"), ("2.30.4", "NCCL"),
                         ("2.28.3", "RCCL")):
        for case in rng.sample(("ok", "mismatch", "incomplete", "dead", "timeout", "ok+torch", "status"), 3):
            nodes, ppn, gpp = rng.choice(((2, 8, 1), (4, 8, 1), (32, 8, 1), (18, 4, 1), (2, 1, 8)))
            lines = ([f"NCCL version {version} compiled with CUDA 12.{rng.randint(2, 9)}",
                      "CUDA runtime version 12040, driver version 12040", ""] if lib == "NCCL" else
                     [f'RCCL version {version} compiled with ROCm "7.2.0.0-43-fc0010cf6a"',
                      "HIP runtime version 70226015, amdgpu driver version 70226015", ""])
            summary, values, procs, gpus = _summary(rng, nodes, ppn, gpp, case == "incomplete" and ppn >= 3)
            lines += summary + ["", f"Communicators... ({rng.random():.2f}s)", "=============", ""]
            comms = rng.randint(1, 3)
            errors = {"ok": "OK", "ok+torch": "OK", "mismatch": "MISMATCH", "incomplete": "INCOMPLETE",
                      "dead": "OK", "timeout": "OK", "status": "MISMATCH"}[case]
            status = "FINALIZE" if case == "status" else "RUNNING"
            lines += ["Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors",
                      "    #  in group  per comm  per node  per comm  in group",
                      f"{0:5d}  {comms:8d}  {nodes:8d}  {ppn * gpp:8d}  {gpus:8d}  {gpus:8d}  {status:>8s}  {errors:>6s}"]
            if lib == "RCCL":
                values += [("library", "RCCL"), ("hip_runtime", 70226015), ("rocm_compiled", "7.2.0.0-43-fc0010cf6a")]
            values += [("nccl_version", version), ("groups[group=0].comms", comms),
                       ("groups[group=0].ranks_per_comm", gpus), ("groups[group=0].errors", errors)]
            lines += ["", "Errors", "======", ""]
            if case == "incomplete":
                lines += ["INCOMPLETE", "  Missing communicator data from 1 job process",
                          "  Process 60004 on node 10.4.109.13 managing GPU 0", ""]
                # 2.24 named a communicator's missing ranks in one line (the RAS docs: 'The missing rank: 21')
                named = ("  The missing rank: 1" if version == "2.24.3"
                         else "  Rank 1 -- GPU 0 managed by process 60004 on node 10.4.109.13")
                for k in range(comms):
                    lines += [f"#0-{k} ({rng.getrandbits(64):016x}) INCOMPLETE", "  Missing communicator data from 1 rank",
                              named, ""]
                values += [("comms[state=INCOMPLETE].missing", 1), ("records[state=INCOMPLETE].pid", 60004),
                           ("records[rank=1].state", "INCOMPLETE")]
            if case == "dead":
                lines += ["DEAD", "  1 job process is considered dead (unreachable via the RAS network)",
                          "  Process 4242 on node 10.0.0.7 managing GPU 3", ""]
                values.append(("records[state=DEAD].gpu", 3))
            lines += ["Warnings", "========", ""]
            end = len(lines)
            if case == "timeout":
                lines += ["TIMEOUT", "  Encountered 2 communication timeouts while gathering communicator data", ""]
            if case == "mismatch":
                ahead = rng.sample(range(gpus), min(2, gpus - 1))
                for k in range(comms):
                    lines += [f"#0-{k} ({rng.getrandbits(64):016x}) MISMATCH",
                              "  Communicator ranks have different AllGather operation counts",
                              f"  {gpus - len(ahead)} ranks have launched up to operation 640",
                              f"  {len(ahead)} ranks have launched up to operation 641"]
                    lines += [f"  Rank {r} -- GPU {r % 8} managed by process {323020 + r} on node 10.137.190.124"
                              for r in sorted(ahead)] + [""]
                values += [("comms[0].collective", "AllGather"), ("comms[0].operation_counts[1].operation", 641),
                           (f"records[rank={sorted(ahead)[0]}].ahead", True)]
            if case == "status":  # a communicator torn down: ranks of different status, each status's ranks named
                named = rng.sample(range(gpus), min(3, gpus))
                for k in range(comms):
                    lines += [f"#0-{k} ({rng.getrandbits(64):016x}) MISMATCH", "  Communicator ranks have different status",
                              f"  {gpus - len(named)} ranks have status {'NOCOMM' if version >= '2.26' else 'UNKNOWN'}",
                              f"  {len(named) - 1} ranks have status RUNNING"]
                    lines += [f"  Rank {r} -- GPU {r % 8} managed by process {507285 + r} on node 172.16.64.210"
                              for r in sorted(named[:-1])]
                    lines += ["  1 rank has status FINALIZE",
                              f"  Rank {named[-1]} -- GPU {named[-1] % 8} managed by process {507285 + named[-1]} on node "
                              "172.16.64.213", ""]
                values += [("groups[group=0].status", "FINALIZE"), (f"records[rank={named[-1]}].detail", "status FINALIZE"),
                           (f"records[rank={named[-1]}].node", "172.16.64.213"), ("comms[0].missing", None)]
            if case == "ok+torch":
                lines += ["[rank118]:[E603 17:48:01.005271823 ProcessGroupNCCL.cpp:632] [Rank 118] Watchdog caught "
                          "collective operation timeout: WorkNCCL(SeqNum=2398459, OpType=ALLREDUCE, NumelIn=8652160, "
                          "NumelOut=8652160, Timeout(ms)=1800000) ran for 1800068 milliseconds before timing out."]
                values.append(("torch", 1800000))
            text = "\n".join(lines) + "\n"
            # every block the table promises is checked, so a cut inside the blocks is told too
            yield Variant("nccl-ras", f"{lib} {version} {case} {nodes}x{ppn}", text, tuple(values),
                          fails=case != "ok", end=end if case in ("ok", "dead", "timeout", "ok+torch") else None)
