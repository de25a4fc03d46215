"""Parse nvidia-smi output: ``--query-gpu`` CSV, ``topo -m``, ``nvlink -s``, ``nvlink -e``, ``-q``.

Every function returns a dict with an ``errors`` list (tool error text, truncation) and
raises ``ParseError`` only when the text holds nothing it recognises. ``N/A``-style
values become null; nothing missing is guessed. The JSON shapes:

``parse_query_gpu_csv`` (``nvidia-smi-query-gpu``)::

    {"tool": "nvidia-smi-query-gpu", "fields": ["index", "name", ...],
     "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory.total": 81559, ...}],
     "errors": []}

  Numeric fields are numbers with the unit dropped (MiB, W, MHz, %, C); Yes/No are booleans.

``parse_topo`` (``nvidia-smi-topo``)::

    {"tool": "nvidia-smi-topo", "gpus": ["GPU0", "GPU1"],
     "nics": [{"name": "NIC0", "device": "mlx5_0"}],          # device null without a NIC legend
     "matrix": {"GPU0": {"GPU0": "X", "GPU1": "NV18", "NIC0": "SYS"}, "NIC0": {...}},
     "affinity": {"GPU0": {"cpu": "0-51,104-155", "numa": 0, "gpu_numa_id": null}},
     "errors": []}

``parse_nvlink_status`` (``nvlink-status``)::

    {"tool": "nvlink-status",
     "gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-...",
               "links": [{"link": 0, "active": true, "speed_GBps": 25.0}],  # inactive: false, null
               "errors": []}],                      # e.g. "NVML: Unable to retrieve NVLink ..."
     "errors": []}                                  # the same messages, prefixed "GPU n: "

  Empty output (a GPU without NVLink prints nothing) gives ``gpus: []``.

``parse_nvlink_errors`` (``nvlink-errors``)::

    {"tool": "nvlink-errors",
     "gpus": [{"index": 0, "name": ..., "uuid": ...,
               "links": [{"link": 0, "counters": {"replay_errors": 0, "recovery_errors": 0,
                                                  "crc_errors": 0}}]}],
     "errors": []}

``parse_query`` (``nvidia-smi-q``)::

    {"tool": "nvidia-smi-q", "driver_version": "535.161.08", "cuda_version": "12.2",
     "attached_gpus": 8,
     "gpus": [{"bus_id": "00000000:19:00.0", "product_name": "NVIDIA H100 80GB HBM3",
               "uuid": "GPU-...",
               "pcie": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16,
                        "replays_since_reset": 67},
               "ecc": {"mode_current": "Enabled", "mode_pending": "Enabled",
                       "volatile": {"SRAM Correctable": 0, "DRAM Correctable": 0, ...},
                       "aggregate": {...}},          # nested counters keyed "Single Bit/Total"
               "retired_pages": {"single_bit_ecc": null, "double_bit_ecc": null, "pending": null},
               "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": false,
                                 "failure": false, "histogram": {"Max": 2560, ...}},  # null if N/A
               "clock_reasons": {"section": "Clocks Event Reasons",   # or "Clocks Throttle Reasons"
                                 "reasons": {"Idle": false, "HW Slowdown": true, ...},
                                 "active": ["HW Slowdown", "HW Power Brake Slowdown"]}}],
     "errors": []}                    # e.g. "8 GPUs attached but 1 listed (truncated output)"

  A section the output lacks is null; reason names are kept as printed.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sncheck.errors import ParseError

QUERY_GPU_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "memory.total",
    "driver_version",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "temperature.gpu",
    "power.draw",
    "ecc.errors.uncorrected.volatile.total",
)

_NUMERIC_FIELD_PREFIXES = (
    "index",
    "count",
    "memory.",
    "pcie.link.",
    "temperature.",
    "power.",
    "enforced.power",
    "clocks.",
    "utilization.",
    "ecc.errors.",
    "retired_pages.",
    "remapped_rows.",
    "fan.speed",
)
_NA_VALUES = frozenset(
    {
        "",
        "N/A",
        "[N/A]",
        "Not Supported",
        "[Not Supported]",
        "Unknown Error",
        "[Unknown Error]",
        "Unknown",
        "[Unknown]",
        "Requested functionality has been deprecated",
    }
)
_TOOL_ERROR = re.compile(
    r"NVIDIA-SMI has failed|No devices were found|Failed to initialize NVML|"
    r"Unable to determine the device handle|Unable to retrieve|GPU is lost|version mismatch|"
    r"is not a valid field to query|^NVML:|^Error:",
    re.IGNORECASE,
)
_NUMBER_WITH_UNIT = re.compile(r"^([+-]?[0-9]+(?:\.[0-9]+)?)\s*(?:[A-Za-z%/()]+)?$")
_GPU_LINE = re.compile(r"^GPU\s+([0-9]+):\s*(.*?)(?:\s*\(UUID:\s*([^)]*)\))?\s*$")
_LINK_STATUS = re.compile(r"^Link\s+([0-9]+):\s*(.*?)\s*$")
_LINK_COUNTER = re.compile(r"^Link\s+([0-9]+):\s*([^:]+?)\s*:\s*(\S+)\s*$")
_SPEED = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*GB/s$")
_ELISION = re.compile(r"^\[?\.\.\.\]?$")


# --------------------------------------------------------------------------- query-gpu CSV


def query_gpu_command(
    fields: tuple[str, ...] | list[str] = QUERY_GPU_FIELDS,
) -> list[str]:
    """The argv that produces what ``parse_query_gpu_csv(text, fields)`` reads."""
    return ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"]


def parse_query_gpu_csv(
    text: str, fields: tuple[str, ...] | list[str] = QUERY_GPU_FIELDS
) -> dict[str, Any]:
    """Parse ``nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]``.

    A header row, when present, names the fields and wins over ``fields``.
    """
    names = list(fields)
    gpus: list[dict[str, Any]] = []
    errors: list[str] = []
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for number, line in enumerate(lines, start=1):
        cells = [c.strip() for c in next(csv.reader([line], skipinitialspace=True), [])]
        if _TOOL_ERROR.search(line):
            errors.append(line)
        elif number == 1 and _is_csv_header(cells, names):
            names = [re.sub(r"\s*\[.*\]$", "", c) for c in cells]
        elif len(cells) != len(names):
            errors.append(
                f"line {number}: {len(cells)} values for {len(names)} fields: {line!r}"
            )
        else:
            gpus.append({n: _query_value(n, c) for n, c in zip(names, cells)})
    if not gpus and not errors:
        raise ParseError(
            "no GPU rows in the --query-gpu CSV", tool="nvidia-smi-query-gpu"
        )
    return {
        "tool": "nvidia-smi-query-gpu",
        "fields": names,
        "gpus": gpus,
        "errors": errors,
    }


def _is_csv_header(cells: list[str], names: list[str]) -> bool:
    """``index, name, memory.total [MiB]`` (``--format=csv`` without ``noheader``)."""
    bare = [re.sub(r"\s*\[.*\]$", "", c) for c in cells]
    if not bare or not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", b) for b in bare):
        return False
    return any(b in names or "." in b or "_" in b for b in bare)


def _query_value(field_name: str, raw: str) -> Any:
    if raw in _NA_VALUES or (raw.startswith("[") and raw.endswith("]")):
        return None  # "[N/A]", "[Not Supported]", "[Requested functionality has been deprecated]"
    if raw in ("Yes", "No"):
        return raw == "Yes"
    if field_name.startswith(_NUMERIC_FIELD_PREFIXES):
        m = _NUMBER_WITH_UNIT.match(raw)
        if m:
            return _number(m.group(1))
    return raw


# --------------------------------------------------------------------------- topo -m


def parse_topo(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi topo -m``: the link-type matrix, NIC legend and affinities."""
    lines = text.splitlines()
    header_at = next((i for i, ln in enumerate(lines) if _is_topo_header(ln)), None)
    if header_at is None:
        raise ParseError("no 'GPU0 GPU1 ...' header row found", tool="nvidia-smi-topo")
    devices, labels = _topo_columns(lines[header_at])
    matrix: dict[str, dict[str, str]] = {}
    affinity: dict[str, dict[str, Any]] = {}
    legend: dict[str, str] = {}
    errors: list[str] = []
    for line in lines[header_at + 1 :]:
        tokens = line.split()
        if not tokens:
            continue
        if m := re.match(r"^\s*(NIC[0-9]+):\s*(\S+)\s*$", line):
            legend[m.group(1)] = m.group(2)
        elif tokens[0] in devices:
            cells = tokens[1 : 1 + len(devices)]
            if len(cells) < len(devices):
                errors.append(f"row {tokens[0]}: {len(cells)} of {len(devices)} cells")
            matrix[tokens[0]] = dict(zip(devices, cells))
            if tokens[0].startswith("GPU"):
                affinity[tokens[0]] = _topo_affinity(labels, tokens[1 + len(devices) :])
        elif _TOOL_ERROR.search(line):
            errors.append(line.strip())
    if not matrix:
        errors.append("header row without any device rows")
    return {
        "tool": "nvidia-smi-topo",
        "gpus": [d for d in devices if re.match(r"^GPU[0-9]+$", d)],
        "nics": [
            {"name": d, "device": legend.get(d)}
            for d in devices
            if not re.match(r"^GPU[0-9]+$", d)
        ],
        "matrix": matrix,
        "affinity": affinity,
        "errors": errors,
    }


def _is_topo_header(line: str) -> bool:
    """``GPU0 GPU1 ... CPU Affinity``; the GPU0 data row differs by its ``X`` cell."""
    tokens = line.split()
    return (
        bool(tokens) and tokens[0] == "GPU0" and (len(tokens) == 1 or tokens[1] != "X")
    )


def _topo_columns(header: str) -> tuple[list[str], list[str]]:
    """Device column names, then the affinity labels ("CPU Affinity", "NUMA Affinity", ...)."""
    tokens = header.split()
    cut = next(
        (i for i, t in enumerate(tokens) if t in ("CPU", "NUMA", "GPU")), len(tokens)
    )
    labels = re.findall(
        r"CPU Affinity|NUMA Affinity|GPU NUMA ID", " ".join(tokens[cut:])
    )
    return tokens[:cut], labels


def _topo_affinity(labels: list[str], values: list[str]) -> dict[str, Any]:
    keys = {
        "CPU Affinity": "cpu",
        "NUMA Affinity": "numa",
        "GPU NUMA ID": "gpu_numa_id",
    }
    result: dict[str, Any] = {"cpu": None, "numa": None, "gpu_numa_id": None}
    for label, value in zip(labels, values):
        key = keys[label]
        result[key] = _na_or(value, int if key != "cpu" and value.isdecimal() else str)
    return result


# --------------------------------------------------------------------------- nvlink -s / -e


def parse_nvlink_status(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi nvlink -s``: per GPU, each link's speed or inactive state."""
    gpus, errors = _nvlink_blocks(text, _status_link, tool="nvlink-status")
    return {"tool": "nvlink-status", "gpus": gpus, "errors": errors}


def parse_nvlink_errors(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi nvlink -e``: per GPU, per link error counters."""
    gpus, errors = _nvlink_blocks(text, _counter_link, tool="nvlink-errors")
    for gpu in gpus:
        gpu["links"] = _merge_counter_links(gpu["links"])
    return {"tool": "nvlink-errors", "gpus": gpus, "errors": errors}


def _nvlink_blocks(
    text: str, parse_link: Callable[[str], dict[str, Any] | None], tool: str
) -> tuple[list[dict[str, Any]], list[str]]:
    gpus: list[dict[str, Any]] = []
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or _ELISION.match(line):
            continue
        if m := _GPU_LINE.match(line):
            gpus.append(
                {
                    "index": int(m.group(1)),
                    "name": m.group(2) or None,
                    "uuid": m.group(3),
                    "links": [],
                    "errors": [],
                }
            )
            continue
        link = parse_link(line)
        if link is not None and gpus:
            gpus[-1]["links"].append(link)
        elif _TOOL_ERROR.search(line):
            if gpus:
                gpus[-1]["errors"].append(line)
            errors.append(f"GPU {gpus[-1]['index']}: {line}" if gpus else line)
    if not gpus and not errors and text.strip():
        raise ParseError("no 'GPU n: ...' blocks found", tool=tool)
    return gpus, errors


def _status_link(line: str) -> dict[str, Any] | None:
    m = _LINK_STATUS.match(line)
    if not m:
        return None
    state = m.group(2)
    speed = _SPEED.match(state)
    if speed:
        return {
            "link": int(m.group(1)),
            "active": True,
            "speed_GBps": float(speed.group(1)),
        }
    inactive = "inactive" in state.lower()
    return {
        "link": int(m.group(1)),
        "active": False if inactive else None,
        "speed_GBps": None,
    }


def _counter_link(line: str) -> dict[str, Any] | None:
    m = _LINK_COUNTER.match(line)
    if not m:
        return None
    key = re.sub(r"[^a-z0-9]+", "_", m.group(2).lower()).strip("_")
    return {
        "link": int(m.group(1)),
        "counters": {key: _na_or(m.group(3), _int_or_none)},
    }


def _merge_counter_links(links: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``Link 0: Replay Errors`` and ``Link 0: CRC Errors`` lines -> one entry for link 0."""
    merged: dict[int, dict[str, Any]] = {}
    for link in links:
        merged.setdefault(link["link"], {"link": link["link"], "counters": {}})[
            "counters"
        ].update(link["counters"])
    return list(merged.values())


# --------------------------------------------------------------------------- -q


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


_GPU_HEADER = re.compile(
    r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])$"
)
_KEY_VALUE = re.compile(r"^(.+?)\s*:(?:\s+(.*))?$")
_INDENT_STEP = 4  # nvidia-smi -q indents each level by four spaces
_CLOCK_SECTIONS = ("Clocks Event Reasons", "Clocks Throttle Reasons")


def parse_query(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi -q`` (whole or ``-d`` sections, also truncated or excerpted)."""
    root, tool_errors = _build_tree(text)
    gpu_nodes = [c for c in root.children if _GPU_HEADER.match(c.key)]
    attached = _int_or_none(root.value_at("Attached GPUs") or "")
    if not gpu_nodes and attached is None and not tool_errors:
        raise ParseError("no 'GPU <bus id>' sections found", tool="nvidia-smi-q")
    errors = list(tool_errors)
    if attached is not None and attached > len(gpu_nodes):
        errors.append(
            f"{attached} GPUs attached but {len(gpu_nodes)} listed (truncated or excerpted output)"
        )
    return {
        "tool": "nvidia-smi-q",
        "driver_version": _na_or(root.value_at("Driver Version"), str),
        "cuda_version": _na_or(root.value_at("CUDA Version"), str),
        "attached_gpus": attached,
        "gpus": [_gpu_summary(node) for node in gpu_nodes],
        "errors": errors,
    }


def _build_tree(text: str) -> tuple[_Node, list[str]]:
    """Indentation tree of ``key : value`` lines; a GPU header always hangs off the root."""
    root = _Node("", None, -1)
    stack = [root]
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.expandtabs(4).rstrip()
        body = line.strip()
        if not body or _ELISION.match(body) or body.startswith("==="):
            continue
        if _TOOL_ERROR.search(body):
            errors.append(body)
            continue
        indent = len(line) - len(line.lstrip())
        if _GPU_HEADER.match(body):
            gpu = _Node(body, None, indent)
            root.children.append(gpu)
            stack = [root, gpu]
            continue
        floor = 2 if len(stack) > 1 and _GPU_HEADER.match(stack[1].key) else 1
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


def _gpu_summary(gpu: _Node) -> dict[str, Any]:
    bus = _GPU_HEADER.match(gpu.key)
    return {
        "bus_id": bus.group(1) if bus else None,
        "product_name": _na_or(gpu.value_at("Product Name"), str),
        "uuid": _na_or(gpu.value_at("GPU UUID"), str),
        "pcie": _pcie(gpu),
        "ecc": _ecc(gpu),
        "retired_pages": _retired_pages(gpu.get("Retired Pages")),
        "remapped_rows": _remapped_rows(gpu.get("Remapped Rows")),
        "clock_reasons": _clock_reasons(gpu),
        "fabric": fabric.fabric_from_text_node(gpu.get("Fabric")),
        "platform": fabric.platform_from_text_node(gpu.get("Platform Info")),
    }


from sncheck.vendors.nvidia import fabric  # noqa: E402  (fabric.py reuses this module's tree; imported after it)


def _pcie(gpu: _Node) -> dict[str, Any] | None:
    pci = gpu.get("PCI")
    if pci is None:
        return None
    link = pci.get("GPU Link Info")
    gen = link.get("PCIe Generation") if link else None
    width = link.get("Link Width") if link else None
    return {
        "gen_current": _int_or_none(gen.value_at("Current") if gen else None),
        "gen_max": _int_or_none(gen.value_at("Max") if gen else None),
        "width_current": _int_or_none(
            (width.value_at("Current") or "").rstrip("x") if width else None
        ),
        "width_max": _int_or_none(
            (width.value_at("Max") or "").rstrip("x") if width else None
        ),
        "replays_since_reset": _int_or_none(pci.value_at("Replays Since Reset")),
    }


def _ecc(gpu: _Node) -> dict[str, Any] | None:
    mode, counts = gpu.get("ECC Mode"), gpu.get("ECC Errors")
    if mode is None and counts is None:
        return None
    return {
        "mode_current": _na_or(mode.value_at("Current"), str) if mode else None,
        "mode_pending": _na_or(mode.value_at("Pending"), str) if mode else None,
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
            flat[name] = _scalar(child.value)
    return flat


def _retired_pages(node: _Node | None) -> dict[str, Any] | None:
    if node is None:
        return None

    def count(name: str) -> int | None:
        child = node.get(name)
        if child is None:
            return None
        # Older drivers nest the number one level down as "Count".
        return _int_or_none(
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
        "pending": _yes_no(pending),
    }


def _remapped_rows(node: _Node | None) -> dict[str, Any] | None:
    if node is None or not node.children:
        return None  # "Remapped Rows : N/A" on GPUs without row remapping
    histogram = node.get("Bank Remap Availability Histogram")
    return {
        "correctable": _int_or_none(node.value_at("Correctable Error")),
        "uncorrectable": _int_or_none(node.value_at("Uncorrectable Error")),
        "pending": _yes_no(node.value_at("Pending")),
        "failure": _yes_no(node.value_at("Remapping Failure Occurred")),
        "histogram": {c.key: _leading_int(c.value) for c in histogram.children}
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
        reasons[node.key] = _active(node.value)
        pending[:0] = node.children  # "HW Thermal Slowdown" nests under "HW Slowdown"
    return {
        "section": section,
        "reasons": reasons,
        "active": [k for k, v in reasons.items() if v],
    }


# --------------------------------------------------------------------------- values


def _na_or(value: str | None, convert: Callable[[str], Any]) -> Any:
    if value is None or value.strip() in _NA_VALUES:
        return None
    return convert(value.strip())


def _int_or_none(value: str | None) -> int | None:
    if value is None:
        return None
    value = value.strip()
    return int(value) if re.fullmatch(r"[+-]?[0-9]+", value) else None


def _leading_int(value: str | None) -> int | None:
    m = re.match(r"^\s*([0-9]+)", value or "")
    return int(m.group(1)) if m else None


def _number(value: str) -> int | float:
    return float(value) if "." in value else int(value)


def _yes_no(value: str | None) -> bool | None:
    return {"Yes": True, "No": False}.get((value or "").strip())


def _active(value: str | None) -> bool | None:
    return {"Active": True, "Not Active": False}.get((value or "").strip())


def _scalar(value: str | None) -> Any:
    """A counter cell: int, Yes/No as bool, N/A as null, anything else as printed."""
    if value is None or value.strip() in _NA_VALUES:
        return None
    as_int = _int_or_none(value)
    if as_int is not None:
        return as_int
    as_bool = _yes_no(value)
    return as_bool if as_bool is not None else value.strip()
