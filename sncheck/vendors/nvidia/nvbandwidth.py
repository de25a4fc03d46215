"""Parse ``nvbandwidth`` (copy-engine and SM copies inside a host) and judge it.

``parse_nvbandwidth`` (``nvbandwidth``)::

    {"tool": "nvbandwidth", "version": "v0.6", "driver_version": "550.54.15",
     "tests": {"device_to_device_memcpy_read_ce": {
                   "title": "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)",
                   "unit": "GB/s", "columns": ["0", "1"],
                   "matrix": {"0": {"0": null, "1": 276.07}, "1": {...}},
                   "sum": 552.26, "cv": 0.01}},
     "waived": 4, "errors": []}

Each matrix row is printed once (a row label read twice in one matrix is another copy spliced in:
an error, never the last copy's values).

The diagonal is null (``N/A`` in newer versions, ``0.00`` in older ones: a GPU does not
copy to itself). A test that started and printed no matrix is an error, with the tool's
own failure text (``Invalid value when checking the pattern``, ``Aborted (core dumped)``)
as the error when it printed one. A matrix without its ``Running`` line is kept under the
name its ``SUM`` line gives. Cut short: fewer rows than a GPU x GPU matrix has columns, or
no ``SUM`` line after a matrix (every version prints one: common.h's matrix printer ends
with it from the first tag, v0.1; the README's examples leave it out, a writer's excerpt).
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError

from sncheck.vendors import after_end, listing
from sncheck.vendors.facts import fact_row, listed
from sncheck.vendors.grammar import Grammar

GRAMMAR = {"nvbandwidth": Grammar(
    tool="nvbandwidth [-t TESTCASE ...] (plain text output, not -j)",
    versions="v0.2 to v0.10 (SUM lines in every version, N/A diagonal from v0.5, COEFFICIENT_OF_VARIATION from v0.10)",
    sources=(
        "NVIDIA/nvbandwidth output.cpp (08eda47): the version, CUDA and driver lines, 'Device N: NAME (DDDDDDDD:BB:DD)', "
        "'Running NAME.', the description line then the matrix, 'STATUS: msg' lines",
        "NVIDIA/nvbandwidth common.h (073a6b1): the matrix printer (' ' then each column index 10 wide; per row "
        "its index then each value 10 wide, fixed 2 decimals) and CU_ASSERT's '[CUDA_ERROR_X] description' then exit",
        "NVIDIA/nvbandwidth common.h @ v0.1, v0.2, v0.3, v0.4 (tags) and inline_common.h @ v0.5: operator<< of "
        "PeerValueMatrix ends every matrix with a blank line and 'SUM KEY VALUE' (MIN/MAX/AVG only under -v): a "
        "matrix without it was cut, whatever the version (harvest26: issue 24's paste without version or SUM lines)",
        "the real captures under fixtures/real/ (nvbandwidth: v0.10 Azure NHC test data, the README's 8-GPU matrix, "
        "v0.6 GH200 with Waived lines; r3: v0.8 6x A6000, v0.7 pattern check assert, v0.4 aborted; harvest: v0.2 "
        "8x RTX 4090, v0.8 A100) for SUM, COEFFICIENT_OF_VARIATION, NOTE and Waived, which those sources do not show",
    ),
    lines=("'nvbandwidth Version: vX', 'Built from Git version: X', a blank; (to v0.4 the two NOTE lines here); 'CUDA "
           "Runtime Version: N', 'CUDA Driver Version: N', 'Driver Version: X', a blank; 'Device N: NAME [(PCI id)]' "
           "per GPU, a blank; per testcase 'Running NAME.', its description ending '(GB/s)' or '(ns)' (CPU(row) x "
           "GPU(column): one row 0; GPU(row) x GPU(column): a row per GPU, the diagonal N/A, 0.00 before v0.5), the "
           "column header and rows (a leading blank before the row index in v0.6-v0.8), a blank, 'SUM NAME V', "
           "'COEFFICIENT_OF_VARIATION NAME V' (v0.10), a blank; 'Waived: ' for a testcase that does not "
           "apply (a GPU-to-GPU test on one GPU); the NOTE lines ('The reported results may not reflect ...') after "
           "the first test or at the end from v0.6"),
    end="none printed for the run: each testcase ends at its SUM (every version), then its COEFFICIENT_OF_VARIATION "
        "(v0.10); a GPU x GPU matrix has a row per column; the testcases against the judge's count (--expect N). "
        "From v0.6 main() ends with Output::printInfo (output.cpp @ v0.6, v0.7, v0.8): 'NOTE: The reported results "
        "may not reflect ...', 'Performance can vary with software drivers, hardware clocks, and system topology.', "
        "a blank: that last line whole with no newline after it is a file that lost its final newline, not a cut "
        "(CLOSING; harvest 28's v0.8 run saved so). "
        "A reporter's '...' is read over the 'Device N' lines alone (between 'Driver Version' or a device and a "
        "device, the first test or a Waived line: no value is read from them); anywhere else it left values out: not whole",
    failures=("' Invalid value when checking the pattern at 0x...' and ' Current offset [ a/b ]' (the data check), "
              "'[CUDA_ERROR_X] description' (CU_ASSERT, then the tool exits), 'Aborted (core dumped)', "
              "'Segmentation fault', 'terminate called ...': errors, and a testcase that started without a matrix"),
    values=("version, driver_version, tests{NAME: {title, unit (GB/s or ns), columns, matrix{row: {column: value "
            "or null}}, sum, cv}}, waived (the count of Waived lines), errors"),
)}

# the line Output::printInfo prints last (output.cpp @ v0.6 to v0.8, after every testcase): whole, a file that
# ends in it without its newline lost only that newline (listing.Listing.closing)
CLOSING = ("Performance can vary with software drivers, hardware clocks, and system topology.",)

# a reporter's markdown quote on the Running line alone ('> Running NAME.': GitHub's lazy continuation
# quotes the matrix under it too, nvbandwidth issue 24); the delivery layer takes a quote off only where
# every line carries it
_RUNNING = re.compile(r"^(?:> ?)?Running (\S+?)\.?\s*$")
_SUM = re.compile(r"^SUM (\S+) ([0-9.]+)$")
_CV = re.compile(r"^COEFFICIENT_OF_VARIATION (\S+) ([0-9.]+)$")
_TITLE = re.compile(r"\((GB/s|ns|us)\)\s*$")
# The tool's own failure text: a data check, an assertion, a CUDA error, a crash.
_TOOL_FAILURE = re.compile(
    r"Invalid value when checking the pattern|^ASSERT\b|Aborted \(core dumped\)|Segmentation fault|"
    r"terminate called|what\(\):|\bcuda_error|CUDA error|(?i:\berror\b)|failed", re.IGNORECASE)
_HEADER = re.compile(r"^(nvbandwidth Version|Built from Git version|CUDA Runtime Version|CUDA Driver Version|"
                     r"Driver Version|Device \d+|NOTE|Additional system|Performance can vary|Waived|"
                     r"Current offset)\b")


_DEVICE = re.compile(r"^Device \d+:")


def _in_device_list(lines: list[tuple[int, str]], k: int) -> bool:
    """Whether the '...' on ``lines[k]``, before the first test, stood for 'Device N' lines only (no
    value is read from them): the line before it that is not blank is the header's last ('Driver
    Version: X') or a device's, the line after it a device's or the first test's ('Running NAME.', its
    title, or 'Waived:' for a test that does not apply)."""
    prev, nxt = listing.beside(lines, k)
    return bool(re.match(r"^Driver Version:", prev) or _DEVICE.match(prev)) and \
        bool(_DEVICE.match(nxt) or _RUNNING.match(nxt) or _TITLE.search(nxt) or nxt.startswith("Waived"))


def _new_test(name: str | None) -> dict[str, Any]:
    return {"name": name, "title": None, "unit": None, "columns": [], "matrix": {}, "sum": None, "cv": None}


def parse_nvbandwidth(text: str) -> dict[str, Any]:
    """Each test: ``Running NAME.``, a titled matrix, then ``SUM NAME value`` (every version). A
    matrix whose ``Running`` line is missing (cut from a paste) is named by its SUM line."""
    found: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    version = driver = None
    waived = 0
    errors: list[str] = []
    elided: tuple[int, str] | None = None  # a reporter's '...' (its line, its mark): the device list may go, a test's name may not
    lines = after_end.numbered(text)
    for k, (at, raw) in enumerate(lines):
        line = raw.strip()
        if listing.is_elision(line):
            if found or not _in_device_list(lines, k):
                errors.append(listing.elision(at, line))  # over the header's versions, a test's rows, a test
            else:
                elided = elided or (at, line)
            continue
        if not line:
            continue
        if m := re.match(r"^nvbandwidth Version:\s*(\S+)", line):
            version = m.group(1)
        elif m := re.match(r"^Driver Version:\s*(\S+)", line):
            driver = m.group(1)
        elif line.startswith("Waived"):
            waived += 1
        elif m := _RUNNING.match(line):
            cur = _new_test(m.group(1))
            found.append(cur)
        elif m := _SUM.match(line):
            t = next((t for t in reversed(found) if t["name"] in (m.group(1), None)), None)
            if t is None:
                t = _new_test(m.group(1))
                found.append(t)
            t["name"], t["sum"] = m.group(1), float(m.group(2))
        elif m := _CV.match(line):
            t = next((t for t in reversed(found) if t["name"] == m.group(1)), None)
            if t is not None:
                t["cv"] = float(m.group(2))
        elif m := _TITLE.search(line):
            if cur is None or cur["title"] is not None:  # a matrix with no Running line before it
                cur = _new_test(None)
                found.append(cur)
            cur["title"], cur["unit"] = line, m.group(1)
        elif cur is not None and cur["title"] and re.fullmatch(r"\d+(\s+\d+)*", line) and not cur["columns"]:
            cur["columns"] = line.split()
        elif cur is not None and cur["columns"] and re.fullmatch(r"\d+(\s+(?:[0-9.]+|N/A))+", line):
            cells = line.split()
            row, values = cells[0], cells[1:]
            if len(values) != len(cur["columns"]):
                errors.append(f"row {row} has {len(values)} cells for {len(cur['columns'])} columns")
            if row in cur["matrix"]:  # each row printed once: another copy spliced in (review18 #7)
                errors.append(f"row {row} printed twice in {cur['title'] or 'a matrix'}: the output is not as printed")
                continue
            cur["matrix"][row] = {c: _cell(v, row, c, cur["title"]) for c, v in zip(cur["columns"], values)}
        elif _TOOL_FAILURE.search(line) and not _HEADER.match(line):
            errors.append(line)
    if not found:
        raise ParseError("no 'Running <testcase>.' lines and no result matrix", tool="nvbandwidth")
    tests: dict[str, dict[str, Any]] = {}
    for i, t in enumerate(found):
        if t["name"] is None and elided:  # its Running line left out, and no SUM line (before v0.5) names it
            errors.append(f"line {elided[0]} is a reporter's {elided[1]!r}: a matrix ({t['title']}) whose 'Running' "
                          "line a '...' left out: its test is unknown")
        name = t.pop("name") or f"untitled_{i}"
        tests[name] = t
        if not t["matrix"]:
            if not any(e for e in errors if not e.startswith(("row ", name))):
                errors.append(f"{name}: no result matrix (test did not finish?)")
            continue
        if "GPU(row)" in (t["title"] or "") and "GPU(column)" in (t["title"] or "") \
                and len(t["matrix"]) < len(t["columns"]):
            errors.append(f"{name}: {len(t['matrix'])} of {len(t['columns'])} matrix rows (cut short)")
        elif t["sum"] is None:  # every version prints one after its matrix (common.h's operator<<, v0.1 on)
            errors.append(f"{name}: no 'SUM {name}' line after the matrix (cut short)")
    # v0.10 on: SUM then COEFFICIENT_OF_VARIATION (known by the version line, or by another test's CV)
    if _version(version) >= (0, 10) or any(t["cv"] is not None for t in tests.values()):
        errors += [f"{n}: no COEFFICIENT_OF_VARIATION line after its SUM (cut short)"
                   for n, t in tests.items() if t["sum"] is not None and t["cv"] is None]
    return {"tool": "nvbandwidth", "version": version, "driver_version": driver, "tests": tests,
            "waived": waived, "errors": errors}


def _version(text: str | None) -> tuple[int, ...]:
    m = re.match(r"v?(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _cell(value: str, row: str, col: str, title: str | None) -> float | None:
    if value == "N/A":
        return None
    v = float(value)
    # A GPU<->GPU matrix has no self-copy; old versions print 0.00 there.
    if row == col and v == 0.0 and title and "GPU(row)" in title and "GPU(column)" in title:
        return None
    return v


def check_nvbandwidth(host: str, parsed: dict[str, Any], *, d2d_GBps: float | None = None,
                      h2d_GBps: float | None = None, min_fraction: float = 0.9) -> list[dict]:
    """Every device-to-device cell and every host-to-device cell against the design."""
    out = []
    for fact, prefix, design in (("nvbandwidth_d2d", "device_to_device_memcpy", d2d_GBps),
                                 ("nvbandwidth_h2d", "host_to_device_memcpy", h2d_GBps)):
        tests = {n: t for n, t in parsed.get("tests", {}).items() if n.startswith(prefix) and t.get("matrix")}
        if design is None or not tests:
            continue
        want = design * min_fraction
        cells = [(n, r, c, v) for n, t in tests.items() for r, row in t["matrix"].items()
                 for c, v in row.items() if v is not None]
        low = [f"{n} {r}->{c} {v:g} GB/s" for n, r, c, v in cells if v < want]
        worst = min((v for *_, v in cells), default=None)
        msg = (f"nvbandwidth {prefix}: {len(cells) - len(low)}/{len(cells)} cells >= {want:g} GB/s "
               f"({min_fraction:.0%} of design {design:g})" + (f"; low: {listed(low)}" if low else ""))
        out.append(fact_row(host, fact, worst, design, not low and bool(cells), msg, "nvbandwidth"))
    return out
