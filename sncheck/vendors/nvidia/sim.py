"""nvidia-smi and dcgmi output for a simulated host, rendered from real captures.

The interface is :mod:`sncheck.vendors.sim`: ``render(command, state)``. An NVL72 tray
(platform ``nvidia-nvl72``) is rendered by :mod:`.sim_fabric`; ``ibstat`` of an
HGX-class host by :mod:`sncheck.vendors.infiniband.sim`; the rest here.

The simulated host is the HGX H100 of the full ``nvidia-smi -q`` capture
``nvidia-smi-q/03_535.161.08_8xH100_full_hw_slowdown_power_brake_active.txt``: card i
gets GPU block i mod 8 of that capture (its serial and UUID), with a bus id unique
per card; a card past the capture's eight (a 16-card host) gets its block's UUID with the
last group counted on by its lap (``_uuid``): one machine never lists a UUID twice. That capture has HW Slowdown and HW Power Brake active on every GPU
(a real fault); a healthy card shows them Not Active. What each fault changes:

* ``ecc_uncorrectable`` (count): ``ECC Errors`` Volatile and Aggregate ``DRAM
  Uncorrectable`` read ``count``, and the kernel log (:func:`render_kernel_log`) holds an
  Xid 48 for each;
* ``remap_pending``: the card's ``Remapped Rows`` section is the one of the A100
  capture ``nvidia-smi-q/02_a100_ecc_dram_correctable_177_remap_pending_elided.txt``
  (Correctable Error 1, Pending Yes), and the kernel log holds an Xid 63;
* ``thermal_throttle``: ``HW Slowdown`` and ``HW Thermal Slowdown`` Active;
* ``nvlink_down`` (links): the card's last ``links`` links print ``<inactive>`` in
  ``nvidia-smi nvlink -s``; with every link down the card prints the NVML line of
  ``nvidia-smi-nvlink/02_status_a100_all_links_inactive_error.txt``.

``topo -m`` of a platform with a NIC per GPU (HGX) adds NIC columns, rows and legend in
the layout of ``nvidia-smi-topo/03_a10_4gpu_pcie_sys_only_2nics.txt``: NIC i at PIX to
GPU i (its PCIe switch), SYS to the rest. ``nvlink -s`` uses the line layout of ``nvidia-smi-nvlink/05_status_a100_8gpu_12links_25GBs.txt``
with the H100's 18 links at 26.562 GB/s; ``nvlink -e`` the layout of
``nvidia-smi-nvlink/04_errors_h100_18links_elided.txt`` (all counters 0); ``topo -m`` the
layout of ``nvidia-smi-topo/01_h100_8gpu_nv18_no_nics_spaces.txt``; ``dcgmi diag`` replays
``dcgmi-diag/01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt``. No real capture of
``--query-gpu`` CSV exists; its lines are made from the same -q blocks, one per GPU,
in the field order of :data:`sncheck.vendors.nvidia.nvidia_smi.QUERY_GPU_FIELDS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

from sncheck.vendors.infiniband import sim as infiniband_sim
from sncheck.vendors.sim import HostState, ToolOutput, capture
from sncheck.vendors.nvidia import sim_fabric
from sncheck.vendors import registry

Q_CAPTURE = "nvidia-smi-q/03_535.161.08_8xH100_full_hw_slowdown_power_brake_active.txt"
REMAP_CAPTURE = "nvidia-smi-q/02_a100_ecc_dram_correctable_177_remap_pending_elided.txt"
NVLINK_S_CAPTURE = "nvidia-smi-nvlink/05_status_a100_8gpu_12links_25GBs.txt"
NVLINK_DOWN_CAPTURE = "nvidia-smi-nvlink/02_status_a100_all_links_inactive_error.txt"
NVLINK_E_CAPTURE = "nvidia-smi-nvlink/04_errors_h100_18links_elided.txt"
TOPO_CAPTURE = "nvidia-smi-topo/01_h100_8gpu_nv18_no_nics_spaces.txt"
DCGMI_CAPTURE = "dcgmi-diag/01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt"
H100_LINKS = 18
H100_LINK_GBPS = "26.562"
_KEY = re.compile(r"^(\s*)([^:]+?)\s*:\s*(.*)$")


# --------------------------------------------------------------------------- -q blocks

@dataclass(frozen=True)
class _Block:
    """A GPU block of the capture, and where each ``key`` line sits, by section path."""

    lines: tuple[str, ...]
    at: dict[tuple[str, ...], int]  # (section..., key) -> line index

    def find(self, *path: str) -> int:
        """The index of the line ``path[-1]`` inside the innermost sections ``path[:-1]``."""
        hits = [i for p, i in self.at.items() if p[-1] == path[-1] and _within(p[:-1], path[:-1])]
        if len(hits) != 1:
            raise LookupError(f"{'/'.join(path)}: {len(hits)} matches in the capture")
        return hits[0]

    def value(self, *path: str) -> str:
        return self.lines[self.find(*path)].split(":", 1)[1].strip()


def _within(have: tuple[str, ...], want: tuple[str, ...]) -> bool:
    """``want`` is a (not necessarily contiguous) subsequence of ``have``."""
    it = iter(have)
    return all(any(w == h for h in it) for w in want)


def _index(lines: list[str]) -> _Block:
    at: dict[tuple[str, ...], int] = {}
    stack: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        m = _KEY.match(line)
        key = m.group(2).strip() if m else line.strip()
        at[tuple(name for _, name in stack) + (key,)] = i
        if not m or not m.group(3).strip():
            stack.append((indent, key))
    return _Block(tuple(lines), at)


@lru_cache(maxsize=1)
def _q_parts() -> tuple[str, tuple[_Block, ...]]:
    """The -q capture's header (up to Attached GPUs) and its GPU blocks."""
    text = capture(Q_CAPTURE)
    head, _, rest = text.partition("\nGPU ")
    blocks = tuple(_index(("GPU " + b.rstrip("\n")).splitlines()) for b in rest.split("\n\nGPU "))
    return head.rstrip("\n"), blocks


@lru_cache(maxsize=1)
def _remap_pending_section() -> tuple[str, ...]:
    return tuple(_section(capture(REMAP_CAPTURE).splitlines(), "Remapped Rows"))


def _section(lines: list[str] | tuple[str, ...], name: str) -> list[str]:
    """The lines of a ``    Name`` section and its deeper-indented body."""
    for i, line in enumerate(lines):
        if line.strip() == name:
            depth = len(line) - len(line.lstrip())
            end = i + 1
            while end < len(lines) and lines[end].strip() and len(lines[end]) - len(lines[end].lstrip()) > depth:
                end += 1
            return list(lines[i:end])
    raise LookupError(f"no {name!r} section in the capture")


def _put(lines: list[str], i: int, value: str) -> None:
    """Set the value of ``key : value`` line ``i``, keeping its layout."""
    lines[i] = lines[i][:lines[i].index(":")] + ": " + value


def _bus_id(index: int) -> str:
    return f"0000{index // 16:04X}:{(0x19 + 0x11 * index) & 0xFF:02X}:00.0"


def _template(index: int) -> _Block:
    blocks = _q_parts()[1]
    return blocks[index % len(blocks)]


def _uuid(index: int) -> str:
    """Card ``index``'s UUID: its block's, the last group moved on by the lap (0 for the first eight)."""
    uuid = _template(index).value("GPU UUID")
    lap = index // len(_q_parts()[1])
    if not lap:
        return uuid
    head, last = uuid.rsplit("-", 1)
    return f"{head}-{(int(last, 16) + lap) % (1 << 4 * len(last)):0{len(last)}x}"


def _gpu_block(state: HostState, index: int) -> list[str]:
    t = _template(index)
    lines = list(t.lines)
    bus = _bus_id(index)
    lines[0] = f"GPU {bus}"
    _put(lines, t.find("GPU UUID"), _uuid(index))
    _put(lines, t.find("PCI", "Bus Id"), bus)
    _put(lines, t.find("PCI", "Bus"), f"0x{bus[9:11]}")
    _put(lines, t.find("Minor Number"), str(index))
    # a healthy card: no slowdown (the capture's GPUs were power-braked)
    for reason in ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown"):
        _put(lines, t.find("Clocks Event Reasons", reason), "Not Active")
    if state.card_faults(index, "thermal_throttle"):
        _put(lines, t.find("Clocks Event Reasons", "HW Slowdown"), "Active")
        _put(lines, t.find("Clocks Event Reasons", "HW Thermal Slowdown"), "Active")
    count = sum(int(f.count or 1) for f in state.card_faults(index, "ecc_uncorrectable"))
    if count:
        for part in ("Volatile", "Aggregate"):
            _put(lines, t.find("ECC Errors", part, "DRAM Uncorrectable"), str(count))
    if state.card_faults(index, "remap_pending"):
        start = t.find("Remapped Rows")
        lines[start:start + len(_section(t.lines, "Remapped Rows"))] = _remap_pending_section()
    return lines


def render_query(state: HostState) -> str:
    head, _ = _q_parts()
    head_lines = head.splitlines()
    _put(head_lines, next(i for i, ln in enumerate(head_lines) if ln.startswith("Attached GPUs")),
         str(state.cards))
    out = head_lines
    for i in range(state.cards):
        out = out + _gpu_block(state, i) + [""]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- the kernel log

# The driver's Xid lines as NVIDIA/open-gpu-kernel-modules prints them (kernel_rc.c XID_PRINT_WITH_ATTR: 'NVRM: Xid
# (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s'; a fault no process caused: pid='<unknown>', name=<unknown>).
# Xid 48's message as the 535/550 drivers print it (real captures: harvest's 550.90.07 DBE, 'in the framebuffer at
# physAddr 0x%llx partition %d, subpartition %d.'); Xid 63's the RAS events' ECC_ROW_REMAP_PENDING_INTR_XID_MESSAGE_FMT
# ('Row Remapper: New row (0x%016llx) marked for remapping, reset gpu to activate.'), the same captures' next line
_XID = "NVRM: Xid (PCI:{bus}): {code}, pid='<unknown>', name=<unknown>, {msg}"
_DBE = ("An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x{addr:x} "
        "partition {part}, subpartition {sub}.")
_REMAP = "Row Remapper: New row (0x{addr:016x}) marked for remapping, reset gpu to activate."
KERNEL_BOOT = 1767225600  # the simulated boot (2026-01-01T00:00:00Z): a run's reports are placed the same every run


def kernel_lines(state: HostState) -> list[str]:
    """The Xid lines the driver printed for the host's card faults since it booted: one Xid 48 per
    uncorrectable DRAM error (``ecc_uncorrectable``'s count), an Xid 63 for a row marked for remapping
    (``remap_pending``), at each card's bus id as ``nvidia-smi -q`` lists it."""
    out = []
    tray = sim_fabric.tray_bus_ids() if state.platform == sim_fabric.PLATFORM else ()
    for i in range(state.cards):
        bus = tray[i] if i < len(tray) else _bus_id(i)  # as the host's listing prints it (-q -x on a GB200 tray)
        pci = f"{bus[-12:-8]}:{bus[-7:-5]}:{bus[-4:-2]}".lower()
        for n in range(sum(int(f.count or 1) for f in state.card_faults(i, "ecc_uncorrectable"))):
            out.append(_XID.format(bus=pci, code=48, msg=_DBE.format(addr=0x12bac1c3e0 + 0x1000 * n, part=2, sub=n % 2)))
        if state.card_faults(i, "remap_pending"):
            out.append(_XID.format(bus=pci, code=63, msg=_REMAP.format(addr=0x12bac1c3e0)))
    return out


def render_kernel_log(state: HostState, first: bool = True) -> str:
    """The host's kernel log as sncheck's read prints it (kernel_log.read_command: the boot and the
    clock, ``dmesg --time-format iso``'s lines, the end marker); ``first``: the first read of the run,
    which finds the lines printed since boot; a later read starts after them and finds none."""
    lines = kernel_lines(state) if first else []
    stamp = [datetime.fromtimestamp(KERNEL_BOOT + 600 + i, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S,000000+00:00")
             for i in range(len(lines))]
    body = "".join(f"{t} {line}\n" for t, line in zip(stamp, lines))
    return (f"# boot: {KERNEL_BOOT}\n# now: {KERNEL_BOOT + 3600}\n# source: dmesg\n{body}# end of kernel log\n")


# --------------------------------------------------------------------------- other commands

def render_query_gpu(state: HostState) -> str:
    driver = next(ln.split(":", 1)[1].strip() for ln in _q_parts()[0].splitlines()
                  if ln.startswith("Driver Version"))
    out = []
    for i in range(state.cards):
        t = _template(i)
        ecc = sum(int(f.count or 1) for f in state.card_faults(i, "ecc_uncorrectable"))
        out.append(", ".join([
            str(i), t.value("Product Name"), _uuid(i), _bus_id(i),
            t.value("FB Memory Usage", "Total"), driver,
            t.value("PCIe Generation", "Current"), t.value("PCIe Generation", "Max"),
            t.value("Link Width", "Current").rstrip("x"), t.value("Link Width", "Max").rstrip("x"),
            t.value("GPU Current Temp").split()[0], t.value("GPU Power Readings", "Power Draw"), str(ecc)]))
    return "\n".join(out) + "\n"


def _gpu_header(index: int) -> str:
    t = _template(index)
    return f"GPU {index}: {t.value('Product Name')} (UUID: {_uuid(index)})"


@lru_cache(maxsize=1)
def _link_indent() -> str:
    line = next(ln for ln in capture(NVLINK_S_CAPTURE).splitlines() if "Link 0:" in ln)
    return line[: len(line) - len(line.lstrip())]


def render_nvlink_status(state: HostState) -> str:
    pad = _link_indent()
    all_down = capture(NVLINK_DOWN_CAPTURE).splitlines()[1]  # the NVML line under the GPU line
    out = []
    for i in range(state.cards):
        out.append(_gpu_header(i))
        down = sum(int(f.links or 1) for f in state.card_faults(i, "nvlink_down"))
        if down >= H100_LINKS:
            out.append(all_down)
            continue
        for k in range(H100_LINKS):
            speed = "<inactive>" if k >= H100_LINKS - down else f"{H100_LINK_GBPS} GB/s"
            out.append(f"{pad}Link {k}: {speed}")
    return "\n".join(out) + "\n"


def render_nvlink_errors(state: HostState) -> str:
    counters = [ln.split(":", 2)[1].strip() for ln in capture(NVLINK_E_CAPTURE).splitlines()
                if ln.strip().startswith("Link 0:")]
    pad = _link_indent()
    out = []
    for i in range(state.cards):
        out.append(_gpu_header(i))
        for k in range(H100_LINKS):
            out += [f"{pad}Link {k}: {c}: 0" for c in counters]
            out.append("")
    return "\n".join(out) + "\n"


def render_topo(state: HostState) -> str:
    lines = capture(TOPO_CAPTURE).splitlines()
    link = lines[1].split()[2]  # "NV18"
    affinity = [ln.split()[-2:] for ln in lines[1:]]
    n = state.cards
    nics = n if _nic_per_gpu(state) else 0
    cell = 8
    head = "".join(f"GPU{j}".ljust(cell) for j in range(n)) + "".join(f"NIC{j}".ljust(cell) for j in range(nics))
    out = [" " * cell + head + "CPU Affinity    NUMA Affinity"]
    for i in range(n):
        cpus, numa = affinity[i % len(affinity)] if i < len(affinity) else affinity[-1]
        cells = "".join((" X" if i == j else link).ljust(cell) for j in range(n))
        cells += "".join(("PIX" if i == j else "SYS").ljust(cell) for j in range(nics))
        out.append(f"GPU{i}".ljust(cell) + cells + cpus.ljust(16) + numa)
    # NIC rows and the NIC legend in the layout of nvidia-smi-topo/03_a10_4gpu_pcie_sys_only_2nics.txt
    for i in range(nics):
        cells = "".join(("PIX" if i == j else "SYS").ljust(cell) for j in range(n))
        cells += "".join((" X" if i == j else "SYS").ljust(cell) for j in range(nics))
        out.append(f"NIC{i}".ljust(cell) + cells.rstrip())
    out += ["", "Legend:", ""] + [f"  {k:<4} = {what}" for k, what in TOPO_LEGEND]  # under every matrix
    if nics:
        out += ["", "NIC Legend:", ""] + [f"  NIC{i}: mlx5_{i}" for i in range(nics)]
    return "\n".join(out) + "\n"


# topo -m's Legend as nvidia-smi prints it (nvidia-smi-topo/03_a10_4gpu_pcie_sys_only_2nics.txt)
TOPO_LEGEND = (
    ("X", "Self"),
    ("SYS", "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)"),
    ("NODE", "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node"),
    ("PHB", "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"),
    ("PXB", "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)"),
    ("PIX", "Connection traversing at most a single PCIe bridge"),
    ("NV#", "Connection traversing a bonded set of # NVLinks"),
)


def _nic_per_gpu(state: HostState) -> bool:
    """An HGX platform has a NIC per GPU behind the GPU's own PCIe switch (rail i: mlx5_i,
    as ``ibstat`` renders it)."""
    if state.platform is None:
        return False
    return bool(registry.platform(state.platform).params.get("nic_per_gpu"))


def render_dcgmi_diag(state: HostState) -> str:  # noqa: ARG001 -- the renderer interface: a fixed capture
    return capture(DCGMI_CAPTURE)


def render_fabric_manager(state: HostState) -> str:  # noqa: ARG001 -- the renderer interface: a fixed capture
    return "active\n"  # systemctl is-active nvidia-fabricmanager


_RENDER = {
    "query_gpu": render_query_gpu, "topo": render_topo, "topo_sanity": render_topo,
    "fabric_manager": render_fabric_manager, "nvlink_status": render_nvlink_status,
    "nvlink_errors": render_nvlink_errors, "query": render_query, "dcgmi_diag": render_dcgmi_diag,
}


COMMANDS = tuple(_RENDER)  # what an HGX-class host renders here

_HGX = {
    "ecc_uncorrectable": "nvidia-smi -q: the card's Volatile and Aggregate DRAM Uncorrectable = count; "
                         "--query-gpu's ECC column; the kernel log: an Xid 48 (DBE) per error",
    "remap_pending": "nvidia-smi -q: the card's Remapped Rows section of a real A100 pending remap; the kernel log: "
                     "an Xid 63 (row marked for remapping)",
    "nvlink_down": "nvidia-smi nvlink -s: the card's last `links` links `<inactive>` (all: the NVML error line)",
    "ib_port_down": "ibstat: the rail's CA (`mlx5_<port-1>`) State Down, Physical state Polling",
    "thermal_throttle": "nvidia-smi -q: the card's HW Slowdown and HW Thermal Slowdown Active",
}
# platform -> fault type -> how its tools show it (the README's table); a pair not listed
# is refused when the fault plan loads (sncheck.config.faultplan)
ACTED: dict[str | None, dict[str, str]] = {None: _HGX, "nvidia-hgx": _HGX, **sim_fabric.ACTED}
RENDERED_CARDS: dict[str | None, int | None] = {None: None, "nvidia-hgx": None, **sim_fabric.RENDERED_CARDS}


def render(command: str, state: HostState) -> ToolOutput | None:
    """The output of fact command ``command`` on the simulated host ``state`` (None: no
    output for that command on this platform)."""
    if state.platform == sim_fabric.PLATFORM:
        if command in ("topo", "nvlink_errors"):  # no GB200 capture of these: the tray's cards, H100 layout
            return ToolOutput(0, _RENDER[command](state))
        return sim_fabric.render(command, state)
    if command == "ibstat":
        return infiniband_sim.render(command, state)
    return ToolOutput(0, _RENDER[command](state)) if command in _RENDER else None
