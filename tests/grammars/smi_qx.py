"""``nvidia-smi -q -x`` and the Fabric views, from their grammar (sncheck/vendors/nvidia/fabric_grammar.py:
NVIDIA's documentation, the DTDs its XML names and the real captures, nvidia-smi being closed).

``nvidia-smi-qx``: the document of four DTD eras (v6 on 340: no CUDA version, a 4-digit PCI
domain, Single/Double Bit ECC; v11 on 470/515: clocks_throttle_reasons, power_readings; v12 on
535: clocks_event_reasons, gpu_power_readings, SRAM/DRAM ECC, MIG devices; v13 on 580: a GB200
tray's fabric and platformInfo, average/instant power draw, capabilities), 1 to 16 GPUs.
``nvidia-smi-fabric``: the Fabric section of ``-q`` (whole, or an operator's ``grep -A``
excerpt) in every state the Fabric Manager reports, and gpud's fabric table."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import ALL, Variant, generator

_ERAS = {  # DTD, driver, CUDA (None: not printed), product, ECC kind, clock section, power section
    "v6": ("nvsmi_device_v6.dtd", "340.102", None, "GeForce GTX 780", "bits", "clocks_throttle_reasons",
           "power_readings"),
    "v11": ("nvsmi_device_v11.dtd", "515.105.01", "11.7", "Tesla V100-SXM2-32GB", "bits", "clocks_throttle_reasons",
            "power_readings"),
    "v12": ("nvsmi_device_v12.dtd", "535.54.03", "12.2", "NVIDIA A100-SXM4-80GB", "sram", "clocks_event_reasons",
            "gpu_power_readings"),
    "v13": ("nvsmi_device_v13.dtd", "580.173.02", "13.0", "NVIDIA GB200", "sram", "clocks_event_reasons",
            "gpu_power_readings"),
}
_REASONS = ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown",
            "hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown", "display_clocks_setting")


class _Doc:
    """Tab-indented XML as nvidia-smi writes it: one element a line, a parent's children one tab deeper."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def leaf(self, tag: str, value: object) -> None:
        self.lines.append("\t" * self.depth + f"<{tag}>{value}</{tag}>")

    def open(self, tag: str, attrs: str = "") -> None:
        self.lines.append("\t" * self.depth + f"<{tag}{attrs}>")
        self.depth += 1

    def close(self, tag: str) -> None:
        self.depth -= 1
        self.lines.append("\t" * self.depth + f"</{tag}>")

    def block(self, tag: str, leaves: dict[str, object]) -> None:
        self.open(tag)
        for k, v in leaves.items():
            self.leaf(k, v)
        self.close(tag)


def _uuid(rng: random.Random) -> str:
    return f"GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-" \
           f"{rng.getrandbits(16):04x}-{rng.getrandbits(48):012x}"


def _gpu(d: _Doc, rng: random.Random, era: str, i: int, mig: bool,
         fault: str | None = None) -> list[tuple[str, object]]:
    """One <gpu> element; ``fault`` acts out what the query checks judge (as on -q): 'width' (x8
    of x16), 'ecc' (volatile uncorrectable), 'slowdown' (HW Slowdown active), 'remap' (a row
    remap pending), 'retire' (a page retirement pending)."""
    _, driver, _, product, ecc_kind, clocks, power = _ERAS[era]
    bus = f"0000:{1 + i:02X}:00.0" if era == "v6" else f"00000000:{0x0f + 0x0e * i:02X}:00.0"
    at = f"gpus[bus_id={bus}]"
    uuid, temp, draw = _uuid(rng), rng.randrange(25, 80), round(rng.uniform(60, 700), 2)
    total, used = 81559, rng.randrange(0, 80000)
    width = 8 if fault == "width" else 16
    values: list[tuple[str, object]] = [(f"{at}.product_name", product), (f"{at}.uuid", uuid),
                                        (f"{at}.temperature.gpu_C", temp), (f"{at}.power.draw_W", draw),
                                        (f"{at}.memory.used_MiB", used), (f"{at}.pcie.width_current", width)]
    d.open("gpu", f' id="{bus}"')
    d.leaf("product_name", product)
    d.leaf("product_brand", "GeForce" if era == "v6" else "NVIDIA")
    d.leaf("persistence_mode", "Enabled")
    if era in ("v12", "v13"):
        d.block("mig_mode", {"current_mig": "Enabled" if mig else "Disabled",
                             "pending_mig": "Enabled" if mig else "Disabled"})
        d.open("mig_devices")
        if mig:
            for k in range(2):
                d.open("mig_device")
                d.leaf("index", k)
                d.leaf("gpu_instance_id", 3 + k)
                d.leaf("compute_instance_id", 0)
                d.open("ecc_error_count")
                d.block("volatile_count", {"sram_uncorrectable": 0})
                d.close("ecc_error_count")
                d.block("fb_memory_usage", {"total": "19968 MiB", "reserved": "0 MiB", "used": "12 MiB",
                                            "free": "19955 MiB"})
                d.close("mig_device")
            values.append((f"{at}.mig.devices", 2))
        else:
            d.lines.append("\t" * d.depth + "None")
        d.close("mig_devices")
        values.append((f"{at}.mig.current", "Enabled" if mig else "Disabled"))
    d.leaf("serial", f"16501240{rng.randrange(10**5):05d}")
    d.leaf("uuid", uuid)
    d.leaf("minor_number", i)
    if era == "v13":
        tray, slot = rng.randrange(1, 19), rng.randrange(1, 19)
        d.block("platformInfo", {"chassis_serial_number": "1820000000001", "slot_number": slot, "tray_index": tray,
                                 "host_id": 1, "peer_type": "Switch Connected", "module_id": i + 1,
                                 "gpu_fabric_guid": f"0x{rng.getrandbits(64):016x}"})
        values += [(f"{at}.platform.tray", tray), (f"{at}.platform.slot", slot), (f"{at}.platform.module_id", i + 1)]
    d.open("pci")
    d.leaf("pci_bus", f"{1 + i:02X}" if era == "v6" else f"{0x0f + 0x0e * i:02X}")
    d.leaf("pci_bus_id", bus)
    d.open("pci_gpu_link_info")
    gen = 2 if era == "v6" else 4
    d.block("pcie_gen", {"max_link_gen": gen, "current_link_gen": gen})
    d.block("link_widths", {"max_link_width": "16x", "current_link_width": f"{width}x"})
    d.close("pci_gpu_link_info")
    d.leaf("replay_counter", 0)
    d.leaf("tx_util", "350 KB/s")
    d.close("pci")
    d.leaf("fan_speed", "N/A")
    d.leaf("performance_state", "P0")
    prefix = clocks.removesuffix("s") + "_"
    slow = ("hw_slowdown", "hw_thermal_slowdown") if fault == "slowdown" else ()
    d.block(clocks, {prefix + r: "Active" if r in slow else "Not Active" for r in _REASONS})
    values.append((f"len({at}.clock_reasons.active)", len(slow)))
    memory = {"total": f"{total} MiB"} | ({"reserved": "551 MiB"} if era in ("v12", "v13") else {})
    d.block("fb_memory_usage", memory | {"used": f"{used} MiB", "free": f"{total - used} MiB"})
    d.block("bar1_memory_usage", {"total": "131072 MiB", "used": "1 MiB", "free": "131071 MiB"})
    d.leaf("compute_mode", "Default")
    d.block("utilization", {"gpu_util": f"{rng.randrange(101)} %", "memory_util": "0 %", "encoder_util": "0 %",
                            "decoder_util": "0 %"})
    d.block("ecc_mode", {"current_ecc": "Enabled" if era != "v6" else "N/A",
                         "pending_ecc": "Enabled" if era != "v6" else "N/A"})
    d.open("ecc_errors")
    bad_ecc = rng.randrange(1, 9) if fault == "ecc" else 0
    for scope in ("volatile", "aggregate"):
        d.open(scope)
        if ecc_kind == "bits":
            for bits in ("single_bit", "double_bit"):
                d.block(bits, {k: bad_ecc if bits == "double_bit" and k in ("device_memory", "total") else 0
                               for k in ("device_memory", "register_file", "l1_cache", "l2_cache",
                                         "texture_memory", "texture_shm", "cbu", "total")})
        else:
            for name in ("sram_correctable", "sram_uncorrectable_parity", "sram_uncorrectable_secded",
                         "dram_correctable", "dram_uncorrectable"):
                d.leaf(name, bad_ecc if name == "dram_uncorrectable" else 0)
            if scope == "aggregate":
                d.leaf("sram_threshold_exceeded", "No")
        d.close(scope)
    d.close("ecc_errors")
    values.append((f"{at}.ecc.volatile.Double Bit/Total" if ecc_kind == "bits"
                   else f"{at}.ecc.volatile.DRAM Uncorrectable", bad_ecc))
    if era != "v6":
        d.open("retired_pages")
        for kind in ("multiple_single_bit_retirement", "double_bit_retirement"):
            d.block(kind, {"retired_count": 0 if ecc_kind == "bits" else "N/A", "retired_pagelist": "N/A"})
        retiring = "Yes" if fault == "retire" else "No"
        d.leaf("pending_blacklist", retiring if ecc_kind == "bits" else "N/A")
        d.leaf("pending_retirement", retiring if ecc_kind == "bits" else "N/A")
        d.close("retired_pages")
        if fault == "retire":
            values.append((f"{at}.retired_pages.pending", True))
    if ecc_kind == "sram":
        d.open("remapped_rows")
        pending = fault == "remap"
        for k, v in (("remapped_row_corr", 0), ("remapped_row_unc", int(pending)),
                     ("remapped_row_pending", "Yes" if pending else "No"), ("remapped_row_failure", "No")):
            d.leaf(k, v)
        top = 639 if pending else 640
        d.block("row_remapper_histogram", {f"row_remapper_histogram_{k}": f"{n} bank(s)" for k, n in
                                           (("max", top), ("high", 0), ("partial", 0), ("low", 0), ("none", 0))})
        d.close("remapped_rows")
        values += [(f"{at}.remapped_rows.histogram.Max", top), (f"{at}.remapped_rows.pending", pending)]
    elif era != "v6":
        d.leaf("remapped_rows", "N/A")
    d.block("temperature", {"gpu_temp": f"{temp} C", "gpu_temp_max_threshold": "92 C",
                            "gpu_temp_slow_threshold": "89 C"})
    if era == "v13":
        d.block(power, {"power_state": "P0", "average_power_draw": f"{draw:.2f} W",
                        "instant_power_draw": f"{draw + 1:.2f} W", "current_power_limit": "1200.00 W",
                        "default_power_limit": "1200.00 W", "max_power_limit": "1200.00 W"})
        values.append((f"{at}.power.instant_W", round(draw + 1, 2)))
    else:
        d.block(power, {"power_state": "P0", "power_draw": f"{draw:.2f} W",
                        ("current_power_limit" if era == "v12" else "power_limit"): "400.00 W"})
    d.block("clocks", {"graphics_clock": "1410 MHz", "sm_clock": "1410 MHz", "mem_clock": "1215 MHz"})
    if era in ("v12", "v13"):
        d.open("fabric")
        fabric = {"state": "Completed", "status": "Success", "cliqueId": 2,
                  "clusterUuid": "00000001-0000-0000-0000-000000000001"} if era == "v13" else \
                 {"state": "N/A", "status": "N/A", "cliqueId": "N/A", "clusterUuid": "N/A"}
        for k, v in fabric.items():
            d.leaf(k, v)
        d.block("health", {"summary": "Healthy" if era == "v13" else "N/A",
                           "bandwidth": "Full" if era == "v13" else "N/A",
                           "route_recovery_in_progress": "False" if era == "v13" else "N/A"})
        d.close("fabric")
        values += [(f"{at}.fabric.state", "Completed" if era == "v13" else None)]
        if era == "v13":
            values += [(f"{at}.fabric.clique_id", 2), (f"{at}.fabric.health.summary", "Healthy")]
    d.open("processes")
    for p in range(rng.randrange(0, 3)):
        d.block("process_info", {"gpu_instance_id": "N/A", "compute_instance_id": "N/A", "pid": 4242 + p,
                                 "type": "C", "process_name": "python3", "used_memory": f"{1000 + p} MiB"})
    d.close("processes")
    d.open("accounted_processes")
    d.close("accounted_processes")
    if era == "v13":
        d.block("capabilities", {"egm": "disabled"})
    d.close("gpu")
    return values


def _document(rng: random.Random, era: str, n: int, mig: bool = False, listed: int | None = None,
              fault: tuple[int, str] | None = None) -> tuple[str, list[tuple[str, object]]]:
    dtd, driver, cuda, *_ = _ERAS[era]
    d = _Doc()
    d.lines += ['<?xml version="1.0" ?>', f'<!DOCTYPE nvidia_smi_log SYSTEM "{dtd}">']
    d.open("nvidia_smi_log")
    d.leaf("timestamp", "Fri Aug 21 11:01:42 2026")
    d.leaf("driver_version", driver)
    if cuda is not None:
        d.leaf("cuda_version", cuda)
    d.leaf("attached_gpus", n)
    values: list[tuple[str, object]] = [("driver_version", driver), ("attached_gpus", n),
                                        ("len(gpus)", n if listed is None else listed)]
    values += [("cuda_version", cuda)] if cuda else []
    for i in range(n if listed is None else listed):
        values += _gpu(d, rng, era, i, mig, fault[1] if fault and fault[0] == i else None)
    d.lines.append("")
    d.close("nvidia_smi_log")
    return "\n".join(d.lines) + "\n", values


@generator("nvidia-smi-qx")
def smi_qx(rng: random.Random) -> Iterator[Variant]:
    """The whole document of each DTD era: header, 'attached_gpus', one <gpu id="bus"> per GPU;
    ended by '</nvidia_smi_log>' (the last line). A GPU element is ~100 lines: the plain run
    takes 1 or 2 GPUs an era (4 on a GB200 tray), the sweep 1, 2, 8 and 16."""
    for era, (_, _, _, _, ecc_kind, _, _) in _ERAS.items():
        sizes = (1, 2, 4, 8, 16) if ALL else (1,)
        for n in sizes:
            mig = era == "v12" and rng.random() < 0.5
            # what the query checks judge, on one GPU (a run's and parse's one judgement)
            kind = rng.choice((None, None, "width", "ecc", "slowdown",
                               "remap" if ecc_kind == "sram" else "retire" if era != "v6" else None))
            fault = (rng.randrange(n), kind) if kind else None
            text, values = _document(rng, era, n, mig, fault=fault)
            yield Variant("nvidia-smi-qx", f"{era} {n} GPUs{' MIG' if mig else ''} {kind}", text, tuple(values),
                          fails=fault is not None, count=n,
                          records=tuple(i for i, ln in enumerate(text.split("\n")) if ln.startswith("\t<gpu ")))
    # an output not one machine's: fewer <gpu> elements than attached (an excerpt), a GPU twice
    text, values = _document(rng, "v12", 4, listed=2)
    yield Variant("nvidia-smi-qx", "4 attached, 2 listed", text, (("attached_gpus", 4), ("len(gpus)", 2)),
                  fails=True)
    text, _ = _document(random.Random(5), "v12", 1)
    lines = text.split("\n")
    start, stop = lines.index(next(ln for ln in lines if ln.startswith("\t<gpu "))), lines.index("\t</gpu>")
    twice = "\n".join(lines[:stop + 1] + lines[start:stop + 1] + lines[stop + 1:]).replace(
        "<attached_gpus>1<", "<attached_gpus>2<")
    yield Variant("nvidia-smi-qx", "one GPU listed twice", twice, (("len(gpus)", 2),), fails=True)
    # a reader's paste of the document's middle (harvest7's netdata capture, from inside <pci>): refused,
    # naming the elements it starts inside
    text, _ = _document(rng, rng.choice(tuple(_ERAS)), 2)
    lines = text.split("\n")
    inside = lines.index(next(ln for ln in lines if ln.strip() == "<pci>")) + rng.randrange(1, 4)
    yield Variant("nvidia-smi-qx", "a fragment from inside <pci>", "\n".join(lines[inside:inside + 60]) + "\n",
                  (("len(gpus)", 0),), fails=True, finding="a fragment starting inside <")
    # what nvidia-smi prints in place of the document when it cannot read the GPUs
    for line in _FAILED if ALL else (rng.choice(_FAILED),):
        yield Variant("nvidia-smi-qx", line[:24], line + "\n", (("len(gpus)", 0),), fails=True, finding=line)


# what nvidia-smi prints in place of any view when it cannot read the GPUs (closed: its documentation
# and the captures; smi_values.TOOL_ERROR)
_FAILED = ("No devices were found", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
           "driver. Make sure that the latest NVIDIA driver is installed and running.",
           "Failed to initialize NVML: Driver/library version mismatch")


# ----------------------------------------------------------------------------- Fabric (-q text)

_W = 42  # -q pads every key to column 42 (51 from 590): the ':' at 43
_STATES = (  # State, Status, CliqueId, ClusterUUID, Summary, Bandwidth, whether the tray is judged whole
    ("Completed", "Success", 2, "dc6e40c4-d722-4357-9ba6-5291dd461278", "Healthy", "Full"),
    ("Completed", "Success", 2, "dc6e40c4-d722-4357-9ba6-5291dd461278", "Unhealthy", "Full"),
    ("Completed", "Success", 2, "dc6e40c4-d722-4357-9ba6-5291dd461278", "Limited Capacity", "Limited Capacity"),
    ("Completed", "Insufficient Resources", 0, "00000000-0000-0000-0000-000000000000", "N/A", "N/A"),
    ("In Progress", "N/A", "N/A", "N/A", "N/A", "N/A"),
    ("Not Started", "N/A", "N/A", "N/A", "N/A", "N/A"),
    ("Not Supported", "N/A", "N/A", "N/A", "N/A", "N/A"),
)
_HEALTH_ROWS = ("Route Recovery in progress", "Route Unhealthy", "Access Timeout Recovery",
                "Incorrect Configuration", "Partition Assigned")


def _kv(depth: int, key: str, value: object | None = None, width: int = _W) -> str:
    pad = "    " * depth
    return pad + key if value is None else f"{pad}{key:<{width - len(pad)}}: {value}"


def _fabric_block(depth: int, state: tuple, width: int, health_rows: int) -> list[str]:
    st, status, clique, cluster, summary, bandwidth = state
    lines = [_kv(depth, "Fabric"), _kv(depth + 1, "State", st, width), _kv(depth + 1, "Status", status, width),
             _kv(depth + 1, "CliqueId", clique, width), _kv(depth + 1, "ClusterUUID", cluster, width)]
    if health_rows >= 0:  # 570 prints no Summary (r4's A100), 580 Summary and the two rows after
        lines += [_kv(depth + 1, "Health")] + ([_kv(depth + 2, "Summary", summary, width)] if health_rows != 3 else [])
        lines += [_kv(depth + 2, "Bandwidth", bandwidth, width)]
        lines += [_kv(depth + 2, k, "False" if st == "Completed" and summary == "Healthy" else "N/A", width)
                  for k in _HEALTH_ROWS[:health_rows]]
    return lines


def _fabric_values(at: str, state: tuple) -> list[tuple[str, object]]:
    st, status, clique, cluster, summary, bandwidth = state
    na = {"N/A": None}
    return [(f"{at}.fabric.state", st), (f"{at}.fabric.status", na.get(status, status)),
            (f"{at}.fabric.clique_id", na.get(str(clique), clique)),
            (f"{at}.fabric.cluster_uuid", na.get(cluster, cluster))]


@generator("nvidia-smi-fabric")
def smi_fabric(rng: random.Random) -> Iterator[Variant]:
    """``nvidia-smi -q`` reduced to each GPU's header, identity and Fabric (and Platform Info on
    GB200) sections, in every registration state; the excerpt ``nvidia-smi -q | grep -A N
    Fabric`` (no GPU header: the count is the judge's); gpud's table."""
    for st in _STATES if ALL else rng.sample(_STATES, 2):
        n = rng.choice((1, 4, 8) if ALL else (1, 2))
        width = rng.choice((_W, 51))
        health_rows = 5 if width == 51 else 3  # 570 on print Incorrect Configuration and Partition Assigned
        lines = ["", "==============NVSMI LOG==============", "", _kv(0, "Timestamp", "Fri Aug 21 11:01:42 2026", width),
                 _kv(0, "Driver Version", "580.173.02" if width == 51 else "570.133.20", width),
                 _kv(0, "CUDA Version", "13.0", width), "", _kv(0, "Attached GPUs", n, width)]
        values: list[tuple[str, object]] = [("len(gpus)", n)]
        for i in range(n):
            bus = f"00000008:{1 + i:02X}:00.0"
            uuid = _uuid(rng)
            lines += [f"GPU {bus}", _kv(1, "Product Name", "NVIDIA GB200", width), _kv(1, "GPU UUID", uuid, width),
                      _kv(1, "Platform Info"), _kv(2, "Chassis Serial Number", "1820000000001", width),
                      _kv(2, "Slot Number", 14, width), _kv(2, "Tray Index", 4, width), _kv(2, "Host ID", 1, width),
                      _kv(2, "Peer Type", "Switch Connected", width), _kv(2, "Module Id", i + 1, width)]
            lines += _fabric_block(1, st, width, health_rows) + [_kv(1, "Processes", "None", width)]
            lines += [_kv(1, "Capabilities"), _kv(2, "EGM", "disabled", width), ""]  # the last from 560
            at = f"gpus[bus_id={bus}]"
            values += _fabric_values(at, st) + [(f"{at}.uuid", uuid), (f"{at}.platform.module_id", i + 1),
                                                (f"{at}.platform.tray", 4)]
            if st[4] != "N/A" and health_rows == 5:
                values.append((f"{at}.fabric.health.summary", st[4]))
        yield Variant("nvidia-smi-fabric", f"-q {n} GPUs {st[0]}/{st[1]}/{st[4]}", "\n".join(lines) + "\n",
                      tuple(values), count=n)
    # the operators' excerpt: each GPU's Fabric block, a grep's '--' between them
    # (whole through ClusterUUID: one block alone may end anywhere after it, as a grep -A N ends it)
    for n in (1, 4) if ALL else (1, 2):
        st, rows = rng.choice(_STATES), rng.choice((-1, 0, 3))  # one grep: one shape for every block
        lines = []
        for i in range(n):
            lines += (["--"] if i else []) + _fabric_block(1, st, _W, rows)
        yield Variant("nvidia-smi-fabric", f"grep -A excerpt {n} GPUs {st[0]}", "\n".join(lines) + "\n",
                      tuple(_fabric_values("gpus[0]", st)) + (("len(gpus)", n),), count=n,
                      end=5 if n == 1 else None)
    # gpud's fabric state table (leptonai/gpud PR 1108)
    n = rng.choice((1, 4) if ALL else (1, 2))
    rule = "+-------------------------+------------------------------------------+"
    lines, values = [], [("len(gpus)", n)]
    for i in range(n):
        uuid = _uuid(rng)
        lines += [rule] + [f"| {k:<23} | {v:<40} |" for k, v in (
            ("GPU UUID", uuid), ("Clique ID", 0), ("State", "Not Supported"), ("Status", "Success"),
            ("Health Summary", "Not Supported"), ("Bandwidth", "Not Supported"), ("Route Recovery", "Not Supported"),
            ("Route Unhealthy", "Not Supported"), ("Access Timeout Recovery", "Not Supported"))] + [rule]
        values += [(f"gpus[{i}].uuid", uuid), (f"gpus[{i}].fabric.state", "Not Supported")]
    yield Variant("nvidia-smi-fabric", f"gpud table {n} GPUs", "\n".join(lines) + "\n", tuple(values), count=n)


@generator("nvidia-smi-fabric")
def smi_fabric_failed(rng: random.Random) -> Iterator[Variant]:
    """nvidia-smi -q's failure prints, printed instead of the log (with the command line half the time)."""
    for line in _FAILED if ALL else rng.sample(_FAILED, 2):
        cmd = ["$ nvidia-smi -q"] if rng.random() < 0.5 else []
        yield Variant("nvidia-smi-fabric", line[:24], "\n".join(cmd + [line]) + "\n", (("len(gpus)", 0),),
                      fails=True, finding=line)
