"""JUnit XML for CI systems: one testsuite per layer, one testcase per finding.

A finding at or above the run's gate severity is a ``<failure>``; one below the gate
is a passing testcase that carries its message in ``<system-out>``. A layer with no
findings gets one passing testcase, a skipped layer one ``<skipped>`` testcase, and a
layer whose verdict is ``error`` (or ``fail`` without a failing finding) one testcase
that says so, so the CI verdict never reads greener than the run's.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

from .json_out import write_text_atomic

SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}
# Characters XML 1.0 cannot carry at all; tool output (ANSI escapes, NULs) may hold them.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def is_failure(severity: str, gate: str) -> bool:
    """True when ``severity`` is at or above ``gate`` (unknown severities fail)."""
    return SEVERITY_RANK.get(severity, len(SEVERITY_RANK)) >= SEVERITY_RANK.get(gate, 2)


def render_junit(results: dict) -> str:
    gate = results.get("gate") or "critical"
    findings = results.get("findings") or []
    layers = list(results.get("layers") or [])
    known = {layer.get("name") for layer in layers}
    # Findings may name a layer the envelope does not list (e.g. isolation): keep them.
    for name in dict.fromkeys(f.get("layer") or "run" for f in findings):
        if name not in known:
            layers.append({"name": name, "verdict": ""})  # judged by its findings alone
    if results.get("isolation_blocked"):  # the safety cap refused the isolations: the gate fails
        layers.append({"name": "isolation", "verdict": "fail"})
    root = ET.Element("testsuites", name=f"sncheck {results.get('run_id', '')}".strip())
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for layer in layers:
        name = str(layer.get("name", "?"))
        mine = [f for f in findings if (f.get("layer") or "run") == name]
        suite = _suite(root, name, layer, mine, gate, results)
        for k in totals:
            totals[k] += int(suite.get(k, "0"))
    for k, v in totals.items():
        root.set(k, str(v))
    _sanitize(root)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: str | os.PathLike, results: dict) -> None:
    write_text_atomic(path, render_junit(results))


def _suite(root: ET.Element, name: str, layer: dict, findings: list[dict], gate: str,
           results: dict) -> ET.Element:
    suite = ET.SubElement(root, "testsuite", name=f"sncheck.{name}")
    props = ET.SubElement(suite, "properties")
    for key in ("run_id", "playbook", "backend", "inventory"):
        if results.get(key) is not None:
            ET.SubElement(props, "property", name=key, value=str(results[key]))
    ET.SubElement(props, "property", name="verdict", value=str(layer.get("verdict", "")))
    cut = (layer.get("summary") or {}).get("cut_short")
    if cut:
        ET.SubElement(props, "property", name="cut_short", value=str(cut))
    verdict = layer.get("verdict")
    failures = errors = skipped = 0
    if verdict == "skipped" and not findings:
        case = _case(suite, name, "layer")
        ET.SubElement(case, "skipped", message=str(cut or "layer skipped"))
        skipped += 1
    for f in findings:
        case = _case(suite, name, f"{f.get('rule', '?')} {f.get('entity', '?')}")
        text = _finding_text(f)
        if is_failure(str(f.get("severity", "")), gate):
            failure = ET.SubElement(case, "failure", message=str(f.get("message", "")),
                                    type=str(f.get("severity", "")))
            failure.text = text
            failures += 1
        else:
            ET.SubElement(case, "system-out").text = text
    if verdict == "error":
        case = _case(suite, name, "layer")
        ET.SubElement(case, "error", message=str(cut or "layer could not run"))
        errors += 1
    elif verdict == "fail" and not failures:
        case = _case(suite, name, "layer")
        ET.SubElement(case, "failure", message="layer verdict is fail", type="verdict")
        failures += 1
    elif not findings and verdict != "skipped":
        _case(suite, name, "layer")
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    return suite


def _case(suite: ET.Element, layer: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=f"sncheck.{layer}", name=name)


def _finding_text(f: dict) -> str:
    ev = f.get("evidence") or {}
    lines = [f"entity: {f.get('entity', '')} ({f.get('entity_kind', '')})",
             f"rule: {f.get('rule', '')}", f"severity: {f.get('severity', '')}",
             f"message: {f.get('message', '')}"]
    if ev:
        lines.append(f"measured: {ev.get('measured')} expected: {ev.get('expected')} "
                     f"{ev.get('unit') or ''}".rstrip())
    return "\n".join(lines)


def _sanitize(root: ET.Element) -> None:
    for el in root.iter():
        if el.text:
            el.text = _XML_INVALID.sub("\ufffd", el.text)
        for k, v in el.attrib.items():
            el.attrib[k] = _XML_INVALID.sub("\ufffd", v)
