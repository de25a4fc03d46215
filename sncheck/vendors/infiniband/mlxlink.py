"""``mlxlink -d DEV [-m] [-c] [-e] [--json]`` (mstflint / MFT): view ``mlxlink``.

Grammar (Mellanox/mstflint ``mlxlink/modules/printutil/mlxlink_cmd_print.cpp``,
``mlxlink_record.cpp``, ``mlxlink_commander.cpp`` at b9d9e84, MFT 4.2x-4.3x; the same printer
since mstflint 4.14):

- text: sections, each ``\\nTITLE\\n`` then a rule of ``-`` as long as the title, then one
  record a line, ``KEY`` padded to 37 columns then ``: VALUE`` (``KEY<spaces>: VALUE``; a value
  may be coloured: ANSI codes, removed before parsing). Titles: ``Operational Info`` (``State``:
  ``Active``, ``Polling``, ``Disable``, ``Physical LinkUp``..., ``Physical state``: ``LinkUp``,
  ``ETH_AN_FSM_ENABLE``..., ``Speed`` (``IB-NDR``, ``400G``), ``Width`` (``4x``), ``FEC``,
  ``Loopback Mode``, ``Auto Negotiation``), ``Supported Info``, ``Troubleshooting Info``
  (``Status Opcode``: 0 when no issue; ``Group Opcode``; ``Recommendation``), ``Tool
  Information`` (``Firmware Version``, ``amBER Version``, ``MFT Version``), ``Module Info``
  (``-m``: ``Temperature [C]``, ``Rx Power Current [dBm]``...), ``Physical Counters and BER
  Info`` (``-c``: ``Time Since Last Clear [Min]``, ``Effective Physical Errors``, ``Effective
  Physical BER`` (``15E-255``), ``Raw Physical Errors Per Lane`` (``0,0,0,0``), ``Raw
  Physical BER``, ``Link Down Counter``, ``Link Error Recovery Counter``), ``EYE Opening
  Info`` (``-e``). A value the device does not give is ``N/A``.
- ``--json``: ``{"result": {"output": {TITLE: {KEY: VALUE | {"values": [...], "mask": ..}}},
  "warning": {"message": ..}}, "status": {"code": 0 | 1, "message": "success" | errors}}``.
- errors: ``-E- ...`` lines (no device, no access to the register), JSON ``status.code`` 1.

Whole: the text's ``Operational Info`` section with its ``State`` (mlxlink prints it first,
for any option) and ``Troubleshooting Info`` with its ``Recommendation`` (hidden only in a
PRBS test), whose text is ``No issue was observed`` where the ``Status Opcode`` is 0 (a
shorter one, 'No is', is its line cut and the paste ended with a newline: cuts15), and a ``Tool
Information`` section through its ``MFT Version`` ('mft 4.22.1-520'); JSON that parses (a cut document keeps the values before the cut, and is cut; a
prompt or ``mlxlink`` command line pasted before the document is not part of it).
Failures (exit 1): ``-E-`` errors / status code 1, ``State`` not ``Active`` (a link not up),
a ``Status Opcode`` other than 0, counters ``Link Down Counter``, ``Link Error Recovery
Counter`` or ``Effective Physical Errors`` above zero.

JSON: ``{"tool": "mlxlink", "format": "text"|"json", "sections": {TITLE: {KEY: VALUE}},
"state", "physical_state", "speed", "width", "fec", "status_opcode", "recommendation",
"firmware", "counters": {"link_down": n, "link_error_recovery": n, "effective_errors": n,
"effective_ber": "15E-255", "raw_ber": ...}, "faults", "errors"}``.
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import jsonprefix
from sncheck.vendors.delivery import PS1, command_line

TOOL = "mlxlink"
_RECORD = re.compile(r"^(?P<key>\S(?:[^:]*\S)?)\s*: (?P<value>.*)$")
_RULE = re.compile(r"^-{3,}$")
_JSON_START = re.compile(r"^\{\s*$", re.MULTILINE)
_COMMAND = command_line("mlxlink")  # a path too: /usr/bin/mlxlink
_PROMPT = re.compile(rf"^{PS1}$")  # a shell prompt a user pasted after the output ('user@host:~$')
_COUNTERS = {"Link Down Counter": "link_down", "Link Error Recovery Counter": "link_error_recovery",
             "Effective Physical Errors": "effective_errors", "Effective Physical BER": "effective_ber",
             "Raw Physical BER": "raw_ber", "Raw Physical Errors Per Lane": "raw_errors_per_lane",
             "Symbol Errors": "symbol_errors", "Symbol BER": "symbol_ber",
             "Time Since Last Clear [Min]": "minutes_since_clear"}
_FAULT_COUNTERS = ("link_down", "link_error_recovery", "effective_errors", "symbol_errors")


def parse_mlxlink(text: str) -> dict[str, Any]:
    """``mlxlink`` text or ``--json`` output (see the module)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        return _from_json(stripped)
    # a --json document after the prompt or command line a user pasted with it ("#mlxlink ... --json")
    if (m := _JSON_START.search(stripped)) and all(_COMMAND.match(ln.strip()) or not ln.strip()
                                                   for ln in stripped[: m.start()].split("\n")):
        return _from_json(stripped[m.start():])
    sections: dict[str, dict[str, str]] = {}
    outputs = [sections]  # one a device: a loop over devices (or a splice) prints Operational Info again
    errors: list[str] = []
    title: str | None = None
    lines = text.split("\n")
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("-E-"):
            errors.append(line[:300])
            continue
        if line.startswith("-W-"):
            continue
        if _RULE.match(line) and i > 0 and lines[i - 1].strip():
            title = lines[i - 1].strip()
            if title == "Operational Info" and title in sections:
                sections = {}
                outputs.append(sections)
            sections.setdefault(title, {})
            continue
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if _RULE.match(nxt):
            continue  # a title: the rule under it opens the section
        if title and (m := _RECORD.match(line)):
            sections[title][m["key"]] = m["value"].strip()
    if not sections and not errors:
        raise ParseError("no mlxlink section (a title over a '----' rule) and no -E- error", tool=TOOL)
    data = _judge(outputs[0], errors, "text")
    if len(outputs) > 1:  # each output judged: a later device's never hides an earlier one's fault
        data["outputs"] = len(outputs)
        judged = [data] + [_judge(later, [], "text") for later in outputs[1:]]
        data["faults"] = [f"output {n} of {len(outputs)}: {f}" for n, d in enumerate(judged, 1) for f in d["faults"]]
        data["errors"] += [f"output {n} of {len(outputs)}: {e}" for n, d in enumerate(judged[1:], 2) for e in d["errors"]]
    if not data["errors"]:
        data["errors"] += _asked_sections(lines, sections)
    last = next((ln.strip() for ln in reversed(lines) if ln.strip()), "")
    if not data["errors"] and not (_RULE.match(last) or _RECORD.match(last) or last.startswith(("-E-", "-W-"))
                                   or _COMMAND.match(last) or _PROMPT.match(last)):  # a title whose '----' rule and records were cut
        data["errors"].append(f"the output ends at {last[:80]!r}, a section title with no '----' rule under it: "
                              "cut short")
    tool_info = sections.get("Tool Information")
    if tool_info is None and not data["errors"] and _since_4_18(lines, sections):
        data["errors"].append("no 'Tool Information' after Troubleshooting Info, which mlxlink prints since mstflint "
                              "4.18 (this output is of one as new): cut short")
    if tool_info is not None and not data["errors"] and \
            not any(k.endswith(" Version") and k not in _TOOL_FIXED for k in tool_info):
        data["errors"].append("'Tool Information' ends before its package's Version record (MFT Version, "
                              "mstflint Version): cut short")
    return data


# the sections a query option adds after Tool Information (mlxlink_commander.cpp: showModuleInfo -m,
# showBer -c, showEye -e), and for -c the BER record every release prints (prepareBerInfo); -m's last record
# is prepareBerModuleInfo's last field (showModuleInfo prints it last, whatever the module: N/A where not given)
_OPTION_SECTIONS = {"m": ("Module Info", "Tx Adaptive EQ Fault [per lane]"), "c": ("Physical Counters and BER Info", "Raw Physical BER"),
                    "e": ("EYE Opening Info", None),
                    # showBerMonitorInfo: 'BER Monitor Info' (BER Monitor State, BER Monitor Type); on an HCA mlxlink
                    # refuses it instead, '-E- "--show_ber_monitor" option is not supported for HCA' (harvest 12)
                    "ber_monitor": ("BER Monitor Info", "BER Monitor Type")}
_OPTIONS = re.compile(r"\s-(?P<short>[a-z]+)\b|\s--show_(?P<long>[a-z_]+)\b")
# the long options, as getopt_long takes them: any prefix unique among mlxlink's --show_* options
# ('--show_mo' is --show_module, '--show_m' also --show_multi_port_info: not taken)
_LONG = {"module": ("m", 2), "counters": ("c", 2), "eye": ("e", 1), "ber_monitor": ("ber_monitor", len("ber_monitor"))}
_REFUSED = re.compile(r'^-E- "--show_(?P<long>[a-z_]+)" option is not supported')  # the option's section not printed
# runningVersion: 'Tool Information' is Firmware Version, amBER Version (16 nm devices on), then
# PKG_NAME ' Version' (MFT Version, mstflint Version): its last record
_TOOL_FIXED = ("Firmware Version", "amBER Version")


def _command(lines: list[str]) -> str | None:
    """The pasted ``mlxlink`` command line of the output, if any (stripped)."""
    return next((ln.strip() for ln in lines if _COMMAND.match(ln.strip())), None)


def _since_4_18(lines: list[str], sections: dict[str, dict[str, str]]) -> bool:
    """Whether the output is certainly of an mlxlink that prints 'Tool Information' (showPddr calls
    runningVersion since mstflint 4.18, 121a3904, the commit that added --amber_collect): a pasted
    command line with --amber_collect, or 'Physical state : N/A' (mstflint PR 1103, 2025: N/A where it
    printed Disabled). An older mlxlink ends at Troubleshooting Info (SONiC's 2018 output)."""
    return "--amber_collect" in (_command(lines) or "") or sections.get("Operational Info", {}).get("Physical state") == "N/A"


def _asked_sections(lines: list[str], sections: dict[str, dict[str, str]]) -> list[str]:
    """A pasted command line says what the output holds: each section its options ask for, whole through
    its last fixed record (a cut after the Recommendation otherwise reads as a shorter whole output)."""
    command = _command(lines)
    if command is None:
        return []
    asked = set()
    for m in _OPTIONS.finditer(command):
        if m["long"]:
            asked |= {flag for name, (flag, least) in _LONG.items()
                      if len(m["long"]) >= least and name.startswith(m["long"])}
            continue
        if not set(m["short"]) <= set("mce"):  # -m -c -e bundled in any order: -cme, -emc
            continue  # -d, -p and the others take a value or are not a query of these sections
        asked |= set(m["short"])
    refused = {r["long"] for ln in lines if (r := _REFUSED.match(ln.strip()))}
    out = []
    for flag in sorted(asked):
        title, last = _OPTION_SECTIONS[flag]
        option = f"--show_{flag}" if len(flag) > 1 else f"-{flag}"
        if len(flag) > 1 and flag in refused:
            continue  # mlxlink said so instead of printing the section: its -E- line is the run's error
        if title not in sections:
            out.append(f"the command asks {option} but no '{title}' section follows: cut short")
        elif last and last not in sections[title]:
            out.append(f"'{title}' ends before its '{last}' record: cut short")
    return out


def _from_json(text: str) -> dict[str, Any]:
    try:
        doc, whole = jsonprefix.load(text)
    except ValueError as e:  # (a number no tool measures, 1e999 or NaN, is refused naming its field)
        why = str(e) if isinstance(e, jsonprefix.NotFinite) else f"mlxlink --json output is not JSON ({e})"
        return {"tool": TOOL, "format": "json", "sections": {}, "faults": [], "errors": [why]}
    if not isinstance(doc, dict) or not isinstance(doc.get("result"), dict) and "status" not in doc:
        raise ParseError("JSON, but not mlxlink's (no result / status)", tool=TOOL)
    output = (doc.get("result") or {}).get("output") or {}
    sections: dict[str, dict[str, str]] = {}
    for title, records in output.items() if isinstance(output, dict) else ():
        if isinstance(records, dict):
            sections[str(title)] = {str(k): (", ".join(map(str, v.get("values") or [])) if isinstance(v, dict)
                                             else str(v)) for k, v in records.items()}
    status = doc.get("status") or {}
    # a cut document: the sections it printed whole are kept (jsonprefix), and it is not whole
    errors = [] if whole else ["mlxlink --json output is cut short (the document does not close): "
                               "the values before the cut are kept"]
    if isinstance(status, dict) and status.get("code") not in (0, None):
        errors.append(f"mlxlink status {status.get('code')}: {str(status.get('message'))[:300]}")
    return _judge(sections, errors, "json")


def _int(v: str | None) -> int | None:
    v = (v or "").strip()
    return int(v) if v.isdecimal() else None


def _minutes(v: str | None) -> float | None:
    """``Time Since Last Clear [Min]``: minutes with one decimal (``25074.8``), as mlxlink prints them."""
    try:
        return float((v or "").strip())
    except ValueError:
        return None


_NO_ISSUE = re.compile(r"No issue was observed\.?")
_MFT = re.compile(r"(?:\S+ )?\d+\.\d+\.\d+-\d+")


def _judge(sections: dict[str, dict[str, str]], errors: list[str], fmt: str) -> dict[str, Any]:
    op = sections.get("Operational Info") or {}
    trouble = sections.get("Troubleshooting Info") or {}
    tool_info = sections.get("Tool Information") or {}
    ber = sections.get("Physical Counters and BER Info") or {}
    counters: dict[str, Any] = {}
    for key, name in _COUNTERS.items():
        if key in ber:
            value = ber[key]
            counters[name] = (_int(value) if name in _FAULT_COUNTERS
                              else _minutes(value) if name == "minutes_since_clear" else value)
    data: dict[str, Any] = {
        "tool": TOOL, "format": fmt, "sections": sections, "state": op.get("State"),
        "physical_state": op.get("Physical state"), "speed": op.get("Speed"), "width": op.get("Width"),
        "fec": op.get("FEC"), "status_opcode": _int(trouble.get("Status Opcode")),
        "recommendation": trouble.get("Recommendation"),
        "firmware": tool_info.get("Firmware Version"), "counters": counters, "faults": [], "errors": list(errors)}
    if not errors:
        if "Operational Info" not in sections or "State" not in op:
            data["errors"].append("no Operational Info State: the output is cut short (mlxlink prints it first)")
        elif fmt == "text" and "Recommendation" not in trouble:
            data["errors"].append("no Troubleshooting Info Recommendation (mlxlink prints it on every run but "
                                  "a PRBS test): cut short")
        elif fmt == "text" and not (data["recommendation"] or "").strip() or data["status_opcode"] == 0 and \
                fmt == "text" and not _NO_ISSUE.fullmatch(str(data["recommendation"]).strip()):
            # opcode 0's recommendation is the sentence 'No issue was observed': 'No is' is its line cut (cuts15)
            data["errors"].append(f"Recommendation {data['recommendation']!r} (Status Opcode "
                                  f"{data['status_opcode']}): not a whole recommendation, its line is cut short")
        elif fmt == "text" and (package := next(((k, v) for k, v in tool_info.items() if k in ("MFT Version",
                                                "mstflint Version") and not _MFT.fullmatch(v.strip())), None)):
            # runningVersion's last record, PKG_NAME ' Version': 'mft 4.22.1-520' (or without the name)
            data["errors"].append(f"Tool Information's {package[0]} {package[1]!r} is not '[mft ]N.N.N-N': "
                                  "its line is cut short")
    faults = data["faults"]
    if data["state"] and data["state"] != "Active":
        faults.append(f"link state {data['state']} (physical state {data['physical_state']}), not Active")
    if data["status_opcode"]:
        faults.append(f"troubleshooting status opcode {data['status_opcode']}: {data['recommendation']}")
    for name in _FAULT_COUNTERS:
        if (counters.get(name) or 0) > 0:
            faults.append(f"{name.replace('_', ' ')}: {counters[name]}")
    return data
