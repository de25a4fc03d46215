"""nvidia-smi's views besides its plain table (that one is smi_table.py), from their grammars
(sncheck/vendors/nvidia/nvidia_smi_grammar.py: NVIDIA's nvidia-smi documentation and the real
captures, nvidia-smi being closed): ``--query-gpu`` CSV with and without its header and
units, ``topo -m`` with and without NICs and its affinity columns, ``nvlink -s`` and
``nvlink -e`` of 6 to 18 links per GPU; 1 to 72 GPUs; every failure line."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from grammars import ALL, Variant, generator

# (field, unit printed after the value and in the header, value maker)
_FIELDS: dict[str, tuple[str, Callable[[random.Random], object] | None]] = {
    "index": ("", None),
    "name": ("", None),
    "uuid": ("", None),
    "pci.bus_id": ("", None),
    "driver_version": ("", None),
    "pstate": ("", lambda r: f"P{r.choice((0, 0, 2, 8))}"),
    "memory.total": ("MiB", lambda r: 81559),
    "memory.used": ("MiB", lambda r: r.randrange(0, 81559)),
    "pcie.link.gen.current": ("", lambda r: r.choice((1, 4, 5))),
    "pcie.link.width.current": ("", lambda r: 16),
    "temperature.gpu": ("", lambda r: r.randrange(25, 85)),
    "power.draw": ("W", lambda r: round(r.uniform(30, 700), 2)),
    "power.limit": ("W", lambda r: 700.0),
    "utilization.gpu": ("%", lambda r: r.randrange(0, 101)),
    "clocks.current.sm": ("MHz", lambda r: r.randrange(345, 1980)),
    "fan.speed": ("%", lambda r: r.randrange(0, 101)),
    "ecc.errors.uncorrected.volatile.total": ("", lambda r: 0),
    "clocks_event_reasons.sw_power_cap": ("", lambda r: r.choice(("Active", "Not Active"))),
    "persistence_mode": ("", lambda r: r.choice(("Enabled", "Disabled"))),
}
_NAMES = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-32GB")


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@generator("nvidia-smi-query-gpu")
def query_gpu(rng: random.Random) -> Iterator[Variant]:
    """``--format=csv`` (a header, units after the values: '[MiB]' in the header, '81559 MiB'),
    ``csv,nounits`` (the header keeps its '[unit]'), ``csv,noheader[,nounits]`` (the fields
    are the command line's: the parser is told them); N/A cells as '[N/A]' or
    '[Not Supported]'; a field nvidia-smi does not know fails the whole query."""
    names = list(_FIELDS)
    formats = ("csv", "csv,nounits", "csv,noheader", "csv,noheader,nounits")
    for fmt, n in [(f, rng.choice((1, 2, 8))) for f in formats] + [(rng.choice(formats), 72)]:
        if True:
            fields = ["index", "name"] + rng.sample(names[2:], rng.randrange(3, len(names) - 2))
            units, header = "nounits" not in fmt, "noheader" not in fmt
            lines = [", ".join(f + (f" [{_FIELDS[f][0]}]" if _FIELDS[f][0] else "") for f in fields)] if header else []
            values: list[tuple[str, object]] = [("len(gpus)", n)]
            name = rng.choice(_NAMES)
            na_at = (rng.randrange(n), rng.choice(fields[2:])) if rng.random() < 0.5 else None
            # every value of a few GPUs (the first, the last, one between): a value's place is
            # what a misread shifts, and stating 72 x 18 of them costs the plain run seconds
            told = {0, n - 1, rng.randrange(n)}
            for i in range(n):
                cells = []
                for f in fields:
                    unit, make = _FIELDS[f]
                    if f == "index":
                        v: object = i
                    elif f == "name":
                        v = name
                    elif f == "uuid":
                        v = _uuid(rng)
                    elif f == "pci.bus_id":
                        v = f"00000000:{0x18 + i:02X}:00.0"
                    elif f == "driver_version":
                        v = "550.90.07"
                    else:
                        assert make is not None, f
                        v = make(rng)
                    if na_at == (i, f):
                        cells.append(rng.choice(("[N/A]", "[Not Supported]")))
                        values.append((f"gpus[index={i}].{f}", None))
                        continue
                    cells.append(f"{v} {unit}" if unit and units else str(v))
                    if f not in ("index", "name") and i in told:
                        values.append((f"gpus[index={i}].{f}", v))
                if i in told:
                    values.append((f"gpus[index={i}].name", name))
                lines.append(", ".join(cells))
            yield Variant("nvidia-smi-query-gpu", f"{fmt} {n} GPUs {len(fields)} fields", "\n".join(lines) + "\n",
                          tuple(values), count=n, hints={} if header else {"fields": fields})
    yield Variant("nvidia-smi-query-gpu", "unknown field",
                  'Field "gpu.temp" is not a valid field to query.\n\n', (("len(gpus)", 0),), fails=True,
                  hints={"fields": ["index", "gpu.temp"]})
    for line in ("No devices were found", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                 "driver. Make sure that the latest NVIDIA driver is installed and running.",
                 "Failed to initialize NVML: Driver/library version mismatch"):
        yield Variant("nvidia-smi-query-gpu", line[:30], line + "\n", (("len(gpus)", 0),), fails=True)


# (board name, links nvidia-smi lists, speed per link in GB/s as nvlink -s prints it)
_BOARDS = (("Tesla V100-SXM2-32GB", 6, "25.781"), ("NVIDIA A100-SXM4-80GB", 12, "25"),
           ("NVIDIA H100 80GB HBM3", 18, "26.562"), ("NVIDIA B200", 18, "53.125"), ("NVIDIA GB200", 18, "53.125"))


def _gpu_line(rng: random.Random, i: int, name: str, uuid: bool) -> str:
    return f"GPU {i}: {name}" + (f" (UUID: {_uuid(rng)})" if uuid else "")


@generator("nvlink-status")
def nvlink_status(rng: random.Random) -> Iterator[Variant]:
    """``nvlink -s``: per GPU its line (with '(UUID: ...)', or without on GB300-era drivers) then
    '\\t Link N: S GB/s' or '\\t Link N: <inactive>' for every link the board has; a GPU whose
    links are all down prints NVML's line instead of its links."""
    for name, links, speed in _BOARDS:
        for n in sorted({1, rng.choice((4, 8))}):
            uuid = rng.random() < 0.7
            case = rng.choice(("up", "up", "inactive", "slow", "nvml"))
            bad = (rng.randrange(n), rng.randrange(links))
            lines, values, fails = [], [("len(gpus)", n)], case != "up"
            for i in range(n):
                lines.append(_gpu_line(rng, i, name, uuid))
                if case == "nvml" and i == bad[0]:
                    lines.append("NVML: Unable to retrieve NVLink information as all links are inactive")
                    values.append((f"len(gpus[index={i}].links)", 0))
                    continue
                for k in range(links):
                    s = speed
                    if (i, k) == bad and case == "inactive":
                        lines.append(f"\t Link {k}: <inactive>")
                        values.append((f"gpus[index={i}].links[link={k}].active", False))
                        continue
                    if (i, k) == bad and case == "slow":
                        s = f"{float(speed) / 2:g}"
                    lines.append(f"\t Link {k}: {s} GB/s")
                    if (i, k) == bad or k == links - 1:
                        values.append((f"gpus[index={i}].links[link={k}].speed_GBps", float(s)))
            yield Variant("nvlink-status", f"{name} {n} GPUs {case}", "\n".join(lines) + "\n", tuple(values),
                          fails=fails, count=n)
    yield Variant("nvlink-status", "no NVLink (prints nothing)", "", (("len(gpus)", 0),))
    # PCIe boards (harvest 12's decision): NVLink only over bridges; the links no bridge wires are
    # inactive by design, and without a bridge NVML's all-inactive line is the board's normal
    for bridged in (False, True):
        lines, values = [], [("len(gpus)", 2), ("len(faults)", 0)]
        # nvidia-smi names some PCIe boards without 'PCIe' (H100 NVL, H200 NVL, A40, A30: review 28)
        board = rng.choice(("NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200 NVL") if bridged
                           else ("NVIDIA A100-PCIE-40GB", "NVIDIA A40", "NVIDIA A30"))
        for i in range(2):
            lines.append(_gpu_line(rng, i, board, True))
            if bridged:  # 3 bridges wire 12 of the 18 links (harvest 11's capture: 4, 5, 10, 11, 16, 17 idle)
                lines += [f"\t Link {k}: " + ("<inactive>" if k % 6 in (4, 5) else "26.562 GB/s") for k in range(18)]
                values += [(f"gpus[index={i}].links[link=4].active", False), (f"len(gpus[index={i}].links)", 18)]
            else:
                lines.append("NVML: Unable to retrieve NVLink information as all links are inActive")
                values += [(f"len(gpus[index={i}].links)", 0), (f"gpus[index={i}].nvml", "all links are inActive")]
        yield Variant("nvlink-status", f"PCIe boards {'bridged, 12 of 18 links' if bridged else 'without a bridge'}",
                      "\n".join(lines) + "\n", tuple(values), count=2)
    # a GPU in MIG mode (590, H200): its links cannot be read, so they are not judged (a finding, exit 1)
    yield Variant("nvlink-status", "MIG mode", "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
                  "Nvlink queries are not supported for Devices in MIG mode\n", (("len(gpus[index=0].links)", 0),),
                  fails=True, count=1)


@generator("nvlink-errors")
def nvlink_errors(rng: random.Random) -> Iterator[Variant]:
    """``nvlink -e``: per GPU its line, then per link 'Link N: Replay Errors: C', 'Link N:
    Recovery Errors: C', 'Link N: CRC Errors: C' (a blank line between links in some
    captures); a counter above zero is a fault (the run judges its growth)."""
    for name, links, _ in _BOARDS:
        # 54 lines a GPU of 18 links: the sweep takes 1 and 4 GPUs and the most one host lists,
        # swept by GPU (records)
        for n in sorted({1, 4, _HOST_GPUS[name]}) if ALL else (rng.choice((1, 2)),):
            yield _nvlink_errors(rng, name, links, n)
    yield Variant("nvlink-errors", "all links inactive", "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-9667d95e-6d22-0c22-"
                  "1f57-c481f13e7c44)\nNVML: Unable to retrieve NVLink information as all links are inactive\n",
                  (("len(gpus[index=0].links)", 0),), fails=True, count=1)


# the most GPUs one host lists (nvidia-smi lists a host's own: DGX-2 and HGX-2 16 V100, HGX A100
# 16-GPU, HGX H100/B200/B300 8, a GB200 tray 4; an NVL72 rack's 72 are 18 hosts' listings)
_HOST_GPUS = {"Tesla V100-SXM2-32GB": 16, "NVIDIA A100-SXM4-80GB": 16, "NVIDIA H100 80GB HBM3": 8, "NVIDIA B200": 8,
              "NVIDIA GB200": 4, "NVIDIA B300 SXM6 AC": 8}
_COUNTERS = (("Replay Errors", "replay_errors"), ("Recovery Errors", "recovery_errors"), ("CRC Errors", "crc_errors"))


def _nvlink_errors(rng: random.Random, name: str, links: int, n: int) -> Variant:
    uuid, blank = rng.random() < 0.7, rng.random() < 0.4
    dirty = (rng.randrange(n), rng.randrange(links), rng.randrange(3)) if rng.random() < 0.5 else None
    lines: list[str] = []
    values: list[tuple[str, object]] = [("len(gpus)", n)]
    for i in range(n):
        lines.append(_gpu_line(rng, i, name, uuid))
        for k in range(links):
            for c, (label, key) in enumerate(_COUNTERS):
                v = rng.choice((1, 211, 65535)) if dirty == (i, k, c) else 0
                lines.append(f"\t Link {k}: {label}: {v}")
                if v or (i, k) == (n - 1, links - 1):
                    values.append((f"gpus[index={i}].links[link={k}].counters.{key}", v))
            if blank and k < links - 1:
                lines.append("")
    return Variant("nvlink-errors", f"{name} {n} GPUs {'dirty' if dirty else 'clean'}", "\n".join(lines) + "\n",
                   tuple(values), fails=dirty is not None, count=n,
                   records=tuple(i for i, ln in enumerate(lines) if ln.startswith("GPU ")))


# NVLink 5 (Blackwell, driver 595.91.07 on B300: nvidia_smi_grammar): the error counters, then the
# BERs, the FEC histogram and the pre-FEC lane counters, per link
_NVLINK5 = ("Malformed packet Errors", "Buffer overrun Errors", "Rx Errors", "Rx remote Errors", "Rx General Errors",
            "Local link integrity Errors", "Tx discards", "Link recovery successful events",
            "Link recovery failed events", "Total link recovery events", "Effective Errors")


@generator("nvlink-errors")
def nvlink5_errors(rng: random.Random) -> Iterator[Variant]:
    """``nvlink -e`` on NVLink 5: per link the error counters (a fault above zero), 'Effective BER:
    15e-255' (the float floor), 'Symbol Errors', 'Symbol BER', 'FEC Errors - 0' .. '- 15' (bucket 0
    counts the codewords needing no correction: billions on a healthy link) and the 'Raw BER' /
    'Raw Errors' lane counters (non-zero on a healthy link): none of those a fault."""
    for name in ("NVIDIA B300 SXM6 AC", "NVIDIA GB200") if ALL else (rng.choice(("NVIDIA B300 SXM6 AC", "NVIDIA GB200")),):
        # 35 lines a link, 630 a GPU: the sweep takes 1, 4 and the most one host lists, swept by link
        for n in sorted({1, 4, _HOST_GPUS[name]}) if ALL else (1,):
            yield _nvlink5_errors(rng, name, n)


def _nvlink5_errors(rng: random.Random, name: str, n: int) -> Variant:
    dirty = (rng.randrange(n), rng.randrange(18), rng.randrange(len(_NVLINK5) + 1)) if rng.random() < 0.5 else None
    lines: list[str] = []
    values: list[tuple[str, object]] = [("len(gpus)", n)]
    records: list[int] = []  # each link's first line: the sweep cuts by link
    for i in range(n):
        lines.append(_gpu_line(rng, i, name, True))
        for k in range(18):
            counts = [rng.choice((1, 7)) if dirty == (i, k, c) else 0 for c in range(len(_NVLINK5) + 1)]
            fec0 = rng.randrange(10**9, 10**11)
            body = [(label, counts[c]) for c, label in enumerate(_NVLINK5)]
            body += [("Effective BER", "15e-255"), ("Symbol Errors", counts[-1]), ("Symbol BER", "15e-255"),
                     ("FEC Errors - 0", fec0)] + [(f"FEC Errors - {b}", rng.choice((0, 0, 3))) for b in range(1, 16)]
            body += [("Raw BER Lane 0", rng.randrange(3000)), ("Raw BER Lane 1", rng.randrange(3000)),
                     ("Raw BER Total", rng.randrange(3000)), ("Raw Errors Lane 0", rng.randrange(100)),
                     ("Raw Errors Lane 1", rng.randrange(100))]
            records.append(len(lines))
            lines += [f"\t Link {k}: {label}: {v}" for label, v in body]
            if (i, k) in ((0, 0), (n - 1, 17)) or dirty is not None and dirty[:2] == (i, k):
                at = f"gpus[index={i}].links[link={k}].counters"
                values += [(f"{at}.fec_errors_0", fec0), (f"{at}.link_recovery_failed_events", counts[8]),
                           (f"{at}.symbol_errors", counts[-1]), (f"{at}.effective_ber", 1.5e-254)]
    return Variant("nvlink-errors", f"NVLink 5 {name} {n} GPUs {'dirty' if dirty else 'clean'}",
                   "\n".join(lines) + "\n", tuple(values), fails=dirty is not None, count=n, records=tuple(records))


_LEGEND = (("X", "Self"),
           ("SYS", "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)"),
           ("NODE", "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA "
                    "node"),
           ("PHB", "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"),
           ("PXB", "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)"),
           ("PIX", "Connection traversing at most a single PCIe bridge"),
           ("NV#", "Connection traversing a bonded set of # NVLinks"))


@generator("nvidia-smi-topo")
def topo(rng: random.Random) -> Iterator[Variant]:
    """``topo -m`` (and ``-mp``: PCIe paths only, its Legend without 'NV#'): a header of the
    device columns then 'CPU Affinity', 'NUMA Affinity' (from about 450) and 'GPU NUMA ID'
    (from 535), tab-separated; a row per GPU (its cells, ' X ' on itself, then its
    affinities) and per NIC (cells only); 'Legend:' and its entries; with NICs, 'NIC Legend:'
    naming each NIC column. Drivers before the NIC legend (to 450) named the NIC columns by
    their device (mlx5_0) and printed no NIC Legend."""
    for era in ("418", "470", "535", "535 -mp"):
        mp, old = era.endswith("-mp"), era == "418"
        for n, nics in ((rng.choice((1, 2, 4)), 0), (8, rng.choice((0, 2, 9)))):
            nv = None if mp else rng.choice((None, 4, 12, 18))
            names = [f"GPU{i}" for i in range(n)]
            nic_devs = [f"mlx5_{k}" for k in range(nics)]
            cols = names + (nic_devs if old else [f"NIC{k}" for k in range(nics)])
            labels = ["CPU Affinity"] + ([] if old else ["NUMA Affinity"]) + (["GPU NUMA ID"] if era >= "535" else [])
            lines = ["\t" + "\t".join(cols + labels)]
            numa_of = [i * 2 // max(n, 2) for i in range(n)]
            cell: dict[tuple[str, str], str] = {}
            for a in cols:
                for b in cols:
                    if a == b:
                        cell[a, b] = " X "
                    elif (b, a) in cell:
                        cell[a, b] = cell[b, a]
                    elif a.startswith("GPU") and b.startswith("GPU"):
                        cell[a, b] = f"NV{nv}" if nv else rng.choice(("SYS", "NODE", "PHB", "PXB", "PIX"))
                    else:
                        cell[a, b] = rng.choice(("SYS", "NODE", "PIX", "PXB"))
            values: list[tuple[str, object]] = [("len(gpus)", n), ("len(nics)", nics)]
            for i, a in enumerate(cols):
                row = [a] + [cell[a, b] for b in cols]
                if a.startswith("GPU"):
                    cpus = "0-47,96-143" if numa_of[i] == 0 else "48-95,144-191"
                    # 535+ prints two tabs before the GPU NUMA ID (every capture: '0-47,96-143\t0\t\tN/A')
                    row += [cpus] + ([] if old else [str(numa_of[i])]) + (["", "N/A"] if era >= "535" else [])
                    values.append((f"affinity.{a}.cpu", cpus))
                    if not old:
                        values.append((f"affinity.{a}.numa", numa_of[i]))
                lines.append("\t".join(row))
            if n > 1:
                values.append((f"matrix.GPU0.GPU{n - 1}", cell["GPU0", f"GPU{n - 1}"]))
            lines += ["", "Legend:", ""]
            lines += [f"  {k:<4} = {text}" for k, text in _LEGEND[: -1 if mp else None]]
            end = len(lines)
            if nics and not old:
                lines += ["", "NIC Legend:", ""] + [f"  NIC{k}: {d}" for k, d in enumerate(nic_devs)]
                end = len(lines)
                values.append((f"nics[name=NIC{nics - 1}].device", nic_devs[-1]))
            if not mp and not nv and not nics:
                # a -m of a host without NVLink cut after its PIX entry is a whole -mp: the
                # grammar cannot tell them apart, so the output is whole from there on
                end -= 1
            yield Variant("nvidia-smi-topo", f"{era} {n} GPUs {nics} NICs NV{nv}", "\n".join(lines) + "\n",
                          tuple(values), count=n, end=end, elide=(end - 6, end - 1) if not nics else None)
    # a paste that lost part of each line (harvest 9's 8x H800: the NIC columns cropped from the header and the
    # GPU rows, the NIC rows left with their GPU cells; the CPU Affinity's first characters gone): an excerpt
    for lost in ("columns", "cpus"):
        cols, nics = [f"GPU{i}" for i in range(4)], [f"NIC{k}" for k in range(2)]
        head = cols + (nics if lost == "cpus" else [])
        lines = ["\t" + "\t".join(head + ["CPU Affinity", "NUMA Affinity"])]
        for i, a in enumerate(cols):
            cpus = ("-31,64-95" if lost == "cpus" and i == 1 else "0-31,64-95") if i < 2 else "32-63,96-127"
            lines.append("\t".join([a] + [" X " if a == b else "NV8" for b in cols]
                                   + (["PIX", "SYS"] if lost == "cpus" else []) + [cpus, str(i // 2)]))
        for k, nic in enumerate(nics):
            lines.append("\t".join([nic] + ["PIX" if i // 2 == k else "SYS" for i in range(4)]
                                   + ([" X " if k == j else "PIX" for j in range(2)] if lost == "cpus" else [])))
        lines += ["", "Legend:", ""] + [f"  {k:<4} = {text}" for k, text in _LEGEND]
        lines += ["", "NIC Legend:", ""] + [f"  {nic}: mlx5_{k}" for k, nic in enumerate(nics)]
        yield Variant("nvidia-smi-topo", f"paste lost {lost}", "\n".join(lines) + "\n",
                      (("matrix.GPU0.GPU3", "NV8"), ("affinity.GPU2.cpu", "32-63,96-127")), fails=True)
    # a paste that lost one tab inside a row (harvest 20's sglang notes: GPU5's 'PIXNODE'): two cells read as
    # one, no link type; the row is not whole
    cols = [f"GPU{i}" for i in range(4)] + ["NIC0", "NIC1"]
    lines = ["\t" + "\t".join(cols + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for i, a in enumerate(cols):
        cells = [" X " if a == b else "NV18" if a[:3] == b[:3] == "GPU" else "PIX" if (i + j) % 2 else "NODE"
                 for j, b in enumerate(cols)]
        if a == "GPU2":
            cells[4:6] = [cells[4].strip() + cells[5].strip()]
        lines.append("\t".join([a] + cells + (["0-191", "0", "", "N/A"] if a.startswith("GPU") else ["", "", "", ""])))
    lines += ["", "Legend:", ""] + [f"  {k:<4} = {text}" for k, text in _LEGEND]
    lines += ["", "NIC Legend:", ""] + [f"  NIC{k}: mlx5_{k}" for k in range(2)]
    yield Variant("nvidia-smi-topo", "paste joined two cells", "\n".join(lines) + "\n",
                  (("matrix.GPU0.GPU3", "NV18"), ("len(gpus)", 4)), fails=True, finding="is no link type")
    yield Variant("nvidia-smi-topo", "no driver", "NVIDIA-SMI has failed because it couldn't communicate with the "
                  "NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n", (), fails=True)
