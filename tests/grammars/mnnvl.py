"""The multi-node NVLink views, from their grammars (sncheck/vendors/nvidia/fabric_grammar.py):
``nvidia-imex-ctl -N`` (NVIDIA's IMEX guide and the AWS capture: the legend, the node list,
the connectivity table, 'Domain State'), ``nvidia-smi nvlink -info`` (NVLE and the NVLink
firmware versions NVML names: MSE, NETIR, NETIR UPHY/CLN/DLN) and NCCL's MNNVL lines
(NVIDIA/nccl src/mnnvl.cc, init.cc, transport/nvls.cc: 2.21 to 2.30)."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import ALL, Variant, generator

_LEGEND = (
    "Connectivity Table Legend:",
    "I - Invalid - Node wasn't reachable, no connection status available",
    "N - Never Connected",
    "R - Recovering - Connection was lost, but clean up has not yet been triggered.",
    "D - Disconnected - Connection was lost, and clean up has been triggreed.",
    "A - Authenticating - If GSSAPI enabled, client has initiated mutual authentication.",
    "!V! - Version mismatch, communication disabled.",
    "!M! - Node map mismatch, communication disabled.",
    "C - Connected - Ready for operation",
)


@generator("imex-ctl")
def imex_ctl(rng: random.Random) -> Iterator[Variant]:
    """The legend, a timestamp, 'Nodes:' and a 'Node #k - ADDRESS - STATE - Version: V' line per
    node of the config, the 'Nodes From\\To' table (a row per node, a cell per node), and 'Domain
    State: S' last: whole through that line. A down node: UNAVAILABLE, its cells N or I, the
    domain DEGRADED; a node of another driver: its cells !V!."""
    shapes = [(n, fault) for n in ((1, 2, 4, 18, 36, 72) if ALL else (rng.choice((1, 2, 4)), 18))
              for fault in ((None, "down", "version") if ALL else (rng.choice((None, "down", "version")),))]
    for n, fault in shapes:
        bad = rng.randrange(n)
        versions = ["570.172"] * n
        states = ["READY"] * n
        if fault == "down":
            states[bad] = "UNAVAILABLE"
        elif fault == "version":
            versions[bad] = "570.148"
        addresses = [f"172.31.{48 + k // 32}.{(k * 7) % 250 + 2}" for k in range(n)]
        lines = [*_LEGEND, "", "5/12/2025 06:08:10.580", "Nodes:"]
        lines += [f"Node #{k:<3} - {addresses[k]:<15} - {states[k]:<20} - Version: {versions[k]}" for k in range(n)]
        lines += ["", " Nodes From\\To  " + "".join(f"{k:<4}" for k in range(n))]
        cells = {}
        for r in range(n):
            row = []
            for c in range(n):
                cell = "C"
                if fault == "down" and bad in (r, c) and r != c:
                    cell = "N" if r == bad else "I"
                elif fault == "version" and bad in (r, c) and r != c:
                    cell = "!V!"
                row.append(cell)
            cells[r] = row
            lines.append(f"{r:>8}        " + "".join(f"{x:<4}" for x in row).rstrip())
        domain = "DEGRADED" if fault == "down" else "UP"
        lines += ["", f"Domain State: {domain}"]
        values: list[tuple[str, object]] = [("len(nodes)", n), ("domain_state", domain),
                                            (f"nodes[{bad}].state", states[bad]),
                                            (f"nodes[{bad}].version", versions[bad]),
                                            (f"nodes[{bad}].address", addresses[bad]),
                                            (f"matrix.{n - 1}.0", cells[n - 1][0])]
        yield Variant("imex-ctl", f"{n} nodes {fault}", "\n".join(lines) + "\n", tuple(values), count=n,
                      elide=(1, len(_LEGEND)))


_FIRMWARE = ("MSE", "NETIR", "NETIR UPHY", "NETIR CLN", "NETIR DLN")  # NVML_NVLINK_FIRMWARE_UCODE_TYPE_* 1..5


@generator("nvlink-info")
def nvlink_info(rng: random.Random) -> Iterator[Variant]:
    """'GPU i: NAME (UUID: GPU-...)', then nine blanks 'NVLE: enabled|disabled', 'Firmware Version:'
    and, four blanks deeper, one 'UCODE: a:b:c' line per NVLink firmware NVML reports."""
    for n, name in ((4, "NVIDIA GB200"), (rng.choice((1, 2)), "NVIDIA GB300"), (8, "NVIDIA B200")) if ALL else \
            ((rng.choice((1, 2, 4)), rng.choice(("NVIDIA GB200", "NVIDIA GB300", "NVIDIA B200"))),):
        nvle = rng.choice(("disabled", "enabled"))
        lines, values = [], [("len(gpus)", n)]
        for i in range(n):
            uuid = f"GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-" \
                   f"{rng.getrandbits(16):04x}-{rng.getrandbits(48):012x}"
            mse = f"{rng.randrange(10, 20)}:{rng.randrange(10)}:0"
            lines += [f"GPU {i}: {name} (UUID: {uuid})", f"         NVLE: {nvle}", "         Firmware Version:",
                      f"             MSE: {mse}", "             NETIR: 36:2014:1862", "             NETIR UPHY: 7:0:0",
                      "             NETIR CLN: 0:9:0", "             NETIR DLN: 0:9:0"]
            values += [(f"gpus[index={i}].uuid", uuid), (f"gpus[index={i}].nvle", nvle),
                       (f"gpus[index={i}].firmware.MSE", mse), (f"gpus[index={i}].firmware.NETIR DLN", "0:9:0")]
        yield Variant("nvlink-info", f"{n}x {name} NVLE {nvle}", "\n".join(lines) + "\n", tuple(values), count=n)
    line = "NVML: Unable to retrieve NVLink information as all links are inactive"
    yield Variant("nvlink-info", "all links inactive", f"GPU 0: NVIDIA B200 (UUID: GPU-0)\n{line}\n",
                  (("len(gpus)", 1),), fails=True)


def _nccl_prefix(host: str, pid: int, dev: int) -> str:
    return f"{host}:{pid}:{pid + 11} [{dev}] NCCL INFO "  # debug.cc: "%s:%d:%d [%d] NCCL INFO %s"


@generator("nccl-mnnvl")
def nccl_mnnvl(rng: random.Random) -> Iterator[Variant]:
    """Per rank, in init order: 'NCCL version V+cudaC' (rank 0), 'MNNVL busId 0x.. fabric UUID
    a.b cliqueId 0x.. state S healthMask 0x..' (2.27 on), 'MNNVL F cliqueId X cliqueSize N
    cliqueRank R' (2.21 on; ' nvlDomainSize D' from 2.30) where MNNVL is on, the 'comm 0x..
    rank r nRanks N nNodes H localRanks L localRank l MNNVL F' line, 'NVLS multicast support is
    [not ]available on dev d' (' (NVLS_NCHANNELS c)' from 2.27); the WARN 'MNNVL (cliqueSize N)
    is available but not working on this system. ...' (2.27 on) where IMEX fails."""
    eras = ("2.21.5", "2.23.4", "2.26.2", "2.27.3", "2.28.9", "2.30.7")
    plan = [(v, m) for v in eras for m in ("on", "off", "broken")] if ALL else \
        [(rng.choice(eras), "on"), (rng.choice(eras), "off"), (rng.choice(eras[3:]), "broken")]
    for version, mode in plan:
        major = tuple(int(p) for p in version.split(".")[:2])
        hosts = rng.choice((1, 2, 18)) if mode == "on" else rng.choice((1, 2))
        per = 4
        nranks = hosts * per
        lines: list[str] = []
        for h in range(hosts):
            for d in range(per):
                rank, host, pid = h * per + d, f"nvl72-tray{h + 1:02d}", 3000 + h * 10 + d
                pre = _nccl_prefix(host, pid, d)
                if rank == 0:
                    lines.append(f"{pre}NCCL version {version}+cuda12.8")
                if mode != "off" and major >= (2, 27):
                    lines.append(f"{pre}MNNVL busId 0x{0x801 + d:x}000 fabric UUID 1.1 cliqueId 0x2 state 3 "
                                 "healthMask 0x0")
                if mode == "broken":
                    lines.append(f"{host}:{pid}:{pid + 11} [{d}] mnnvl.cc:74 NCCL WARN MNNVL (cliqueSize {nranks}) "
                                 "is available but not working on this system. Check the IMEX configuration "
                                 "(nvidia-imex-ctl -N). Set NCCL_MNNVL_ENABLE=0 to ignore this issue.")
                    continue  # ncclSystemError: this rank's init stops here
                flag = 1 if mode == "on" else 0
                if flag:
                    tail = f" nvlDomainSize {nranks}" if major >= (2, 30) else (" " if major < (2, 25) else "")
                    lines.append(f"{pre}MNNVL 1 cliqueId 2 cliqueSize {nranks} cliqueRank {rank}{tail}")
                lines.append(f"{pre}comm 0x{0x55d0c0 + rank:x} rank {rank} nRanks {nranks} nNodes {hosts} "
                             f"localRanks {per} localRank {d} MNNVL {flag}")
                nvls = f"{pre}NVLS multicast support is {'' if flag else 'not '}available on dev {d}"
                lines.append(nvls + (f" (NVLS_NCHANNELS {16 if flag else 0})" if major >= (2, 27) else ""))
        values: list[tuple[str, object]] = [("nccl_version", version),
                                            ("mnnvl", {"on": True, "off": False, "broken": False}[mode])]
        if mode != "off" and major >= (2, 27):
            values += [("len(fabric)", nranks), (f"fabric[{nranks - 1}].clique_id", 2), ("fabric[0].state", 3),
                       ("fabric[0].bus_id", "0x801000")]
        if mode == "on":
            values += [("clique_sizes[0]", nranks), ("ranks", nranks)]
            values += [("nvl_domain_sizes[0]", nranks)] if major >= (2, 30) else [("len(nvl_domain_sizes)", 0)]
        elif mode == "off":
            values += [("len(clique_sizes)", 0), ("ranks", nranks)]
        else:
            values += [("len(not_working)", nranks)]
        yield Variant("nccl-mnnvl", f"{version} {mode} {nranks} ranks", "\n".join(lines) + "\n", tuple(values),
                      fails=mode == "broken", stream=True)
