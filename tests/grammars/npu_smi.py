"""npu-smi views, from the grammar in sncheck/vendors/ascend/npu_smi_grammar.py (closed tool:
Huawei's npu-smi references 23.0 / 24.1, hicann/driver's npucli print code, and the captures
under fixtures/real*/): the ``npu-smi info`` box (A2: one chip an NPU, no Phy-ID; A3: two
dies an NPU with Phy-ID, the second's power ``-``; the 26.0 wide box), its process table
(idle NPUs, processes, nameless processes in containers); the ``-t`` key-value views
(``\\t%-30s : %s`` lines); the topology matrix; the ``-m`` mapping; the ``-h`` type list."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import Variant, generator

_HEALTH_BAD = ("Warning", "Alarm", "Critical", "UNKNOWN")
# (version, widths of the three cells, chips an NPU, name, HBM total MB, NPU counts: 1 to 72 chips)
_LAYOUTS = (("23.0.5", (27, 15, 52), 1, "910B3", 65536, (1, 8)),
            ("24.1.1", (27, 15, 52), 1, "910B4", 32768, (4,)),
            ("25.2.0", (27, 15, 52), 2, "Ascend910", 65536, (36,)),
            ("26.0.rc2", (27, 15, 70), 2, "Ascend910", 65536, (8,)))


def _row(cells: list[str], widths: tuple[int, ...]) -> str:
    return "|" + "|".join(c.ljust(w) for c, w in zip(cells, widths)) + "|"


def _rule(widths: tuple[int, ...], fill: str) -> str:
    return "+" + "+".join(fill * w for w in widths) + "+"


def _pair(used: int, total: int, pad: int) -> str:
    return f"{used:<5}/ {total:<{pad}}"


@generator("npu-smi")
def npu_smi_info(rng: random.Random) -> Iterator[Variant]:
    for version, widths, per_npu, name, hbm, sizes in _LAYOUTS:
        for npus in sizes:
            total = sum(widths) + 2
            wide = widths[2] > 52
            col = (21, 24) if wide else (12, 18)
            lines = ["+" + "-" * total + "+", "|" + f" npu-smi {version}".ljust(45 if widths[2] > 52 else 34) + f"Version: {version}".ljust(total - (45 if widths[2] > 52 else 34)) + "|",
                     _rule(widths, "-"),
                     _row([" NPU   Name", " Health", " " + "Power(W)".ljust(col[0]) + "Temp(C)".ljust(col[1])
                           + "Hugepages-Usage(page)"], widths),
                     _row([" Chip  Phy-ID" if per_npu > 1 else " Chip", " Bus-Id", " " + "AICore(%)".ljust(col[0])
                           + "Memory-Usage(MB)".ljust(col[1]) + "HBM-Usage(MB)"], widths),
                     _rule(widths, "=")]
            values: list[tuple[str, object]] = [("version", version), ("len(chips)", npus * per_npu)]
            sick = rng.randrange(npus * per_npu) if rng.random() < 0.3 else None
            busy = {rng.randrange(npus) for _ in range(rng.randrange(3))}
            for n in range(npus):
                for c in range(per_npu):
                    k = n * per_npu + c
                    health = rng.choice(_HEALTH_BAD) if k == sick else "OK"
                    power = "-" if c else f"{rng.uniform(60, 260):.1f}"
                    temp, used = rng.randrange(28, 70), rng.randrange(0, hbm)
                    pages = rng.choice((0, 1024, 16384))  # Hugepages-Usage(page): kept (issue 28's spot-check)
                    taken = rng.randrange(0, pages + 1)
                    bus = f"0000:{0x01 + 2 * k:02X}:00.0"
                    ident = f" {c:<6}{k:<20}" if per_npu > 1 else f" {c}"
                    lines += [_row([f" {n:<6}{name}", f" {health}", f" {power:<{col[0]}}{temp:<{col[1]}}{_pair(taken, pages, 14)}"],
                                   widths),
                              _row([ident, f" {bus}", f" {rng.randrange(0, 101):<{col[0]}}{_pair(0, 0, col[1] - 7)}"
                                    f"{_pair(used, hbm, 14)}"], widths)]
                    lines.append("+" + "-" * total + "+" if c + 1 < per_npu else _rule(widths, "="))
                    values += [(f"chips[bus_id={bus}].hbm_used_MB", used), (f"chips[bus_id={bus}].temp_C", temp),
                               (f"chips[bus_id={bus}].health", health), (f"chips[bus_id={bus}].npu", n),
                               (f"chips[bus_id={bus}].hbm_total_MB", hbm),
                               (f"chips[bus_id={bus}].hugepages_used", taken), (f"chips[bus_id={bus}].hugepages_total", pages)]
                    if per_npu > 1:
                        values.append((f"chips[bus_id={bus}].phy_id", k))
                    if c == 0:
                        values.append((f"chips[bus_id={bus}].power_W", float(power)))
            end = len(lines)  # the NPU table: a paste may stop here (the judge's count says whole)
            procs = 0
            if rng.random() < 0.7:
                # the wide box's table adds 'Process id in container' ('NA' outside one: nyaterm#268)
                inside = "| Process id in container " if wide else ""
                lines += [_rule(widths, "-"), _row([" NPU     Chip", " Process id", " Process name".ljust(20)
                                                    + "| Process memory(MB)".ljust(24) + inside], widths),
                          _rule(widths, "=")]
                for n in range(npus):
                    if n in busy:
                        for c in range(per_npu):
                            pname = rng.choice(("python3", "python3.11", ""))
                            pid, mem = rng.randrange(1000, 4000000), rng.randrange(100, 60000)
                            ctr = rng.choice(("NA", str(rng.randrange(1, 900)))) if wide else None
                            cells = f" {pname}".ljust(20) + f"| {mem}".ljust(24) + (f"| {ctr}".ljust(26) if ctr else "")
                            lines.append(_row([f" {n:<8}{c}", f" {pid}", cells], widths))
                            if not procs:  # each whole row kept: the first one's values
                                values += [("process_rows[0].pid", pid), ("process_rows[0].memory_MB", mem),
                                           ("process_rows[0].container_pid", int(ctr) if ctr and ctr != "NA" else None)]
                            procs += 1
                    else:
                        lines.append("|" + f" No running processes found in NPU {n}".ljust(total) + "|")
                    lines.append(_rule(widths, "="))
                values += [("processes", procs), ("len(process_rows)", procs)]
            yield Variant("npu-smi", f"{version} {npus} NPUs x {per_npu}{' ' + str(sick) + ' sick' if sick is not None else ''}",
                          "\n".join(lines) + "\n", tuple(values), fails=sick is not None, end=end,
                          count=npus * per_npu)


@generator("npu-smi")
def npu_smi_310p(rng: random.Random) -> Iterator[Variant]:
    """The Atlas 300I / 300I Duo (310P3) box: 'Chip Device' (the chip's device id), Memory-Usage
    and no HBM column, power 'NA' (captures: Syllo/nvtop#421 25.2.0, vllm-ascend#3316 25.0.rc1)."""
    widths = (31, 17, 54)
    total = sum(widths) + 2
    # the last: an Atlas 200I DK A2's SoC (310B4, harvest7's davinci-mini capture): one chip, on no PCIe bus
    for version, npus, per_npu, chip in (("25.2.0", 1, 2, "310P3"),
                                         ("25.0.rc1.b033", rng.choice((2, 4)), rng.choice((1, 2)), "310P3"),
                                         ("24.1.0", 1, 1, "310B4")):
        lines = ["+" + "-" * total + "+", "|" + f" npu-smi {version}".ljust(50) + f"Version: {version}".ljust(total - 50) + "|",
                 _rule(widths, "-"),
                 _row([" NPU     Name", " Health", " Power(W)     Temp(C)           Hugepages-Usage(page)"], widths),
                 _row([" Chip    Device", " Bus-Id", " AICore(%)    Memory-Usage(MB)"], widths), _rule(widths, "=")]
        values: list[tuple[str, object]] = [("version", version), ("len(chips)", npus * per_npu)]
        device = 0
        for n in range(npus):
            for c in range(per_npu):
                temp, total_mb = rng.randrange(30, 70), rng.choice((44280, 43693, 47304))
                used = rng.randrange(0, total_mb)
                bus = "NA" if chip == "310B4" else f"0000:{0x01 + n:02x}:00.0"
                lines += [_row([f" {n:<8}{chip}", " OK", f" {'NA':<13}{temp:<18}{'0':<6}/ 0"], widths),
                          _row([f" {c:<8}{device}", f" {bus}", f" {rng.randrange(0, 101):<13}{used} / {total_mb}"],
                               widths),
                          _rule(widths, "-" if c + 1 < per_npu else "=")]
                values += [(f"chips[device_id={device}].memory_used_MB", used),
                           (f"chips[device_id={device}].memory_total_MB", total_mb),
                           (f"chips[device_id={device}].temp_C", temp), (f"chips[device_id={device}].npu", n),
                           (f"chips[device_id={device}].hbm_total_MB", None), (f"chips[device_id={device}].phy_id", None),
                           (f"chips[device_id={device}].bus_id", None if bus == "NA" else bus)]
                device += 1
        yield Variant("npu-smi", f"{chip} {version} {npus} NPUs x {per_npu}", "\n".join(lines) + "\n", tuple(values),
                      count=npus * per_npu)


# npu-smi's DCMI init failure, printed instead of any view (exit 187): the driver's log-level
# line (its form changed: '(g_conLogLevel=3)', '(ret=4)') and DCMI's own, by reason
_DCMI = (("DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)", "dcmi module initialize failed. ret is -8005"),
         ("DrvMngGetConsoleLogLevel failed. (ret=4)", "dcmi module initialize failed. ret is -8005"),
         ("DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)",
          "dcmi model initialized failed, because the device is used. ret is -8020"),
         ("dcmi module initialize failed. ret is -8005",))


@generator("npu-smi")
def npu_smi_failed(rng: random.Random) -> Iterator[Variant]:
    for lines in rng.sample(_DCMI, 2):
        yield Variant("npu-smi", f"DCMI init failed: {lines[-1]}", "\n".join(lines) + "\n",
                      (("len(chips)", 0), ("tool_failed[0]", lines[-1])), fails=True)


def _kv(key: str, value: object, width: int = 30) -> str:
    """npucli's key line: ``printf("\\t%-30s : %s\\n", key, value)`` (the ECC view pads to 40)."""
    return f"\t{key:<{width}} : {value}"


_CODES = ("80E18005", "80CB8009", "803C8008", "80C98000")


@generator("npu-smi-health")
def npu_smi_health(rng: random.Random) -> Iterator[Variant]:
    for form in ("A2/A3 -i -c", "950 -i"):
        for case in ("ok", "ok", "codes", "bad"):
            health = rng.choice(_HEALTH_BAD) if case == "bad" else "OK"
            codes = rng.sample(_CODES, rng.randrange(1, 3)) if case != "ok" else []
            info = "HBM multi-bit ECC error" if codes else "NA"
            key = "Health Status" if form.startswith("A2") else "Health"
            lines = [_kv("NPU ID", 0)] if key == "Health" else []
            lines += [_kv(key, health), _kv("Error Code", " ".join(codes) or "NA"), _kv("Error Information", info)]
            end = len(lines) - 1  # through 'Error Code'; the lines after it are optional by version
            if key == "Health":
                lines += [_kv("VDie ID", "42C711D4 20B03704 4A10C8D4 14CC040A D2102003"), _kv("Chip Position ID", 0),
                          _kv("PCIe Bus Info", "0000:61:00.0"), _kv("Firmware Version", "7.1.0.7.220")]
            values: list[tuple[str, object]] = [("health", health), ("len(error_codes)", len(codes))]
            values += [(f"error_codes[{i}]", c) for i, c in enumerate(codes)]
            yield Variant("npu-smi-health", f"{form} {case}", "\n".join(lines) + "\n", tuple(values),
                          fails=bool(codes) or health != "OK", end=end)


_ECC = ("Single Bit Error Count", "Double Bit Error Count", "Single Bit Aggregate Total Err Cnt",
        "Double Bit Aggregate Total Err Cnt", "Single Bit Isolated Pages Count", "Double Bit Isolated Pages Count")


@generator("npu-smi-ecc")
def npu_smi_ecc(rng: random.Random) -> Iterator[Variant]:
    for chips in (1, 2):
        for case in ("clean", "single-bit", "double-bit"):
            lines = [_kv("NPU ID", 3, 40), _kv("Chip Count", chips, 40), ""]
            sums: dict[str, int] = {}
            bad = rng.randrange(chips)
            for c in range(chips):
                for mem in ("DDR", "HBM"):
                    for name in _ECC:
                        n = 0
                        if mem == "HBM" and c == bad and case == "single-bit" and "Single Bit" in name \
                                and "Pages" not in name:  # an isolated page fails (checks.check_ecc)
                            n = rng.randrange(1, 500)
                        if mem == "HBM" and c == bad and case == "double-bit" and "Double Bit" in name:
                            n = rng.randrange(1, 5)
                        lines.append(_kv(f"{mem} {name}", n, 40))
                        sums[f"{mem} {name}"] = sums.get(f"{mem} {name}", 0) + n
                lines.append(_kv("Chip ID", c, 40))
            values: list[tuple[str, object]] = [(f"counters.{k}", v) for k, v in sums.items() if "HBM" in k]
            values += [("len(chips)", chips)]
            yield Variant("npu-smi-ecc", f"{chips} chips {case}", "\n".join(lines) + "\n", tuple(values),
                          fails=case == "double-bit")


@generator("npu-smi-spod")
def npu_smi_spod(rng: random.Random) -> Iterator[Variant]:
    for form in ("A3", "950 server", "950 pod"):
        sdid, size, pod, index = rng.randrange(0, 1 << 25), rng.choice((384, 8192)), rng.randrange(0, 4), rng.randrange(0, 48)
        lines = [_kv("SDID", sdid)] if form == "A3" else []
        lines += [_kv("Super Pod Size", size), _kv("Super Pod ID", pod)]
        values: list[tuple[str, object]] = [("super_pod_size", size), ("super_pod_id", pod)]
        if form == "950 pod":
            lines.append(_kv("Chassis ID", index))
            values.append(("chassis_id", index))
        else:
            lines.append(_kv("Server Index", index))
            values.append(("server_index", index))
        if form == "A3":
            values.append(("sdid", sdid))
        else:
            lines.append(_kv("Super Pod Type", 1))
            values.append(("super_pod_type", 1))
        yield Variant("npu-smi-spod", form, "\n".join(lines) + "\n", tuple(values))


@generator("npu-smi-topo")
def npu_smi_topo(rng: random.Random) -> Iterator[Variant]:
    for n, kind in ((8, "A2"), (16, "A3"), (4, "PCIe")):
        devs = [f"NPU{i}" for i in range(n)]
        lines = [" " * 11 + "".join(f"{d:<11}" for d in devs) + "CPU Affinity"]
        values: list[tuple[str, object]] = [("len(devices)", n)]
        for i, a in enumerate(devs):
            cells = []
            for j in range(n):
                if i == j:
                    link = "X"
                elif kind == "A2":
                    link = "HCCS"
                elif kind == "A3":
                    link = "SIO" if i // 2 == j // 2 else "HCCS_SW"
                else:
                    link = "PIX" if i // 2 == j // 2 else "SYS"
                cells.append(link)
            aff = f"{(i % 4) * 24}-{(i % 4) * 24 + 23}"
            lines.append(f"{a:<11}" + "".join(f"{c:<11}" for c in cells) + aff)
            values += [(f"matrix.{a}.NPU{(i + 1) % n}", cells[(i + 1) % n]), (f"affinity.{a}", aff)]
        end = len(lines)
        lines += ["", "Legend:", "", "  X    = Self",
                  "  SYS  = Path traversing PCIe and NUMA nodes. Nodes are connected through SMP, such as QPI, UPI.",
                  "  PHB  = Path traversing PCIe and the PCIe host bridge of a CPU.",
                  "  PIX  = Path traversing a single PCIe switch", "  PXB  = Path traversing multipul PCIe switches",
                  "  HCCS = Connection traversing HCCS."]
        if kind == "A3":
            lines += ["  SIO  = Connection traversing SIO.", "  HCCS_SW = Connection traversing HCCS switch."]
        yield Variant("npu-smi-topo", f"{kind} {n} NPUs", "\n".join(lines) + "\n", tuple(values), end=end, count=n,
                      fails=kind == "PCIe")


_TYPES = ("board", "flash", "memory", "usages", "sensors", "temp", "power", "volt", "mac-addr", "common", "health",
          "product", "ecc", "ip", "sys-time", "i2c_check", "work-mode", "ecc-enable", "p2p-enable", "ssh-enable",
          "license", "customized-info", "device-share", "nve-level", "aicpu-config", "pcie-err", "mcu-monitor",
          "err-count", "boot-area", "vnpu-mode", "info-vnpu", "vnpu-svm", "cpu-num-cfg", "first-power-on-date",
          "proc-mem", "phyid-remap", "vnpu-cfg-recover", "key-manage", "template-info", "pkcs-enable", "p2p-mem-cfg",
          "pwm-mode", "pwm-duty-ratio", "boot-select", "topo", "spod-info", "hccs")


@generator("npu-smi-help")
def npu_smi_help(rng: random.Random) -> Iterator[Variant]:
    for n in (20, len(_TYPES)):
        types = list(_TYPES[:n])
        listed = ", ".join(types) + "."
        wrapped: list[str] = []
        while listed:
            cut = listed.rfind(" ", 0, 80) if len(listed) > 80 else len(listed)
            wrapped.append(listed[:cut].rstrip())
            listed = listed[cut:].lstrip()
        lines = ["Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]", "", "Commands:",
                 "       watch          Show all device's status in scrolling format",
                 "       -h, --help     Show this help text and exit",
                 "       -m             Show all device's mapping information",
                 "       -t type        Show information for type",
                 "                      type: " + wrapped[0]] + ["                            " + w for w in wrapped[1:]]
        lines.append("")
        end = len(lines)
        lines += ["Options:", "       -i %d          Card ID", "       -c %d          Chip ID",
                  "       -p %d          Chip Physical ID"]
        yield Variant("npu-smi-help", f"{n} types", "\n".join(lines) + "\n",
                      (("len(types)", n), ("types[0]", types[0]), (f"types[{n - 1}]", types[-1])), end=end)


@generator("npu-smi-mapping")
def npu_smi_mapping(rng: random.Random) -> Iterator[Variant]:
    for npus, per, name in ((8, 1, "Ascend 910B3"), (16, 2, "Ascend910"), (1, 1, "Ascend 910A")):
        lines = ["\t" + "".join(f"{h:<31}" for h in ("NPU ID", "Chip ID", "Chip Logic ID")) + "Chip Name"]
        values: list[tuple[str, object]] = [("len(chips)", npus * per)]
        for n in range(npus):
            for c in range(per):
                lines.append("\t" + "".join(f"{v:<31}" for v in (n, c, n * per + c)) + name)
                values.append((f"chips[logic_id={n * per + c}].npu", n))
        yield Variant("npu-smi-mapping", f"{npus}x{per} {name}", "\n".join(lines) + "\n", tuple(values),
                      count=npus * per)


@generator("npu-smi-hbm")
def npu_smi_hbm(rng: random.Random) -> Iterator[Variant]:
    for form in ("memory", "memory per NPU", "usages"):
        cap = rng.choice((32768, 65536, 131072))
        lines = [_kv("NPU ID", 0)]
        if form != "memory":
            lines += [_kv("Chip Count", 1), ""]
        if form.startswith("memory"):
            lines += [_kv("DDR Capacity(MB)", 0), _kv("DDR Clock Speed(MHz)", 0), _kv("HBM Capacity(MB)", cap),
                      _kv("HBM Clock Speed(MHz)", 3200), _kv("HBM Temperature(C)", 63),
                      _kv("HBM Manufacturer ID", "0x5A")]
        else:
            lines += [_kv("DDR Capacity(MB)", 13553), _kv("DDR Usage Rate(%)", 6), _kv("HBM Capacity(MB)", cap),
                      _kv("HBM Usage Rate(%)", 4), _kv("Aicore Usage Rate(%)", 0)]
        if form != "memory":
            lines.append(_kv("Chip ID", 0))
        yield Variant("npu-smi-hbm", form, "\n".join(lines) + "\n", (("hbm_capacity_MB", cap),))


def _chip_board(rng: random.Random, n: int, c: int, a3: bool) -> list[str]:
    """-t board -i N -c C (npucli print_ascend_chip_info), a 910B or an A3 die."""
    lines = [_kv("NPU ID", n)] + ([_kv("NPU Name", "Ascend910")] if a3 else []) + [_kv("Chip ID", c)]
    lines += [] if a3 else [_kv("Chip Type", "Ascend")]
    lines += [_kv("Chip Name", "910_9382" if a3 else "910B3"), _kv("Chip Version", "V1"), _kv("Board ID", "0x33"),
              _kv("PCB ID", "NA"), _kv("BOM ID", 1),
              _kv("VDie ID", " ".join(f"{rng.getrandbits(32):08X}" for _ in range(5))),
              _kv("NDie ID", " ".join(f"{rng.getrandbits(32):08X}" for _ in range(5))),
              _kv("Chip Position ID", c), _kv("PCIe Bus Info", f"0000:{0x9D + 2 * c:02X}:00.0"),
              _kv("Firmware Version", "7.7.0.1.231")]
    return lines


@generator("npu-smi-fields")
def npu_smi_fields(rng: random.Random) -> Iterator[Variant]:
    for chips in (1, 2):  # -t common -i N: each chip opens with a blank line and its Chip ID
        n = rng.randrange(8)
        lines = [_kv("NPU ID", n), _kv("Chip Count", chips)]
        temps = []
        for c in range(chips):
            temps.append(rng.randrange(30, 70))
            lines += ["", _kv("Chip ID", c), _kv("Memory Usage Rate(%)", 0), _kv("HBM Usage Rate(%)", rng.randrange(100)),
                      _kv("Aicore Usage Rate(%)", rng.randrange(100)), _kv("Aicore Freq(MHZ)", 1800),
                      _kv("Aicore curFreq(MHZ)", 800), _kv("Aicore Count", 24), _kv("Temperature(C)", temps[-1]),
                      _kv("NPU Real-time Power(W)", f"{rng.uniform(60, 300):.1f}")]
        end = len(lines)  # through the last chip's power line: the MCU's lines after it are optional
        lines += ["", _kv("Chip Name", "mcu"), _kv("Temperature(C)", 38)]
        yield Variant("npu-smi-fields", f"common {chips} chips", "\n".join(lines) + "\n",
                      (("fields.NPU ID", str(n)), ("fields.Temperature(C)", str(temps[0])), ("len(chips)", chips),
                       ("blocks[-1].Chip Name", "mcu")), end=end)
    for chips, failed in ((1, None), (2, None), (2, 1)):  # the NPU form: each chip closed by its Chip ID
        lines = [_kv("NPU ID", 3), _kv("Chip Count", chips), ""]
        caps = []
        for c in range(chips):
            caps.append(rng.choice((32768, 65536)))
            if c == failed:  # its Chip ID, then the failure (show_ascend_card_info)
                lines += [_kv("Chip ID", c), f"Failed to query npu chip: {c} info.", ""]
                continue
            lines += [_kv("DDR Capacity(MB)", 13553), _kv("DDR Usage Rate(%)", 6), _kv("HBM Capacity(MB)", caps[-1]),
                      _kv("HBM Usage Rate(%)", rng.randrange(100)), _kv("Aicore Usage Rate(%)", 0), _kv("Chip ID", c), ""]
        yield Variant("npu-smi-fields", f"usages {chips} chips{' chip 1 failed' if failed else ''}",
                      "\n".join(lines) + "\n", (("fields.HBM Capacity(MB)", str(caps[0])), ("chips[0].Chip ID", "0"),
                                                 ("len(chips)", chips)),
                      fails=failed is not None)
    n = rng.randrange(16)  # -t board -i N on a 910B / A3 server: closed by Chip Count
    lines = [_kv("NPU ID", n), _kv("Product Name", "Atlas 800T A3"), _kv("Model", "NA"), _kv("Manufacturer", "Huawei"),
             _kv("Serial Number", f"102{rng.randrange(10 ** 9):09d}"), _kv("Software Version", "25.2.0"),
             _kv("Firmware Version", "7.7.0.1.231"), _kv("Compatibility", "OK"), _kv("Board ID", "0xb3"),
             _kv("PCB ID", "A"), _kv("BOM ID", 1), _kv("PCIe Bus Info", "0000:9D:00.0"), _kv("Slot ID", n),
             _kv("Class ID", "NA"), _kv("PCI Vendor ID", "0x19E5"), _kv("PCI Device ID", "0xD803"),
             _kv("Subsystem Vendor ID", "0x19E5"), _kv("Subsystem Device ID", "0x6001"), _kv("Chip Count", 2)]
    yield Variant("npu-smi-fields", "board -i N", "\n".join(lines) + "\n",
                  (("fields.Software Version", "25.2.0"), ("fields.Chip Count", "2"), ("fields.NPU ID", str(n))))
    for a3 in (False, True):  # -t board -i N -c C: closed by Firmware Version
        lines = _chip_board(rng, 2, 1 if a3 else 0, a3)
        yield Variant("npu-smi-fields", f"board -i N -c C {'A3' if a3 else '910B'}", "\n".join(lines) + "\n",
                      (("fields.Chip Name", "910_9382" if a3 else "910B3"), ("fields.Firmware Version", "7.7.0.1.231")))
    for npus, a3 in ((8, False), (48, True)):  # -l: Total Count N, N records each closed by Chip Count
        lines = [_kv("Total Count", npus), ""]
        for i in range(npus):
            lines += [_kv("NPU ID", i)] + ([] if a3 else [_kv("Product Name", "Atlas 800T A2"),
                                                          _kv("Serial Number", f"102{i:09d}")])
            lines += [_kv("Chip Count", 2 if a3 else 1), ""]
        yield Variant("npu-smi-fields", f"-l {npus} NPUs", "\n".join(lines) + "\n",
                      (("fields.Total Count", str(npus)), ("len(blocks)", npus + 1)))


# npu-smi's failures in the views that read nothing else: DCMI's init failure (every view: the
# tool could not reach the driver) and the spod view's own refusal (npucli on a device outside a
# SuperPod); each read as not measured, its errors naming the line (npu_smi_grammar)
_REFUSED = {
    "npu-smi-hbm": ("-t memory -i 0", ()),
    "npu-smi-mapping": ("-m", ()),
    "npu-smi-spod": ("-t spod-info -i 0 -c 0", (("This device does not support get spod info.",),)),
}


def _refused(view: str, args: str, own: tuple[tuple[str, ...], ...]) -> None:
    def gen(rng: random.Random) -> Iterator[Variant]:
        for lines in (rng.choice(_DCMI),) + own:
            text = "\n".join(([f"$ npu-smi info {args}"] if rng.random() < 0.5 else []) + list(lines)) + "\n"
            dcmi = lines in _DCMI
            yield Variant(view, f"failed: {lines[-1]}", text, (("tool_failed[0]", lines[-1]),) if dcmi else (),
                          fails=True, finding=lines[-1])
    gen.__name__ = view.replace("-", "_") + "_refused"
    generator(view)(gen)


for _view, (_args, _own) in _REFUSED.items():
    _refused(_view, _args, _own)
