"""JUnit XML for CI systems: one testsuite per check family, one testcase per host.

A CI dashboard tracks a host from night to night, so every name is stable: the suite
is ``sncheck.<family>`` (a layer: connectivity, stress, golden), the testcase is the
host name with classname ``sncheck.<family>.<supernode>``; nothing from the run (ids,
counts, times) goes into a name. Run details go into ``<properties>``.

Each host's testcase in a family is one of:

* **failure**: a finding that gates (its ``gates`` flag, decided by :mod:`sncheck.run.verdict`)
  names the host, one of its cards, a link with an end on it, or its supernode;
* **error**: a gating finding there says it was not measured (timed out, tool missing,
  parse failed, not run) or not judged, the host was unreachable (an error in every
  family), or the whole layer ended in error;
* **skipped** (with the reason): the layer was skipped, or it is "not judged" (a
  not-judged finding below the gate, e.g. an optional golden layer with no reference);
* **passing**: otherwise; findings below the gate go into ``<system-out>``.

Findings that name nothing on a known host get a testcase named after their entity, and
a layer whose verdict is ``fail`` without a failing finding gets a ``layer`` testcase
that fails, so the CI verdict never reads greener than the run's.

A scoped run (``--targets``) has testcases for the hosts in scope only, and each suite
carries the scope as a ``scope`` property.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import Any

from sncheck.health.invariants import UNREACHABLE
from sncheck.model import Verdict, host_of, hosts_of, severity_rank
from sncheck.run.verdict import GATES, NOT_JUDGED, NOT_MEASURED, flags_of
from sncheck.topology import natural_key
from sncheck.config.fileio import write_atomic

# Characters XML 1.0 cannot carry at all; tool output (ANSI escapes, NULs) may hold them.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class _Hosts:
    """The run's hosts and supernodes (from ``results["topology"]``), and which hosts a
    finding's entity touches."""

    def __init__(self, results: dict, findings: list[dict]) -> None:
        self.supernode: dict[str, str] = {}
        self.members: dict[str, list[str]] = {}
        for sn in (results.get("topology") or {}).get("supernodes") or []:
            name = str(sn.get("name", "?"))
            hosts = [str(h) for h in sn.get("hosts") or []]
            self.members[name] = hosts
            for h in hosts:
                self.supernode[h] = name
        if not self.supernode:  # no topology: the hosts the findings name
            for f in findings:
                for h in self._ends(str(f.get("entity", ""))):
                    self.supernode.setdefault(h, "")

    @staticmethod
    def _ends(entity: str) -> list[str]:
        entity = entity.removeprefix("host:").removeprefix("card:")
        return hosts_of(entity)

    def of(self, finding: dict) -> list[str]:
        entity = str(finding.get("entity", ""))
        if finding.get("entity_kind") == "supernode" and entity in self.members:
            return list(self.members[entity])
        if finding.get("entity_kind") == "switch":  # the hosts of the NICs it explains (Fabric.switch_evidence)
            nics = (finding.get("evidence") or {}).get("nics") or []
            return [h for h in dict.fromkeys(host_of(str(n)) for n in nics) if h in self.supernode]
        return [h for h in dict.fromkeys(self._ends(entity)) if h in self.supernode]

    def ordered(self) -> list[str]:
        return sorted(self.supernode, key=natural_key)

    def scoped(self, scope: dict | None) -> None:
        """A scoped run: only the hosts in scope are testcases (a host out of scope was not tested)."""
        if scope and isinstance(scope.get("hosts"), list):
            keep = {str(h) for h in scope["hosts"]}
            self.supernode = {h: sn for h, sn in self.supernode.items() if h in keep}


def render_junit(results: dict) -> str:
    findings = [f | flags_of(f, results) for f in results.get("findings") or []]
    layers = list(results.get("layers") or [])
    known = {layer.get("name") for layer in layers}
    # Findings may name a layer the envelope does not list (e.g. isolation): keep them.
    for name in dict.fromkeys(f.get("layer") or "run" for f in findings):
        if name not in known:
            layers.append({"name": name, "verdict": ""})  # judged by its findings alone
    if results.get("isolation_blocked"):  # the verdict failed the run for it: show where
        layers.append({"name": "isolation", "verdict": Verdict.FAIL})
    hosts = _Hosts(results, findings)
    hosts.scoped(results.get("scope"))
    # An unreachable host could not run any family: it is an error in each of them.
    unreachable = [f for f in findings if f.get("rule") == UNREACHABLE]
    root = ET.Element("testsuites", name="sncheck")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for layer in layers:
        name = str(layer.get("name", "?"))
        # A finding belongs to its layer and to each layer of a symptom folded into it, as
        # the layer verdicts count it (run.verdict.gating_layers).
        mine = [f for f in findings if (f.get("layer") or "run") == name
                or any(r.get("layer") == name for r in (f.get("evidence") or {}).get("related") or [])]
        if layer.get("verdict") != "skipped":
            mine += [f for f in unreachable if f not in mine]
        suite = _suite(root, name, layer, mine, results, hosts)
        for k in totals:
            totals[k] += int(suite.get(k, "0"))
    for k, v in totals.items():
        if k != "skipped":  # the xunit plugin's JUnit schema has no skipped on <testsuites> (each suite has it)
            root.set(k, str(v))
    _sanitize(root)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: str | os.PathLike, results: dict) -> None:
    write_atomic(path, render_junit(results))


def _suite(root: ET.Element, name: str, layer: dict, findings: list[dict],
           results: dict, hosts: _Hosts) -> ET.Element:
    suite = ET.SubElement(root, "testsuite", name=f"sncheck.{name}")
    props = ET.SubElement(suite, "properties")
    for key in ("run_id", "playbook", "backend", "inventory"):
        if results.get(key) is not None:
            ET.SubElement(props, "property", name=key, value=str(results[key]))
    ET.SubElement(props, "property", name="verdict", value=str(layer.get("verdict", "")))
    scope = results.get("scope")
    if scope:
        ET.SubElement(props, "property", name="scope", value=" ".join(map(str, scope.get("targets") or [])))
    cut = (layer.get("summary") or {}).get("cut_short")
    if cut:
        ET.SubElement(props, "property", name="cut_short", value=str(cut))
    verdict = layer.get("verdict")

    per_host: dict[str, list[dict]] = defaultdict(list)
    elsewhere: dict[str, list[dict]] = defaultdict(list)  # entity -> findings on no known host
    for f in findings:
        on = hosts.of(f)
        for h in on:
            per_host[h].append(f)
        if not on:
            elsewhere[str(f.get("entity", "?"))].append(f)

    counts = {"failures": 0, "errors": 0, "skipped": 0}
    for host in hosts.ordered():
        classname = f"sncheck.{name}.{hosts.supernode[host]}" if hosts.supernode[host] else f"sncheck.{name}"
        _case(suite, classname, host, per_host.get(host, []), verdict, cut, counts)
    for entity in sorted(elsewhere, key=natural_key):
        _case(suite, f"sncheck.{name}", entity, elsewhere[entity], verdict, cut, counts)
    if verdict == "fail" and not counts["failures"] and not counts["errors"]:
        case = ET.SubElement(suite, "testcase", classname=f"sncheck.{name}", name="layer")
        ET.SubElement(case, "failure", message="layer verdict is fail", type="verdict")
        counts["failures"] += 1
    elif not suite.findall("testcase"):  # no hosts known and nothing found: the layer itself
        case = ET.SubElement(suite, "testcase", classname=f"sncheck.{name}", name="layer")
        if verdict == "error":
            ET.SubElement(case, "error", message=str(cut or "layer could not run"))
            counts["errors"] += 1
        elif verdict in (Verdict.SKIPPED, Verdict.NOT_JUDGED):
            ET.SubElement(case, "skipped", message=str(cut or f"layer {verdict}"))
            counts["skipped"] += 1
    suite.set("tests", str(len(suite.findall("testcase"))))
    for k, v in counts.items():
        suite.set(k, str(v))
    return suite


def _case(suite: ET.Element, classname: str, name: str, findings: list[dict],
          verdict: object, cut: object, counts: dict[str, int]) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name)
    failing = [f for f in findings if f[GATES]]
    not_run = [f for f in failing if f[NOT_MEASURED] or f[NOT_JUDGED]]
    bad = [f for f in failing if not (f[NOT_MEASURED] or f[NOT_JUDGED])]
    unjudged = [f for f in findings if f[NOT_JUDGED]]
    text = "\n\n".join(_finding_text(f) for f in findings)
    if bad:
        failure = ET.SubElement(case, "failure", message=_summary(bad),
                                type=max((str(f.get("severity", "")) for f in bad), key=_rank))
        failure.text = text
        counts["failures"] += 1
    elif not_run or verdict == Verdict.ERROR:
        error = ET.SubElement(case, "error", message=_summary(not_run) if not_run
                              else str(cut or "layer could not run"))
        error.text = text or None
        counts["errors"] += 1
    elif verdict == Verdict.SKIPPED or unjudged:
        skipped = ET.SubElement(case, "skipped", message=f"not judged: {_summary(unjudged)}" if unjudged
                                else str(cut or "layer skipped"))
        skipped.text = text or None
        counts["skipped"] += 1
    elif findings:
        ET.SubElement(case, "system-out").text = text


def _rank(severity: str) -> int:
    try:
        return severity_rank(severity)
    except ValueError:
        return 3  # an unknown severity: the worst


def _summary(findings: list[dict]) -> str:
    first = findings[0]
    more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
    return f"{first.get('entity', '')}: {first.get('message', '')}{more}"


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


def write(results: dict, rows: Any, path: str | os.PathLike, template_dirs: tuple = ()) -> None:
    """The report formats' hook (sncheck.report.FORMATS)."""
    write_junit(path, results)
