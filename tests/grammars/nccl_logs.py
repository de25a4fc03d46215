"""Job logs, from their grammars: ``NCCL_DEBUG`` output (sncheck/vendors/nccl/debug_log_grammar.py),
PyTorch's NCCL watchdog and Flight Recorder messages (watchdog_grammar.py), and NCCL Inspector's
JSON records (sncheck/vendors/nccl_inspector_grammar.py). Logs are streams: a cut between two
lines is a shorter log; a cut inside a line must be caught."""

from __future__ import annotations

import json
import random
import textwrap
from collections.abc import Iterator

from grammars import Variant, generator

# the IB completion error in each NCCL layout (debug_log_grammar: net_ib.cc / net_ib/p2p.cc)
_COMPLETION = {
    "2.8": "NET/IB : Got completion with error {e}, opcode {o}, len {n}, vendor err {v}",
    "2.18": "NET/IB : Got completion from peer {peer} with error {e}, opcode {o}, len {n}, vendor err {v} (Recv)",
    "2.21": "NET/IB : Got completion from peer {peer} with status={e} opcode={o} len={n} vendor err {v} (Recv)",
    "2.26": ("NET/IB: Got completion from peer {peer} with status={e} opcode={o} len={n} vendor err {v} (Recv) "
             "localGid fe80::b83f:d203:a1:b200 remoteGids fe80::b83f:d203:a1:b2ff hca mlx5_0"),
    "2.30": ("NET/IB: Got completion from peer {peer} with status=transport retry counter exceeded({e}) "
             "opcode=RECV({o}) vendor_err={v} hca mlx5_0"),
}
_TRANSPORTS = ("P2P/IPC", "P2P/CUMEM", "SHM/direct/direct", "NET/IB/0", "NET/IB/0/GDRDMA", "NET/Socket/0")


def _v(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def _prefix(version: str, host: str, pid: int, dev: int, stamp: bool) -> str:
    return (f"[2025-03-04 09:01:{dev:02d}] " if stamp else "") + f"{host}:{pid}:{pid + 17} [{dev}]"


@generator("nccl-debug")
def nccl_debug(rng: random.Random) -> Iterator[Variant]:
    for version in _COMPLETION:
        for level in ("INFO", "WARN"):
            hosts = [f"node{i}" for i in range(rng.choice((1, 2, 4)))]
            per = rng.choice((1, 2, 8))
            nranks = len(hosts) * per
            stamp = version in ("2.26", "2.30") and rng.random() < 0.5  # NCCL_DEBUG_TIMESTAMP_FORMAT from 2.26
            nccl_v = f"{version}.{rng.randrange(1, 6)}"
            lines, values = [], [("nccl_version", nccl_v if level == "INFO" else None)]  # WARN: no version line
            ranks = []
            for h, host in enumerate(hosts):
                for d in range(per):
                    ranks.append((host, 4000 + h * 100 + d, d, h * per + d))
            warn_count = 0
            if level == "INFO":
                host, pid, dev, _ = ranks[0]
                pre = _prefix(version, host, pid, dev, False)
                # 2.20.3 to 2.23: NCCL_IB_MERGE_NICS prints a merged device as '[D]={[I] dev:port/link, ...}'
                merged = (2, 20) <= _v(version) < (2, 24) and rng.random() < 0.5
                # ... and a plain device beside them with its IB device's index ('[4]mlx5_4', NCCL's 2)
                using = ("[0]={[0] mlx5_0:1/IB, [1] mlx5_3:1/IB} [1]={[2] mlx5_1:1/RoCE, [3] mlx5_2:1/RoCE} [4]mlx5_4:1/IB"
                         if merged else "[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE")
                # from 2.30.7 a rail and plane NCCL_IB_HCA names follow the port: '[0]mlx5_0:1:0:0/IB'
                railed = not merged and _v(version) >= (2, 30) and rng.random() < 0.5
                if railed:
                    using = "[0]mlx5_0:1:0:0/IB [1]mlx5_1:1:1:0/RoCE"
                    values += [("net.devices[index=1].port", 1), ("net.devices[index=1].rail", 1),
                               ("net.devices[index=0].plane", 0)]
                lines += [f"{pre} NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>",
                          f"{pre} NCCL INFO NET/IB : Using {using} [RO]; OOB ib0:10.0.0.1<0>",
                          f"{pre} NCCL INFO Using network IB"]
                if merged:
                    values += [("net.devices[index=1].device", "mlx5_1+mlx5_2"), ("net.devices[index=1].port", None),
                               ("net.devices[index=1].members[index=2].device", "mlx5_1"),
                               ("net.devices[index=0].members[index=1].device", "mlx5_3"),
                               ("len(net.devices)", 3), ("len(net.devices[index=0].members)", 2),
                               ("net.devices[index=2].device", "mlx5_4"), ("net.devices[index=2].ib_index", 4)]
                if rng.random() < 0.5:
                    lines.append(f"NCCL version {nccl_v}+cuda12.2")  # the VERSION level: bare
                else:
                    lines.append(f"{pre} NCCL INFO NCCL version {nccl_v}+cuda12.2")
                n_channels = 0
                for host, pid, dev, rank in ranks:
                    pre = _prefix(version, host, pid, dev, False)
                    nvml = f" nvmlDev {dev}" if _v(version) >= (2, 19) else ""
                    lines.append(f"{pre} NCCL INFO comm 0x{0x55d0a0 + rank:x} rank {rank} nranks {nranks} "
                                 f"cudaDev {dev}{nvml} busId {0x1b000 + dev * 0x10000:x} commId 0x6a2b1e - Init COMPLETE")
                    for c in range(rng.choice((1, 2))):
                        via = rng.choice(_TRANSPORTS)
                        lines.append(f"{pre} NCCL INFO Channel {c:02d}/{2} : {rank}[{dev}] -> {(rank + 1) % nranks}"
                                     f"[{(dev + 1) % per}] via {via}")
                        n_channels += 1
                values += [("nranks", nranks), ("len(ranks)", nranks), ("channels", n_channels),
                           ("net.network", "IB"), ("net.devices[index=1].link", "RoCE"), ("net.oob", "ib0:10.0.0.1<0>")]
                values += [] if merged else [("net.devices[index=1].device", "mlx5_1")]
            # the failure: a completion error's WARN (an empty line before it), then the callers' results
            host, pid, dev, _ = ranks[-1]
            if level == "WARN" or rng.random() < 0.5:
                status, vendor = rng.choice(((12, 129), (5, 249)))
                peer = "10.0.0.2<46211>"
                msg = _COMPLETION[version].format(e=status, o=0 if _v(version) < (2, 30) else 128, n=0, v=vendor, peer=peer)
                func = " (ncclIbTest)" if version == "2.30" else ""
                lines += ["", f"{_prefix(version, host, pid, dev, stamp)} net_ib.cc:1722{func} NCCL WARN {msg}",
                          f"{_prefix(version, host, pid, dev, False)} NCCL INFO transport/net.cc:1302 -> 6",
                          f"{host}: Test NCCL failure common.cu:1032 'unhandled system error' "
                          "(run with NCCL_DEBUG=INFO for details)"]
                warn_count = 1
                values += [("completion_errors[0].status", status), ("completion_errors[0].vendor_err", vendor),
                           ("completion_errors[0].host", host), ("nccl_errors", "unhandled system error"),
                           (f"nccl_error_sources[host={host}].result", "unhandled system error")]
                if version != "2.8":
                    values.append(("completion_errors[0].peer", peer))
                if version in ("2.26", "2.30"):
                    values.append(("completion_errors[0].hca", "mlx5_0"))
            for _ in range(rng.randint(0, 2)):  # the application's own lines between NCCL's
                lines.insert(rng.randrange(len(lines) + 1), rng.choice(("epoch 3 step 120 loss 2.31",
                                                                        "Traceback (most recent call last):")))
            values += [("len(warnings)", warn_count), ("len(hosts)", len({r[0] for r in ranks}) if level == "INFO"
                                                          else len({ranks[-1][0]}))]
            yield Variant("nccl-debug", f"{version} {level} {len(hosts)}x{per}", "\n".join(lines) + "\n",
                          tuple(values), fails=warn_count > 0, stream=True)
    # a net plugin whose name holds a blank (aws-ofi-nccl: 'Using network AWS Libfabric', its connections
    # 'via NET/AWS Libfabric/0'); graph's ring listing 'Channel 00/02 :    0   1' is no connection (harvest 21)
    lines = []
    for h in range(2):
        pre = f"efa-node-{h}:{7000 + h}:{7100 + h} [0]"
        lines += [f"{pre} NCCL INFO NET/OFI Selected Provider is efa (found 1 nics)",
                  f"{pre} NCCL INFO Using network AWS Libfabric",
                  f"{pre} NCCL INFO Channel 00/02 :    0   1", f"{pre} NCCL INFO Channel 01/02 :    0   1"]
        for c in range(2):
            for side, (a, b) in (("send", (h, 1 - h)), ("receive", (1 - h, h))):
                lines.append(f"{pre} NCCL INFO Channel {c:02d}/0 : {a}[0] -> {b}[0] [{side}] via NET/AWS Libfabric/0")
        lines.append(f"{pre} NCCL INFO ncclCommInitRankConfig comm 0x5{h}0 rank {h} nranks 2 cudaDev 0 nvmlDev 0 "
                     "busId 1e0 commId 0x1ce7 - Init COMPLETE")
    yield Variant("nccl-debug", "plugin net 'AWS Libfabric', ring listings", "\n".join(lines) + "\n",
                  (("net.network", "AWS Libfabric"), ("transports.NET/AWS Libfabric", 8), ("channels", 8),
                   ("len(ranks)", 2), ("len(warnings)", 0)), fails=False, stream=True)
    # a WARN quoted with its whole prefix removed ('NCCL WARN MSG': a report's own quote, harvest 21)
    yield Variant("nccl-debug", "a WARN quoted without its prefix",
                  "NCCL WARN NET/IB : Got completion from peer 10.0.0.7 with error 4, opcode 0, len 0, vendor err 81 (Send)\n",
                  (("completion_errors[0].status", 4), ("completion_errors[0].vendor_err", 81),
                   ("completion_errors[0].peer", "10.0.0.7"), ("len(warnings)", 1)), fails=True, stream=True)
    # NCCL up to 2.5: the bootstrap's own 'NET/Socket : Using' line first, then the IB transport's (the
    # network); a job that hangs in init prints 'Init START' and the comm's size, never 'Init COMPLETE'
    for ib in (True, False):
        lines = ["NCCL version 2.4.7+cuda10.0"]
        for h, host in enumerate(("master", "worker")):
            for d in range(2):
                pre = _prefix("2.4", host, 20 + h * 30 + d, d, False)
                lines.append(f"{pre} NCCL INFO NET/Socket : Using [0]ib0:192.168.11.{h + 1}<0>")
                if ib:
                    lines.append(f"{pre} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.{h + 1}<0>")
                lines.append(f"{pre} NCCL INFO comm 0x7f5780001ca0 rank {h * 2 + d} nranks 4 cudaDev {d} busId "
                             f"{0x1b000 + d * 0x10000:x} - Init START")
        values: list[tuple[str, object]] = [("nranks", 4), ("len(ranks)", 0), ("nccl_version", "2.4.7"),
                                            ("net.network", "IB" if ib else "Socket"), ("len(hosts)", 2)]
        values += [("net.devices[index=0].device", "mlx5_0"), ("net.devices[index=0].port", 1),
                   ("net.oob", "ib0:192.168.11.1<0>"), ("net_hosts[host=worker].oob", "ib0:192.168.11.2<0>"),
                   ("net_hosts[host=worker].network", "IB")] if ib else \
                  [("net.devices[index=0].device", "ib0"), ("net.devices[index=0].address", "192.168.11.1"),
                   ("net.devices[index=0].port", None)]
        yield Variant("nccl-debug", f"2.4 {'IB' if ib else 'Socket'} init start", "\n".join(lines) + "\n",
                      tuple(values), stream=True)
    # NCCL up to 2.6 names a channel's connection 'Ring RR : R[BUSID] -> P[BUSID] via T' (transport/p2p.cc
    # @ v2.5.6); a reporter who removed the host name leaves ':PID:TID [DEV]' (the line is NCCL's, its host unknown)
    for redacted in (False, True):
        host = "" if redacted else "node3"
        lines = [f"{host}:5330:5330 [3] NCCL INFO NET/IB : Using [0]mlx5_1:1/IB [1]mlx5_2:1/RoCE ; OOB eth0:10.1.0.64<0>"]
        rings = rng.randint(1, 4)
        for r in range(rings):
            lines.append(f"{host}:5330:5499 [3] NCCL INFO Ring {r:02d} : 3[3d000] -> {4 + r}[b2000] via P2P/IPC")
        lines.append(f"{host}:5330:5499 [3] NCCL INFO Ring 00 : 3 -> 11 [send] via NET/IB/0")
        values = [("transports.P2P/IPC", rings), ("transports.NET/IB", 1), ("channels", rings + 1),
                  ("net.devices[index=1].link", "RoCE"), ("len(hosts)", 0 if redacted else 1), ("processes", 1)]
        if redacted:  # a WARN with its host removed is still a fault (host unknown)
            lines += ["", f":5330:5512 [3] transport/net_ib.cc:775 NCCL WARN {_COMPLETION['2.8'].format(e=12, o=0, n=0, v=129)}"]
            values += [("len(warnings)", 1), ("completion_errors[0].status", 12), ("faults", "(host removed)")]
        yield Variant("nccl-debug", f"2.5 ring lines{' host removed' if redacted else ''}", "\n".join(lines) + "\n",
                      tuple(values), stream=True, fails=redacted)
    # NCCL 2.7-2.8 in one process: p2p.cc's 'via P2P/direct pointer%s' (useReadStr '/read' or empty) and shm.cc's
    # 'via direct shared memory' (the transport later printed SHM/direct/direct), nccl-issue 644
    p2p = shm = 0
    lines = []
    for c in range(rng.randint(1, 3)):
        for r in range(4):
            if rng.random() < 0.5:
                via, p2p = rng.choice(("P2P/direct pointer", "P2P/direct pointer/read")), p2p + 1
            else:
                via, shm = "direct shared memory", shm + 1
            lines.append(f"dgx1:12291:{12321 + r} [{r}] NCCL INFO Channel {c:02d} : {r}[{(r + 1) * 0x1000:x}] -> "
                         f"{(r + 1) % 4}[{((r + 1) % 4 + 1) * 0x1000:x}] via {via}")
    yield Variant("nccl-debug", "2.7 direct pointer and direct shared memory", "\n".join(lines) + "\n",
                  (("channels", p2p + shm), ("transports.P2P/direct pointer", p2p or None),
                   ("transports.SHM/direct", shm or None), ("len(hosts)", 1)), stream=True)
    # a reporter's paste of the version line and a WARN with its whole HOST:PID:TID [DEV] removed, the
    # WARN in markdown inline code (nccl-issue296): NCCL's by its 'FILE:LINE NCCL WARN' layout alone
    rank = rng.randrange(8, 64)
    lines = ["NCCL version 2.4.8+cuda10.0", "",
             f"`init.cc:1247 NCCL WARN Mismatched collective detected, please check your collective calls at and "
             f"around rank {rank}. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs`"]
    yield Variant("nccl-debug", "2.4 WARN pasted without its prefix", "\n".join(lines) + "\n",
                  (("nccl_version", "2.4.8"), ("len(warnings)", 1), ("warnings[0].file", "init.cc"),
                   ("warnings[0].line", 1247), ("warnings[0].message", f"around rank {rank}."), ("len(hosts)", 0)),
                  stream=True, fails=True, finding="Mismatched collective detected")


_PG = {"2.2": "[Rank {r}] ", "2.3": "[PG 0 Rank {r}] ", "2.4": "[PG 0 (default_pg) Rank {r}] ",
       "2.5": "[PG ID 0 PG GUID 0(default_pg) Rank {r}] "}
_PROGRESS = {"2.2": "Timeout at NCCL work: {s}, last enqueued NCCL work: {e}, last completed NCCL work: {c}.",
             "2.3": "Exception (either an error or timeout) detected by watchdog at work: {s}, last enqueued NCCL "
                    "work: {e}, last completed NCCL work: {c}.",
             "2.4": "failure detected by watchdog at work sequence id: {s} PG status: last enqueued work: {e}, last "
                    "completed work: {c}",
             "2.5": "failure detected by watchdog at work sequence id: {s} PG status: last enqueued work: {e}, last "
                    "completed work: {c}"}


def _glog(version: str, rank: int, line: int, i: int) -> str:
    if version == "1.13":
        return f"[E ProcessGroupNCCL.cpp:{line}] "
    head = f"[E0709 17:05:{38 + i % 20:02d}.{162814866 + i:09d} ProcessGroupNCCL.cpp:{line}] "
    return (f"[rank{rank}]:" if _v(version) >= (2, 3) else "") + head


@generator("torch-nccl")
def torch_nccl(rng: random.Random) -> Iterator[Variant]:
    for version in ("1.13", "2.2", "2.3", "2.4", "2.5"):
        nranks = rng.choice((2, 4, 8))
        ranks = sorted(rng.sample(range(nranks), rng.randint(1, nranks)))
        seq, timeout = rng.randrange(100, 500000), rng.choice((600000, 1800000))
        op = rng.choice(("ALLREDUCE", "ALLGATHER", "_REDUCE_SCATTER_BASE", "BROADCAST"))
        lines, values, i = [], [("len(ranks)", len(ranks)), ("timeout_ms", timeout)], 0
        for r in ranks:
            pg = _PG.get(version, "[Rank {r}] ").format(r=r)
            numel = f", NumelIn={rng.randrange(1, 10**7)}, NumelOut={rng.randrange(1, 10**7)}" if version != "1.13" else ""
            ran = timeout + rng.randrange(1, 90)
            lines.append(_glog(version, r, 1785 if _v(version) >= (2, 3) else 475, i) + pg
                         + f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}{numel}, "
                         f"Timeout(ms)={timeout}) ran for {ran} milliseconds before timing out.")
            i += 1
            values += [(f"timeouts[rank={r}].seq", seq), (f"timeouts[rank={r}].ran_ms", ran),
                       (f"timeouts[rank={r}].op", op)]
            if version in _PROGRESS:
                lines.append(_glog(version, r, 1796, i) + pg + _PROGRESS[version].format(s=seq, e=seq + 3, c=seq - 1))
                i += 1
                values.append((f"progress[rank={r}].last_completed", seq - 1))
            if _v(version) >= (2, 3) and rng.random() < 0.5:  # the Flight Recorder, then the heartbeat monitor
                lines += [_glog(version, r, 1330, i) + pg + "Received a dump signal due to a collective timeout "
                          f"from this local rank and we will try our best to dump the debug info. Last enqueued NCCL "
                          f"work: {seq + 3}, last completed NCCL work: {seq - 1}.",
                          _glog(version, r, 1392, i + 1) + pg + "ProcessGroupNCCL preparing to dump debug info. "
                          "Include stack trace: 1"]
                i += 2
            lines += [_glog(version, r, 630, i) + pg + "Some NCCL operations have failed or timed out. Due to the "
                      "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
                      "data.", _glog(version, r, 636, i + 1) + pg + "To avoid data inconsistency, we are taking the "
                      "entire process down."]
            i += 2
        values.append(("process_down", len(ranks)))
        if rng.random() < 0.5:  # a launcher's lines between them
            lines.insert(rng.randrange(len(lines) + 1), "W0709 17:05:40.000000 139 torch/distributed/elastic/"
                         "multiprocessing/api.py:897] Sending process 2712 closing signal SIGTERM")
        yield Variant("torch-nccl", f"{version} {len(ranks)} of {nranks} ranks", "\n".join(lines) + "\n",
                      tuple(values), fails=True, stream=True)
    # a paste wrapped at the terminal's width: a message's tail on a line of its own (at a blank or inside a word)
    for width in (rng.randrange(90, 140), rng.randrange(60, 90)):
        seq, ran = rng.randrange(100, 9000), 600000 + rng.randrange(1, 90)
        lines = [_glog("2.4", 3, 1709, 0) + _PG["2.4"].format(r=3) + "Watchdog caught collective operation timeout: "
                 f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for {ran} "
                 "milliseconds before timing out.",
                 _glog("2.2", 3, 1709, 1) + _PG["2.4"].format(r=3) + _PROGRESS["2.2"].format(s=seq, e=seq + 12, c=seq - 1)]
        values = (("timeouts[rank=3].seq", seq), ("timeouts[rank=3].ran_ms", ran),
                  ("progress[rank=3].last_enqueued", seq + 12), ("progress[rank=3].last_completed", seq - 1))
        yield Variant("torch-nccl", f"wrapped at {width}", "\n".join(_wrapped(lines, width)) + "\n", values,
                      fails=True, stream=True)
        # under mpirun --tag-output (issue 28): Open MPI 4's ORTE tags '[1,3]<stdout>:line', 5's PRRTE
        # '[1,3]<stdout>: line'; the terminal wraps the tagged line, its tail untagged. (A log wrapped
        # before the launcher tagged it, every piece tagged, is the 'mpirun --tag-output' delivery of
        # the variant above: test_grammars.test_a_wrapped_watchdog_log_tagged_by_mpirun...)
        for tag in ("[1,3]<stdout>:", "[1,3]<stdout>: "):
            for w in (66, width):
                yield Variant("torch-nccl", f"tagged {tag!r} then wrapped at {w}",
                              "\n".join(_wrapped([tag + ln for ln in lines], w)) + "\n", values, fails=True, stream=True)
    # a logger's or reporter's break after 'timeout:' (the WorkNCCL on its own line, no 'ran for': harvest8's
    # GB200 excerpt), under a launcher's bare '[rank3]' tag
    seq, r = rng.randrange(100, 90000), rng.randrange(8)
    text = (f"[rank{r}] Watchdog caught collective operation timeout:\n"
            f"WorkNCCL(SeqNum={seq}, OpType=ALLGATHER, NumelIn=1, NumelOut=32, Timeout(ms)=600000)\n")
    yield Variant("torch-nccl", "broken after 'timeout:'", text,
                  (("ranks", r), ("timeouts[0].seq", seq), ("timeouts[0].numel_out", 32), ("timeouts[0].ran_ms", None)),
                  fails=True, stream=True)
    # checkForNCCLErrorsInternal's asynchronous error ("NCCL error: " + ncclGetErrorWithVersion, no FILE:LINE) ending
    # the watchdog, then getNcclErrorDetailStr's lines
    version = rng.choice(("2.18.1", "2.20.5", "2.21.5"))
    lines = [_glog("2.3", 9, 1414, 0) + "[PG 0 Rank 9] Process group watchdog thread terminated with exception: NCCL "
             f"error: remote process exited or there was a network error, NCCL version {version}",
             "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
             "Last error:",
             "NET/IB : Got completion from peer 10.5.0.34<33956> with error 5, opcode 0, len 1, vendor err 244 (Recv)"]
    yield Variant("torch-nccl", "watchdog ended by an asynchronous NCCL error", "\n".join(lines) + "\n",
                  (("ranks", 9), ("nccl_version", version), ("nccl_errors[0].where", None),
                   ("nccl_errors[0].result", "remote process exited or there was a network error")),
                  fails=True, stream=True, finding="remote process exited")


def _wrapped(lines: list[str], width: int) -> list[str]:
    """``lines`` as a terminal ``width`` columns wide shows them: each cut every ``width`` characters."""
    return [piece for ln in lines for piece in (ln[i:i + width] for i in range(0, len(ln), width))]


@generator("nccl-inspector")
def nccl_inspector(rng: random.Random) -> Iterator[Variant]:
    for pretty in (False, True):
        for kinds in (("coll",), ("coll", "p2p")):
            nranks = rng.choice((2, 8))
            objects = []
            for sn in range(rng.randint(1, 3)):
                for rank in range(nranks):
                    kind = rng.choice(kinds)
                    size = 1 << rng.randrange(10, 31)
                    t = rng.uniform(10, 5000)
                    perf = {f"{kind}": "AllReduce" if kind == "coll" else "Send", f"{kind}_sn": sn,
                            f"{kind}_msg_size_bytes": size, f"{kind}_exec_time_us": round(t, 3),
                            f"{kind}_timing_source": "kernel_gpu",
                            f"{kind}_algobw_gbs": round(size / t / 1000, 6), f"{kind}_busbw_gbs": round(size / t / 800, 6)}
                    if kind == "p2p":
                        perf["p2p_peer"] = (rank + 1) % nranks
                    objects.append({"header": {"id": "0x7f8c496ae9f0", "comm_name": "default", "rank": rank,
                                               "n_ranks": nranks, "nnodes": 1},
                                    "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "5067397",
                                                 "rec_mechanism": "nccl_profiler_interface",
                                                 "dump_timestamp_us": 1749000000000000 + sn, "hostname": "node7",
                                                 "pid": 4242 + rank},
                                    f"{kind}_perf": perf})
            text = "".join(json.dumps(o, indent=2 if pretty else None) + "\n" for o in objects)
            first = objects[0][f"{'coll' if 'coll_perf' in objects[0] else 'p2p'}_perf"]
            values = (("format_version", "v4.0"), ("len(records)", len(objects)), ("ranks", nranks),
                      ("communicators", 1), ("records[0].size_bytes", next(v for k, v in first.items()
                                                                           if k.endswith("msg_size_bytes"))))
            yield Variant("nccl-inspector", f"{'pretty' if pretty else 'lines'} {'+'.join(kinds)} {nranks} ranks",
                          text, values, stream=True)


@generator("torch-nccl")
def fr_trace_report(rng: random.Random) -> Iterator[Variant]:
    """The Flight Recorder trace analyzer's report (pytorch PR 140969): ranks that never joined a collective."""
    rng = random.Random(140969)  # its own draws: the watchdog generator's below stay as they were
    for world in (2, 8):
        missing = sorted(rng.sample(range(1, world), rng.randint(1, world - 1)))
        seq = rng.randrange(10, 40000)
        lines = [f"Not all ranks joining collective: sequence number: {seq}", f"internal record id: {seq - 1}",
                 "group info: 0:default_pg", "collective: nccl:all_reduce",
                 "missing ranks: {" + ", ".join(map(str, missing)) + "}", "input sizes: [[1571911]]",
                 "output sizes: [[1571911]]", f"world size: {world}",
                 "expected ranks: {" + ", ".join(map(str, range(world))) + "}", "collective state: scheduled",
                 "collective stack trace:", " all_reduce at /torch/distributed/distributed_c10d.py:2707"]
        yield Variant("torch-nccl", f"fr_trace report {world} ranks", "\n".join(lines) + "\n",
                      (("flight_recorder.mismatches[0].seq", seq), ("len(flight_recorder.mismatches[0].missing_ranks)",
                                                                    len(missing)),
                       ("flight_recorder.mismatches[0].world_size", world)), fails=True, stream=True)


@generator("torch-nccl")
def fr_trace_report_heads(rng: random.Random) -> Iterator[Variant]:
    """The analyzer's report head as other versions log it (tools/flight_recorder/components/utils.py):
    2.5's 'Not all ranks joining collective S at entry R' (its 'expected ranks: N' their count, no record
    or world size line), 2.6+'s EntryState.log 'Not all ranks joining collective, sequence number: S'."""
    rng = random.Random(2025)  # its own draws, as fr_trace_report's
    for world, v25 in ((2, True), (8, False)):
        missing = sorted(rng.sample(range(1, world), rng.randint(1, world - 1)))
        seq = rng.randrange(10, 40000)
        head = ([f"Not all ranks joining collective {seq} at entry {seq - 1}"] if v25 else
                [f"Not all ranks joining collective, sequence number: {seq}", f"internal record id: {seq - 1}"])
        lines = head + ["group info: 0:default_pg", "collective: nccl:all_reduce",
                        "missing ranks: {" + ", ".join(map(str, missing)) + "}", "input sizes: [[3, 4]]",
                        "output sizes: [[3, 4]]"]
        lines += [f"expected ranks: {world}"] if v25 else [f"world size: {world}", "expected ranks: {"
                                                           + ", ".join(map(str, range(world))) + "}"]
        lines += ["collective state: scheduled", "collective stack trace:",
                  "  all_reduce at /torch/distributed/distributed_c10d.py:2696"]
        yield Variant("torch-nccl", f"fr_trace report {'2.5' if v25 else '2.6+'} head {world} ranks", "\n".join(lines) + "\n",
                      (("flight_recorder.mismatches[0].seq", seq), ("flight_recorder.mismatches[0].record_id", seq - 1),
                       ("len(flight_recorder.mismatches[0].missing_ranks)", len(missing)),
                       ("flight_recorder.mismatches[0].world_size", world)), fails=True, stream=True)


@generator("nccl-debug")
def masked_prefixes(rng: random.Random) -> Iterator[Variant]:
    """A WARN whose PID (or 'PID:TID', as one) a reporter masked behind NCCL's own timestamp
    ('[2026-03-13 22:26:02] host-01.example.com:XXXXXX [5] ibvwrap.c:262 NCCL WARN ...', nccl-issue2013):
    NCCL's line by its layout, its process unknown."""
    dev = rng.randrange(8)
    for who in ("XXXXXX", "XXXXXX:XXXXXX", f"{rng.randrange(100, 9999)}:xxxx"):
        line = (f"[2026-03-13 22:26:02] host-01.example.com:{who} [{dev}] ibvwrap.c:262 NCCL WARN Call to "
                "ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_3:1, curr state INIT, next state RTR")
        yield Variant("nccl-debug", f"WARN with {who} masked", line + "\n",
                      (("len(warnings)", 1), ("warnings[0].file", "ibvwrap.c"), ("warnings[0].line", 262),
                       ("warnings[0].device", dev), ("warnings[0].pid", None if who.startswith("X") else int(who.split(":")[0])),
                       ("hosts", "host-01.example.com")), fails=True, stream=True)


@generator("nccl-debug")
def quoted_from_the_device(rng: random.Random) -> Iterator[Variant]:
    """Lines a reporter quoted from ncclDebugLog's '[DEV] ' field on ('[1] misc/shmutils.cc:103 NCCL WARN ...',
    '[3] NCCL INFO ...', nccl-issue1518): NCCL's, the device read; the WARNs' '[N] FILE:LINE' is no launcher label."""
    devs = rng.sample(range(8), rng.randint(2, 4))
    lines = [f"[{devs[0]}] NCCL INFO 2 coll channels, 2 p2p channels, 2 p2p channels per peer"]
    for d in devs[1:]:
        lines += ["", f"[{d}] misc/shmutils.cc:103 NCCL WARN Cuda failure 'invalid argument'", "",
                  f"[{d}] misc/shmutils.cc:114 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-Nz{d} "
                  "(size 9637888)"]
    yield Variant("nccl-debug", "quoted from the device field on", "\n".join(lines) + "\n",
                  (("len(warnings)", 2 * (len(devs) - 1)), ("warnings[0].device", devs[1]), ("warnings[0].line", 103),
                   (f"warnings[{2 * len(devs) - 3}].device", devs[-1]), ("len(hosts)", 0)), fails=True, stream=True)


@generator("nccl-debug")
def error_sources(rng: random.Random) -> Iterator[Variant]:
    """Each result once in nccl_errors, and who printed it in nccl_error_sources: nccl-tests' NCCLCHECK line on
    every host ('%s: Test NCCL failure %s:%d '%s / %s'', then TESTCHECK's ' .. %s pid %d: Test failure'), an NCCL
    WARN line naming the result (its host and pid), PyTorch's '[rankN]:' line (its rank)."""
    hosts = [f"gpu-{i:02d}" for i in range(rng.randrange(2, 6))]
    lines = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20"]
    for h, host in enumerate(hosts):
        pid = 5000 + h
        lines += ["", f"{host}:{pid}:{pid} [0] enqueue.cc:1694 NCCL WARN Cuda failure 'named symbol not found'",
                  f"{host}: Test NCCL failure all_reduce.cu:44 'unhandled cuda error (run with NCCL_DEBUG=INFO for "
                  "details) / '", f" .. {host} pid {pid}: Test failure common.cu:404"]
    lines.append(f"{hosts[0]}:5000:5001 [0] NCCL INFO misc/socket.cc:50 -> 2 (unhandled system error)")
    rank = rng.randrange(8, 64)
    lines.append(f"[rank{rank}]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                 "NCCLUtils.hpp:275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5")
    values = [("nccl_errors", "unhandled cuda error"), ("nccl_errors", "unhandled system error"), ("len(nccl_errors)", 2),
              ("len(nccl_error_sources)", len(hosts) + 2), (f"nccl_error_sources[host={hosts[-1]}].result",
                                                              "unhandled cuda error"),
              (f"nccl_error_sources[rank={rank}].result", "unhandled system error"),
              ("nccl_error_sources[pid=5000].result", "unhandled system error"),
              ("nccl_error_sources[pid=5000].host", hosts[0])]
    yield Variant("nccl-debug", f"{len(hosts)} hosts' Test NCCL failure, an NCCL line's and a rank's result",
                  "\n".join(lines) + "\n", tuple(values), fails=True, stream=True)


@generator("torch-nccl")
def desync_reports(rng: random.Random) -> Iterator[Variant]:
    """TORCH_NCCL_DESYNC_DEBUG's report (TraceUtils.h retrieveDesyncReport): the timed-out rank's collective and
    number, then the ranks that never joined, or those that joined but did not finish and those that finished but
    did not join the next, and the snapshot; then printTraceback's 'Stack trace of the failed collective:' frames."""
    world, rank, seq = rng.choice((2, 4, 8)), 0, rng.randrange(2, 90)
    others = list(range(1, world))
    head = (f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq - 1}, OpType=ALLREDUCE, "
            f"NumelIn=4, NumelOut=4, Timeout(ms)=8000) ran for 8097 milliseconds before timing out.")
    frames = ["#2 buggy from collective_mismatch.py:8", "#3 main from collective_mismatch.py:15"]
    lagging = [head, f"\t - [{rank}] Timeout at collective: ALLREDUCE, #{seq}",
               "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
               f"\t     [{', '.join(map(str, others))}] finished collective #{seq - 1}, but didn't join collective "
               f"#{seq} (count from 1)", "\t - Snapshot of ranks' latest states:", f"\t   #{seq} started ranks:",
               f"\t     [{rank}] started ALLREDUCE", "Stack trace of the failed collective:", *frames]
    yield Variant("torch-nccl", f"desync report, {world - 1} lagging ranks, stack trace", "\n".join(lagging) + "\n",
                  (("desync[0].seq", seq), ("desync[0].op", "ALLREDUCE"), ("len(desync[0].finished_not_joined)", world - 1),
                   ("desync[0].lag_seq", seq - 1), ("len(flight_recorder.frames)", 2),
                   ("flight_recorder.frames[1]", frames[1]), ("flight_recorder.stack_traces", 1)), fails=True, stream=True)
    # printTraceback where the Flight Recorder holds no trace (TORCH_NCCL_TRACE_BUFFER_SIZE=0): a 'not found' line a rank,
    # no trace printed; one rank's trace printed beside them
    ranks = rng.sample(range(8), rng.randrange(2, 5))
    lines = [_glog("2.5", r, 693, i) + "Stack trace of the failed collective not found, potentially because "
             "FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value."
             for i, r in enumerate(ranks)]
    lines += [_glog("2.5", 9, 801, 9) + "Stack trace of the failed collective: ", *frames]
    yield Variant("torch-nccl", f"{len(ranks)} stack traces not found, one printed", "\n".join(lines) + "\n",
                  (("flight_recorder.stack_traces", 1), ("flight_recorder.stack_traces_not_found", len(ranks)),
                   ("len(flight_recorder.frames)", 2), ("len(ranks)", len(ranks) + 1)), fails=True, stream=True)
    never = [head, f"\t - [{rank}] Timeout at collective: ALLREDUCE, #{seq}",
             f"\t - To our best knowledge, ranks [{others[-1]}] are the lagging ranks that caused this timeout. "
             "They never joined any collectives"]
    yield Variant("torch-nccl", "desync report, a rank never joined", "\n".join(never) + "\n",
                  (("desync[0].never_joined", others[-1]), ("len(desync[0].never_joined)", 1)), fails=True, stream=True)


@generator("torch-nccl")
def last_errors_and_subgroups(rng: random.Random) -> Iterator[Variant]:
    """C10D_NCCL_CHECK's error then getNcclErrorDetailStr's 'ncclInvalidUsage: ...', 'Last error:' and NCCL's own
    last WARN (kept as last_error); c10's '[rankN]:' (the global rank) before a subgroup's '[PG P Rank R]'."""
    version, rank = rng.choice(("2.18.6", "2.19.3", "2.20.5")), rng.randrange(1, 8)
    text = (f"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
            f"invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version {version}\n"
            "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
            f"Duplicate GPU detected : rank {rank} and rank 0 both on CUDA device 1000\n")
    yield Variant("torch-nccl", "DistBackendError with NCCL's last error", text,
                  (("nccl_version", version), ("nccl_errors[0].result", "invalid usage"),
                   ("nccl_errors[0].last_error", f"Duplicate GPU detected : rank {rank} and rank 0 both on CUDA device 1000")),
                  fails=True, stream=True)
    # the same message word-wrapped by a reporter after its 'NCCL error in:', the tail indented (harvest 30's
    # LUMI Q&A): the head names no ProcessGroupNCCL, the FILE:LINE and the version on lines of their own
    head, rest = text.split("\n", 1)
    width = rng.randrange(52, 80)
    pieces = textwrap.wrap(head, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
    wrapped = " \n".join(pieces) + "\n" + rest  # (CRLF is a delivery of every variant: DELIVERIES)
    yield Variant("torch-nccl", f"DistBackendError word-wrapped at {width}", wrapped,
                  (("nccl_version", version), ("nccl_errors[0].result", "invalid usage"),
                   ("nccl_errors[0].where", "NCCLUtils.hpp:275"),
                   ("nccl_errors[0].last_error", f"Duplicate GPU detected : rank {rank} and rank 0 both on CUDA device 1000")),
                  fails=True, stream=True)
    ranks = sorted(rng.sample(range(1, 16), 2))
    lines = [f"[rank{r}]:" + _glog("2.3", r, 1316, i)[len(f"[rank{r}]:"):] + "[PG 5 Rank 0] Heartbeat monitor timed out! "
             "Process will be terminated after dumping debug info. workMetaList_.size()=3" for i, r in enumerate(ranks)]
    yield Variant("torch-nccl", "two processes each rank 0 of its subgroup", "\n".join(lines) + "\n",
                  (("ranks", ranks[0]), ("ranks", ranks[1]), ("len(ranks)", 2), ("heartbeat_timeouts", ranks[1])),
                  fails=True, stream=True)
