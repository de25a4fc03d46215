"""Parse ``asys health`` / ``asys diagnose`` tables and ``ascend-dmi`` results.

``parse_asys`` (``asys``)::

    {"tool": "asys", "reports": [{"command": "asys health -d=0", "scope": "Device ID: 0",
       "overall": "Warning", "devices": {"0": "Healthy"}, "error_codes": ["0xa419321c"],
       "codes_elided": false, "results": {"Stress Detect": "Pass, Warn, Pass, Warn"}}],
     "faults": ["'asys health -d=0': overall health Warning"], "errors": []}

  ``codes_elided``: asys lists five codes and a '......' row past five (ErrorCode Num says
  how many). ``faults``: a health other than Healthy, a diagnosis with Warn or Fail.

``parse_ascend_dmi`` (``ascend-dmi``): the P2P matrices, the bandwidth table and the
compute table::

    {"tool": "ascend-dmi", "matrices": {"Unidirectional Peer to Peer Test": {"0": {"1": 391.2}}},
     "bandwidth": [{"id": 0, "size_bytes": 536870912, "GBps": 58.125}],
     "compute": [{"device": "0/1", "tflops": 752.465, "power_W": 338.5}], "errors": []}
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors.ascend.npu_smi import dcmi_failed
from sncheck.vendors.grammar import Grammar


_HEALTHY = "Healthy"
_ELIDED_CODES = "......"  # asys health -d prints its first 5 codes, then this row (asys_health.py)


def parse_asys(text: str) -> dict[str, Any]:
    reports: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    last_key = None
    for raw in text.splitlines():
        line = raw.strip().replace("\u202c", "")
        if line.startswith("asys "):
            cur = {"command": line, "scope": None, "overall": None, "devices": {}, "error_codes": [], "results": {},
                   "codes_elided": False}
            reports.append(cur)
            continue
        if cur is not None and line.startswith("+"):
            cur["_open"] = False  # a border closes the rows above it
            cur["_rules"] = cur.get("_rules", 0) + 1
        if cur is None or not line.startswith("|"):
            continue
        cur["_open"] = True
        cur["_rows"] = cur.get("_rows", 0) + 1
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 2:
            continue
        left, right = cells[0], cells[1]
        if m := re.match(r"^ErrorCode Num:\s*(\d+)", right):
            cur["_codes"] = int(m.group(1))
        elif m := re.match(r"^Overall Health:\s*(\w+)", right):
            cur["scope"], cur["overall"] = left, m.group(1)
        elif m := re.match(r"^Device ID:\s*(\d+)$", left):
            if right == "Diagnostic Result":
                cur["scope"] = left
            else:
                cur["devices"][m.group(1)] = right
        elif re.match(r"^0x[0-9a-fA-F]+$", left):
            cur["error_codes"].append(left)
        elif left == right == _ELIDED_CODES:
            cur["codes_elided"] = True
        elif right == "Diagnostic Result":
            cur["scope"] = left
        elif left and right:
            cur["results"][left] = right
            last_key = left
        elif not left and right and last_key:
            cur["results"][last_key] += f" {right}"
    if not reports:
        raise ParseError("no 'asys ...' command with a table", tool="asys")
    errors = [e for r in reports for e in _report_cut(r)]
    return {"tool": "asys", "reports": reports, "faults": [f for r in reports for f in _report_faults(r)],
            "errors": errors}


def _report_faults(report: dict[str, Any]) -> list[str]:
    """What a report shows wrong: a health other than Healthy (Warning, Alarm, Critical,
    Unknown), a diagnosis other than Pass (Warn: the detection failed; Fail: a fault)."""
    cmd = report["command"]
    out = [f"{cmd!r}: overall health {report['overall']}"] if report["overall"] not in (None, _HEALTHY) else []
    out += [f"{cmd!r}: device {d} {h}" for d, h in report["devices"].items() if h != _HEALTHY]
    out += [f"{cmd!r}: {name} {result}" for name, result in report["results"].items()
            if re.search(r"\b(?:Warn|Fail)\b", result)]
    return out


def _report_cut(report: dict[str, Any]) -> list[str]:
    """What a report's table states of itself (oam-tools src/asys/view/table.py): it closes
    with a border, ``ErrorCode Num: N`` codes follow (the first five and a '......' row past
    five), ``Group of N Device`` rows follow, a diagnosis has its result row. A cut shows as
    one of these short."""
    cmd = report["command"]
    is_open, codes, rows = report.pop("_open", None), report.pop("_codes", None), report.pop("_rows", 0)
    rules = report.pop("_rules", 0)
    if not rows:
        return [f"{cmd!r}: no table after the command: output cut short"]
    out = [f"{cmd!r}: the table has no closing border: output cut short"] if is_open or rules < 2 else []
    listed = len(report["error_codes"])
    if codes is not None and (listed != min(codes, 5) or (codes > 5) != report["codes_elided"]):
        out.append(f"{cmd!r}: ErrorCode Num: {codes} but {listed} codes listed: output cut short")
    if (m := re.match(r"^Group of (\d+) Device", report["scope"] or "")) and report["overall"] is not None \
            and int(m.group(1)) != len(report["devices"]):
        out.append(f"{cmd!r}: a group of {m.group(1)} devices but {len(report['devices'])} listed: output cut short")
    if report["overall"] is None and not report["results"]:
        out.append(f"{cmd!r}: a diagnosis without its result row: output cut short")
    return out


_DMI_RULE = re.compile(r"^-{20,}$")


@dcmi_failed({}, "ascend-dmi")  # DCMI could not reach the driver: no test ran
def parse_ascend_dmi(text: str) -> dict[str, Any]:
    """Each table after its own title or header (ascend-dmi prints them so): 'Bandwidth Test'
    and its 'ID Size(Bytes) ...' header, a '... Peer to Peer Test' title and its column ids,
    the compute table's 'Device ... TFLOPS@TYPE Power(W)' header between '-----' rules."""
    matrices: dict[str, dict[str, dict[str, float]]] = {}
    bandwidth: list[dict[str, Any]] = []
    compute: list[dict[str, Any]] = []
    errors: list[str] = []
    table: str | None = None  # "bandwidth", "p2p", "compute"
    title = None
    cols: list[str] = []
    compute_open = False
    for raw in text.splitlines():
        line = raw.strip()
        if line == "Bandwidth Test" or line.startswith("ID ") and "Bandwidth(GB/s)" in line:
            table = "bandwidth"
            continue
        if line.endswith("Peer to Peer Test"):
            table, title, cols = "p2p", line, []
            matrices[title] = {}
            continue
        if line.startswith("Device ") and "TFLOPS@" in line:
            table, compute_open = "compute", True
            continue
        if table == "compute" and _DMI_RULE.match(line):
            compute_open = not compute  # the rule under the rows closes the table
            continue
        if table == "bandwidth" and (m := re.fullmatch(r"(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)", line)):
            bandwidth.append({"id": int(m.group(1)), "size_bytes": int(m.group(2)), "GBps": float(m.group(4))})
        elif table == "p2p" and title and not cols and re.fullmatch(r"\d+(\s+\d+)*", line):
            cols = line.split()
        elif table == "p2p" and title and cols and (m := re.fullmatch(r"(\d+)((?:\s+[\d.]+)+)", line)):
            cells = m.group(2).split()
            if m.group(1) != cols[len(matrices[title]) % len(cols)]:
                errors.append(f"{title}: row {m.group(1)} where row {cols[len(matrices[title]) % len(cols)]} is due")
            if len(cells) != len(cols):
                errors.append(f"{title}: row {m.group(1)} has {len(cells)} cells for {len(cols)} columns: cut short")
            # the diagonal too (the tool prints 0 there): every row holds every column, and a row
            # without its own cell was read as a cut one
            matrices[title][m.group(1)] = {c: float(v) for c, v in zip(cols, cells)}
        elif table == "compute" and (m := re.fullmatch(r"(\d+(?:/\d+)?)\s+([\d,]+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)",
                                                       line)):
            compute.append({"device": m.group(1), "tflops": float(m.group(4)), "power_W": float(m.group(5))})
            compute_open = True
    if not matrices and not bandwidth and not compute:
        raise ParseError("no ascend-dmi result table", tool="ascend-dmi")
    if compute_open:
        errors.append("the compute table has no '-----' rule under its rows: output cut short")
    for name, rows in matrices.items():
        if not rows:
            errors.append(f"{name}: no rows under its title: output cut short")
    # -t p2p prints the unidirectional matrix, then the bidirectional one
    if any(t.startswith("Unidirectional") for t in matrices) and not any(t.startswith("Bidirectional") for t in matrices):
        errors.append("the unidirectional P2P matrix without the bidirectional one after it: output cut short")
    # only the tables printed: a listing counts the records of each (an empty one is none printed)
    found: dict[str, Any] = {"matrices": matrices} if matrices else {}
    found.update({k: v for k, v in (("bandwidth", bandwidth), ("compute", compute)) if v})
    return {"tool": "ascend-dmi", **found, "errors": errors}


_OAM = "hicann/oam-tools @ ea0ce91"
GRAMMAR = {
    "asys": Grammar(
        tool="asys health [-d=N] and asys diagnose [-d=N] -r=MODE (as pasted: each after its command line)",
        versions="asys of CANN 8.x (oam-tools; the tables unchanged through ea0ce91)",
        sources=(f"{_OAM} src/asys/view/table.py generate_report: the borders, cells and rules",
                 f"{_OAM} src/asys/health/asys_health.py _print_screen: the health tables, five codes and '......'",
                 f"{_OAM} src/asys/diagnose/asys_diagnose.py print_save: the diagnosis tables and their results",
                 "closed: fixtures/real/ascend/14 and 15 (oam-tools docs/zh/asys examples)"),
        lines=("a blank line, a ' +-...-+-...-+ ' border (columns padded to their widest cell + 5), header rows ' | "
               "A | B | ', a ' +=...=+=...=+ ' rule, then the data: health without -d: 'Group of N Device | Overall "
               "Health: S' and a row 'Device ID: i | S' a device, each closed by a border; health -d: 'Device ID: d | "
               "Overall Health: S', ' | ErrorCode Num: N', then a row 'CODE | message' a code, each closed by a border "
               "(the first 5 and a '...... | ......' row past 5; none: the table ends at its '+===' rule); diagnose: "
               "'Group of N Device | Diagnostic Result' or 'Device ID: d | Diagnostic Result', a section border "
               "'+--- Hardware ---' (Performance, Component), the result row 'Stress Detect | Pass - All' (CPU Detect, "
               "HBM Detect with its new ECC counts '(0, 9, 0, 0)' on a row of its own or 'Pass(9)', AICore STL "
               "Detect, AI Vector; per device 'Pass, Warn, ...'), one closing border; S Healthy, Warning, Alarm, "
               "Critical, Unknown; a result Pass, Warn (the detection failed) or Fail (a fault)"),
        end=("each report's closing border, with the codes its ErrorCode Num states (at most 5 and '......'), the "
             "devices its 'Group of N Device' states, a diagnosis's result row"),
        failures=("a health other than Healthy, a result with Warn or Fail (faults); no table after a command, no "
                  "closing border, fewer codes or devices than stated, no result row (errors: cut short)"),
        values=("reports [{command, scope, overall, devices {id: health}, error_codes, codes_elided, results "
                "{detection: result}}], faults, errors"),
    ),
    "ascend-dmi": Grammar(
        tool="ascend-dmi --bw -t p2p, h2d or d2h and ascend-dmi -f -t TYPE (the MindCluster ToolBox)",
        versions="ascend-dmi of MindCluster ToolBox 6.x to 26.1 (A2 910B, A3 910C)",
        sources=("closed: Huawei MindCluster ToolBox ascend-dmi user guide (bandwidth, P2P and compute tests)",
                 "closed: fixtures/real/ascend/17 (FlagRT/FlagPerf's ascend-dmi 26.1 fixtures, A3)"),
        lines=("P2P: a title 'Unidirectional Peer to Peer Test' or 'Bidirectional Peer to Peer Test', the column "
               "device ids, a row a device 'i v v ...' (GB/s; itself 0); bandwidth: 'Bandwidth Test', the header "
               "'ID Size(Bytes) Execute Times Bandwidth(GB/s) Elapsed Time(us)', a row a test; compute: a '-----' "
               "rule, the header 'Device Execute Times Duration(ms) TFLOPS@FP16 Power(W)' (the type: FP16, BF16, "
               "INT8, ...), a rule, a row a device ('0' or NPU/chip '0/1'; times with thousands commas; ms; "
               "TFLOPS; W), a closing rule"),
        end=("P2P: a row for every column (the square), the bidirectional matrix after the unidirectional one; compute: the rule under its rows; bandwidth: none stated "
             "(the judge's count of rows, --expect N)"),
        failures=("a matrix row with fewer cells than columns, a matrix without a row, the compute table without "
                  "its closing rule (errors: cut short); DCMI's init failure printed instead of any table (the "
                  "lines of libdcmi's init, as npu-smi and hccn_tool print them: 'dcmi module initialize failed. ret "
                  "is -8005'): no test, tool_failed, errors: not measured; no table otherwise (a parse error)"),
        values=("matrices {title: {i: {j: GB/s}}} (the diagonal's 0 kept), bandwidth [{id, size_bytes, GBps}], "
                "compute [{device, tflops, power_W}] (each key only where its table is printed), errors"),
    ),
}
