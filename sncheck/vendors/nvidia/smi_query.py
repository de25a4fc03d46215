"""Parse ``nvidia-smi -q`` (the ``nvidia-smi-q`` view): whole, ``-d`` sections, or cut.

``parse_query``::

    {"tool": "nvidia-smi-q", "driver_version": "535.161.08", "cuda_version": "12.2",
     "attached_gpus": 8,
     "gpus": [{"bus_id": "00000000:19:00.0", "product_name": "NVIDIA H100 80GB HBM3",
               "uuid": "GPU-...",
               "mig": {"current": "Enabled", "pending": "Enabled", "devices": 5},  # null: no MIG Mode
               "temperature": {"gpu_C": 59, "memory_C": 70, "slowdown_C": 87, "shutdown_C": 92},
               "power": {"draw_W": 629.45, "instant_W": 631.0, "limit_W": 700.0,
                         "default_limit_W": 700.0, "max_limit_W": 700.0},
               "memory": {"total_MiB": 81559, "reserved_MiB": 328, "used_MiB": 1, "free_MiB": 81230},
               "utilization": {"gpu_pct": 0, "memory_pct": 0, "encoder_pct": 0, "decoder_pct": 0},
               "pcie": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16,
                        "replays_since_reset": 67,
                        "below_max": ["width x8 of x16"]},   # a generation or width below its maximum
               "ecc": {"mode_current": "Enabled", "mode_pending": "Enabled",
                       "volatile": {"SRAM Correctable": 0, "DRAM Correctable": 0, ...},
                       "aggregate": {...}},          # nested counters keyed "Single Bit/Total"
               "retired_pages": {"single_bit_ecc": null, "double_bit_ecc": null, "pending": null},
               "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": false,
                                 "failure": false, "histogram": {"Max": 2560, ...}},  # null if N/A
               "performance_state": "P0",
               "clock_reasons": {"section": "Clocks Event Reasons",   # or "Clocks Throttle Reasons"
                                 "reasons": {"Idle": false, "HW Slowdown": true, ...},
                                 "active": ["HW Slowdown", "HW Power Brake Slowdown"],
                                 "counters_us": {"SW Power Capping": 1202176, ...}},  # null: not printed
               "fabric": {...}, "platform": {...}}],
     "errors": []}                    # e.g. "8 GPUs attached but 1 listed (truncated output)"

An excerpt that starts inside one GPU's section (its first lines that GPU's fields, no ``GPU
<bus id>`` line above them) reads as that GPU, ``bus_id`` null, and is cut short.

A section the output lacks is null; reason names are kept as printed. The listing must be
one that can be true, or it is an error (exit 1 in ``sncheck parse``):

- as many ``GPU <bus id>`` sections as ``Attached GPUs``, with no bus id or UUID twice;
- a full listing (its sections carry ``Product Name``) reaches ``Processes``, the last
  section of every driver (and ``Capabilities`` where the driver prints it: 560 on), so a
  listing cut mid-way says "cut short" instead of leaving ECC or remapped rows N/A;
- every GPU lists the same sections as the first one, and a section's last entry is there
  (``Pending Page Blacklist`` of Retired Pages, the ``None`` row of the remap histogram).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors.nvidia.smi_select import selected_gpus
from sncheck.vendors.nvidia.smi_values import (
    ELISION,
    TOOL_ERROR,
    active,
    clique_value,
    int_or_none,
    int_value,
    leading_int,
    na_or,
    scalar,
    text_value,
    unknown_flags,
    yes_no,
)

@dataclass
class _Node:
    key: str
    value: str | None
    indent: int
    children: list[_Node] = field(default_factory=list)

    def get(self, *path: str) -> _Node | None:
        node: _Node | None = self
        for name in path:
            node = (
                next((c for c in node.children if c.key == name), None)
                if node
                else None
            )
        return node

    def value_at(self, *path: str) -> str | None:
        node = self.get(*path)
        return node.value if node else None


# fields only a GPU's section holds (a listing's header has Timestamp, Driver Version, CUDA Version,
# Attached GPUs): two of them at the top of an excerpt say it starts inside a GPU's section
_GPU_FIELDS = frozenset(("Product Name", "Product Brand", "GPU UUID", "Serial Number", "Minor Number",
                         "VBIOS Version", "MultiGPU Board", "Board ID", "GPU Part Number", "Module ID",
                         "Inforom Version", "PCI", "FB Memory Usage", "BAR1 Memory Usage", "Performance State",
                         "ECC Errors", "Retired Pages", "Remapped Rows", "Temperature", "GPU Power Readings",
                         "Power Readings", "Clocks", "Utilization", "Processes"))
GPU_HEADER = re.compile(
    r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])$"
)
_KEY_VALUE = re.compile(r"^(.+?)\s*:(?:\s+(.*))?$")
_INDENT_STEP = 4  # nvidia-smi -q indents each level by four spaces
_CLOCK_SECTIONS = ("Clocks Event Reasons", "Clocks Throttle Reasons")


def parse_query(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi -q`` (whole or ``-d`` sections, also truncated or excerpted)."""
    root, tool_errors = build_tree(text)
    gpu_nodes = [c for c in root.children if GPU_HEADER.match(c.key)]
    attached = int_or_none(root.value_at("Attached GPUs") or "")
    errors = list(tool_errors)
    if not gpu_nodes and attached is None and len({c.key for c in root.children} & _GPU_FIELDS) >= 2:
        # an excerpt that starts inside one GPU's section: its fields are that GPU's (bus id unknown)
        gpu_nodes = [_Node("GPU (excerpt)", None, 0, root.children)]
        errors.append("the excerpt starts inside a GPU's section (no 'GPU <bus id>' line above its fields): "
                      "output cut short")
    if not gpu_nodes and attached is None and not tool_errors:
        raise ParseError("no 'GPU <bus id>' sections found", tool="nvidia-smi-q")
    selected = selected_gpus(text)
    if attached is not None and min(attached, selected or attached) > len(gpu_nodes):
        errors.append(
            f"{attached} GPUs attached" + (f", {selected} selected by the command's -i," if selected else "")
            + f" but {len(gpu_nodes)} listed (truncated or excerpted output)"
        )
    gpus = [_gpu_summary(node) for node in gpu_nodes]
    errors += impossible_listing(attached, gpus)
    driver, cuda = _version(root, "KMD Version", "Driver Version"), _version(root, "CUDA UMD Version", "CUDA Version")
    errors += _cut_short(gpu_nodes, _major(driver))
    errors += [e for node in gpu_nodes for e in unknown_flags(node)]
    return {
        "tool": "nvidia-smi-q",
        "driver_version": na_or(driver, str),
        "cuda_version": na_or(cuda, str),
        "attached_gpus": attached,
        "gpus": gpus,
        "errors": errors,
    }


def _version(root: _Node, *keys: str) -> str | None:
    """The first of ``keys`` listed, without a deprecation note: driver 610 prints 'KMD Version'
    and 'CUDA UMD Version', and 'Driver Version : 610.57.04 [Deprecated; will be removed in CUDA
    14.0. Use KMD Version instead]' before them."""
    value = next((v for k in keys if (v := root.value_at(k)) is not None), None)
    return value.split(" [", 1)[0].strip() if value is not None else None


def impossible_listing(attached: int | None, gpus: list[dict[str, Any]]) -> list[str]:
    """More sections than attached GPUs, or a bus id or UUID listed twice: not one machine."""
    out = []
    if attached is not None and attached < len(gpus):
        out.append(f"{len(gpus)} GPU sections for {attached} attached GPUs: not one listing")
    for key in ("bus_id", "uuid"):
        seen = [g[key] for g in gpus if g.get(key)]
        twice = sorted({v for v in seen if seen.count(v) > 1})
        if twice:
            out.append(f"{key} listed twice: {', '.join(twice[:3])}" + (f" (+{len(twice) - 3})" if len(twice) > 3 else ""))
    return out


# The last entry of a section, where the section is listed: without it the listing was cut.
_LAST_ENTRY = {"Retired Pages": ("Pending Page Blacklist", "Pending Page Retirement", "Pending"),
               "Remapped Rows": ("Bank Remap Availability Histogram",),
               "Bank Remap Availability Histogram": ("None",),
               "ECC Errors": ("Aggregate", "Volatile"),  # a MIG Device's: Volatile only (_ecc_cut_short: a GPU's)
               "ECC Mode": ("Pending",), "MIG Mode": ("Pending",),
               "Aggregate Uncorrectable SRAM Sources": ("SRAM Other",),
               "FB Memory Usage": ("Free",), "BAR1 Memory Usage": ("Free",),
               "Utilization": ("Decoder",),  # newer drivers add JPEG and OFA after it
               "Capabilities": ("EGM",)}


# A section printed only with the one after it, in a full listing and under its -d alike (-d ECC
# prints ECC Mode then ECC Errors, -d MEMORY FB then BAR1 Memory Usage): the first alone was cut
# between them (a one-GPU -d ECC cut after ECC Mode reads as whole otherwise).
_FOLLOWED_BY = {"ECC Mode": "ECC Errors", "FB Memory Usage": "BAR1 Memory Usage"}


def _shape(node: _Node, depth: int = 0) -> set[str]:
    """The section names of a GPU listing (two levels: per-process blocks and MIG devices vary)."""
    names = set()
    for c in node.children:
        if c.key in ("Processes", "MIG Device") or c.key.startswith("Process ID"):
            continue
        names.add(c.key)
        if depth < 1:
            names |= {f"{c.key}/{n}" for n in _shape(c, depth + 1)}
    return names


def _major(version: str | None) -> int | None:
    m = re.match(r"\s*([0-9]+)\.", version or "")
    return int(m.group(1)) if m else None


def _cut_short(gpu_nodes: list[_Node], driver: int | None = None) -> list[str]:
    out: list[str] = []
    first = _shape(gpu_nodes[0]) if gpu_nodes else set()
    for gpu in gpu_nodes:
        where = gpu.key
        full = gpu.get("Product Name") is not None
        if not gpu.children:
            out.append(f"{where}: a GPU section with no entries: output cut short")
        if full and gpu.get("Processes") is None:
            out.append(f"{where}: no 'Processes' section, the last of a full listing: output cut short")
        elif full and driver is not None and driver >= 560 and gpu.get("Capabilities") is None:
            out.append(f"{where}: no 'Capabilities' section, the last of a full listing from driver 560: "
                       "output cut short")
        out += _ecc_cut_short(gpu)
        out += [f"{where}: '{section}' without the '{after}' printed after it: output cut short"
                for section, after in _FOLLOWED_BY.items() if gpu.get(section) and not gpu.get(after)]
        out += _processes_cut_short(gpu)
        if (tail := _last_node(gpu)) is not gpu and tail.value is None and not tail.children:
            out.append(f"{where}: '{tail.key}' ends before its first entry: output cut short")
        by_key: dict[str, list[_Node]] = {}
        for node in _walk(gpu):  # one walk for every section below (a walk per section cost seconds)
            by_key.setdefault(node.key, []).append(node)
        for section, last in _LAST_ENTRY.items():
            for node in by_key.get(section, ()):
                if node.children and not any(node.get(k) is not None for k in last):
                    out.append(f"{where}: '{section}' ends before '{last[0]}': output cut short")
        missing = sorted(first - _shape(gpu))
        if gpu is not gpu_nodes[0] and missing:
            out.append(f"{where}: lacks {', '.join(missing[:3])} that {gpu_nodes[0].key} lists: output cut short")
    return list(dict.fromkeys(out))


def _processes_cut_short(gpu: _Node) -> list[str]:
    """Each process of 'Processes' ends at its 'Used GPU Memory' (after GPU/Compute instance ID,
    Process ID, Type, Name): a last process short of it was cut (the last section of a listing
    before 560's Capabilities, so nothing after it tells the cut)."""
    procs = gpu.get("Processes")
    if procs is None or not procs.children:
        return []
    last = procs.children[-1]
    if last.key == "Process ID" and last.get("Used GPU Memory") is not None:
        return []
    return [f"{gpu.key}: the last process of 'Processes' ends before its 'Used GPU Memory': output cut short"]


def _ecc_cut_short(gpu: _Node) -> list[str]:
    """ECC Errors lists Volatile, then Aggregate with every counter Volatile has (H100 on: the
    split SRAM counters, then 'SRAM Threshold Exceeded' and the 'Aggregate Uncorrectable SRAM
    Sources' section): an Aggregate short of them was cut."""
    errors = gpu.get("ECC Errors")  # the GPU's own (a MIG Device's lists Volatile only)
    if errors is None or (volatile := errors.get("Volatile")) is None:
        return []
    aggregate = errors.get("Aggregate")
    if aggregate is None:
        return [f"{gpu.key}: ECC Errors ends before its Aggregate counters: output cut short"]
    out = []
    lacking = sorted(set(_leaves(volatile) or {}) - set(_leaves(aggregate) or {}))
    if lacking:
        out.append(f"{gpu.key}: ECC Errors' Aggregate lacks {', '.join(lacking[:3])} that Volatile lists: "
                   "output cut short")
    elif volatile.get("SRAM Uncorrectable Parity") is not None and (
            aggregate.get("SRAM Threshold Exceeded") is None or errors.get("Aggregate Uncorrectable SRAM Sources") is None):
        out.append(f"{gpu.key}: ECC Errors ends before its 'SRAM Threshold Exceeded' and 'Aggregate Uncorrectable "
                   "SRAM Sources': output cut short")
    return out


def _last_node(node: _Node) -> _Node:
    """The entry the listing of ``node`` ends with (a section header printed last has no entries)."""
    while node.children:
        node = node.children[-1]
    return node


def _walk(node: _Node) -> list[_Node]:
    """Every node below ``node``, depth first in listing order."""
    found, pending = [], list(reversed(node.children))
    while pending:
        c = pending.pop()
        found.append(c)
        pending.extend(reversed(c.children))
    return found


def build_tree(text: str) -> tuple[_Node, list[str]]:
    """Indentation tree of ``key : value`` lines; a GPU header always hangs off the root."""
    root = _Node("", None, -1)
    stack = [root]
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.expandtabs(4).rstrip()
        body = line.strip()
        if not body or ELISION.match(body) or body.startswith("==="):
            continue
        if TOOL_ERROR.search(body):
            errors.append(body)
            continue
        indent = len(line) - len(line.lstrip())
        if GPU_HEADER.match(body):
            gpu = _Node(body, None, indent)
            root.children.append(gpu)
            stack = [root, gpu]
            continue
        floor = 2 if len(stack) > 1 and GPU_HEADER.match(stack[1].key) else 1
        if floor == 2 and indent <= stack[1].indent:
            # Indented no deeper than its GPU header: keep it in that GPU, at the level of
            # the GPU's first field, so the lines after it are its siblings, not children.
            gpu = stack[1]
            indent = (
                gpu.children[0].indent if gpu.children else gpu.indent + _INDENT_STEP
            )
        while len(stack) > floor and _closes(stack[-1], indent):
            stack.pop()
        m = _KEY_VALUE.match(body)
        node = _Node(m.group(1), m.group(2), indent) if m else _Node(body, None, indent)
        stack[-1].children.append(node)
        stack.append(node)
    return root, errors


def _closes(node: _Node, indent: int) -> bool:
    """Whether a line at ``indent`` is no longer inside ``node``.

    A ``key : value`` line parents only lines a full step deeper ("HW Slowdown : Active"
    over "HW Thermal Slowdown"), so a value line indented a little off does not swallow
    the siblings that follow it.
    """
    if node.indent >= indent:
        return True
    return node.value is not None and indent < node.indent + _INDENT_STEP


# A GPU's identity and modes as -q prints them (key, or section and key) and -q -x (element path),
# under one name each; minor_number and module_id ints, the rest as printed; N/A null.
IDENTITY = {
    "persistence_mode": (("Persistence Mode",), "persistence_mode"),
    "product_brand": (("Product Brand",), "product_brand"),
    "product_architecture": (("Product Architecture",), "product_architecture"),
    "serial_number": (("Serial Number",), "serial"),
    "minor_number": (("Minor Number",), "minor_number"),
    "vbios_version": (("VBIOS Version",), "vbios_version"),
    "board_id": (("Board ID",), "board_id"),
    "gpu_part_number": (("GPU Part Number",), "gpu_part_number"),
    "module_id": (("Module ID",), "gpu_module_id"),
    "gsp_firmware_version": (("GSP Firmware Version",), "gsp_firmware_version"),
    "virtualization_mode": (("GPU Virtualization Mode", "Virtualization Mode"), "gpu_virtualization_mode/virtualization_mode"),
}


def identity(read: Callable[[tuple[str, ...], str], str | None]) -> dict[str, Any]:
    """The :data:`IDENTITY` values of one GPU, ``read`` giving the text at a -q path or -q -x element."""
    out = {}
    for name, (path, element) in IDENTITY.items():
        value = na_or(read(path, element), str)
        out[name] = int_or_none(value) if name in ("minor_number", "module_id") else value
    return out


def _gpu_summary(gpu: _Node) -> dict[str, Any]:
    bus = GPU_HEADER.match(gpu.key)
    return {
        "bus_id": bus.group(1) if bus else None,
        "product_name": na_or(gpu.value_at("Product Name"), str),
        "uuid": na_or(gpu.value_at("GPU UUID"), str),
        **identity(lambda path, _element: gpu.value_at(*path)),
        "mig": _mig(gpu),
        "temperature": _temperature(gpu.get("Temperature")),
        "power": _power(gpu),
        "pcie": _pcie(gpu),
        "memory": _measures(gpu.get("FB Memory Usage"), {"Total": "total_MiB", "Reserved": "reserved_MiB",
                                                         "Used": "used_MiB", "Free": "free_MiB"}),
        "utilization": _measures(gpu.get("Utilization"), {"Gpu": "gpu_pct", "Memory": "memory_pct",
                                                         "Encoder": "encoder_pct", "Decoder": "decoder_pct"}),
        "ecc": _ecc(gpu),
        "retired_pages": _retired_pages(gpu.get("Retired Pages")),
        "remapped_rows": _remapped_rows(gpu.get("Remapped Rows")),
        "performance_state": na_or(gpu.value_at("Performance State"), str),
        "clock_reasons": _clock_reasons(gpu),
        "fabric": fabric_from_text_node(gpu.get("Fabric")),
        "platform": platform_from_text_node(gpu.get("Platform Info")),
    }


def _mig(gpu: _Node) -> dict[str, Any] | None:
    mode = gpu.get("MIG Mode")
    if mode is None:
        return None
    devices = [c for c in gpu.children if c.key == "MIG Device"]
    return {"current": na_or(mode.value_at("Current"), str), "pending": na_or(mode.value_at("Pending"), str),
            "devices": len(devices)}


def measure(value: str | None) -> float | int | None:
    """``59 C``, ``629.45 W``: the number; N/A and anything else null."""
    m = re.fullmatch(r"\s*(-?[0-9]+(?:\.[0-9]+)?)\s*[A-Za-z%]*\s*", value or "")
    if not m:
        return None
    return float(m.group(1)) if "." in m.group(1) else int(m.group(1))


_TEMPERATURES = {"GPU Current Temp": "gpu_C", "Memory Current Temp": "memory_C",
                 "GPU Slowdown Temp": "slowdown_C", "GPU Shutdown Temp": "shutdown_C",
                 "GPU Max Operating Temp": "max_operating_C", "GPU T.Limit Temp": "tlimit_C",
                 # 570 on print the margins to the T.Limit instead of absolute limits
                 "GPU Slowdown T.Limit Temp": "slowdown_tlimit_C", "GPU Shutdown T.Limit Temp": "shutdown_tlimit_C",
                 "GPU Max Operating T.Limit Temp": "max_operating_tlimit_C"}


def _measures(node: _Node | None, names: dict[str, str]) -> dict[str, Any] | None:
    """A section's ``Key : 1995 MiB`` / ``47 %`` entries as numbers, by our names; null without the section."""
    if node is None:
        return None
    return {name: measure(node.value_at(key)) for key, name in names.items() if node.get(key) is not None}


def _temperature(node: _Node | None) -> dict[str, Any] | None:
    if node is None:
        return None
    return {name: measure(node.value_at(key)) for key, name in _TEMPERATURES.items()
            if node.get(key) is not None}


def _power(gpu: _Node) -> dict[str, Any] | None:
    # 535 and on: "GPU Power Readings"; older drivers: "Power Readings" with "Power Draw".
    node = gpu.get("GPU Power Readings") or gpu.get("Power Readings")
    if node is None:
        return None
    first = lambda *keys: next((measure(node.value_at(k)) for k in keys if node.get(k) is not None), None)  # noqa: E731
    return {"draw_W": first("Average Power Draw", "Power Draw"),
            "instant_W": first("Instantaneous Power Draw"),
            "limit_W": first("Current Power Limit", "Power Limit", "Enforced Power Limit"),
            "default_limit_W": first("Default Power Limit"),
            "max_limit_W": first("Max Power Limit")}


def _pcie(gpu: _Node) -> dict[str, Any] | None:
    pci = gpu.get("PCI")
    if pci is None:
        return None
    link = pci.get("GPU Link Info")
    gen = link.get("PCIe Generation") if link else None
    width = link.get("Link Width") if link else None
    out = _pcie_link(pci, gen, width)
    out["below_max"] = below_max(out)
    return out


def below_max(link: dict[str, Any]) -> list[str]:
    """A PCIe link trained below its maximum: ``width x8 of x16``, ``gen 1 of 4``."""
    out = []
    if isinstance(link.get("width_current"), int) and isinstance(link.get("width_max"), int) \
            and link["width_current"] < link["width_max"]:
        out.append(f"width x{link['width_current']} of x{link['width_max']}")
    if isinstance(link.get("gen_current"), int) and isinstance(link.get("gen_max"), int) \
            and link["gen_current"] < link["gen_max"]:
        out.append(f"gen {link['gen_current']} of {link['gen_max']}")
    return out


def _pcie_link(pci: _Node, gen: _Node | None, width: _Node | None) -> dict[str, Any]:
    return {
        "gen_current": int_or_none(gen.value_at("Current") if gen else None),
        "gen_max": int_or_none(gen.value_at("Max") if gen else None),
        "width_current": int_or_none(
            (width.value_at("Current") or "").rstrip("x") if width else None
        ),
        "width_max": int_or_none(
            (width.value_at("Max") or "").rstrip("x") if width else None
        ),
        "replays_since_reset": int_or_none(pci.value_at("Replays Since Reset")),
    }


def _ecc(gpu: _Node) -> dict[str, Any] | None:
    mode, counts = gpu.get("ECC Mode"), gpu.get("ECC Errors")
    if mode is None and counts is None:
        return None
    return {
        "mode_current": na_or(mode.value_at("Current"), str) if mode else None,
        "mode_pending": na_or(mode.value_at("Pending"), str) if mode else None,
        "volatile": _leaves(counts.get("Volatile")) if counts else None,
        "aggregate": _leaves(counts.get("Aggregate")) if counts else None,
    }


def _leaves(node: _Node | None, prefix: str = "") -> dict[str, Any] | None:
    """Flatten a counter section: nested names join with '/' ("Single Bit/Total")."""
    if node is None:
        return None
    flat: dict[str, Any] = {}
    for child in node.children:
        name = f"{prefix}{child.key}"
        if child.children:
            flat.update(_leaves(child, f"{name}/") or {})
        else:
            flat[name] = scalar(child.value)
    return flat


def _retired_pages(node: _Node | None) -> dict[str, Any] | None:
    if node is None:
        return None

    def count(name: str) -> int | None:
        child = node.get(name)
        if child is None:
            return None
        # Older drivers nest the number one level down as "Count".
        return int_or_none(
            child.value if child.value is not None else child.value_at("Count")
        )

    pending = next(
        (
            node.value_at(k)
            for k in ("Pending Page Blacklist", "Pending Page Retirement", "Pending")
            if node.get(k) is not None
        ),
        None,
    )
    return {
        "single_bit_ecc": count("Single Bit ECC"),
        "double_bit_ecc": count("Double Bit ECC"),
        "pending": yes_no(pending),
    }


def _remapped_rows(node: _Node | None) -> dict[str, Any] | None:
    if node is None or not node.children:
        return None  # "Remapped Rows : N/A" on GPUs without row remapping
    histogram = node.get("Bank Remap Availability Histogram")
    return {
        "correctable": int_or_none(node.value_at("Correctable Error")),
        "uncorrectable": int_or_none(node.value_at("Uncorrectable Error")),
        "pending": yes_no(node.value_at("Pending")),
        "failure": yes_no(node.value_at("Remapping Failure Occurred")),
        "histogram": {c.key: leading_int(c.value) for c in histogram.children}
        if histogram
        else None,
    }


def _clock_reasons(gpu: _Node) -> dict[str, Any] | None:
    found = [(name, gpu.get(name)) for name in _CLOCK_SECTIONS]
    section, node = next(
        ((name, n) for name, n in found if n is not None), (None, None)
    )
    if section is None or node is None:
        return None
    reasons: dict[str, bool | None] = {}
    pending = list(node.children)
    while pending:
        node = pending.pop(0)
        reasons[node.key] = active(node.value)
        pending[:0] = node.children  # "HW Thermal Slowdown" nests under "HW Slowdown"
    # newer drivers (-d PERFORMANCE, r4 capture at 580.105.06): "Clocks Event Reasons Counters", the time
    # each reason held, "1202176 us"
    counters = gpu.get(f"{section} Counters") or gpu.get("Clocks Event Reasons Counters")
    return {
        "section": section,
        "reasons": reasons,
        "active": [k for k, v in reasons.items() if v],
        "counters_us": None if counters is None else {c.key: measure(c.value) for c in counters.children},
    }


# ---- the Fabric and Platform Info sections (fabric.py reads them from a grep-ed excerpt too)

_TEXT_HEALTH = {"Summary": "summary", "Bandwidth": "bandwidth",
                "Route Recovery in progress": "route_recovery_in_progress",
                "Route Recovery": "route_recovery_in_progress",
                "Route Unhealthy": "route_unhealthy", "Access Timeout Recovery": "access_timeout_recovery",
                "Incorrect Configuration": "incorrect_configuration", "Partition Assigned": "partition_assigned"}


def fabric_from_text_node(node: Any) -> dict[str, Any] | None:
    """The Fabric section of one GPU of ``nvidia-smi -q`` (a node of this module's tree)."""
    if node is None:
        return None
    health = node.get("Health")
    return {"state": text_value(node.value_at("State")), "status": text_value(node.value_at("Status")),
            "clique_id": clique_value(node.value_at("CliqueId")),
            "cluster_uuid": text_value(node.value_at("ClusterUUID")),
            "health": {k: text_value(health.value_at(label)) for label, k in _TEXT_HEALTH.items()
                       if health.get(label) is not None} if health is not None else None}


def platform_from_text_node(node: Any) -> dict[str, Any] | None:
    if node is None:
        return None
    return {"chassis_serial": text_value(node.value_at("Chassis Serial Number")),
            "slot": int_value(node.value_at("Slot Number")), "tray": int_value(node.value_at("Tray Index")),
            "host_id": int_value(node.value_at("Host ID")), "peer_type": text_value(node.value_at("Peer Type")),
            "module_id": int_value(node.value_at("Module Id") or node.value_at("Module ID"))}
