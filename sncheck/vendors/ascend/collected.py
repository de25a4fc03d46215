"""Parse a collected environment log (MindCluster's ``npu_info_before.txt`` and the
vendor docs' examples): command lines followed by their output, each output parsed by the
view the command names.

``parse_collected`` (``ascend-collected``)::

    {"tool": "ascend-collected", "sections": [{"command": "hccn_tool -i 0 -net_health -g",
       "view": "hccn-net-health", "device": 0, "parsed": {...} | null, "error": null}],
     "errors": []}
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sncheck.errors import ParseError

from sncheck.vendors.ascend import hccn_tool, npu_smi

_COMMAND = re.compile(r"^\s*(?:\$\s*)?((?:/\S+/)?(npu-smi|hccn_tool)\s.*?)\s*(?:\|.*)?$")


def _view(cmd: str) -> tuple[str, Callable[[str], dict[str, Any]]] | None:
    if "hccn_tool" in cmd:
        for flag, view in (("-net_health", "net_health"), ("-link_stat", "link_stat"), ("-link ", "link"),
                           ("-optical", "optical"), ("-fec", "fec"), ("-stat", "stat"), ("-ip", "ip"),
                           ("-tls", None)):
            if flag in cmd + " ":
                if view is None:
                    return None
                fn = hccn_tool.VIEWS.get(view) or {"ip": hccn_tool.parse_ip}[view]
                return f"hccn-{view.replace('_', '-')}", fn
        return None
    if " -t health" in cmd:
        return "npu-smi-health", npu_smi.parse_health
    if " -t ecc" in cmd:
        return "npu-smi-ecc", npu_smi.parse_ecc
    if " -t usages" in cmd or " -t memory" in cmd:
        return "npu-smi-hbm", npu_smi.parse_hbm
    if " -t spod-info" in cmd:
        return "npu-smi-spod", npu_smi.parse_spod
    if " -t topo" in cmd:
        return "npu-smi-topo", npu_smi.parse_topo
    if cmd.rstrip().endswith(" -m"):
        return "npu-smi-mapping", npu_smi.parse_mapping
    if " -t " in cmd:
        return "npu-smi-fields", npu_smi.parse_fields
    if cmd.rstrip().endswith("npu-smi info"):
        return "npu-smi", npu_smi.parse_info
    return None


def parse_collected(text: str) -> dict[str, Any]:
    sections: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    body: list[str] = []

    def close() -> None:
        if cur is None:
            return
        found = _view(cur["command"])
        out = "\n".join(body)
        if found is None:
            cur["view"] = None
        elif not out.strip():
            cur["view"], cur["error"] = found[0], "no output"
        else:
            cur["view"] = found[0]
            try:
                cur["parsed"] = found[1](out)
            except ParseError as e:
                cur["error"] = e.message
        sections.append(cur)

    for raw in text.splitlines():
        m = _COMMAND.match(raw)
        if m and not raw.strip().startswith("|"):
            close()
            dev = re.search(r"-i\s+(\d+)", m.group(1))
            cur = {"command": m.group(1), "view": None, "device": int(dev.group(1)) if dev else None,
                   "parsed": None, "error": None}
            body = []
        elif cur is not None:
            body.append(raw)
    close()
    if not sections:
        raise ParseError("no npu-smi or hccn_tool command lines", tool="ascend-collected")
    errors = [f"`{s['command']}`: {s['error']}" for s in sections if s["error"]]
    # what each command's own view found wrong in its output (an npu-smi health read cut
    # before its Error Code line) is this log's too
    errors += [f"`{s['command']}`: {e}" for s in sections if isinstance(s.get("parsed"), dict)
               for e in s["parsed"].get("errors") or []]
    return {"tool": "ascend-collected", "sections": sections, "errors": errors}
