"""NVL72 / MNNVL views: the Fabric and Platform Info sections of ``nvidia-smi -q`` (text
and ``-x``), ``nvidia-imex-ctl -N``, ``nvidia-smi nvlink -info`` and an NCCL_DEBUG=INFO log.

Pure functions ``text -> dict``, each with an ``errors`` list; ``ParseError`` only when
the text holds nothing recognisable. The JSON shapes:

``parse_query_xml`` (``nvidia-smi-qx``): the shape of
:func:`sncheck.vendors.nvidia.nvidia_smi.parse_query`, plus per GPU ``fabric`` and
``platform`` (below), so the same checks judge ``-q`` and ``-q -x``.

``parse_fabric`` (``nvidia-smi-fabric``), from ``-q -x``, ``-q`` text, a ``grep``-ed
excerpt of the Fabric section, or the fabric table of gpud::

    {"tool": "nvidia-smi-fabric",
     "gpus": [{"bus_id": "00000000:29:00.0", "uuid": "GPU-...", "product_name": "NVIDIA GB200",
               "fabric": {"state": "Completed", "status": "Success", "clique_id": 2,
                          "cluster_uuid": "00000001-...", "health": {"summary": "Healthy",
                          "bandwidth": "Full", "route_recovery_in_progress": "False", ...}},
               "platform": {"chassis_serial": "1820000000001", "slot": 14, "tray": 4,
                            "host_id": 1, "peer_type": "Switch Connected", "module_id": 2}}],
     "errors": []}

  Values are kept as printed ("N/A" becomes null; ``state`` "Not Supported" is kept, it
  is the finding on a GB200). ``clique_id`` is an int when printed as one.

``parse_imex_ctl`` (``imex-ctl``)::

    {"tool": "imex-ctl", "nodes": [{"index": 0, "address": "172.31.48.81", "state": "READY",
                                    "version": "570.172"}],
     "matrix": {"0": {"0": "C", "1": "C", ...}}, "domain_state": "UP", "errors": []}

``parse_nvlink_info`` (``nvlink-info``)::

    {"tool": "nvlink-info", "gpus": [{"index": 0, "name": "NVIDIA GB200", "uuid": "GPU-...",
     "nvle": "disabled", "firmware": {"MSE": "14:4:0", ...}}], "errors": []}

``parse_nccl_mnnvl`` (``nccl-mnnvl``), from the lines of an NCCL_DEBUG=INFO log::

    {"tool": "nccl-mnnvl", "nccl_version": "2.26.2", "mnnvl": true | false | null,
     "clique_sizes": [72], "nvl_domain_sizes": [144],            # nvlDomainSize: 2.30 on
     "fabric": [{"bus_id": "0x801000", "cluster_uuid": "1.1", "clique_id": 2, "state": 3,
                 "health_mask": 0}],                             # a rank's GPU, 2.27 on
     "not_working": ["... MNNVL ... is available but not working ..."],
     "ranks": 72, "faults": [], "errors": []}
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from sncheck.errors import ParseError

from sncheck.vendors import after_end, listing
from sncheck.vendors.fragment import xml_fragment
from sncheck.vendors.nccl.debug_log import interleaving
from sncheck.vendors.nvidia import smi_query
from sncheck.vendors.nvidia.smi_query import fabric_from_text_node, platform_from_text_node
from sncheck.vendors.nvidia.smi_values import TOOL_ERROR, clique_value, int_value, leading_int, text_value, uuid_cut

_CLOCK_NAMES = {
    "gpu_idle": "Idle", "applications_clocks_setting": "Applications Clocks Setting",
    "sw_power_cap": "SW Power Cap", "hw_slowdown": "HW Slowdown",
    "hw_thermal_slowdown": "HW Thermal Slowdown", "hw_power_brake_slowdown": "HW Power Brake Slowdown",
    "sync_boost": "Sync Boost", "sw_thermal_slowdown": "SW Thermal Slowdown",
    "display_clocks_setting": "Display Clock Setting",
}
_HEALTH_KEYS = ("summary", "bandwidth", "route_recovery_in_progress", "route_unhealthy",
                "access_timeout_recovery", "incorrect_configuration", "partition_assigned")


# --------------------------------------------------------------------------- -q -x

def parse_query_xml(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi -q -x``; a truncated document is an error, not a crash."""
    start = text.find("<nvidia_smi_log")
    if start < 0:
        # nvidia-smi prints its failure line in place of the document ("No devices were found")
        failed = [ln.strip() for ln in text.splitlines() if TOOL_ERROR.search(ln.strip())]
        # or a reader pasted a part of the document (harvest7's netdata capture starts inside <pci>)
        failed = failed or [why for why in [xml_fragment(text, "nvidia-smi -q -x")] if why]
        if failed:
            return {"tool": "nvidia-smi-qx", "driver_version": None, "cuda_version": None, "attached_gpus": None,
                    "gpus": [], "errors": failed}
        raise ParseError("no <nvidia_smi_log> element", tool="nvidia-smi-qx")
    if "<!ENTITY" in text:
        raise ParseError("entity declarations are refused", tool="nvidia-smi-qx")
    body = text[start:]
    errors: list[str] = []
    try:
        root = ET.fromstring(body)
    except ET.ParseError as e:
        # A cut-off capture: keep what was read before the cut, say it was truncated.
        errors.append(f"XML not well-formed ({e}); output truncated?")
        root = _read_before_cut(body, e)
    gpus = [_xml_gpu(g) for g in root.findall("gpu")]
    attached = int_value(root.findtext("attached_gpus"))
    if attached is not None and attached > len(gpus):
        errors.append(f"{attached} GPUs attached but {len(gpus)} listed (truncated or excerpted output)")
    errors += smi_query.impossible_listing(attached, gpus)
    return {"tool": "nvidia-smi-qx", "driver_version": text_value(root.findtext("driver_version")),
            "cuda_version": text_value(root.findtext("cuda_version")), "attached_gpus": attached,
            "gpus": gpus, "errors": errors}


class _RootKeeper(ET.TreeBuilder):
    """A TreeBuilder that keeps its root element reachable before the document closes."""

    root: ET.Element | None = None

    def start(self, tag: str, attrs: dict[str, str]) -> ET.Element:
        element = super().start(tag, attrs)
        if self.root is None:
            self.root = element
        return element


def _read_before_cut(body: str, error: ET.ParseError) -> ET.Element:
    """The document as far as it was read whole: every element that began before the cut,
    with the children and the text that closed before it (the header's driver and CUDA
    versions, a cut GPU's product name); ParseError when not even the root began."""
    builder = _RootKeeper()
    try:
        ET.XMLParser(target=builder).feed(body)
    except ET.ParseError:
        pass
    root = builder.root
    if root is None:
        raise ParseError(f"XML not well-formed and no element read: {error}", tool="nvidia-smi-qx") from None
    return root


def _xml_gpu(g: ET.Element) -> dict[str, Any]:
    return {
        "bus_id": g.get("id"),
        "product_name": text_value(g.findtext("product_name")),
        "uuid": text_value(g.findtext("uuid")),
        **smi_query.identity(lambda _path, element: g.findtext(element)),
        "mig": _xml_mig(g),
        "temperature": _xml_measures(g.find("temperature"), {
            "gpu_temp": "gpu_C", "memory_temp": "memory_C", "gpu_temp_slow_threshold": "slowdown_C",
            "gpu_temp_max_threshold": "shutdown_C", "gpu_temp_max_gpu_threshold": "max_operating_C"}),
        "power": _xml_measures(next((n for n in (g.find("gpu_power_readings"), g.find("power_readings"))
                                     if n is not None), None), {
            "average_power_draw": "draw_W", "power_draw": "draw_W", "instant_power_draw": "instant_W",
            "current_power_limit": "limit_W", "power_limit": "limit_W", "default_power_limit": "default_limit_W",
            "max_power_limit": "max_limit_W"}),
        "pcie": _xml_pcie(g.find("pci")),
        "memory": _xml_measures(g.find("fb_memory_usage"), {
            "total": "total_MiB", "reserved": "reserved_MiB", "used": "used_MiB", "free": "free_MiB"}),
        "utilization": _xml_measures(g.find("utilization"), {
            "gpu_util": "gpu_pct", "memory_util": "memory_pct", "encoder_util": "encoder_pct",
            "decoder_util": "decoder_pct"}),
        "performance_state": text_value(g.findtext("performance_state")),
        "ecc": _xml_ecc(g),
        "retired_pages": _xml_retired(g.find("retired_pages")),
        "remapped_rows": _xml_remapped(g.find("remapped_rows")),
        "clock_reasons": _xml_clocks(g),
        "fabric": _xml_fabric(g.find("fabric")),
        "platform": _xml_platform(g.find("platformInfo")),
    }


def _xml_mig(g: ET.Element) -> dict[str, Any] | None:
    mode = g.find("mig_mode")
    if mode is None:
        return None
    return {"current": text_value(mode.findtext("current_mig")), "pending": text_value(mode.findtext("pending_mig")),
            "devices": len(g.findall("mig_devices/mig_device"))}


def _xml_measures(node: ET.Element | None, names: dict[str, str]) -> dict[str, Any] | None:
    """``<gpu_temp>27 C</gpu_temp>``, ``<power_draw>67.03 W</power_draw>``: numbers, by our names."""
    if node is None:
        return None
    out: dict[str, Any] = {}
    for tag, name in names.items():
        if node.find(tag) is not None and out.get(name) is None:
            out[name] = smi_query.measure(node.findtext(tag))
    return out


def _xml_pcie(pci: ET.Element | None) -> dict[str, Any] | None:
    if pci is None:
        return None
    link = _xml_pcie_link(pci)
    link["below_max"] = smi_query.below_max(link)
    return link


def _xml_pcie_link(pci: ET.Element) -> dict[str, Any]:
    return {"gen_current": int_value(pci.findtext("pci_gpu_link_info/pcie_gen/current_link_gen")),
            "gen_max": int_value(pci.findtext("pci_gpu_link_info/pcie_gen/max_link_gen")),
            "width_current": int_value((pci.findtext("pci_gpu_link_info/link_widths/current_link_width") or "")
                                  .rstrip("x")),
            "width_max": int_value((pci.findtext("pci_gpu_link_info/link_widths/max_link_width") or "").rstrip("x")),
            "replays_since_reset": int_value(pci.findtext("replay_counter"))}


def _leaf_value(v: str | None) -> Any:
    t = text_value(v)
    if t is None:
        return None
    if t in ("Yes", "No"):
        return t == "Yes"
    as_int = int_value(t)
    return as_int if as_int is not None else t


def _xml_counters(node: ET.Element | None, prefix: str = "") -> dict[str, Any] | None:
    """ECC counters by the -q text's names: ``sram_correctable`` -> "SRAM Correctable", and the
    counters nested in ``double_bit`` (before A100) -> "Double Bit/Total" as -q's view keeps them."""
    if node is None:
        return None
    out: dict[str, Any] = {}
    for c in node:
        name = prefix + c.tag.replace("_", " ").title().replace("Sram", "SRAM").replace("Dram", "DRAM")
        if len(c) == 0:
            out[name] = _leaf_value(c.text)
        else:
            out.update(_xml_counters(c, name + "/") or {})
    return out


def _xml_ecc(g: ET.Element) -> dict[str, Any] | None:
    mode, errs = g.find("ecc_mode"), g.find("ecc_errors")
    if mode is None and errs is None:
        return None
    return {"mode_current": text_value(mode.findtext("current_ecc")) if mode is not None else None,
            "mode_pending": text_value(mode.findtext("pending_ecc")) if mode is not None else None,
            "volatile": _xml_counters(errs.find("volatile")) if errs is not None else None,
            "aggregate": _xml_counters(errs.find("aggregate")) if errs is not None else None}


def _xml_retired(node: ET.Element | None) -> dict[str, Any] | None:
    if node is None:
        return None
    pending = text_value(node.findtext("pending_retirement")) or text_value(node.findtext("pending_blacklist"))
    return {"single_bit_ecc": int_value(node.findtext("multiple_single_bit_retirement/retired_count")),
            "double_bit_ecc": int_value(node.findtext("double_bit_retirement/retired_count")),
            "pending": {"Yes": True, "No": False}.get(pending or "")}


def _xml_remapped(node: ET.Element | None) -> dict[str, Any] | None:
    if node is None or len(node) == 0:
        return None
    hist = node.find("row_remapper_histogram")
    return {"correctable": int_value(node.findtext("remapped_row_corr")),
            "uncorrectable": int_value(node.findtext("remapped_row_unc")),
            "pending": {"Yes": True, "No": False}.get(text_value(node.findtext("remapped_row_pending")) or ""),
            "failure": {"Yes": True, "No": False}.get(text_value(node.findtext("remapped_row_failure")) or ""),
            "histogram": {c.tag.rsplit("_", 1)[-1].title(): leading_int(c.text) for c in hist}
            if hist is not None else None}


def _xml_clocks(g: ET.Element) -> dict[str, Any] | None:
    for tag, section, prefix in (("clocks_event_reasons", "Clocks Event Reasons", "clocks_event_reason_"),
                                 ("clocks_throttle_reasons", "Clocks Throttle Reasons", "clocks_throttle_reason_")):
        node = g.find(tag)
        if node is not None:
            reasons = {_CLOCK_NAMES.get(c.tag.removeprefix(prefix), c.tag.removeprefix(prefix)):
                       {"Active": True, "Not Active": False}.get((c.text or "").strip()) for c in node}
            return {"section": section, "reasons": reasons, "active": [k for k, v in reasons.items() if v]}
    return None


def _xml_fabric(node: ET.Element | None) -> dict[str, Any] | None:
    if node is None:
        return None
    health = node.find("health")
    return {"state": text_value(node.findtext("state")), "status": text_value(node.findtext("status")),
            "clique_id": clique_value(node.findtext("cliqueId")),
            "cluster_uuid": text_value(node.findtext("clusterUuid")),
            "health": {k: text_value(health.findtext(k)) for k in _HEALTH_KEYS} if health is not None else None}


def _xml_platform(node: ET.Element | None) -> dict[str, Any] | None:
    if node is None:
        return None
    return {"chassis_serial": text_value(node.findtext("chassis_serial_number")),
            "slot": int_value(node.findtext("slot_number")), "tray": int_value(node.findtext("tray_index")),
            "host_id": int_value(node.findtext("host_id")), "peer_type": text_value(node.findtext("peer_type")),
            "module_id": int_value(node.findtext("module_id"))}


# --------------------------------------------------------------------------- -q text

_PIPE_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|\s*([^|]*?)\s*\|$")
_GPUD_KEYS = {"GPU UUID": "uuid", "Clique ID": "clique_id", "State": "state", "Status": "status",
              "Health Summary": "summary", "Bandwidth": "bandwidth", "Route Recovery": "route_recovery_in_progress",
              "Route Unhealthy": "route_unhealthy", "Access Timeout Recovery": "access_timeout_recovery"}


def parse_fabric(text: str) -> dict[str, Any]:
    """Per-GPU fabric registration from any of the views named in the module doc; a view cut
    short says so (fabric_grammar: what ends each)."""
    if "<nvidia_smi_log" in text:
        full = parse_query_xml(text)
        return {"tool": "nvidia-smi-fabric", "gpus": [_fabric_only(g) for g in full["gpus"]],
                "errors": full["errors"]}
    root, tool_errors = smi_query.build_tree(text)
    gpus: list[dict[str, Any]] = []
    errors = list(tool_errors)
    blocks: list[Any] = []
    for node in root.children:
        if smi_query.GPU_HEADER.match(node.key):
            if node.get("Fabric") is not None:
                gpus.append({"bus_id": node.key.split()[1], "uuid": text_value(node.value_at("GPU UUID")),
                             "product_name": text_value(node.value_at("Product Name")),
                             "fabric": fabric_from_text_node(node.get("Fabric")),
                             "platform": platform_from_text_node(node.get("Platform Info"))})
        else:
            # An excerpt (nvidia-smi -q | grep -A..): Fabric blocks without their GPU header.
            for fab in _find_all(node, "Fabric"):
                blocks.append(fab)
                gpus.append({"bus_id": None, "uuid": None, "product_name": None,
                             "fabric": fabric_from_text_node(fab), "platform": None})
    errors += [f"GPU {g['bus_id']}: its GPU UUID '{g['uuid']}' stops short of NVML's 'GPU-' and 36 characters: "
               "cut or wrapped, not whole" for g in gpus if uuid_cut(g["uuid"])]
    if any(smi_query.GPU_HEADER.match(n.key) for n in root.children):
        # the whole -q (or -q -d sections): its own end (Attached GPUs, each GPU through Processes)
        errors += [e for e in smi_query.parse_query(text)["errors"] if e not in errors]
    elif blocks:
        errors += _excerpt_cut_short(blocks)
    if not gpus:
        gpus, cut = _gpud_tables(text)
        errors += cut
    if not gpus and not tool_errors:
        raise ParseError("no Fabric section found", tool="nvidia-smi-fabric")
    return {"tool": "nvidia-smi-fabric", "gpus": gpus, "errors": errors}


# An excerpt's Fabric block is whole through ClusterUUID (a grep -A4 Fabric prints that far).
_EXCERPT_LEAST = ("State", "Status", "CliqueId", "ClusterUUID")


def _excerpt_cut_short(blocks: list[Any]) -> list[str]:
    """A grep-ed excerpt has no end marker: each block holds at least State through ClusterUUID,
    a Health heading at least one entry, and every block the entries the first block holds."""
    def keys(block: Any) -> list[str]:
        return [c.key for c in block.children] + [f"Health/{c.key}" for c in
                                                  (block.get("Health").children if block.get("Health") else [])]
    out = []
    first = keys(blocks[0])
    for i, block in enumerate(blocks):
        have = keys(block)
        lacking = [k for k in (*_EXCERPT_LEAST, *first) if k not in have]
        health = block.get("Health")
        if lacking:
            out.append(f"Fabric block {i}: ends before {lacking[0]}: output cut short")
        elif health is not None and not health.children:
            out.append(f"Fabric block {i}: 'Health' ends before its first entry: output cut short")
    return out


def _find_all(node: Any, key: str) -> list[Any]:
    if node.key == key and node.value is None:
        return [node]
    return [hit for c in node.children for hit in _find_all(c, key)]


def _gpud_tables(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """gpud's fabric tables: a '+---+' rule, the rows of one GPU (GPU UUID first), a closing
    rule; a table without its closing rule, or with fewer rows than the first, was cut."""
    gpus: list[dict[str, Any]] = []
    rows: list[set[str]] = []
    closed: list[bool] = []
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        if cur is not None and re.fullmatch(r"\+[-+]+\+", line.strip()):
            closed[-1] = True
            continue
        m = _PIPE_ROW.match(line.strip())
        if not m or m.group(1) not in _GPUD_KEYS:
            continue
        key, value = _GPUD_KEYS[m.group(1)], m.group(2)
        if key == "uuid":
            cur = {"bus_id": None, "uuid": value, "product_name": None,
                   "fabric": {"state": None, "status": None, "clique_id": None, "cluster_uuid": None,
                              "health": {}}, "platform": None}
            gpus.append(cur)
            rows.append(set())
            closed.append(False)
        elif cur is not None:
            fab = cur["fabric"]
            if key in ("state", "status"):
                fab[key] = text_value(value)
            elif key == "clique_id":
                fab["clique_id"] = clique_value(value)
            else:
                fab["health"][key] = text_value(value)
        if cur is not None:
            rows[-1].add(key)
            closed[-1] = False
    cut = [f"GPU {gpus[i]['uuid']}: its table ends before its closing rule: output cut short"
           for i, done in enumerate(closed) if not done]
    cut += [f"GPU {gpus[i]['uuid']}: its table lacks {', '.join(sorted(rows[0] - have))} that the first lists: "
            "output cut short" for i, have in enumerate(rows) if rows[0] - have]
    return gpus, cut


def _fabric_only(g: dict[str, Any]) -> dict[str, Any]:
    return {k: g.get(k) for k in ("bus_id", "uuid", "product_name", "fabric", "platform")}


# --------------------------------------------------------------------------- imex

_IMEX_NODE = re.compile(r"^Node\s*#\s*(\d+)\s*-\s*(\S+)\s*-\s*([A-Z_ ]+?)\s*-\s*Version:\s*(\S+)\s*$")
_IMEX_DOMAIN = re.compile(r"^Domain State:\s*(\S+)")
# what the legend block is, and the two lines that close it ('5/12/2025 06:08:10.580', 'Nodes:')
_IMEX_LEGEND = re.compile(r"^(?:Connectivity Table Legend:|(?:I|N|R|D|A|C|!V!|!M!) - |\d+/\d+/\d{4} \d|Nodes:$)")


def _legend_elided(lines: list[tuple[int, str]], k: int) -> bool:
    """Whether the '...' on ``lines[k]``, before any node, stood in the legend: the next line that
    is not blank is the legend's, its timestamp or 'Nodes:' (a node or a row next: nodes left out)."""
    return bool(_IMEX_LEGEND.match(listing.beside(lines, k)[1]))


def parse_imex_ctl(text: str) -> dict[str, Any]:
    """``nvidia-imex-ctl -N``: node states and versions, the connectivity matrix, domain state.
    A reporter's '...' in the legend stands for lines that carry no value; anywhere else for
    nodes, rows or the domain state: lines left out (:func:`_legend_elided`)."""
    nodes: list[dict[str, Any]] = []
    matrix: dict[str, dict[str, str]] = {}
    columns: list[str] = []
    domain = None
    errors: list[str] = []
    lines = after_end.numbered(text)
    for k, (at, raw) in enumerate(lines):
        line = raw.strip()
        if listing.is_elision(line):
            if nodes or columns or domain is not None or not _legend_elided(lines, k):
                errors.append(listing.elision(at, line))
        elif m := _IMEX_NODE.match(line):
            nodes.append({"index": int(m.group(1)), "address": m.group(2), "state": m.group(3).strip(),
                          "version": m.group(4)})
        elif m := _IMEX_DOMAIN.match(line):
            domain = m.group(1)
        elif line.startswith("Nodes From\\To"):
            columns = line.split()[2:]
        elif columns and re.fullmatch(r"\d+(\s+\S+)+", line):
            cells = line.split()
            if len(cells) == len(columns) + 1:
                matrix[cells[0]] = dict(zip(columns, cells[1:]))
            else:
                errors.append(f"connectivity row {cells[0]} has {len(cells) - 1} cells for {len(columns)} nodes")
        elif re.search(r"(?i)error|failed|could not|unable", line) and not line.startswith(("I -", "N -", "R -", "D -")):
            errors.append(line)
    if not nodes and domain is None:
        raise ParseError("no 'Node #' lines and no 'Domain State'", tool="imex-ctl")
    if domain is None:
        errors.append("no 'Domain State' line (truncated output?)")
    if nodes and columns and len(matrix) < len(nodes):
        errors.append(f"connectivity table has {len(matrix)} rows for {len(nodes)} nodes (truncated?)")
    return {"tool": "imex-ctl", "nodes": nodes, "matrix": matrix, "domain_state": domain, "errors": errors}


# --------------------------------------------------------------------------- nvlink -info

_INFO_GPU = re.compile(r"^GPU\s+(\d+):\s*(.*?)\s*\(UUID:\s*([^)]*)\)\s*$")
_INFO_GPU_START = re.compile(r"^GPU\s+(\d+):")
# NVML's NVLink firmware ucode types 1..5 (NVML_NVLINK_FIRMWARE_UCODE_TYPE_*), in the order printed
_UCODES = ("MSE", "NETIR", "NETIR UPHY", "NETIR CLN", "NETIR DLN")


def parse_nvlink_info(text: str) -> dict[str, Any]:
    gpus: list[dict[str, Any]] = []
    errors: list[str] = []
    in_fw = False
    for raw in text.splitlines():
        line = raw.strip()
        head = _INFO_GPU_START.match(line)
        if head is not None:
            m = _INFO_GPU.match(line)
            if m is None:  # "GPU 2: NVIDIA GB200 (UUID:": a GPU's header line cut short, not a firmware key
                errors.append(f"GPU {head[1]}: its 'GPU n: NAME (UUID: ...)' line is cut short")
            gpus.append({"index": int(head[1]), "name": m[2] if m else None, "uuid": m[3] if m else None,
                         "nvle": None, "firmware": None, "errors": []})
            in_fw = False
        elif TOOL_ERROR.search(line):
            if gpus:
                gpus[-1]["errors"].append(line)
            errors.append(f"GPU {gpus[-1]['index']}: {line}" if gpus else line)
        elif gpus and line.startswith("NVLE:"):
            gpus[-1]["nvle"] = line.split(":", 1)[1].strip()
        elif gpus and line.startswith("Firmware Version"):
            in_fw = True
            gpus[-1]["firmware"] = {}
        elif gpus and in_fw and ":" in line:
            key, value = line.split(":", 1)
            gpus[-1]["firmware"][key.strip()] = value.strip()
    if not gpus and not errors:
        raise ParseError("no 'GPU n: ... (UUID: ...)' lines", tool="nvlink-info")
    return {"tool": "nvlink-info", "gpus": gpus, "errors": errors + _info_cut_short(gpus)}


def _info_cut_short(gpus: list[dict[str, Any]]) -> list[str]:
    """nvlink -info has no end marker: each GPU prints NVLE, then its firmware versions in NVML's
    ucode order through NETIR DLN, the last type NVML defines, and every key the first GPU lists."""
    out: list[str] = []
    first = next((list(g["firmware"] or {}) for g in gpus if not g["errors"]), [])
    for g in gpus:
        if g["errors"] or g["uuid"] is None:
            continue  # "Unable to retrieve NVLink information", or its header line cut: said already
        keys = list(g["firmware"] or {})
        if g["nvle"] is None or g["firmware"] is None or not keys:
            missing = "NVLE" if g["nvle"] is None else "its firmware versions"
            out.append(f"GPU {g['index']}: ends before {missing}: output cut short")
        elif keys == list(_UCODES[: len(keys)]) and len(keys) < len(_UCODES):
            out.append(f"GPU {g['index']}: its firmware versions end before {_UCODES[len(keys)]}: output cut short")
        elif set(first) - set(keys):
            out.append(f"GPU {g['index']}: lacks the firmware {', '.join(k for k in first if k not in keys)} "
                       "that the first GPU lists: output cut short")
    return out


# --------------------------------------------------------------------------- NCCL INFO

_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_MNNVL_ON = re.compile(r"\bMNNVL\s+(\d)\b.*?cliqueSize\s+(\d+)", re.IGNORECASE)
_MNNVL_FLAG = re.compile(r"\bMNNVL\s+(\d)\b")
_NOT_WORKING = re.compile(r"MNNVL.*available but not working", re.IGNORECASE)
_NRANKS = re.compile(r"nRanks\s+(\d+)")
_RANK_LINE = re.compile(r"#\s+Rank\s+(\d+)\s+Group")
# init.cc (2.27 on): a GPU's fabric registration as NCCL read it (state 3: NVML's COMPLETED)
_FABRIC_LINE = re.compile(r"MNNVL busId 0x([0-9a-fA-F]+) fabric UUID ([0-9a-fA-F]+\.[0-9a-fA-F]+) cliqueId "
                          r"0x([0-9a-fA-F]+) state (\d+) healthMask 0x([0-9a-fA-F]+)")
_DOMAIN = re.compile(r"nvlDomainSize[ =](\d+)")


def parse_nccl_mnnvl(text: str) -> dict[str, Any]:
    """MNNVL evidence in an NCCL_DEBUG=INFO log (nccl-tests output with INFO lines)."""
    version = None
    flags: list[int] = []
    sizes: list[int] = []
    not_working: list[str] = []
    ranks: set[int] = set()
    nranks: list[int] = []
    fabric: list[dict[str, Any]] = []
    domains: set[int] = set()
    saw_nccl = False
    errors: list[str] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if "NCCL" in line or _RANK_LINE.search(line):
            saw_nccl = True
        if why := _mnnvl_cut(line):
            errors.append(f"line {n}: {why} ({line[:60]!r}): a line wrapped or cut, not whole")
        if m := _FABRIC_LINE.search(line):
            fabric.append({"bus_id": f"0x{m[1]}", "cluster_uuid": m[2], "clique_id": int(m[3], 16), "state": int(m[4]),
                           "health_mask": int(m[5], 16)})
        if m := _DOMAIN.search(line):
            domains.add(int(m[1]))
        if m := _NCCL_VERSION.search(line):
            version = version or m.group(1)
        if _NOT_WORKING.search(line):
            not_working.append(line)
        elif m := _MNNVL_ON.search(line):
            flags.append(int(m.group(1)))
            sizes.append(int(m.group(2)))
        elif "NCCL INFO" in line and (m := _MNNVL_FLAG.search(line)):
            flags.append(int(m.group(1)))
        if m := _NRANKS.search(line):
            nranks.append(int(m.group(1)))
        if m := _RANK_LINE.search(line):
            ranks.add(int(m.group(1)))
    if not saw_nccl:
        raise ParseError("no NCCL lines", tool="nccl-mnnvl")
    if why := interleaving(text):  # the ranks' lines cut into each other: nccl-debug's check, its words
        errors.append(why)
    mnnvl = None if not flags and not not_working else (bool(flags) and all(flags) and not not_working)
    # mnnvl.cc's WARN: the rank's init returns ncclSystemError (the job fails): a fault
    faults = [f"MNNVL available but not working on {len(not_working)} rank(s): IMEX channel or "
              "configuration (nvidia-imex-ctl -N)"] if not_working else []
    return {"tool": "nccl-mnnvl", "nccl_version": version, "mnnvl": mnnvl,
            "clique_sizes": sorted(set(sizes)), "nvl_domain_sizes": sorted(domains), "fabric": fabric,
            "not_working": not_working,
            "ranks": max(nranks) if nranks else (max(ranks) + 1 if ranks else None), "faults": faults,
            "errors": errors}


def _mnnvl_cut(line: str) -> str | None:
    """Why a line holding MNNVL words is not one NCCL prints whole, or None: init.cc's fabric line
    stopped before its healthMask, mnnvl.cc's WARN before 'available but not working', or an MNNVL
    word on a line of no NCCL log (the tail of a line wrapped inside it)."""
    if "MNNVL busId" in line and not _FABRIC_LINE.search(line):
        return "an 'MNNVL busId ... fabric UUID ...' line short of its 'healthMask'"
    if "WARN MNNVL (cliqueSize" in line and not _NOT_WORKING.search(line):
        return "mnnvl.cc's WARN short of 'is available but not working'"
    if re.search(r"\bMNNVL\b", line) and "NCCL" not in line and not _RANK_LINE.search(line):
        return "an MNNVL word on no NCCL log line"
    return None
