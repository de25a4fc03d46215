"""One view on every device of a node, in one command.

sncheck runs a fixed POSIX ``sh`` loop (no inventory data in it) that prints
``== device <phy-id> <view>`` on a line of its own (after an empty line, so
output without a final newline cannot swallow it) before each device's output; :func:`parse_sweep`
(``ascend-sweep``) splits it and parses each section with the view's parser::

    {"tool": "ascend-sweep", "view": "net_health",
     "devices": {"0": {"net_health": "Success", ...}, "5": null}, "errors": ["device 5: ..."]}

A device whose query printed DCMI's init failure instead of its output (``dcmi module
initialize failed. ret is -8005``: the tool could not reach the driver, see
:func:`sncheck.vendors.ascend.npu_smi.tool_failed`) is null too, its lines kept under
``"tool_failed": {"5": ["dcmi module initialize failed. ret is -8005"]}`` and its error
saying it was not measured: a run's fact on the sweep is ``not_measured`` for it, never the
device's fault.

A 910C package is two devices (dies); ``npu-smi -t health|ecc|board`` address them as
``-i <npu> -c <chip>``, ``hccn_tool`` as ``-i <phy-id>``; both loops print the phy id.
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError

from sncheck.vendors.ascend import hccn_tool, npu_smi
from sncheck.vendors.grammar import Grammar

GRAMMAR = {"ascend-sweep": Grammar(
    tool="sncheck's own sweep loop (sh -c): hccn_tool -i N FLAG -g or npu-smi info -t health, ecc or board -i N "
         "-c C on every device, each output under its '== device N VIEW' line",
    versions="sncheck's loop (hccn_script, npu_smi_script below); each section's tool as its own view covers",
    sources=("this module's hccn_script and npu_smi_script: 'echo; echo \"== device $i VIEW\"; TOOL ... 2>&1 || "
             "rc=$?' per device, 'exit $rc'",
             "each section's output: its view's grammar (hccn_tool_grammar: net_health, link, optical, fec, stat, "
             "link_stat; npu_smi_grammar: health, ecc, and npu-smi-fields for a chip's board (its VDie ID); the DCMI "
             "init failure lines)"),
    lines=("per device, in the loop's order (phy ids 0..N-1; npu-smi: NPU n, chip c is n*chips+c): an empty "
           "line (the loop's 'echo': a section whose output lacks its last newline cannot swallow the next "
           "marker), '== device N VIEW' (VIEW: net_health, link, optical, fec, stat, link_stat, health, ecc, board), "
           "then the tool's stdout and stderr (2>&1): its view's grammar, or its failure line"),
    end=("the last device's section through its view's end marker; how many devices: the judge's count (the "
         "inventory's cards, --expect N): a sweep cut between sections lists fewer"),
    failures=("a section its view cannot read or that is empty (errors, the device null: a run names it); DCMI's "
              "init failure in a section ('dcmi module initialize failed. ret is -8005', optionally after "
              "'DrvMngGetConsoleLogLevel failed. (...)') or hccn_tool's own failure line (hccn_tool_grammar.FAILURE_LINES: "
              "'Get device health status failed!', 'The device is not exist!', ...): the tool could not read that device "
              "(tool_failed, errors: not measured; a run's fact not_measured, no device blamed); each section's "
              "view's errors (cut short) under its device; its faults judged by the run's check of the view "
              "(npu_health_codes, ecc, roce_*)"),
    values="view, devices {N: its view's JSON | null}, tool_failed {N: [lines]}, errors",
)}

VIEWS = {**hccn_tool.VIEWS, "health": npu_smi.parse_health, "ecc": npu_smi.parse_ecc, "board": npu_smi.parse_fields}
_HCCN_FLAG = {"net_health": "-net_health", "link": "-link", "optical": "-optical", "fec": "-fec",
              "stat": "-stat", "link_stat": "-link_stat"}
_TOOL = {"health": "npu-smi", "ecc": "npu-smi", "board": "npu-smi"}  # the rest: hccn_tool
_SECTION = re.compile(r"^== device (\d+)(?: (\w+))?\s*$")


def hccn_script(view: str, devices: int) -> str:
    ids = " ".join(str(i) for i in range(devices))
    return (f"rc=0; for i in {ids}; do echo; echo \"== device $i {view}\"; "
            f"hccn_tool -i $i {_HCCN_FLAG[view]} -g 2>&1 || rc=$?; done; exit $rc")


def npu_smi_script(view: str, packages: int, chips: int) -> str:
    """``npu-smi info -t <view> -i <npu> -c <chip>`` on every die; the phy id is npu*chips+chip."""
    npus = " ".join(str(i) for i in range(packages))
    dies = " ".join(str(c) for c in range(chips))
    return (f"rc=0; for n in {npus}; do for c in {dies}; do echo; echo \"== device $((n*{chips}+c)) {view}\"; "
            f"npu-smi info -t {view} -i $n -c $c 2>&1 || rc=$?; done; done; exit $rc")


def parse_sweep(text: str) -> dict[str, Any]:
    sections: dict[str, tuple[str | None, list[str]]] = {}
    cur = None
    for raw in text.splitlines():
        if m := _SECTION.match(raw.strip()):
            cur = m.group(1)
            sections[cur] = (m.group(2), [])
        elif cur is not None:
            sections[cur][1].append(raw)
    if not sections:
        raise ParseError("no '== device <n>' sections", tool="ascend-sweep")
    view = next((v for v, _ in sections.values() if v), None)
    parse = VIEWS.get(view or "")
    devices: dict[str, Any] = {}
    errors: list[str] = []
    tool_failed: dict[str, list[str]] = {}
    for dev, (_, lines) in sections.items():
        body = "\n".join(lines)
        if parse is None:
            devices[dev] = {"text": body}
            continue
        try:
            devices[dev] = parse(body)
        except ParseError as e:
            devices[dev] = None
            errors.append(f"device {dev}: {e.message}: {' '.join(body.split())[:120] or 'no output'}")
            continue
        failed = devices[dev].get("tool_failed") or []  # every view reads DCMI's failure itself (dcmi_failed)
        if failed:
            # the tool could not reach the driver for this device (DCMI's init line, as the
            # single npu-smi view reads it): not measured, and no fault of the device
            devices[dev] = None
            tool_failed[dev] = failed
            errors.append(f"device {dev}: {_TOOL.get(view or '', 'hccn_tool')} failed ({failed[0]}): not measured")
            continue
        # what the view found wrong in a device's section (cut before its Error Code) is the sweep's
        errors += [f"device {dev}: {e}" for e in devices[dev].get("errors") or []]
    out: dict[str, Any] = {"tool": "ascend-sweep", "view": view, "devices": devices, "errors": errors}
    if tool_failed:
        out["tool_failed"] = tool_failed
    return out
