"""``nvidia-smi -q``, from its grammar (sncheck/vendors/nvidia/smi_query_grammar.py: NVIDIA's
documentation and the real captures, nvidia-smi being closed): the whole listing of three
driver eras (470: Clocks Throttle Reasons, Power Readings, V100's Single/Double Bit ECC
counters; 535: Clocks Event Reasons, GPU Power Readings, SRAM/DRAM counters, Remapped Rows;
570: Average/Instantaneous Power Draw, Capabilities; 590: keys padded to column 51; 610: Driver
and CUDA Version deprecated, KMD and CUDA UMD Version after them), one ``-d`` section listing, MIG,
1 to 16 GPUs; every state the host checks judge (a PCIe link below its width, a volatile
uncorrectable ECC count, a pending remap or retirement, HW Slowdown active)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from grammars import ALL, Variant, generator

_W = 42  # nvidia-smi pads every key, whatever its depth, to this column: the ":" at column 43


def _kv(depth: int, key: str, value: object | None = None) -> str:
    pad = "    " * depth
    return pad + key if value is None else f"{pad}{key:<{_W - len(pad)}}: {value}"


_ERAS = {  # driver, CUDA, product, ECC counters kind, remapped rows, clock section, power section
    "470": ("470.82.01", "11.4", "Tesla V100-SXM2-32GB", "bits", False, "Clocks Throttle Reasons", "Power Readings"),
    "535": ("535.161.08", "12.2", "NVIDIA H100 80GB HBM3", "sram", True, "Clocks Event Reasons", "GPU Power Readings"),
    "570": ("570.133.20", "12.8", "NVIDIA B200", "sram", True, "Clocks Event Reasons", "GPU Power Readings"),
    "590": ("590.48.01", "13.1", "NVIDIA H200", "sram", True, "Clocks Event Reasons", "GPU Power Readings"),
    "610": ("610.43.02", "13.3", "NVIDIA H200", "sram", True, "Clocks Event Reasons", "GPU Power Readings"),
}
_WIDE = re.compile(r"^(\s*\S.*?) +: ")


def _widened(line: str) -> str:
    """590 pads every key to column 51 (the ':' at 52) instead of 42."""
    return _WIDE.sub(lambda m: f"{m.group(1):<51}: ", line)
_REASONS = ("Idle", "Applications Clocks Setting", "SW Power Cap", "HW Slowdown", "Sync Boost", "SW Thermal Slowdown")


def _gpu(rng: random.Random, era: str, i: int, fault: str | None, mig: bool) -> tuple[list[str], list[tuple[str, object]]]:
    driver, _, product, ecc_kind, remap, clocks, power = _ERAS[era]
    bus = f"00000000:{0x0f + 0x0e * i:02X}:00.0"
    at = f"gpus[bus_id={bus}]"
    uuid = f"GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-" \
           f"{rng.getrandbits(16):04x}-{rng.getrandbits(48):012x}"
    width = 8 if fault == "width" else 16
    temp, draw = rng.randrange(25, 80), round(rng.uniform(60, 700), 2)
    used = rng.randrange(0, 80000)
    lines = [f"GPU {bus}", _kv(1, "Product Name", product), _kv(1, "Product Brand", "NVIDIA"),
             _kv(1, "Persistence Mode", "Enabled")]
    if era != "470":
        lines += [_kv(1, "MIG Mode"), _kv(2, "Current", "Enabled" if mig else "Disabled"),
                  _kv(2, "Pending", "Enabled" if mig else "Disabled")]
    lines += [_kv(1, "Serial Number", f"16501240{rng.randrange(10**5):05d}"), _kv(1, "GPU UUID", uuid),
              _kv(1, "Minor Number", i), _kv(1, "PCI"), _kv(2, "Bus", f"0x{0x0f + 0x0e * i:02X}"),
              _kv(2, "Bus Id", bus), _kv(2, "GPU Link Info"), _kv(3, "PCIe Generation"),
              _kv(4, "Max", 5 if era != "470" else 3), _kv(4, "Current", rng.choice((1, 5)) if era != "470" else 3),
              _kv(3, "Link Width"), _kv(4, "Max", "16x"), _kv(4, "Current", f"{width}x"),
              _kv(2, "Replays Since Reset", 0), _kv(2, "Tx Throughput", "3875 KB/s"),
              _kv(1, "Fan Speed", "N/A"), _kv(1, "Performance State", "P0"), _kv(1, clocks)]
    for r in _REASONS:
        lines.append(_kv(2, r, "Active" if fault == "slowdown" and r == "HW Slowdown" else "Not Active"))
        if r == "HW Slowdown":
            lines += [_kv(3, "HW Thermal Slowdown", "Active" if fault == "slowdown" else "Not Active"),
                      _kv(3, "HW Power Brake Slowdown", "Not Active")]
    lines += [_kv(1, "FB Memory Usage"), _kv(2, "Total", "81559 MiB")]
    lines += [_kv(2, "Reserved", "551 MiB")] if era != "470" else []
    lines += [_kv(2, "Used", f"{used} MiB"), _kv(2, "Free", f"{81559 - used} MiB"),
              _kv(1, "BAR1 Memory Usage"), _kv(2, "Total", "131072 MiB"), _kv(2, "Used", "1 MiB"),
              _kv(2, "Free", "131071 MiB"), _kv(1, "Compute Mode", "Default"), _kv(1, "Utilization"),
              _kv(2, "Gpu", f"{rng.randrange(101)} %"), _kv(2, "Memory", "0 %"), _kv(2, "Encoder", "0 %"),
              _kv(2, "Decoder", "0 %")]
    lines += [_kv(2, "JPEG", "0 %"), _kv(2, "OFA", "0 %")] if era != "470" else []
    lines += [_kv(1, "ECC Mode"), _kv(2, "Current", "Enabled"), _kv(2, "Pending", "Enabled"), _kv(1, "ECC Errors")]
    bad_ecc = rng.randrange(1, 9) if fault == "ecc" else 0
    values: list[tuple[str, object]] = [(f"{at}.product_name", product), (f"{at}.uuid", uuid),
                                        (f"{at}.pcie.width_current", width), (f"{at}.temperature.gpu_C", temp),
                                        (f"{at}.power.draw_W", draw), (f"{at}.memory.used_MiB", used)]
    for scope in ("Volatile", "Aggregate"):
        lines.append(_kv(2, scope))
        if ecc_kind == "bits":
            for bits in ("Single Bit", "Double Bit"):
                lines.append(_kv(3, bits))
                for part in ("Device Memory", "Register File", "L1 Cache", "L2 Cache", "Texture Memory",
                             "Texture Shared", "CBU"):
                    lines.append(_kv(4, part, bad_ecc if bits == "Double Bit" and part == "Device Memory" else 0))
                lines.append(_kv(4, "Total", bad_ecc if bits == "Double Bit" else 0))
            if scope == "Volatile":
                values.append((f"{at}.ecc.volatile.Double Bit/Total", bad_ecc))
        else:
            for name in ("SRAM Correctable", "SRAM Uncorrectable Parity", "SRAM Uncorrectable SEC-DED",
                         "DRAM Correctable", "DRAM Uncorrectable"):
                lines.append(_kv(3, name, bad_ecc if name == "DRAM Uncorrectable" else 0))
            if scope == "Aggregate":
                lines.append(_kv(3, "SRAM Threshold Exceeded", "No"))
                lines += [_kv(2, "Aggregate Uncorrectable SRAM Sources")] + [
                    _kv(3, f"SRAM {k}", 0) for k in ("L2", "SM", "Microcontroller", "PCIE", "Other")]
            else:
                values.append((f"{at}.ecc.volatile.DRAM Uncorrectable", bad_ecc))
    lines += [_kv(1, "Retired Pages"), _kv(2, "Single Bit ECC", 0 if ecc_kind == "bits" else "N/A"),
              _kv(2, "Double Bit ECC", bad_ecc if ecc_kind == "bits" else "N/A"),
              _kv(2, "Pending Page Blacklist", ("Yes" if fault == "retire" else "No") if ecc_kind == "bits" else "N/A")]
    if remap:
        pending = fault == "remap"
        lines += [_kv(1, "Remapped Rows"), _kv(2, "Correctable Error", 0),
                  _kv(2, "Uncorrectable Error", 1 if pending else 0), _kv(2, "Pending", "Yes" if pending else "No"),
                  _kv(2, "Remapping Failure Occurred", "No"), _kv(2, "Bank Remap Availability Histogram")]
        lines += [_kv(3, k, f"{v} bank(s)") for k, v in (("Max", 2559 if pending else 2560), ("High", 0),
                                                          ("Partial", 0), ("Low", 0), ("None", 0))]
        values.append((f"{at}.remapped_rows.pending", pending))
    else:
        lines.append(_kv(1, "Remapped Rows", "N/A"))
    lines += [_kv(1, "Temperature"), _kv(2, "GPU Current Temp", f"{temp} C")]
    if era == "470":
        lines += [_kv(2, "GPU Shutdown Temp", "90 C"), _kv(2, "GPU Slowdown Temp", "87 C")]
    else:
        lines += [_kv(2, "GPU T.Limit Temp", "56 C"), _kv(2, "GPU Shutdown T.Limit Temp", "-8 C"),
                  _kv(2, "GPU Slowdown T.Limit Temp", "-2 C")]
    lines += [_kv(2, "Memory Current Temp", f"{temp + 10} C"), _kv(1, power)]
    if era >= "570":
        lines += [_kv(2, "Average Power Draw", f"{draw:.2f} W"), _kv(2, "Instantaneous Power Draw", f"{draw:.2f} W")]
    else:
        lines.append(_kv(2, "Power Draw", f"{draw:.2f} W"))
    lines += [_kv(2, "Current Power Limit" if era != "470" else "Power Limit", "700.00 W"),
              _kv(2, "Default Power Limit", "700.00 W"), _kv(2, "Max Power Limit", "700.00 W"),
              _kv(1, "Clocks"), _kv(2, "Graphics", "1980 MHz"), _kv(2, "SM", "1980 MHz"), _kv(2, "Memory", "2619 MHz")]
    if era != "470":
        lines += [_kv(1, "Fabric"), _kv(2, "State", "Completed"), _kv(2, "Status", "Success")]
    if mig:
        for k in range(2):
            lines += [_kv(1, "MIG Device"), _kv(2, "GPU Instance ID", k + 1), _kv(2, "Compute Instance ID", 0),
                      _kv(2, "ECC Errors"), _kv(3, "Volatile"), _kv(4, "SRAM Uncorrectable", 0),
                      _kv(2, "Shared FB Memory Usage"), _kv(3, "Total", "71424 MiB"), _kv(3, "Used", "22 MiB"),
                      _kv(3, "Free", "71402 MiB")]
    procs = rng.randrange(0, 3)
    if procs:
        lines.append(_kv(1, "Processes"))
        for p in range(procs):
            lines += [_kv(2, "GPU instance ID", "N/A"), _kv(2, "Compute instance ID", "N/A"),
                      _kv(2, "Process ID", 4242 + p), _kv(3, "Type", "C"), _kv(3, "Name", "python3"),
                      _kv(3, "Used GPU Memory", f"{1000 + p} MiB")]
    else:
        lines.append(_kv(1, "Processes", "None"))
    if era >= "570":
        lines += [_kv(1, "Capabilities"), _kv(2, "EGM", "disabled")]
    if mig:
        values.append((f"{at}.mig.devices", 2))
    return lines, values


@generator("nvidia-smi-q")
def smi_query(rng: random.Random) -> Iterator[Variant]:
    """The whole ``-q`` of each era: '==============NVSMI LOG==============', Timestamp, Driver
    and CUDA Version, 'Attached GPUs : N', a 'GPU <bus id>' section per GPU (four-space
    levels, 'Key<blanks>: value'), each through 'Processes' (and 'Capabilities' from 560)."""
    for era, (driver, cuda, *_rest) in _ERAS.items():
        # a GPU's section is ~130 lines: the plain run takes 1 or 2 GPUs an era, the sweep 1 to 16 (by record)
        for n in (1, 2, 4, 8, 16) if ALL else (rng.choice((1, 2)),):
            fault = rng.choice((None, None, "width", "ecc", "slowdown", "remap" if era != "470" else "retire"))
            bad, mig = rng.randrange(n), era != "470" and rng.random() < 0.3
            lines = ["", "==============NVSMI LOG==============", "", _kv(0, "Timestamp", "Wed Jul 31 11:22:39 2024")]
            if era >= "610":  # Driver and CUDA Version deprecated, KMD and CUDA UMD Version after them
                lines += [_kv(0, "Driver Version", f"{driver} [Deprecated; will be removed in CUDA 14.0. Use KMD "
                                                   "Version instead]"),
                          _kv(0, "CUDA Version", f"{cuda} [Deprecated; will be removed in CUDA 14.0. Use CUDA UMD "
                                                 "Version instead]"),
                          _kv(0, "KMD Version", driver), _kv(0, "CUDA UMD Version", cuda)]
            else:
                lines += [_kv(0, "Driver Version", driver), _kv(0, "CUDA Version", cuda)]
            lines += ["", _kv(0, "Attached GPUs", n)]
            values: list[tuple[str, object]] = [("driver_version", driver), ("cuda_version", cuda), ("attached_gpus", n),
                                                ("len(gpus)", n)]
            for i in range(n):
                gl, gv = _gpu(rng, era, i, fault if i == bad else None, mig)
                lines += gl + [""]
                values += gv
            if era >= "590":
                lines = [_widened(ln) for ln in lines]
            # a reporter's '...' for the first GPU's clocks (Graphics, SM, Memory: no value judged)
            clocks = lines.index(_kv(1, "Clocks"))
            yield Variant("nvidia-smi-q", f"{era} {n} GPUs {fault}{' MIG' if mig else ''}", "\n".join(lines) + "\n",
                          tuple(values), fails=fault is not None, count=n, records=_sections(lines),
                          elide=(clocks + 1, clocks + 4))
    for n in (1, 8, 16) if ALL else (rng.choice((1, 8)),):
        yield _ecc_listing(n, rng.choice((None, rng.randrange(n))))
    # a pasted command line that selects GPUs: 'nvidia-smi -q -i 3' (or '--id=1,2') prints 'Attached GPUs : 8'
    # and the sections of the GPUs it names only: whole (harvest 9: an H800's and an A100's '-q -i 0')
    for ids in ((rng.randrange(8),), (1, 2)):
        flag = f"-i {ids[0]}" if len(ids) == 1 else "--id=" + ",".join(map(str, ids))
        lines = [f"{rng.choice(('$ ', '$', '> ', 'root@node:~# '))}nvidia-smi -q {flag}", "",
                 "==============NVSMI LOG==============", "", _kv(0, "Timestamp", "Fri Jun 30 17:20:02 2023"),
                 _kv(0, "Driver Version", "535.161.08"), _kv(0, "CUDA Version", "12.2"), "", _kv(0, "Attached GPUs", 8)]
        values = [("attached_gpus", 8), ("len(gpus)", len(ids))]
        for i in ids:
            gl, gv = _gpu(rng, "535", i, None, False)
            lines += gl + [""]
            values += gv
        yield Variant("nvidia-smi-q", f"-q {flag} of 8 attached", "\n".join(lines) + "\n", tuple(values),
                      count=len(ids), records=_sections(lines))
    # a reporter's excerpt that starts inside one GPU's section (after its header and first fields):
    # that GPU's fields, bus id unknown, cut short (real capture NVIDIA/DCGM#152)
    gl, _ = _gpu(rng, rng.choice(sorted(_ERAS)), 0, None, False)
    start = next(i for i, ln in enumerate(gl) if ln.strip().startswith("Serial Number"))
    uuid = next(ln.split(": ", 1)[1] for ln in gl if ln.strip().startswith("GPU UUID"))
    yield Variant("nvidia-smi-q", "excerpt from inside a GPU", "\n".join(gl[start:]) + "\n",
                  (("len(gpus)", 1), ("gpus[0].uuid", uuid), ("gpus[0].bus_id", None)), fails=True)
    for line in ("No devices were found", "Failed to initialize NVML: Driver/library version mismatch"):
        yield Variant("nvidia-smi-q", line[:20], line + "\n", (("len(gpus)", 0),), fails=True)


def _sections(lines: list[str]) -> tuple[int, ...]:
    """The line each GPU's section starts at (its 'GPU <bus id>' header): the sweep's records."""
    return tuple(i for i, ln in enumerate(lines) if ln.startswith("GPU "))


def _ecc_listing(n: int, bad: int | None) -> Variant:
    """``nvidia-smi -q -d ECC``: the header and each GPU's ECC sections only (no Product Name:
    not a full listing); GPU ``bad`` with a volatile (and aggregate) uncorrectable DRAM count."""
    lines = ["", "==============NVSMI LOG==============", "", _kv(0, "Timestamp", "Wed Jul 31 11:22:39 2024"),
             _kv(0, "Driver Version", "535.161.08"), _kv(0, "CUDA Version", "12.2"), "", _kv(0, "Attached GPUs", n)]
    for i in range(n):
        lines += [f"GPU 00000000:{0x0f + 0x0e * i:02X}:00.0", _kv(1, "ECC Mode"), _kv(2, "Current", "Enabled"),
                  _kv(2, "Pending", "Enabled"), _kv(1, "ECC Errors")]
        for scope in ("Volatile", "Aggregate"):
            lines += [_kv(2, scope)] + [_kv(3, k, 3 if i == bad and k == "DRAM Uncorrectable" else 0)
                                        for k in ("SRAM Correctable", "SRAM Uncorrectable", "DRAM Correctable",
                                                  "DRAM Uncorrectable")]
        lines.append("")
    at = f"gpus[{bad or 0}].ecc.volatile.DRAM Uncorrectable"
    return Variant("nvidia-smi-q", f"-d ECC {n} GPUs{'' if bad is None else ' bad'}", "\n".join(lines) + "\n",
                   (("len(gpus)", n), (at, 0 if bad is None else 3)), count=n, fails=bad is not None,
                   records=_sections(lines))
