"""amd-smi text and --json, from the grammar in sncheck/vendors/amd/amd_smi_grammar.py: the
human-readable YAML-like blocks of static and metric (sections in amdsmi_commands.py's order,
the asked-for ones, with and without the command line), and the JSON list."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

from grammars import ALL, Variant, generator

STATIC = ("asic", "bus", "ifwi", "driver", "board", "ras", "vram")
METRIC = ("usage", "power", "temperature", "pcie", "ecc")
FLAG = {"asic": "--asic", "bus": "--bus", "ifwi": "--vbios", "driver": "--driver", "board": "--board",
        "ras": "--ras", "vram": "--vram", "usage": "--usage", "power": "--power", "temperature": "--temperature",
        "pcie": "--pcie", "ecc": "--ecc"}


def _section(name: str, gpu: int, rng: random.Random) -> dict:
    return {
        "asic": {"market_name": "AMD Instinct MI300X", "vendor_id": "0x1002", "device_id": "0x74a1", "rev_id": "0x00",
                 "asic_serial": f"0x{rng.getrandbits(60):015X}", "oam_id": gpu, "num_compute_units": 304,
                 "target_graphics_version": "gfx942"},
        "bus": {"bdf": f"0000:{0x05 + 0x20 * gpu:02x}:00.0", "max_pcie_width": 16, "max_pcie_speed": "32 GT/s",
                "pcie_interface_version": "Gen 5", "slot_type": "OAM"},
        "ifwi": {"name": "AMD MI300X", "build_date": "2024/01/11 09:20", "part_number": "113-M3000100-102",
                 "version": f"00{rng.randrange(100000, 999999)}"},
        "driver": {"name": "amdgpu", "version": "6.10.5"},
        "board": {"model_number": "102-G30211-00", "product_serial": f"692{rng.randrange(10**8)}",
                  "product_name": "AMD Instinct MI300X OAM", "manufacturer_name": "AMD"},
        "ras": {"eeprom_version": "0x30000", "parity_schema": "DISABLED", "single_bit_schema": "DISABLED",
                "double_bit_schema": "DISABLED", "poison_schema": "ENABLED"},
        "vram": {"type": "HBM", "vendor": "HYNIX", "size": "196592 MB", "bit_width": 8192},
        "usage": {"gfx_activity": f"{rng.randrange(101)} %", "umc_activity": f"{rng.randrange(101)} %",
                  "mm_activity": "N/A"},
        "power": {"socket_power": f"{rng.randrange(100, 750)} W", "gfx_voltage": "N/A", "power_management": "ENABLED"},
        "temperature": {"edge": "N/A", "hotspot": f"{rng.randrange(30, 90)} °C", "mem": f"{rng.randrange(30, 80)} °C"},
        "pcie": {"width": 16, "speed": "32 GT/s", "replay_count": rng.choice((0, 0, 3)), "nak_sent_count": 0},
        "ecc": {"total_correctable_count": rng.choice((0, 0, 2)), "total_uncorrectable_count": 0,
                "total_deferred_count": 0, "cache_correctable_count": 0, "cache_uncorrectable_count": 0},
    }[name]


def _text(gpus: list[dict]) -> list[str]:
    """amdsmi_logger's human-readable form of each device dict."""
    lines: list[str] = []
    for g in gpus:
        lines.append(f"GPU: {g['gpu']}")
        for sec, body in g.items():
            if sec == "gpu":
                continue
            lines.append(f"    {sec.upper()}:")
            lines += [f"        {k.upper()}: {v}" for k, v in body.items()]
        lines.append("")
    return lines


@generator("amd-smi")
def amd_smi(rng: random.Random) -> Iterator[Variant]:
    for command, names in (("static", STATIC), ("metric", METRIC)):
        for n in (1, 2, 8):
            asked = rng.sample(names, rng.randint(1, len(names)))
            sections = [s for s in names if s in asked]  # printed in the CLI's order, whatever the flags' order
            cmdline = rng.random() < 0.6
            gpus = [{"gpu": i, **{s: _section(s, i, rng) for s in sections}} for i in range(n)]
            # root's bare '# ' prompt for one GPU count (harvest24: '# amd-smi static -g 0'), no draw spent on it
            prompt = "# " if n == 2 else "$ "
            lines = ([f"{prompt}amd-smi {command} " + " ".join(FLAG[s] for s in asked) + (f" -g {' '.join(map(str, range(n)))}"
                                                                                    if rng.random() < 0.5 else "")]
                     if cmdline else []) + _text(gpus)
            values = [("len(gpus)", n)] + [(f"gpus[gpu={n - 1}].{s.upper()}.{k.upper()}", v)
                                           for s in sections for k, v in _section(s, n - 1, random.Random(0)).items()
                                           if isinstance(v, str) and k in ("market_name", "name", "type", "speed")]
            if sections[-1] == "bus":
                values.append((f"gpus[gpu={n - 1}].BUS.BDF", f"0000:{0x05 + 0x20 * (n - 1):02x}:00.0"))
            if sections[-1] == "ifwi":
                values.append((f"gpus[gpu={n - 1}].IFWI.VERSION", gpus[-1]["ifwi"]["version"]))
            # Two GPUs or more: the last must hold what the others do, and the judge's count the rest.
            # One GPU: whole once the last asked-for section has begun (the command line says what was
            # asked), or, with no command line, once its first section has a value: nothing says more.
            header = max(i for i, ln in enumerate(lines) if ln == f"    {sections[-1].upper()}:")
            end = None if n > 1 else header + 2 if cmdline else 3
            yield Variant("amd-smi", f"{command} {n} GPUs {'+'.join(sections)}{' with command' if cmdline else ''}",
                          "\n".join(lines) + "\n", tuple(values), count=n, end=end)


    # static --profile (ROCm 7.12, the changelog): PROFILES a list of scalars under its NUM_PROFILES count, one item
    # a line ('- ' markers made indentation); a list cut short holds fewer items than its count
    profiles = ["CUSTOM", "VIDEO", "POWER_SAVING", "COMPUTE", "VR", "3D_FULL_SCREEN", "BOOTUP_DEFAULT"]
    for n in (1, 2):
        lines = ["$ amd-smi static --profile"] if rng.random() < 0.5 else []
        for g in range(n):
            lines += [f"GPU: {g}", "    POWER_PROFILE:", "        CURRENT: COMPUTE", f"        NUM_PROFILES: {len(profiles)}",
                      "        PROFILES:"] + [f"            {p}" for p in profiles] + [""]
        values = [("len(gpus)", n), (f"gpus[gpu={n - 1}].POWER_PROFILE.PROFILES", "BOOTUP_DEFAULT"),
                  (f"len(gpus[gpu={n - 1}].POWER_PROFILE.PROFILES)", len(profiles))]
        # one GPU: whole once its section has a value (nothing states its keys; a cut inside the list falls short
        # of NUM_PROFILES); two: the last holds what the first does, its list its count
        end = (len(lines) - len(profiles) - 3) if n == 1 else None
        yield Variant("amd-smi", f"static --profile {n} GPUs (7.12, a list under its count)", "\n".join(lines) + "\n",
                      tuple(values), count=n, end=end)

    # amd-smi list (26.x) on a host with AMD AI NICs: 'AI_NIC: n' blocks after the GPUs' (rocm-systems PR 3654),
    # pasted after bash's default prompt
    for n_gpu, n_nic in ((1, 1), (8, 2)):
        lines = ["user@node7:~/repos$ sudo amd-smi list"]
        for g in range(n_gpu):
            lines += [f"GPU: {g}", f"    BDF: 0000:{0x05 + 0x20 * g:02x}:00.0",
                      f"    UUID: {rng.getrandbits(32):08x}-0000-1000-80e6-{rng.getrandbits(48):012x}",
                      f"    KFD_ID: {rng.randrange(10000, 65535)}", f"    NODE_ID: {g + 2}", "    PARTITION_ID: 0", ""]
        # nothing states how many AI NICs, nor entries, follow: whole through the GPUs (the judge counts them;
        # one GPU: its first entry, as for the other views of one device)
        end = 3 if n_gpu == 1 else len(lines) - 1
        for k in range(n_nic):
            lines += [f"AI_NIC: {k}", f"    BDF: 0000:{0xe2 + k:02x}:00.0", f"    PERMANENT_ADDRESS: 04:90:81:2c:77:{k:02x}",
                      "    PRODUCT_NAME: POLLARA 1x400G QSFP112", "    PART_NUMBER: POLLARA-1Q400P",
                      f"    SERIAL_NUMBER: FPL2503{k:05d}", "    VENDOR_NAME: AMD Pensando Systems, Inc.", ""]
        values = [("len(gpus)", n_gpu), ("len(nics)", n_nic), (f"gpus[gpu={n_gpu - 1}].BDF", f"0000:{0x05 + 0x20 * (n_gpu - 1):02x}:00.0"),
                  (f"nics[nic={n_nic - 1}].BDF", f"0000:{0xe2 + n_nic - 1:02x}:00.0")]
        yield Variant("amd-smi", f"list {n_gpu} GPUs {n_nic} AI NICs after a prompt", "\n".join(lines) + "\n",
                      tuple(values), count=n_gpu, end=end)
    # 'amd-smi version' then 'amd-smi list' (24.5, BDF and UUID only): the version line above the devices,
    # each of its 'NAME: value' parts as printed (harvest 21: a pod's log, OCI's MI300X README)
    lines = ["AMDSMI Tool: 24.5.1+c5106a9 | AMDSMI Library version: 24.5.2.0 | ROCm version: 6.1.2"]
    for g in range(4):
        lines += [f"GPU: {g}", f"    BDF: 0000:{0x11 + 0x1e * g:02x}:00.0", f"    UUID: {g:02x}ff74a1-0000-1000-80b1-dbb1e6a69543", ""]
    yield Variant("amd-smi", "version line then list of 4 GPUs (24.5)", "\n".join(lines) + "\n",
                  (("len(gpus)", 4), ("version.ROCm version", "6.1.2"), ("version.AMDSMI Tool", "24.5.1+c5106a9"),
                   ("gpus[gpu=3].BDF", "0000:6b:00.0")), count=4, end=None)


@generator("amd-smi")
def amd_smi_rocm_6_0(rng: random.Random) -> Iterator[Variant]:
    """ROCm 6.0's layout (amdsmi_logger yaml-dumps the device dict as is: a GPU's sections at its own
    'GPU: n' column), with ESMI's 'CPU: n' blocks first on an APU host, pasted behind bash's '~$ '
    prompt as AMD SMI's README shows it (harvest 14)."""
    for n, cpus in ((1, 0), (4, 2)):
        lines = ["~$ amd-smi static"]
        for c in range(cpus):
            lines += [f"CPU: {c}", "SMU:", "    FW_VERSION: 85:81:0", "INTERFACE_VERSION:", "    PROTO VERSION: 6", ""]
        first = len(lines)
        gpus = [{"gpu": i, **{s: _section(s, i, rng) for s in ("asic", "bus", "driver")}} for i in range(n)]
        for g in gpus:
            lines.append(f"GPU: {g['gpu']}")
            for sec in ("asic", "bus", "driver"):
                lines.append(f"{sec.upper()}:")
                lines += [f"    {k.upper()}: {v}" for k, v in g[sec].items()]
            lines.append("")
        values = [("len(gpus)", n), (f"gpus[gpu={n - 1}].BUS.BDF", gpus[-1]["bus"]["bdf"]),
                  (f"gpus[gpu={n - 1}].DRIVER.VERSION", "6.10.5")] + ([("len(cpus)", cpus)] if cpus else [])
        # no option: nothing says which sections; one GPU is whole once its first section has a value
        yield Variant("amd-smi", f"static ROCm 6.0 layout {n} GPUs {cpus} CPUs after '~$'", "\n".join(lines) + "\n",
                      tuple(values), count=n, end=first + 3 if n == 1 else None)


@generator("amd-smi-json")
def amd_smi_json(rng: random.Random) -> Iterator[Variant]:
    for n in (1, 4, 8):
        for wrapped in (False, True):
            gpus = []
            for i in range(n):
                gpus.append({"gpu": i, "usage": {"gfx_activity": {"value": rng.randrange(101), "unit": "%"},
                                                 "umc_activity": {"value": rng.randrange(101), "unit": "%"},
                                                 "vcn_activity": [{"value": 0, "unit": "%"}, "N/A", "N/A", "N/A"]},
                             "power": {"socket_power": {"value": rng.randrange(100, 750), "unit": "W"}}})
            doc = {"gpu_data": gpus} if wrapped else gpus
            text = ("> amd-smi metric -u -p --json\n\n" if rng.random() < 0.5 else "") + json.dumps(doc, indent=4) + "\n"
            last = gpus[-1]
            yield Variant("amd-smi-json", f"metric {n} GPUs{' gpu_data' if wrapped else ''}", text,
                          (("len(gpus)", n), (f"gpus[gpu={n - 1}].usage.gfx_activity.value",
                                              last["usage"]["gfx_activity"]["value"]),
                           (f"gpus[gpu={n - 1}].power.socket_power.value", last["power"]["socket_power"]["value"])),
                          count=n)


@generator("amd-smi-json")
def amd_smi_json_commands(rng: random.Random) -> Iterator[Variant]:
    """The documents amd-smi prints other than a list of GPUs (sncheck/vendors/amd/amd_smi_json.py, from
    amdsmi_cli's logger and commands): 26.x's one object (combine_arrays_to_json: gpu_data with cpu_data,
    xgmi_metric's list of lists with link_status), version's [self.output], and a record no command
    prints among amd-smi's (an error: that record is no amd-smi output, the others kept)."""
    n = rng.choice((2, 4, 8))
    gpus = [{"gpu": i, "asic": {"market_name": "AMD Instinct MI300X", "oam_id": i},
             "bus": {"bdf": f"0000:{0x05 + 0x20 * i:02x}:00.0", "max_pcie_width": 16}} for i in range(n)]
    cpus = [{"cpu": 0, "smu": {"fw_version": "85.90.0"}, "interface_version": {"proto version": 6}}]
    text = "$ amd-smi static --json\n" + json.dumps({"cpu_data": cpus, "gpu_data": gpus}, indent=4) + "\n"
    yield Variant("amd-smi-json", f"26.x static: cpu_data and gpu_data of {n} GPUs", text,
                  (("len(gpus)", n), ("len(cpus)", 1), (f"gpus[gpu={n - 1}].bus.bdf", gpus[-1]["bus"]["bdf"])), count=n)
    metric = [{"gpu": i, "bdf": g["bus"]["bdf"], "link_metrics": {
        "bit_rate": {"value": 32, "unit": "Gb/s"}, "max_bandwidth": {"value": 512, "unit": "Gb/s"}, "link_type": "XGMI",
        "links": [{"gpu": k, "bdf": h["bus"]["bdf"], "read": {"value": rng.randrange(10**6), "unit": "KB"},
                   "write": {"value": 0, "unit": "KB"}} for k, h in enumerate(gpus)]}} for i, g in enumerate(gpus)]
    status = [{"gpu": i, "bdf": g["bus"]["bdf"], "link_status": ["U"] * (n - 1) + ["D"] * (8 - n)}
              for i, g in enumerate(gpus)]
    text = json.dumps({"xgmi_metric": [metric], "link_status": status}, indent=4) + "\n"
    yield Variant("amd-smi-json", f"26.x xgmi -m -l: xgmi_metric and link_status of {n} GPUs", text,
                  (("len(gpus)", n), ("gpus[gpu=1].link_metrics.links[1].read.value",
                                      metric[1]["link_metrics"]["links"][1]["read"]["value"]),
                   ("len(link_status)", n)), count=n)
    version = [{"tool": "AMDSMI Tool", "version": "26.1.0+7d0d0b4", "amdsmi_library_version": "26.1.0",
                "rocm_version": "7.1.0", "amdgpu_version": "6.16.6", "amd_hsmp_driver_version": "N/A"}]
    yield Variant("amd-smi-json", "version --json", "$ amd-smi version --json\n" + json.dumps(version, indent=4) + "\n",
                  (("len(gpus)", 0), ("version.rocm_version", "7.1.0")))
    half = [{"gpu": i, "power": {"socket_power": {"value": rng.randrange(100, 750), "unit": "W"}}} for i in range(2)]
    del half[0]["power"]["socket_power"]["unit"]  # unit_format writes both: a value alone is no amd-smi output
    yield Variant("amd-smi-json", "a value without its unit in a whole document", json.dumps(half, indent=4) + "\n",
                  (("len(gpus)", 2),), fails=True, finding="power.socket_power: a value without its unit")
    foreign = [*gpus[:2], {"gpu": 2, "hostname": "node7", "owner": "ops"}]
    yield Variant("amd-smi-json", "a record no amd-smi command prints among its GPUs", json.dumps(foreign, indent=4) + "\n",
                  (("len(gpus)", 2),), fails=True, finding="device record 3 of 3 is no amd-smi record")


# amd-smi's failure prints (ROCm/amdsmi amdsmi_cli): its init's logging.error before the CLI's
# basicConfig (the root logger's 'LEVEL:name:' form), and the exceptions amdsmi_cli.py's
# _print_error prints alone (amdsmi_cli_exceptions.py: '<message> Error code: <value>'; in
# --json the json_message {"error", "code"}), each instead of the command's output
FAILURES = (
    ("ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)",
     "Unable to detect any GPU devices"),
    ("ERROR:root:Unable to get devices, driver not initialized (amdgpu not found in modules)",
     "driver not initialized"),
    ("Can not find a device: GPU '9' Error code: -3", "Can not find a device"),
    ("AMDSMI has returned error '-1007' - 'API call failed' Error code: -1007", "API call failed"),
    ("Command 'xgmi' is not supported on the system. Run '--help' for more info. Error code: -7",
     "not supported on the system"),
)


def failed(view: str, rng: random.Random, command: str, empty: str) -> Iterator[Variant]:
    """Two of amd-smi's failure prints, each alone (with the command line half the time): no
    value read (``empty`` holds none), the tool's line named, exit 1."""
    for line, said in rng.sample(FAILURES, 2):
        cmd = [f"$ amd-smi {command}"] if rng.random() < 0.5 else []
        yield Variant(view, f"failed: {said}", "\n".join(cmd + [line]) + "\n", ((empty, 0),), fails=True, finding=said)


@generator("amd-smi")
def amd_smi_failed(rng: random.Random) -> Iterator[Variant]:
    yield from failed("amd-smi", rng, "static --bus", "len(gpus)")


@generator("amd-smi-json")
def amd_smi_json_failed(rng: random.Random) -> Iterator[Variant]:
    for line, said in rng.sample(FAILURES[2:], 2):
        message, code = line.rsplit(" Error code: ", 1)
        text = json.dumps({"error": message, "code": int(code)}) + "\n"
        yield Variant("amd-smi-json", f"failed: {said}", text, (("len(gpus)", 0),), fails=True, finding=said)
    # a reader's paste of the document's middle (harvest7's ajean capture starts inside "clock"): refused
    gpus = [{"gpu": i, "clock": {f"gfx_{k}": {"clk": {"value": 100 * k, "unit": "MHz"}, "clk_locked": "N/A"}
                                 for k in range(4)}} for i in range(2)]
    lines = json.dumps(gpus, indent=4).split("\n")
    inside = rng.randrange(4, 12)
    yield Variant("amd-smi-json", "a fragment from inside a GPU's clock", "\n".join(lines[inside:]) + "\n",
                  (("len(gpus)", 0),), fails=True, finding="a fragment starting inside an object")


@generator("amd-smi")
def amd_smi_summary(rng: random.Random) -> Iterator[Variant]:
    """'amd-smi' with no command (26.x): the GPU box (two rows a GPU, '|---+---|' between them,
    '+---+---+' after the last), then the Processes box ('No running processes found' or a row
    per process); the VBIOS line from 26.2 on (sncheck.vendors.amd.amd_smi_summary)."""
    bar = "+" + "-" * 78 + "+"
    for n, vbios in ((1, True), (4, False)) + (((8, True),) if ALL else ()):
        lines = [bar, f"| {'AMD-SMI 26.2.1+fc0010cf6a    amdgpu version: 6.16.13  ROCm version: 7.2.0':<76} |"]
        lines += [f"| {'VBIOS version: 00107962':<76} |"] if vbios else []
        lines += [f"| {'Platform: Linux Baremetal':<76} |", "|" + "-" * 37 + "+" + "-" * 40 + "|",
                  "| BDF                        GPU-Name | Mem-Uti   Temp   UEC       Power-Usage |",
                  "| GPU  HIP-ID  OAM-ID  Partition-Mode | GFX-Uti    Fan               Mem-Usage |",
                  "|" + "=" * 37 + "+" + "=" * 40 + "|"]
        values: list[tuple[str, object]] = [("format", "summary"), ("len(gpus)", n), ("rocm_version", "7.2.0")]
        for g in range(n):
            bdf, temp, used = f"0000:{0x0d + 0x18 * g:02x}:00.0", rng.randrange(30, 90), rng.randrange(100, 290000)
            power = rng.choice((rng.randrange(40, 1400), None))  # 'N/A/1400 W': no power read, its cap
            shown = f"{power if power is not None else 'N/A'}/1400 W"
            lines += [f"| {bdf} {'AMD Instinct MI355X':>22} | {'0 %':<8} {f'{temp} °C':>5}   0 {shown:>17} |",
                      f"| {g:>3} {g:>7} {g + 1:>7} {'SPX/NPS1':>15} | {'0 %':<8} {'N/A':<5} {f'{used}/294896 MB':>24} |",
                      ("|" + "-" * 37 + "+" + "-" * 40 + "|") if g + 1 < n else ("+" + "-" * 37 + "+" + "-" * 40 + "+")]
            values += [(f"gpus[gpu={g}].BDF", bdf), (f"gpus[gpu={g}].temp_C", temp), (f"gpus[gpu={g}].power_W", power),
                       (f"gpus[gpu={g}].mem_used_MB", used)]
        lines += [bar, f"| {'Processes:':<76} |",
                  "|  GPU        PID  Process Name          GTT_MEM  VRAM_MEM  MEM_USAGE     CU % |",
                  "|" + "=" * 78 + "|"]
        if rng.random() < 0.5:
            lines.append(f"| {' No running processes found':<76} |")
        else:
            lines.append("|    0      36750  python3.12             2.0 MB    9.3 GB     9.5 GB  N/A     |")
            values.append(("processes[0].pid", 36750))
        lines.append(bar)
        yield Variant("amd-smi", f"summary {n} GPUs", "\n".join(lines) + "\n", tuple(values), count=n)
