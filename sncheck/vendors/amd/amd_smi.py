"""Parse ``amd-smi`` views. Pure ``text -> dict``; ``errors`` lists tool errors and
truncation ("[output truncated]", "..." elisions); ``ParseError`` when nothing is recognisable.

``parse_amd_smi`` (``amd-smi``): the indented text of ``amd-smi list|static|metric``
(also ``metric --ecc-blocks``, ``static --partition``, or a grep-ed fragment)::

    {"tool": "amd-smi", "gpus": [{"gpu": 0, "BDF": "0000:05:00.0",
                                  "ASIC": {"MARKET_NAME": "MI300X-O", ...},
                                  "ECC_BLOCKS": {"UMC": {"CORRECTABLE_COUNT": 0, ...}}}],
     "nics": [{"nic": 0, "BDF": "0000:e2:00.0", "PRODUCT_NAME": "POLLARA 1x400G QSFP112", ...}],  # AI_NIC: n
     "errors": []}

  Values stay strings except plain integers; a fragment without ``GPU: n`` lines is one
  entry with ``gpu`` null. ``amd-smi version``'s line above the view ('AMDSMI Tool: V | AMDSMI Library
  version: V | ROCm version: V'), a reporter's second command, is ``version`` {NAME: value as printed}. ESMI's ``CPU: n`` / ``CORE: n`` blocks (ROCm 6.1+) are ``cpus``;
  up to ROCm 6.0.x a device's sections start at its own column (the device's all the same).
  A list of scalars is yaml-dumped one item a line under its ``KEY:`` (amdsmi_logger; ``static
  --profile``'s PROFILES): only items follow it at that depth, a ``KEY: value`` there is no line
  amd-smi prints (an unrecognised line).

``parse_amd_smi_json`` (``amd-smi-json``): ``amd-smi <command> --json`` -- a list of device records,
26.x's one object (``{"gpu_data": [...], "link_status": [...]}``), version's object, or a section a
``jq`` kept -- as ``{"gpus": [...]}`` (26.x's other parts and ``version`` under their names); a JSON
value that is none of amd-smi's (its keys no command's record) refused: :mod:`sncheck.vendors.amd.amd_smi_json`.

``parse_amd_smi_monitor`` (``amd-smi-monitor``)::

    {"tool": "amd-smi-monitor", "columns": ["GPU", "POWER", ...],
     "gpus": [{"gpu": 0, "POWER": "182 W", "GPU_TEMP": "42 °C", ...}],
     "processes": [{"gpu": 0, "NAME": "rvs", "PID": 1564865, "VRAM_MEM": "1.1 GB", ...}],  # -q only
     "errors": []}

  A column helpers.unit_format prints with a unit (power, temperatures, percentages, clocks, memory, PCIe
  bandwidth) holds a number and its unit or N/A in every row: a cell without its unit ('0.3/19', '26',
  '283 M' read as '283' and 'M') is a row cut in its last cell, the paste ending with a newline (cuts15),
  and a header with no row under it is cut too.

``parse_amd_smi_topology`` (``amd-smi-topology``): every ``<NAME> TABLE:`` of
``amd-smi topology`` as ``{"tables": {"ACCESS": {"0000:05:00.0": {"0000:26:00.0": "ENABLED"}}}}``.

``amd-smi xgmi`` is read by :mod:`sncheck.vendors.amd.amd_smi_xgmi`.

A view's output that is only amd-smi's failure lines (``ERROR:root:Unable to detect any GPU
devices, ...``, ``Can not find a device: GPU '9' Error code: -3``; in --json ``{"error": ...,
"code": -3}``) reads as no GPU, its ``errors`` saying the tool failed: not measured (exit 1).
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import after_end, jsonprefix, listing
from sncheck.vendors.amd import amd_smi_json, amd_smi_watch
from sncheck.vendors.amd.amd_smi_keys import KEYS
from sncheck.vendors.amd.amd_smi_records import cut_records
from sncheck.vendors.amd.amd_smi_summary import is_summary, parse_summary
from sncheck.vendors.delivery import PROMPT_LINE, command_line
from sncheck.vendors.fragment import json_fragment

_OPEN_LIST = re.compile(r":\s*\[[^\]]*$")  # "KEY: [a, b," : a list value that goes on
_TRUNCATED = re.compile(r"^\[output truncated\]$")  # a blog's marker (a reporter's '...': listing.is_elision)
# amd-smi's failure lines: its init's logging.error ('ERROR:root:Unable to detect any GPU devices, ...'),
# and the CLI's exceptions (amdsmi_cli_exceptions.py), each printed alone and ending 'Error code: -N'
# ("Can not find a device: GPU '9' Error code: -3", "AMDSMI has returned error '-1007' - 'API call
# failed' Error code: -1007"); without the last form a not-found device read as a 'KEY: value' line
_ERROR = re.compile(r"(?i)^(error|amdsmi.*error|.*failed to|.*not initialized|.*no gpus? (?:found|detected))"
                    r"|.*\bError code: -\d+$")


def _failed(errors: list[str]) -> list[str]:
    """``errors`` of a view that read nothing, when amd-smi printed its own failure lines instead
    of its output: each said as not measured, the view's other errors kept (a cut, a line not
    read); [] when there is no failure line (then nothing recognisable: a parse error)."""
    if not any(_ERROR.match(e) for e in errors):
        return []
    return [f"amd-smi failed: {e}: not measured" if _ERROR.match(e) else e for e in errors]


def _value(v: str) -> Any:
    v = v.strip()
    if re.fullmatch(r"-?(?:0|[1-9]\d*)", v):  # "00154951" (an IFWI version) is a string the tool printed
        return int(v)
    return v


def _body_lines(text: str, errors: list[str]) -> list[tuple[int, int, str]]:
    """Each line to read: its number (:func:`after_end.numbered`), its indentation, its text."""
    out: list[tuple[int, int, str]] = []
    for at, raw in after_end.numbered(text):
        line = raw.rstrip()
        body = line.strip()
        if not body or PROMPT_LINE.match(body) or _COMMAND.match(body):
            continue  # a prompt, alone or before a command; the command line ('# amd-smi static -g 0', read by asked())
        if listing.is_elision(body):
            continue  # a reporter's '...': listing.elided says so, once, with its line
        if _TRUNCATED.match(body):
            errors.append("output truncated ('" + body + "')")
            continue
        if _ERROR.match(body):
            errors.append(body)
            continue
        if out and _OPEN_LIST.search(out[-1][2]):
            # amd-smi wraps a long list value ('JPEG_ACTIVITY: [N/A, ..., N/A,') onto indented
            # lines until its ']': those lines are the value's, not entries of their own
            out[-1] = (out[-1][0], out[-1][1], f"{out[-1][2]} {body}")
            continue
        out.append((at, len(line) - len(line.lstrip()), body))
    if out and _OPEN_LIST.search(out[-1][2]):
        errors.append(f"a list value without its closing ']' ({out[-1][2][:60]}...): cut short")
    return out


# 'amd-smi version' (amdsmi_cli amdsmi_commands.py version): 'AMDSMI Tool: V | AMDSMI Library version: V |
# ROCm version: V' (up to 5.x '| Kernel version: V'; from 6.4 '| amdgpu version: V', '| amd_hsmp version: V',
# 26.x 'hsmp version'), each 'NAME: value' as printed; a reporter runs it before the view (harvest 21: a pod's
# 'amd-smi version' then 'amd-smi list', OCI's MI300X README)
_VERSION_LINE = re.compile(r"^AMDSMI Tool: \S+(?: \| [A-Za-z_ ]+: [^|]*\S)*$")


def parse_amd_smi(text: str) -> dict[str, Any]:
    if is_summary(text):  # 'amd-smi' with no command (26.x): the boxed summary
        return parse_summary(text)
    errors: list[str] = []
    gpus: list[dict[str, Any]] = []
    loose: dict[str, Any] = {}
    stack: list[tuple[int, dict]] = []
    nics: list[dict[str, Any]] = []
    cpus: list[dict[str, Any]] = []
    owners: dict[int, tuple[dict, str]] = {}  # a section opened by 'KEY:' (its dict's id): where its key is
    listed: set[int] = set()  # the sections read as a list of scalars (their dicts' ids)
    foreign: list[str] = []  # lines amd-smi never prints (a key not upper case: another tool's 'key: value')
    keys: set[str] = set()  # every key read: one at least must be amd-smi's (amd_smi_keys, from its source)
    version: dict[str, str] = {}
    for _, indent, body in _body_lines(text, errors):
        if not gpus and _VERSION_LINE.match(body):  # 'amd-smi version' run before the view (its own line)
            version = dict(part.split(": ", 1) for part in body.split(" | "))
            continue
        m = re.match(r"^(GPU|AI_NIC|CPU|CORE):\s*(\d+)$", body)
        if m:
            # amd-smi 26.x lists an AMD AI NIC (Pollara) after the GPUs: 'AI_NIC: n' and its entries;
            # with ESMI (ROCm 6.1+) 'CPU: n' / 'CORE: n' blocks come before them (cpus, never GPUs)
            kind = m.group(1).lower().replace("ai_nic", "nic")
            entity = {kind: int(m.group(2))}
            {"gpu": gpus, "nic": nics}.get(kind, cpus).append(entity)
            # up to ROCm 6.0.x a device's sections start at its own column ('GPU: 0' then 'ASIC:' under
            # it, not indented): the device holds every line until the next device line
            stack = [(indent - 1, entity)]
            continue
        kv = re.match(r"^([A-Za-z0-9_ ./()%-]+?):\s*(.*)$", body)
        if not kv and stack and indent > stack[-1][0] and not stack[-1][1] and id(stack[-1][1]) in owners:
            # a list of scalars: amdsmi_logger yaml-dumps it and makes its '- ' markers indentation, one item a
            # line under its key ('PROFILES:' then 'CUSTOM', 'VIDEO', ...: static --profile, ROCm 7.12)
            parent, key = owners[id(stack[-1][1])]
            items = parent[key] if isinstance(parent[key], list) else []
            parent[key] = [*items, _value(body)]
            listed.add(id(stack[-1][1]))
            continue
        if not kv or kv.group(1) != kv.group(1).upper():  # every key amd-smi prints is upper case
            errors.append(f"unrecognised line: {body}")
            foreign.append(body)
            continue
        while stack and indent <= stack[-1][0]:
            stack.pop()
        if stack and id(stack[-1][1]) in listed:  # a 'KEY: value' among a list's items: no section holds it
            errors.append(f"unrecognised line: {body} (a key among the items of the list "
                          f"{owners[id(stack[-1][1])][1]})")
            continue
        parent = stack[-1][1] if stack else loose
        key, value = kv.group(1).strip(), kv.group(2)
        keys.add(key)
        if value == "":
            child: dict[str, Any] = {}
            parent[key] = child
            owners[id(child)] = (parent, key)
            stack.append((indent, child))
        else:
            parent[key] = _value(value)
    if foreign and not (gpus or nics or cpus or _failed(errors)):  # no device line, and text amd-smi never prints
        raise ParseError(f"no 'GPU: n' blocks, and {foreign[0][:60]!r} is no line amd-smi prints (its keys are "
                         "upper case: amdsmi_logger's _capitalize_keys): another tool's output?", tool="amd-smi")
    if keys and not keys & KEYS and not _failed(errors):  # upper case all, and none of them amd-smi's
        raise ParseError(f"no key amd-smi prints ({', '.join(sorted(keys)[:3])}{', ...' if len(keys) > 3 else ''}: "
                         "none is in amd-smi's key vocabulary, read from its source: amd_smi_keys): another "
                         "tool's output?", tool="amd-smi")
    if not gpus and loose:
        gpus = [{"gpu": None, **loose}]
    if not gpus and (failed := _failed(errors)):
        return {"tool": "amd-smi", "gpus": [], "nics": [], "errors": failed}
    if not gpus and cpus:  # ESMI's CPU blocks, and the GPUs' after them never printed (or cut off)
        return {"tool": "amd-smi", "gpus": [], "nics": nics, "cpus": cpus,
                "errors": errors + ["no 'GPU: n' block after the CPU blocks: no GPU measured"]}
    if not gpus:
        raise ParseError("no 'GPU: n' blocks and no KEY: value lines", tool="amd-smi")
    # every device amd-smi prints holds at least one entry under its line: one without is cut there
    errors += [f"{kind.upper()} {n}: nothing printed under it: cut short"
               for e in gpus + nics + cpus if len(e) == 1 for kind, n in e.items()]
    errors += _asked_not_printed(text, gpus)
    errors += [f"{where}: a section with nothing in it (yaml prints an empty one as {{}}): cut short"
               for where in _empty_sections(gpus)]
    errors += _short_lists(gpus)
    # the sections still open where the text ends: a fixed record among them stopped short was cut
    errors += cut_records([(owners[id(d)][1], d) for _, d in stack if id(d) in owners and id(d) not in listed])
    # 'amd-smi list': the last device open at the end is a GPU's record (BDF, UUID[, KFD_ID, ...]), fixed too
    if stack and stack[0][1] is gpus[-1] and next((k for k in gpus[-1] if k != "gpu"), None) == "BDF":
        errors += cut_records([(f"GPU {gpus[-1]['gpu']}", {k: v for k, v in gpus[-1].items() if k != "gpu"})])
    return {"tool": "amd-smi", **({"version": version} if version else {}), "gpus": gpus, "nics": nics,
            **({"cpus": cpus} if cpus else {}), "errors": errors}


def _short_lists(gpus: list[dict[str, Any]]) -> list[str]:
    """A list printed under its count ('NUM_PROFILES: 7' then 'PROFILES:' and its items, static --profile):
    fewer items than the count is a list cut short (its last items are lines like any other)."""
    out = []
    for g in gpus:
        for name, sec in g.items():
            if not isinstance(sec, dict):
                continue
            for key, items in sec.items():
                want = sec.get(f"NUM_{key}")
                if isinstance(items, list) and isinstance(want, int) and len(items) < want:
                    out.append(f"GPU {g.get('gpu')} {name} {key}: {len(items)} of its {want} items: cut short")
    return out


def _empty_sections(node: Any, where: str = "") -> list[str]:
    if isinstance(node, list):
        return [w for i, g in enumerate(node) for w in _empty_sections(g, f"GPU {g.get('gpu', i)}"
                                                                          if isinstance(g, dict) else str(i))]
    if not isinstance(node, dict):
        return []
    out = []
    for k, v in node.items():
        if isinstance(v, dict):
            out += [f"{where} {k}"] if not v else _empty_sections(v, f"{where} {k}")
    return out


# amdsmi_cli/amdsmi_parser.py (_add_static_parser, _add_metric_parser): an option -> the section
# its dict key prints as (amdsmi_logger capitalises the keys); VBIOS is IFWI from ROCm 6.4 on.
_SECTIONS = {
    "static": {"-a": "ASIC", "--asic": "ASIC", "-b": "BUS", "--bus": "BUS", "-V": "VBIOS|IFWI",
               "--vbios": "VBIOS|IFWI", "--ifwi": "VBIOS|IFWI", "-d": "DRIVER", "--driver": "DRIVER",
               "-v": "VRAM", "--vram": "VRAM", "-c": "CACHE_INFO", "--cache": "CACHE_INFO", "-B": "BOARD",
               "--board": "BOARD", "-R": "PROCESS_ISOLATION", "--process-isolation": "PROCESS_ISOLATION",
               "-r": "RAS", "--ras": "RAS", "-p": "PARTITION", "--partition": "PARTITION", "-l": "LIMIT",
               "--limit": "LIMIT", "-P": "SOC_PSTATE", "--soc-pstate": "SOC_PSTATE", "-x": "XGMI_PLPD",
               "--xgmi-plpd": "XGMI_PLPD", "-u": "NUMA", "--numa": "NUMA"},
    "metric": {"-m": "MEM_USAGE", "--mem-usage": "MEM_USAGE", "-u": "USAGE", "--usage": "USAGE", "-p": "POWER",
               "--power": "POWER", "-c": "CLOCK", "--clock": "CLOCK", "-t": "TEMPERATURE", "--temperature":
               "TEMPERATURE", "-P": "PCIE", "--pcie": "PCIE", "-e": "ECC", "--ecc": "ECC", "-k": "ECC_BLOCKS",
               "--ecc-blocks": "ECC_BLOCKS", "-f": "FAN", "--fan": "FAN", "-C": "VOLTAGE_CURVE",
               "--voltage-curve": "VOLTAGE_CURVE", "-o": "OVERDRIVE", "--overdrive": "OVERDRIVE",
               "-l": "PERF_LEVEL", "--perf-level": "PERF_LEVEL", "-x": "XGMI_ERR", "--xgmi-err": "XGMI_ERR",
               "-E": "ENERGY", "--energy": "ENERGY", "-T": "THROTTLE", "--throttle": "THROTTLE"},
}
_COMMAND = command_line(r"amd-smi[ \t]+(?P<sub>\w+)")


def asked(text: str) -> tuple[str | None, list[str], list[int] | None]:
    """The ``amd-smi`` command line a capture shows: (subcommand, the sections its options ask
    for, the GPUs ``-g`` names), or (None, [], None) without one."""
    for line in text.splitlines():
        if (m := _COMMAND.match(line)) and "|" not in m["args"]:  # "| grep -A3 umc": a fragment, by design
            words = m["args"].split()
            sections, gpus, i = [], None, 0
            while i < len(words):
                w = words[i]
                if w in ("-g", "--gpu"):
                    gpus, i = [], i + 1
                    while i < len(words) and re.fullmatch(r"[\d,]+", words[i]):
                        gpus += [int(g) for g in words[i].split(",") if g]
                        i += 1
                    continue
                if re.fullmatch(r"-[A-Za-z]{2,}", w):  # combined short flags: -ab
                    sections += [_SECTIONS.get(m["sub"], {}).get(f"-{c}", "") for c in w[1:]]
                else:
                    sections.append(_SECTIONS.get(m["sub"], {}).get(w, ""))
                i += 1
            return m["sub"], [x for x in sections if x], gpus
    return None, [], None


def _asked_not_printed(text: str, gpus: list[dict[str, Any]]) -> list[str]:
    """The GPUs and sections the capture's own command line asked for that it does not print:
    an excerpt or a cut, never a whole output."""
    _, sections, wanted = asked(text)
    out = []
    have = [g["gpu"] for g in gpus]
    if wanted is not None and [g for g in wanted if g not in have]:
        out.append(f"not judged: the command asked for GPU {', '.join(map(str, wanted))} and the output lists "
                   f"GPU {', '.join(str(g) for g in have)}: cut short or an excerpt")
    for g in gpus:
        unprinted = [sec.split("|")[-1] for sec in dict.fromkeys(sections) if not any(k in g for k in sec.split("|"))]
        if unprinted:
            out.append(f"GPU {g['gpu']}: the command asked for {', '.join(unprinted)}, not printed: cut short")
    return out


def parse_amd_smi_json(text: str) -> dict[str, Any]:
    text = "\n".join(ln for ln in text.splitlines() if not PROMPT_LINE.match(ln) and not _COMMAND.match(ln))
    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
    if start < 0:
        raise ParseError("no JSON document", tool="amd-smi-json")
    if fragment := json_fragment(text[:start], "amd-smi --json"):  # pasted from inside (harvest7's ajean capture)
        return {"tool": "amd-smi-json", "gpus": [], "errors": [fragment]}
    errors: list[str] = []
    try:
        doc, whole = jsonprefix.load(text[start:])
    except jsonprefix.NotFinite as e:  # amd-smi's document with a 1e999 or NaN in it: no measurement, named
        return {"tool": "amd-smi-json", "gpus": [], "errors": [str(e)]}
    except ValueError as e:
        raise ParseError(str(e), tool="amd-smi-json") from None
    if not whole:  # the values printed before the cut are kept, and the output is not whole
        errors.append("the JSON document is cut short (it does not close): the values before the cut are kept")
    if isinstance(doc, dict) and set(doc) == {"error", "code"}:
        # the CLI's exception in --json (amdsmi_cli_exceptions.py: json_message), printed alone
        return {"tool": "amd-smi-json", "gpus": [],
                "errors": [f"amd-smi failed: {doc['error']} (code {doc['code']}): not measured", *errors]}
    gpus, extra, foreign = amd_smi_json.records(doc, whole)  # ParseError: no amd-smi output
    return {"tool": "amd-smi-json", "gpus": gpus, **extra, "errors": foreign + errors}


def _monitor_cells(row: str) -> list[str]:
    """A monitor row's cells: each right-justified to its column's fixed width, so a wide value
    ('1000 W' under POWER's 7) leaves one blank before it; a unit is joined to its number, and a
    list value ('[0 %, 0 %, N/A]', one item an XCC: monitor -V's GFXCLK_* columns) is one cell."""
    cells: list[str] = []
    for token in row.split():
        if cells and cells[-1].startswith("[") and not cells[-1].endswith("]"):
            cells[-1] += f" {token}"  # a list cell, one value a partition ('[0 %, 0 %, N/A]': monitor -V, ROCm 7.0)
        elif cells and cells[-1].endswith("/") and re.fullmatch(r"[\d.]+", token):
            cells[-1] += f" {token}"  # the default VRAM_/GTT_USAGE: f'{used:5.1f}/{total:5.1f} GB', '0.5/ 48.0 GB'
        elif cells and _UNIT.fullmatch(token) and _NUMBER.fullmatch(cells[-1]):
            cells[-1] += f" {token}"  # 'W', '°C', '%', 'MHz', 'MB', 'GB/s'; 'N/A Mb/s' (helpers.unit_format)
        else:
            cells.append(token)
    return cells


# what a unit follows: a number, N/A, or the default memory column's 'used/total' ('0.0/376.7', '0.5/ 48.0')
_NUMBER = re.compile(r"-?[\d.]+(?:/ ?[\d.]+)?|N/A")


# the units amd-smi's helpers.unit_format puts after a value (a process's NAME beside its GPU index is
# no unit: 'rvs')
_UNIT = re.compile(r"[KMGTP]?i?B|[KMGT]?[bB]/s|m?W|°C|%|[KMG]?Hz|[mu]?V|[nmu]?s|u?J")


# the columns helpers.unit_format prints with a unit (power, temperatures, utilisation and violation
# percentages, clocks, memory, PCIe bandwidth; monitor's own --watch TIMESTAMP, GPU, XCP, the ECC and
# replay counts and TVIOL_ACTIVE are bare): a cell there is a number and its unit, N/A (a unit may follow
# it), the default memory column's 'used/total GB', or a list cell. A bare number or a lone unit
# fragment ('283 M' splits in two) is a row cut in its last cell, the paste ending with a newline (cuts15)
_UNIT_COLUMN = re.compile(r"POWER|PWR_CAP|\w+_TEMP|\w+_T|\w+_UTIL|\w+%|\w+_CLOCK|\w+_CLK|VRAM_USED|VRAM_TOTAL"
                          r"|PCIE_BW|\w+_USAGE|\w*VIOL")
_UNIT_CELL = re.compile(rf"(?:N/A|-?[\d.]+|[\d.]+/ ?[\d.]+) (?:{_UNIT.pattern})|N/A|\[.*\]")


def _process_row(body: str, columns: list[str], errors: list[str]) -> tuple[dict[str, Any] | None, Any]:
    """A row of monitor -q's PROCESS INFO table and its GPU: one process, or the GPU's 'No running
    processes detected' (no process); (None, None) for a row that is not whole."""
    cells = _monitor_cells(body)
    at = columns.index("GPU") if "GPU" in columns else 0  # --watch: TIMESTAMP first
    if len(cells) == at + 5 and " ".join(cells[at + 1:]) == "No running processes detected":
        return None, _value(cells[at])
    if len(cells) != len(columns):
        errors.append(f"process row '{body}' has {len(cells)} cells for {len(columns)} columns")
        return None, None
    row: dict[str, Any] = {k: _value(v) for k, v in zip(columns, cells)}
    gpu = row.pop("GPU", None)
    return {"gpu": gpu, **row}, gpu


_MONITOR_COMMAND = command_line(r"amd-smi[ \t]+(?:monitor|dmon)")


def _asks_processes(text: str) -> bool:
    """Whether the pasted monitor command asks for the process table (amdsmi_parser.py: -q, --process;
    argparse's combined short flags too: '-pq')."""
    m = _MONITOR_COMMAND.search(text)
    return m is not None and any(a == "--process" or re.fullmatch(r"-[a-z]*q[a-z]*", a) for a in m["args"].split())


def parse_amd_smi_monitor(text: str) -> dict[str, Any]:
    if (watched := amd_smi_watch.rounds(text)) is not None:  # -w N: a round every N seconds, the last wins
        return amd_smi_watch.read(watched, parse_amd_smi_monitor)
    errors: list[str] = []
    columns: list[str] = []
    gpus: list[dict[str, Any]] = []
    # monitor -q (ROCm 6.2+) prints its process table after the GPUs' rows: 'PROCESS INFO:', its
    # header ('GPU', 'NAME', 'PID', 'GTT_MEM', 'CPU_MEM', 'VRAM_MEM', 'MEM_USAGE', 'GFX', 'ENC'), a row
    # a process (amdsmi_logger._print_tabular_output's secondary table)
    processes: list[dict[str, Any]] | None = None
    process_columns: list[str] = []
    process_gpus: set[Any] = set()
    unread: list[tuple[int, str]] = []  # after the header, lines no part of the grammar: not read, never dropped
    for at, _, body in _body_lines(text, errors):
        if body == "PROCESS INFO:" and columns:
            processes = []
            continue
        if processes is not None:
            if not process_columns:
                process_columns = body.split()
            elif re.match(r"^(?:\S+\s+)?\d+\s", body):
                proc, gpu = _process_row(body, process_columns, errors)
                process_gpus |= {gpu} if gpu is not None else set()
                processes += [proc] if proc else []
            else:
                unread.append((at, body))
            continue
        if (body.startswith("GPU ") or body.startswith("TIMESTAMP ") and " GPU " in body) and not columns:
            columns = body.split()  # --watch: TIMESTAMP first
            continue
        if columns and re.match(r"^\d+\s", body):
            cells = _monitor_cells(body)
            if cells and cells[-1].startswith("[") and not cells[-1].endswith("]"):
                errors.append(f"row '{body}': a list cell without its ']': cut short")
                continue
            if len(cells) != len(columns):
                errors.append(f"row '{body}' has {len(cells)} cells for {len(columns)} columns")
                continue
            row = dict(zip(columns, cells))
            if not re.fullmatch(r"\d+", row["GPU"]):
                errors.append(f"row '{body}': no GPU index under GPU")
                continue
            if bare := next((c for c in columns if _UNIT_COLUMN.fullmatch(c) and not _UNIT_CELL.fullmatch(row[c])), None):
                errors.append(f"row '{body}': {bare} {row[bare]!r} without the unit amd-smi prints it with: cut short")
                continue
            gpus.append({"gpu": int(row.pop("GPU")), **row})
        elif columns and body.split() != columns:
            unread.append((at, body))  # no line of the grammar: a note or another tool's output (the header again is skipped, as before)
    if not columns and (failed := _failed(errors)):
        return {"tool": "amd-smi-monitor", "columns": [], "gpus": [], "errors": failed}
    if not columns:
        raise ParseError("no 'GPU ...' header row", tool="amd-smi-monitor")
    errors += [said] if (said := after_end.not_read(unread, "amd-smi monitor")) else []
    if not gpus and not errors:  # monitor prints a row a GPU under its header (none: its failure lines)
        errors.append(f"no row under the header ('{' '.join(columns)[-40:]}'): cut short")
    if processes is None and columns and _asks_processes(text):
        errors.append("the command asked for the PROCESS INFO table (-q, --process): not printed, cut short")
    if processes is not None and not process_columns:
        errors.append("'PROCESS INFO:' without its header: cut short")
    elif processes is not None:
        # every GPU of the rows has a row of its own in the table (a process, or its 'No running processes
        # detected': monitor's N/A placeholder), in the rows' order: one without was cut off
        errors += [f"GPU {g['gpu']}: no row in the PROCESS INFO table: cut short"
                   for g in gpus if g["gpu"] not in process_gpus]
    return {"tool": "amd-smi-monitor", "columns": columns, "gpus": gpus,
            **({"processes": processes} if processes is not None else {}), "errors": errors}


def parse_amd_smi_topology(text: str) -> dict[str, Any]:
    errors: list[str] = []
    tables: dict[str, dict[str, dict[str, str]]] = {}
    headers: dict[str, list[str]] = {}
    name = None
    cols: list[str] = []
    for _, _, body in _body_lines(text, errors):
        if body == "Legend:":
            break  # ROCm 6.3+ prints its legend after the last table: the rest is the legend's
        if m := re.match(r"^([A-Z][A-Z -]+) TABLE:$", body):  # 'BI-DIRECTIONAL TABLE:'
            name, cols = m.group(1).strip(), []
            tables[name] = {}
        elif name and not cols:
            cols = headers[name] = body.split()
        elif name:
            cells = body.split()
            if len(cells) - 1 != len(cols):
                errors.append(f"{name} row {cells[0]} has {len(cells) - 1} cells for {len(cols)} GPUs")
            tables[name][cells[0]] = dict(zip(cols, (_value(c) for c in cells[1:])))
    if not tables and (failed := _failed(errors)):
        return {"tool": "amd-smi-topology", "tables": {}, "errors": failed}
    if not tables:
        raise ParseError("no '<NAME> TABLE:' section", tool="amd-smi-topology")
    # topology() prints a header naming every GPU and a row for each: a table short of them was cut
    errors += [f"{name} TABLE: {len(rows)} rows for {len(headers.get(name, []))} GPUs: cut short"
               for name, rows in tables.items() if not headers.get(name) or len(rows) != len(headers[name])]
    errors += _tables_missing(text, tables)
    return {"tool": "amd-smi-topology", "tables": tables, "errors": errors}


# amd-smi topology's table options, and the tables every version prints without one
_TABLE_FLAGS = {"-a": "ACCESS", "--access": "ACCESS", "-w": "WEIGHT", "--weight": "WEIGHT", "-o": "HOPS",
                "--hops": "HOPS", "-t": "LINK TYPE", "--link-type": "LINK TYPE", "-b": "NUMA BW",
                "--numa-bw": "NUMA BW", "-c": "CACHE COHERANCY", "--coherent": "CACHE COHERANCY",
                "-n": "ATOMICS", "--atomics": "ATOMICS", "-d": "DMA", "--dma": "DMA", "-z": "BI-DIRECTIONAL",
                "--bi-dir": "BI-DIRECTIONAL"}
# (amdsmi_commands.py topology, rocm-6.0.2 to rocm-systems' subcommands/topology.py: no option sets every
# table's flag; ROCm 6.3 added the four io-link tables, and the Legend after them says a version that has them)
_DEFAULT_TABLES = ("ACCESS", "WEIGHT", "HOPS", "LINK TYPE", "NUMA BW")
_IOLINK_TABLES = ("CACHE COHERANCY", "ATOMICS", "DMA", "BI-DIRECTIONAL")
# one line's blanks only: \s from each line start ran over every later blank line (quadratic)
_TOPOLOGY_COMMAND = command_line(r"amd-smi[ \t]+topology")


def _tables_missing(text: str, tables: dict[str, Any]) -> list[str]:
    """With its command line in the log (``$ amd-smi topology -a -w``), the options say which
    tables it prints (none: every table, ACCESS to NUMA BW, and the four io-link tables where the
    Legend shows a 6.3+ version); one of those missing was cut. Without the command line the
    options are unknown: nothing to say."""
    m = _TOPOLOGY_COMMAND.search(text)
    if m is None:
        return []
    args = m["args"].split()
    # argparse's combined short flags: '-cndz' is -c -n -d -z
    flags = [f for a in args if a.startswith("-") and a not in ("-g", "--gpu")
             for f in ([f"-{c}" for c in a[1:]] if re.fullmatch(r"-[a-z]{2,}", a) else [a])]
    if any(f not in _TABLE_FLAGS for f in flags):
        return []  # an option this view does not know the tables of (--json, a newer table)
    legend = re.search(r"^[ \t]*Legend:[ \t]*$", text, re.MULTILINE) is not None
    wanted = [_TABLE_FLAGS[f] for f in flags] or list(_DEFAULT_TABLES) + (list(_IOLINK_TABLES) if legend else [])
    missing = [t for t in dict.fromkeys(wanted) if t not in tables]
    return [f"`amd-smi topology{(' ' + ' '.join(args)) if args else ''}` prints the {', '.join(missing)} "
            f"table{'s' if len(missing) > 1 else ''}: missing, output cut short"] if missing else []
