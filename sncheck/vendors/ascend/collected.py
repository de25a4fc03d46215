"""Parse a collected environment log (MindCluster's ``npu_info_before.txt``, written by its
``npu_info_collect.sh``, and the vendor docs' examples): command lines followed by their
output, each output parsed by the view the command names (its grammar: :data:`GRAMMAR`).

``parse_collected`` (``ascend-collected``)::

    {"tool": "ascend-collected", "datetime": "2024-09-09 13:13:44.179645" | null,
     "sections": [{"command": "hccn_tool -i 0 -net_health -g", "view": "hccn-net-health",
       "device": 0, "filter": null | "grep prese", "parsed": {...} | null, "error": null}],
     "faults": ["`hccn_tool -i 0 -net_health -g`: net health Socket fail"], "errors": []}

Each section is judged as ``sncheck parse VIEW`` judges that output alone (one parser, one
judgement): its view's errors are the log's errors, its faults and the run checks' verdict
on it the log's faults, each under the command's name. A reporter's ``...`` is judged so
too: an error of the section it stands in, once, where that section's view does not read it
(an ``hccn_tool -stat`` list may be elided; a section no view reads loses nothing read).
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import listing, parsers
from sncheck.vendors.delivery import command_line
from sncheck.vendors.grammar import Grammar

_SCRIPT = "Ascend/mindcluster-deploy npu_collector/npu_info_collect.sh"
GRAMMAR = {"ascend-collected": Grammar(
    tool="MindCluster's npu_info_collect.sh (npu_info_before.txt): each npu-smi / hccn_tool command echoed above "
         "its output",
    versions="npu_info_collect.sh and npu_info_collect_compatible.sh of mindcluster-deploy; each section's tool "
             "as its own view covers",
    sources=(f"{_SCRIPT} @ 078207c: the Datetime header, each command echoed before it runs, its stdout "
             "(stderr not kept), echo -e '\\n' after it; the commands and their order",
             "Ascend/mindcluster-deploy npu_collector/npu_info_collect_compatible.sh @ 85f2207: the older set "
             "(no -m; -i N -t ecc / board / usages, -i N -c 0 -t board; one device a loop)",
             "Ascend/mind-cluster docs/en/faultdiag/user_guide/03_collecting_logs.md @ 22bb3d9: the doc's "
             "examples, indented and elided (fixtures/real/ascend/11, 12)",
             "Ascend/mind-cluster component/ascend-faultdiag test kg_parse/npu_info_before.txt @ 22bb3d9: a "
             "reordered log (fixtures/real/ascend/13)",
             "each section's output: its view's grammar (npu_smi_grammar, hccn_tool_grammar)"),
    lines=("'Datetime: %Y-%m-%d %H:%M:%S.%6N' and two empty lines; then a section per command: the command "
           "line as echoed (full paths /usr/local/bin/npu-smi, /usr/local/Ascend/driver/tools/hccn_tool and "
           "upgrade-tool; a pasted shell prompt before it allowed: '$ ', '# ', '[root@node ~]# '), its output, two empty lines. In order: npu-smi info -m; "
           "npu-smi info; cat .../version.info (driver, firmware, nnae, toolkit: where installed); pip list | "
           "grep torch / torch-npu / mindspore; upgrade-tool --device_index -1 --component -1 --version; lspci | "
           "grep acce; per NPU and chip npu-smi info -i N -c C -t health; per device (NPUs x chips) hccn_tool -i "
           "N -net_health -g, -ip -g, -link_stat -g, -link -g, -tls -g | grep switch, -optical -g | grep prese, "
           "-optical -g, -stat -g, -fec -g; per NPU and chip npu-smi info -i N -c C -t ecc, -t board, -t usages. "
           "A section's output is its view's grammar (npu-smi, npu-smi-mapping, -health, -ecc, -fields, -hbm; "
           "hccn-net-health, -ip, -link-stat, -link, -optical, -stat, -fec); a '| grep' section holds the lines "
           "grep kept; cat, pip, upgrade-tool, lspci and -tls have no view (their sections are kept, unread)"),
    end=("none stated by the log: the judge's count of its commands (--expect N) says every section is there; "
         "each section's own view says whether it is whole (its end marker); a command line with nothing after "
         "it is a failed command (stderr is not kept) or a cut there"),
    failures=("a section with no output (errors); a section its view cannot read (errors: its parse error, "
              "npu-smi's DCMI init failure: not measured); every error its view finds (cut short) and every fault "
              "it and the run's checks find (health not OK or an error code, a link DOWN, net health not "
              "Success, an optical module not present or out of its thresholds, no RS FEC): the log's errors and "
              "faults under the command; a section through the script's own filter ('| grep prese') is not "
              "held to its view's end (grep kept one line); through any other pipe its view's errors stand; a "
              "reporter's '...' is an error of the section it stands in, once, where that section's view does "
              "not read it (hccn-stat does; a section no view reads loses no value)"),
    values="datetime, sections [{command, view, device, filter, parsed (its view's JSON), error}], faults, errors",
)}

# The commands the collection scripts echo (the tools with a view, and the rest: kept, unread),
# after the shell prompt a person's paste may carry ('$ ', '# ', '[root@node7 ~]# ', 'root@node7:~# ':
# delivery.command_line), matched on the line before its first '|' (the filter is split off, never matched)
_COMMAND = command_line("npu-smi|hccn_tool|upgrade-tool|lspci|pip3?|cat")
# The filters the collection script itself pipes a command through: grep keeps the lines a
# check reads, so the section is not held to its view's end. Any other pipe (a person's
# '| grep -v', '| head') leaves an output that is not the view's whole: its errors stand.
SCRIPT_FILTERS = frozenset({"grep prese", "grep switch"})
_DATETIME = re.compile(r"^\s*Datetime:\s*(.+?)\s*$")


def _view(cmd: str) -> str | None:
    """The view of ``cmd``'s output (None: no view reads it)."""
    if "hccn_tool" in cmd:
        for flag, view in (("-net_health", "net-health"), ("-link_stat", "link-stat"), ("-link ", "link"),
                           ("-optical", "optical"), ("-fec", "fec"), ("-stat", "stat"), ("-ip", "ip"),
                           ("-tls", None)):
            if flag in cmd + " ":
                return f"hccn-{view}" if view else None
        return None
    if not re.search(r"(?:^|/)npu-smi\s", cmd + " "):
        return None
    for flag, view in ((" -t health", "npu-smi-health"), (" -t ecc", "npu-smi-ecc"), (" -t usages", "npu-smi-hbm"),
                       (" -t memory", "npu-smi-hbm"), (" -t spod-info", "npu-smi-spod"), (" -t topo", "npu-smi-topo")):
        if flag in cmd:
            return view
    if cmd.rstrip().endswith(" -m"):
        return "npu-smi-mapping"
    if " -t " in cmd:
        return "npu-smi-fields"
    return "npu-smi" if cmd.rstrip().endswith("npu-smi info") else None


def _read(sec: dict[str, Any], body: list[str]) -> None:
    """Parse one section's output with its view, as ``sncheck parse VIEW`` would."""
    view = sec["view"] = _view(sec["command"])
    out = "\n".join(body)
    if view is None:
        return
    if not out.strip():
        sec["error"] = "no output"
        return
    try:
        sec["parsed"] = parsers.parsers()[view](out)
    except ParseError as e:
        sec["error"] = e.message
        return
    if sec["filter"] in SCRIPT_FILTERS and not sec["parsed"].get("tool_failed"):
        # grep kept the lines the script wants: not the view's end (a tool that failed printed none)
        sec["parsed"]["errors"] = []
    # a reporter's '...' in the section: lines of its output left out, as its own view judges it
    # (listing.elided alone says it; a view whose grammar reads it adds nothing)
    if gaps := listing.elided(view, out):
        sec["parsed"].setdefault("errors", []).extend(gaps)


def _faults(view: str, parsed: dict[str, Any]) -> list[str]:
    """What the view's parser and a run's checks of its output find at fault (as parse_text
    adds them: a check restating the parser's fault adds no second line)."""
    own = [str(f) for f in parsed.get("faults") or []]
    return own + [j for j in parsers.judgement(view, parsed) if not any(f in j for f in own)]


def parse_collected(text: str) -> dict[str, Any]:
    sections: list[dict[str, Any]] = []
    body: list[str] = []
    when = None
    for raw in text.splitlines():
        command, bar, piped = raw.partition("|")
        m = _COMMAND.match(command.rstrip())
        if m:
            if sections:
                _read(sections[-1], body)
            dev = re.search(r"-i\s+(\d+)", m["command"])
            sections.append({"command": m["command"].strip(), "view": None, "device": int(dev.group(1)) if dev else None,
                             "filter": " ".join(piped.split()) or None if bar else None, "parsed": None,
                             "error": None})
            body = []
        elif sections:
            body.append(raw)
        elif when is None and (d := _DATETIME.match(raw)):
            when = d.group(1)
    if not sections:
        raise ParseError("no npu-smi or hccn_tool command lines", tool="ascend-collected")
    _read(sections[-1], body)
    errors = [f"`{s['command']}`: {s['error']}" for s in sections if s["error"]]
    # what each command's own view found wrong in its output (an npu-smi health read cut
    # before its Error Code line) is this log's too, and so is what it and a run's checks
    # find at fault (a link DOWN, a health Alarm): `sncheck parse VIEW` exits 1 on each
    errors += [f"`{s['command']}`: {e}" for s in sections if s["parsed"] for e in s["parsed"].get("errors") or []]
    faults = [f"`{s['command']}`: {f}" for s in sections if s["parsed"] and not s["parsed"].get("errors")
              for f in _faults(s["view"], s["parsed"])]
    return {"tool": "ascend-collected", "datetime": when, "sections": sections, "faults": faults, "errors": errors}
