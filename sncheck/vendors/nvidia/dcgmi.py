"""Parse ``dcgmi diag -r N`` output: the boxed table and the JSON form (``-j``).

Both forms return::

    {"tool": "dcgmi-diag", "format": "table",       # or "json"
     "result": "Fail",                    # worst over tests and loose errors: Fail > Warn > Pass > Skip
     "metadata": {"DCGM Version": "3.3.3", ...},    # the table's Metadata section, if any
     "tests": [{"name": "GPU Memory", "category": "Hardware",
                "result": "Fail",        # worst of its per-GPU results
                "all_gpus": false,       # true for "Pass - All"
                "gpus": [{"gpu": 0, "result": "Fail"}, {"gpu": 1, "result": "Pass"}],
                "warnings": ["GPU 0 Thermal violations totaling 13.3 seconds ..."],
                "errors": [], "info": []}],
     "warnings": [], "info": [],          # Warning / Info rows not under any test
     "errors": ["Deployment: GPU 3 has uncorrectable memory errors and row remappings are pending"],
     "gpus": [{"gpu": 0, "result": "Fail"}, ...],   # worst result per GPU over every test
     "not_measured": ["PCIe", "GPU Memory"]}          # GPU-exercising tests that were skipped

DCGM 4.x prints a line per GPU under each test's result (``| memory | Pass |`` then
``|  | GPU0: Pass |``); 3.x a ``Pass - GPUs: 1, 2`` scope. When every Integration,
Hardware and Stress test was skipped the result is ``Skip`` (not measured), never ``Pass``.
A table printed twice (the same rows) is one run. A table without its closing border, or
with rows elided (``...``), is cut short: an error. So is a cut JSON document, which keeps
every test printed whole before the cut (:mod:`sncheck.vendors.jsonprefix`), and one where a
reporter put ``{"..."}`` or ``...`` for an element (read around it, DCGM issue 139). A ``-j``
document pasted from inside an object (a member's key or a close before its first brace, DCGM
issue 215's lone ``"info" :`` member) is a fragment (:mod:`sncheck.vendors.fragment`): no test,
one error saying where it starts, exit 1 -- never "no output".

Text wrapped across table rows is joined back. Fragments (a table without its border,
a last row without its closing ``|``) still parse. ``errors`` holds Error rows that sit
under no test, DCGM's own error lines (``Error: ...``) and problems reading the JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors import after_end, jsonprefix, listing
from sncheck.vendors.fragment import json_fragment
from sncheck.vendors.grammar import Grammar

_DIAG = "NVIDIA/DCGM dcgmi/Diag.cpp"
GRAMMAR = {"dcgmi-diag": Grammar(
    tool="dcgmi diag -r 1 to 4 (the boxed table), dcgmi diag -j (JSON)",
    versions="DCGM 3.0 to 4.6.0 (Diag.cpp read at 3.3.9 and 4.6.0; captures 3.0.4 to 4.4.2)",
    sources=(
        f"{_DIAG} @ v3.3.9: DIAG_HEADER, DIAG_DATA '| %-25s | %-46s |' (DATA_INFO_TAG_LEN 45: longer text wrapped over "
        "rows), the Metadata / Deployment / Hardware / Integration / Stress separators, a test's result 'Pass', "
        "'Pass - All', 'Skip - All', 'Fail - All', 'Warn - All' or 'Pass - GPUs: 1, 2' / 'Fail - GPU: 3' scopes "
        "(HelperDisplayDiagResult, the scope builder), 'Warning' / 'Info' rows, DIAG_FOOTER; -j: "
        "'DCGM GPU Diagnostic' with 'test_categories' and per-GPU 'results'",
        f"{_DIAG} @ v4.6.0: 'Successfully ran diagnostic for group.', HelperDisplayAsCli (header, "
        "HelperDisplayMetadata: DCGM Version, Driver Version Detected, GPU Device IDs Detected, CPU / EUD "
        "versions; the four categories; DIAG_FOOTER), a test's row then one '|  | GPU%u: %s |' row per entity, "
        "DisplayVerboseInfo 'Warning' / 'Info' rows; -j: 'DCGM Diagnostic' with entity_id results",
    ),
    lines=("'Successfully ran diagnostic for group.' (4.x); the header box; Metadata rows; per category a "
           "separator row then per test a row 'name | result' (3.x: with its GPU scope), 'Warning' and 'Info' "
           "rows whose text wraps at 45 characters, (4.x) '|  | GPUn: result' rows; the footer border. Results: "
           "Pass, Fail, Warn, Skip. No line of the table starts with '#': a table whose every line carries one is "
           "kept as a code comment (a Ramble package's 'Example Output', harvest7) and read without it."),
    end="the footer border '+---...---+' after the last category (a table printed twice is one run)",
    failures=("a test or GPU at Fail (result Fail); a test at Warn passed with warnings (dcgm_structs.h "
              "DCGM_DIAG_RESULT_WARN 'This test passed with warnings'; NVVS sets it for e.g. the software test's "
              "missing CUDA libraries, Software.cpp): result Warn, a warning-level fact naming the test and its "
              "Warning rows, never a pass and never a hardware fault. Only the table prints the word: the test's row "
              "(3.x 'Warn - All' / 'Warn - GPUs: 1', 4.x 'Warn'); 4.x's per-GPU rows and -j's statuses (3.x and "
              "4.x HelperDisplayDiagResult) print a Warn as 'Fail', so a GPU row 'Fail' under a test row 'Warn' is "
              "that GPU's Warn; -j's 'Fail' is a Warn where the test is 4.x's Software test and every message's "
              "error_id is one Software.cpp raises only with a Warn (persistence mode, graphics processes, CUDA "
              "environment or libraries, device count, SRAM threshold: _WARN_CODES), else the document cannot tell "
              "(a -j 'Warn' is read as the table's); "
              "Warning rows outside a test make the result Warn; 'Error: ...' lines, NVVS's MIG refusals "
              "('GPU N's MIG configuration is incompatible with the diagnostic ...', 'Cannot run diagnostic: ...': "
              "NvidiaValidationSuite.cpp BuildCommonGpusList) and Error rows "
              "outside a test; -j text that starts inside an object (a member's '\"key\" :' or a close before "
              "its first '{', no table line: DCGM issue 215 quotes one '\"info\" :' member alone) is a fragment "
              "(sncheck.vendors.fragment), no test read; a table without its footer or with '...' rows is cut; "
              "every GPU-exercising test at Skip is not measured (never Pass: parse exits 0, a run's dcgmi_diag is not_measured)"),
    values="result, metadata, tests[{name, category, result, all_gpus, gpus[{gpu, result}], warnings, errors, "
           "info}], warnings, info, errors, gpus, not_measured, format",
)}

_SEVERITY = {"Fail": 3, "Warn": 2, "Pass": 1, "Skip": 0}
_STATUS = re.compile(r"^(Pass|Fail|Warn|Skip)\b\s*(?:-\s*(.*))?$", re.IGNORECASE)
_CATEGORY = re.compile(r"^[|+]-+\s+([A-Za-z][\w ]*?)\s+-+\+")
_GPU_IDS = re.compile(r"^GPUs?\s*:\s*([0-9][0-9,\s]*)$")
# DCGM 4.x: a line per GPU under the test's own result ("| memory | Pass |", "|  | GPU0: Pass |").
_GPU_STATUS = re.compile(r"^GPU\s*([0-9]+)\s*:\s*(Pass|Fail|Warn|Skip)\b\s*(?:-\s*(.*))?$", re.IGNORECASE)
_BORDER = re.compile(r"^\+[-=]+\+[-=]+\+$")  # "+----+----+": opens or closes the table
_BANNER = re.compile(r"^Successfully ran diagnostic")  # before each table (printed twice: between them)
_MESSAGE_LABEL = re.compile(r"^(Warning|Error|Info)\b\s*(?::\s*GPU\s*([0-9]+))?$", re.IGNORECASE)
# Test categories whose tests run on the GPUs (Deployment only checks the software stack).
_MEASURING = ("integration", "hardware", "stress", "performance")
# NVVS's system errors for a MIG layout it cannot test (NvidiaValidationSuite.cpp BuildCommonGpusList,
# the strings DCGM's own tests match: "GPU N's MIG configuration is incompatible with the diagnostic
# because it prevents access to the entire GPU.", "Cannot run diagnostic: CUDA does not support
# enumerating GPUs with MIG mode ...", "MIG is enabled, but no compute instances are configured"): dcgmi
# prints the message alone, no table: the diagnostic did not run
_TOOL_ERROR = re.compile(
    r"^Error:|^Error\s+\w|Unable to|Diagnostic could not|MIG configuration is incompatible with the diagnostic|"
    r"Cannot run diagnostic:|MIG is enabled, but no compute instances are configured", re.IGNORECASE
)
_MESSAGE_KINDS = {"warning": "warnings", "error": "errors", "info": "info"}
_TABLE_LINE = re.compile(r"^\s*[|+]", re.MULTILINE)  # a row or border of the boxed table


@dataclass
class _Row:
    """One logical table row: a label and its (re-joined) result text."""

    label: str
    lines: list[str] = field(default_factory=list)
    wrap_width: int = 0


def parse_dcgmi_diag(text: str) -> dict[str, Any]:
    """Parse ``dcgmi diag`` output in either form; JSON is recognised by its first ``{``. A ``-j``
    document pasted from inside an object (a member's key, or a close, before any brace and no
    table line) is a fragment: no test is read, and its one error says where it starts."""
    json_start = _json_start(text)
    before = text if json_start is None else text[:json_start]
    if not _TABLE_LINE.search(before) and (fragment := json_fragment(before, "dcgmi diag -j")):
        result = _empty("json")
        result["errors"].append(fragment)  # DCGM issue 215: one "info" member quoted alone
        return _finish(result)
    if json_start is not None:
        return _parse_json(text[json_start:])
    return _parse_table(text)


# --------------------------------------------------------------------------- table


def _parse_table(text: str) -> dict[str, Any]:
    result = _empty("table")
    category: str | None = None
    tables: list[list[tuple[str | None, _Row]]] = [[]]
    is_open = False  # inside a table: a row was read since the last border
    numbered = after_end.numbered(text)  # each line with its number, for what follows the footer
    lines = [raw.strip() for _, raw in numbered]
    body = [ln for ln in lines if ln]
    if body and all(ln.startswith("#") for ln in body) and any(re.match(r"^#\s*[|+]", ln) for ln in body):
        # the table kept as a code comment ('  # | PCIe ... | Pass - All |': a package's example output):
        # no line of dcgmi's own starts with '#', so the comment marker every line carries is not the tool's
        lines = [re.sub(r"^#\s?", "", ln) for ln in lines]
    closed = False  # the footer border read
    after: list[tuple[int, str]] = []  # the lines of something else after it, with their numbers
    for (at, _), line in zip(numbered, lines):
        if closed and line and not (line[0] in "|+" or _TOOL_ERROR.search(line) or
                                    listing.is_elision(line) or _BANNER.match(line)):
            after.append((at, line))  # dcgmi prints nothing after its footer: another tool's output appended
        if m := _CATEGORY.match(line):
            category, is_open = m.group(1).strip(), True
        elif line.startswith("|"):
            if re.match(r"^\|\s*Diagnostic\s*\|\s*Result\s*\|", line) and tables[-1]:
                tables.append([])  # the table printed again (srun, -r twice): a new run
                category = None
            _add_cells(tables[-1], category, line)
            is_open = True
        elif _BORDER.match(line):
            closed = is_open and not line.startswith("+=")
            is_open = is_open and line.startswith("+=")
        elif line and not line.startswith("+") and _TOOL_ERROR.search(line):
            result["errors"].append(line)
        elif listing.is_elision(line):
            pass  # rows a reporter left out: listing.elided says so, once, with its line
    seen: list[list[dict[str, Any]]] = []
    for rows in tables:
        one = _empty("table")
        for row_category, row in rows:
            _apply_row(one, row_category, row)
        if one["tests"] in seen:
            continue  # the same table twice is one run
        seen.append(one["tests"])
        for key in ("tests", "warnings", "info", "errors"):
            result[key].extend(one[key])
        result["metadata"].update(one["metadata"])
    if not any(tables) and not result["errors"]:
        raise ParseError(
            "no diagnostic table rows and no error text found", tool="dcgmi-diag"
        )
    if any(tables) and is_open:
        result["errors"].append("the table has no closing border: output cut short")
    if said := after_end.not_read(after, "dcgmi diag"):
        result["errors"].append(said)
    return _finish(result)


def _add_cells(
    rows: list[tuple[str | None, _Row]], category: str | None, line: str
) -> None:
    """Split ``| label | text |``; an empty label continues the previous row."""
    parts = line.split("|")
    if len(parts) < 3:
        return
    label, cell = parts[1].strip(), parts[2]
    if label == "Diagnostic" and cell.strip() == "Result":  # the column header row
        return
    # dcgmi pads a cell with one space before and two after its wrapped text.
    text = cell.removeprefix(" ")
    width = max(len(cell) - 3, 1)
    if label or not rows:
        rows.append((category, _Row(label, [text.rstrip()], width)))
    else:
        rows[-1][1].lines.append(text.rstrip())


def _join_wrapped(row: _Row, split_on_status: bool) -> list[str]:
    """Re-join wrapped text; in a result cell a line starting with a status word is a new entry."""
    entries: list[str] = []
    previous_full = True
    for piece in row.lines:
        starts_entry = (
            split_on_status
            and bool(_STATUS.match(piece.strip()) or _GPU_STATUS.match(piece.strip()))
            and bool(entries)
        )
        if not entries or starts_entry:
            entries.append(piece.strip())
        else:
            # A chunk shorter than the wrap width lost a trailing space to rstrip().
            entries[-1] += piece if previous_full else " " + piece.lstrip()
        previous_full = len(piece) >= row.wrap_width
    return [e.strip() for e in entries if e.strip()]


def _apply_row(result: dict[str, Any], category: str | None, row: _Row) -> None:
    label = _MESSAGE_LABEL.match(row.label)
    kind = _MESSAGE_KINDS.get(label.group(1).lower()) if label else None
    statuses: list[str] = []
    if kind is not None:  # DCGM 4.x: the test's per-GPU lines follow its last message's text
        first = next((i for i, p in enumerate(row.lines) if i and _GPU_STATUS.match(p.strip())), None)
        if first is not None and all(_GPU_STATUS.match(p.strip()) for p in row.lines[first:]):
            statuses = [p.strip() for p in row.lines[first:]]
            row = _Row(row.label, row.lines[:first], row.wrap_width)
    entries = _join_wrapped(row, split_on_status=kind is None)
    if kind is not None and label is not None:
        gpu = f"GPU {label.group(2)}: " if label.group(2) else ""
        _attach_message(result, category, kind, gpu + " ".join(entries))
        if statuses and result["tests"] and result["tests"][-1]["category"] == category:
            for entry in statuses:
                _add_status(result["tests"][-1], entry)
    elif category and category.lower() == "metadata":
        result["metadata"][row.label] = " ".join(entries)
    elif entries and all(_STATUS.match(e) or _GPU_STATUS.match(e) for e in entries):
        test = _new_test(row.label, category)
        for entry in entries:
            _add_status(test, entry)
        result["tests"].append(test)
    else:
        result["errors"].append(f"unreadable row {row.label!r}: {' '.join(entries)!r}")


def _attach_message(
    result: dict[str, Any], category: str | None, kind: str, text: str
) -> None:
    tests = result["tests"]
    if tests and tests[-1]["category"] == category:
        tests[-1][kind].append(text)
    else:
        result[kind].append(f"{category}: {text}" if category else text)


def _add_status(test: dict[str, Any], entry: str) -> None:
    if g := _GPU_STATUS.match(entry):
        status = g.group(2).capitalize()
        if status == "Fail" and test["result"] == "Warn":
            # 4.x prints an entity at Warn as 'Fail' (HelperDisplayEntityResults calls HelperDisplayDiagResult
            # without DDR_DISPLAY_WARN); a test at Warn has no entity at Fail (Plugin::GetOverallResult,
            # ResultHelpers: any Fail makes the test Fail), so under the test's own 'Warn' it is that GPU's Warn
            status = "Warn"
        test["gpus"] = [x for x in test["gpus"] if x["gpu"] != int(g.group(1))]
        test["gpus"].append({"gpu": int(g.group(1)), "result": status})
        test["result"] = _worst(test["result"], status)
        return
    m = _STATUS.match(entry)
    if m is None:
        return
    status, scope = m.group(1).capitalize(), (m.group(2) or "").strip()
    ids = _GPU_IDS.match(scope)
    if ids:
        for gpu in re.findall(r"[0-9]+", ids.group(1)):
            test["gpus"].append({"gpu": int(gpu), "result": status})
    elif scope.lower() == "all":
        test["all_gpus"] = True
    test["result"] = _worst(test["result"], status)


# --------------------------------------------------------------------------- JSON


def _json_start(text: str) -> int | None:
    m = re.search(r"^\s*\{", text, re.MULTILINE)
    return m.start() if m else None


def _parse_json(text: str) -> dict[str, Any]:
    result = _empty("json")
    text, elided = _without_elisions(text)
    try:
        document, whole = jsonprefix.load(text)
    except ValueError as e:
        raise ParseError(f"the JSON form does not load: {e}", tool="dcgmi-diag") from e
    if elided:
        result["errors"].append(f"{elided} part(s) elided ('...'): the document is not complete")
    if not whole:
        result["errors"].append("the JSON document is cut short: the tests it printed whole are kept")
    if not isinstance(document, dict):
        raise ParseError("the JSON form is not an object", tool="dcgmi-diag")
    # DCGM 2.x/3.x name the object "DCGM GPU Diagnostic", 4.x "DCGM Diagnostic".
    body = document.get("DCGM GPU Diagnostic", document.get("DCGM Diagnostic"))
    if not isinstance(body, dict):
        raise ParseError(
            "JSON without a 'DCGM GPU Diagnostic' object", tool="dcgmi-diag"
        )
    for category in _list(body.get("test_categories")):
        for test_doc in _list(
            category.get("tests") if isinstance(category, dict) else None
        ):
            # a test object the cut went through before its name is no test to report
            if isinstance(test_doc, dict) and isinstance(test_doc.get("name"), str):
                result["tests"].append(_json_test(test_doc, category.get("category")))
    metadata = document.get("metadata")
    version = body.get(
        "version", metadata.get("version") if isinstance(metadata, dict) else None
    )
    if version is not None:
        result["metadata"]["DCGM Version"] = str(version)
    if body.get("runtime_error"):
        result["errors"].append(str(body["runtime_error"]))
    return _finish(result)


# A reporter's elision standing for a whole element or member of the document: '{"..."},',
# '{...}', '"..."', '...', '[...]' alone on a line (DCGM issue 139 elides a category so).
_JSON_ELISION = re.compile(r'^\s*(?:\{\s*(?:"\.\.\.+"|\.\.\.+|…)\s*\}|\[\s*\.\.\.+\s*\]|"\.\.\.+"|\.\.\.+|…)\s*,?\s*$')


def _without_elisions(text: str) -> tuple[str, int]:
    """``text`` without its elision lines, and how many there were. A comma left dangling
    before a closing bracket (the elided element was the last) is dropped with it."""
    kept: list[str] = []
    elided = 0
    lines = text.split("\n")
    for i, ln in enumerate(lines):
        if not _JSON_ELISION.match(ln):
            kept.append(ln)
            continue
        elided += 1
        after = next((x.strip() for x in lines[i + 1:] if x.strip() and not _JSON_ELISION.match(x)), "")
        if after[:1] in ("]", "}") and kept and kept[-1].rstrip().endswith(","):
            kept[-1] = kept[-1].rstrip()[:-1]
    return "\n".join(kept), elided


def _json_test(doc: dict[str, Any], category: Any) -> dict[str, Any]:
    test = _new_test(
        str(doc.get("name", "")), str(category) if category is not None else None
    )
    for entry in _list(doc.get("results")):
        if not isinstance(entry, dict):
            continue
        status = str(entry.get("status", "")).capitalize()
        if status in _SEVERITY:
            test["gpus"].extend(
                {"gpu": gpu, "result": status} for gpu in _json_gpu_ids(entry)
            )
            test["result"] = _worst(test["result"], status)
        test["warnings"].extend(_messages(entry.get("warnings", entry.get("warning"))))
        test["errors"].extend(_messages(entry.get("errors", entry.get("error"))))
        test["info"].extend(_messages(entry.get("info")))
    summary = doc.get("test_summary")
    status = (
        str(summary.get("status", "")).capitalize() if isinstance(summary, dict) else ""
    )
    if status in _SEVERITY:
        test["result"] = _worst(test["result"], status)
    if test["result"] == "Fail" and _warn_written_as_fail(doc):
        test["result"] = "Warn"
        test["gpus"] = [{**g, "result": "Warn" if g["result"] == "Fail" else g["result"]} for g in test["gpus"]]
    return test


# -j writes a Warn as "Fail" (Diag.cpp HelperJsonAddResult: HelperDisplayDiagResult without
# DDR_DISPLAY_WARN, DCGM 4.0.0 to 4.6.0; 3.3.9's has no Warn at all), yet 4.x gives each message its
# error_id (dcgm_errors.h). The Software test sets Warn, never Fail, for these (nvvs/src/Software.cpp
# 4.0.0 to 4.6.0, SetResult(..., NVVS_RESULT_WARN) after each): 20 DEVICE_COUNT_MISMATCH, 25
# GRAPHICS_PROCESSES, 28 BAD_CUDA_ENV, 29 PERSISTENCE_MODE, 118 SRAM_THRESHOLD, and 22 CANNOT_OPEN_LIB for
# the CUDA libraries (checkLibraries' CHECK_CUDA, CHECK_CUDATK; NVML's own, libnvidia-ml, is a Fail)
_WARN_CODES = frozenset({20, 25, 28, 29, 118})
_CANNOT_OPEN_LIB = 22


def _warn_written_as_fail(doc: dict[str, Any]) -> bool:
    """Whether a -j test at "Fail" is the table's Warn: the Software test ("software"), every entry
    at "Fail" (each GPU's, the test_summary) saying why in messages of its own, each one the source
    raises only with a Warn. A message without an error_id (3.x), any other one, or an entry at
    "Fail" with no message of its own (review s44q: another GPU's warning made it a Warn) leaves it
    a Fail: the document cannot tell."""
    if str(doc.get("name", "")).lower() != "software":
        return False
    entries = [e for e in [*_list(doc.get("results")), doc.get("test_summary")] if isinstance(e, dict)]
    failed = [_list(e.get("warnings")) for e in entries if str(e.get("status", "")).capitalize() == "Fail"]
    return bool(failed) and all(said and all(map(_warn_only, said)) for said in failed)


def _warn_only(w: Any) -> bool:
    """A -j message the Software test raises only with a Warn (:data:`_WARN_CODES`, a CUDA library)."""
    return isinstance(w, dict) and (w.get("error_id") in _WARN_CODES or (
        w.get("error_id") == _CANNOT_OPEN_LIB and "libnvidia-ml" not in str(w.get("warning"))))


def _json_gpu_ids(entry: dict[str, Any]) -> list[int]:
    """3.x: ``"gpu_ids": "0,1"``; 4.x: ``"entity_group": "GPU", "entity_id": 0``."""
    if "entity_group" in entry:
        entity = entry.get("entity_id")
        if (
            entry.get("entity_group") == "GPU"
            and isinstance(entity, int)
            and not isinstance(entity, bool)
        ):
            return [entity]
        return []
    return [
        int(i)
        for i in re.findall(
            r"[0-9]+", str(entry.get("gpu_ids", entry.get("gpu_id", "")))
        )
    ]


def _messages(value: Any) -> list[str]:
    """DCGM writes messages as a string, a list of strings or a list of {"warning": ...}."""
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [m for item in value for m in _messages(item)]
    if isinstance(value, dict):
        text = value.get("warning", value.get("error", value.get("message")))
        return (
            _messages(text) if text is not None else [json.dumps(value, sort_keys=True)]
        )
    return [str(value)]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# --------------------------------------------------------------------------- shared


def _empty(form: str) -> dict[str, Any]:
    return {
        "tool": "dcgmi-diag",
        "format": form,
        "result": None,
        "metadata": {},
        "tests": [],
        "warnings": [],
        "info": [],
        "errors": [],
    }


def _new_test(name: str, category: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "category": category,
        "result": None,
        "all_gpus": False,
        "gpus": [],
        "warnings": [],
        "errors": [],
        "info": [],
    }


def _finish(result: dict[str, Any]) -> dict[str, Any]:
    overall = None
    per_gpu: dict[int, str] = {}
    for test in result["tests"]:
        test["gpus"].sort(key=lambda g: g["gpu"])
        if test["result"] is not None:
            overall = _worst(overall, test["result"])
        for g in test["gpus"]:
            per_gpu[g["gpu"]] = _worst(per_gpu.get(g["gpu"]), g["result"])
    measuring = [t for t in result["tests"] if str(t["category"] or "").lower() in _MEASURING]
    # Every test that exercises the GPUs skipped: nothing was measured, whatever Deployment says.
    result["not_measured"] = [t["name"] for t in measuring if t["result"] in (None, "Skip")]
    if measuring and len(result["not_measured"]) == len(measuring) and overall in ("Pass", "Skip"):
        overall = "Skip"
        result["info"].append("every hardware test was skipped: the GPUs were not measured")
    if result["errors"]:
        overall = "Fail"
    elif result["warnings"]:
        overall = _worst(overall, "Warn")
    result["result"] = overall
    result["gpus"] = [{"gpu": gpu, "result": r} for gpu, r in sorted(per_gpu.items())]
    return result


def _worst(current: str | None, new: str) -> str:
    if current is None:
        return new
    return new if _SEVERITY[new] > _SEVERITY[current] else current
