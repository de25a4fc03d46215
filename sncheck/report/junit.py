"""JUnit XML for CI systems: one testsuite per check family, one testcase per host.

A CI dashboard tracks a host from night to night, so every name is stable: the suite
is ``sncheck.<family>`` (a layer: connectivity, stress, golden), the testcase is the
host name with classname ``sncheck.<family>.<supernode>``; nothing from the run (ids,
counts, times) goes into a name. Run details go into ``<properties>``.

Each host's testcase in a family is one of:

* **failure**: a finding that gates (its ``gates`` flag: :class:`sncheck.model.RunRecord`)
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
from dataclasses import dataclass
from typing import Any

from sncheck.health.invariants import UNREACHABLE
from sncheck.model import EntityKind, Finding, RunRecord, Verdict, host_of, hosts_of
from sncheck.topology import natural_key
from sncheck.config.fileio import write_atomic

# Characters XML 1.0 cannot carry at all; tool output (ANSI escapes, NULs) may hold them.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class _Layer:
    """A suite: a layer of the run, or a name only findings give (``isolation``, ``run``)."""
    name: str
    verdict: str  # "": judged by its findings alone
    cut: str | None = None


class _Hosts:
    """The run's hosts and supernodes (from the record's ``topology``), and which hosts a
    finding's entity touches."""

    def __init__(self, record: RunRecord) -> None:
        self.supernode: dict[str, str] = {}
        self.members: dict[str, list[str]] = {}
        for sn in (record.topology or {}).get("supernodes") or []:
            name = str(sn.get("name", "?"))
            hosts = [str(h) for h in sn.get("hosts") or []]
            self.members[name] = hosts
            for h in hosts:
                self.supernode[h] = name
        if not self.supernode:  # no topology: the hosts the findings name
            for f in record.findings:
                for h in self._ends(f.entity):
                    self.supernode.setdefault(h, "")

    @staticmethod
    def _ends(entity: str) -> list[str]:
        entity = entity.removeprefix("host:").removeprefix("card:")
        return hosts_of(entity)

    def of(self, finding: Finding) -> list[str]:
        entity = finding.entity
        if finding.entity_kind == EntityKind.SUPERNODE and entity in self.members:
            return list(self.members[entity])
        if finding.entity_kind == EntityKind.SWITCH:  # the hosts of the NICs it explains (Fabric.switch_evidence)
            nics = finding.evidence.get("nics") or []
            return [h for h in dict.fromkeys(host_of(str(n)) for n in nics) if h in self.supernode]
        return [h for h in dict.fromkeys(self._ends(entity)) if h in self.supernode]

    def ordered(self) -> list[str]:
        return sorted(self.supernode, key=natural_key)

    def scoped(self, scope: dict | None) -> None:
        """A scoped run: only the hosts in scope are testcases (a host out of scope was not tested)."""
        if scope and isinstance(scope.get("hosts"), list):
            keep = {str(h) for h in scope["hosts"]}
            self.supernode = {h: sn for h, sn in self.supernode.items() if h in keep}


def render_junit(record: RunRecord) -> str:
    findings = list(record.findings)
    layers = [_Layer(layer.name, record.layer_verdict(layer).value, layer.summary.get("cut_short"))
              for layer in record.layers]
    known = {layer.name for layer in layers}
    # Findings may name a layer the envelope does not list (e.g. isolation): keep them.
    for name in dict.fromkeys(f.layer or "run" for f in findings):
        if name not in known:
            layers.append(_Layer(name, ""))  # judged by its findings alone
    if record.isolation_blocked:  # the verdict failed the run for it: show where
        layers.append(_Layer("isolation", Verdict.FAIL.value))
    hosts = _Hosts(record)
    hosts.scoped(record.scope)
    # An unreachable host could not run any family: it is an error in each of them.
    unreachable = [f for f in findings if f.rule == UNREACHABLE]
    root = ET.Element("testsuites", name="sncheck")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for layer in layers:
        # A finding belongs to its layer and to each layer of a symptom folded into it, as
        # the layer verdicts count it (RunRecord.gating_layers).
        mine = [f for f in findings if (f.layer or "run") == layer.name
                or any(r.get("layer") == layer.name for r in f.related)]
        if layer.verdict != Verdict.SKIPPED:
            mine += [f for f in unreachable if f not in mine]
        suite = _suite(root, layer, mine, record, hosts)
        for k in totals:
            totals[k] += int(suite.get(k, "0"))
    for k, v in totals.items():
        if k != "skipped":  # the xunit plugin's JUnit schema has no skipped on <testsuites> (each suite has it)
            root.set(k, str(v))
    _sanitize(root)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: str | os.PathLike, record: RunRecord) -> None:
    write_atomic(path, render_junit(record))


def _suite(root: ET.Element, layer: _Layer, findings: list[Finding],
           record: RunRecord, hosts: _Hosts) -> ET.Element:
    name = layer.name
    suite = ET.SubElement(root, "testsuite", name=f"sncheck.{name}")
    props = ET.SubElement(suite, "properties")
    for key, value in (("run_id", record.run_id), ("playbook", record.playbook), ("backend", record.backend),
                       ("inventory", record.inventory)):
        ET.SubElement(props, "property", name=key, value=str(value))
    ET.SubElement(props, "property", name="verdict", value=layer.verdict)
    scope = record.scope
    if scope:
        ET.SubElement(props, "property", name="scope", value=" ".join(map(str, scope.get("targets") or [])))
    cut = layer.cut
    if cut:
        ET.SubElement(props, "property", name="cut_short", value=str(cut))
    verdict = layer.verdict

    per_host: dict[str, list[Finding]] = defaultdict(list)
    elsewhere: dict[str, list[Finding]] = defaultdict(list)  # entity -> findings on no known host
    for f in findings:
        on = hosts.of(f)
        for h in on:
            per_host[h].append(f)
        if not on:
            elsewhere[f.entity or "?"].append(f)

    counts = {"failures": 0, "errors": 0, "skipped": 0}
    for host in hosts.ordered():
        classname = f"sncheck.{name}.{hosts.supernode[host]}" if hosts.supernode[host] else f"sncheck.{name}"
        _case(suite, classname, host, per_host.get(host, []), record, verdict, cut, counts)
    for entity in sorted(elsewhere, key=natural_key):
        _case(suite, f"sncheck.{name}", entity, elsewhere[entity], record, verdict, cut, counts)
    if verdict == Verdict.FAIL and not counts["failures"] and not counts["errors"]:
        case = ET.SubElement(suite, "testcase", classname=f"sncheck.{name}", name="layer")
        ET.SubElement(case, "failure", message="layer verdict is fail", type="verdict")
        counts["failures"] += 1
    elif not suite.findall("testcase"):  # no hosts known and nothing found: the layer itself
        case = ET.SubElement(suite, "testcase", classname=f"sncheck.{name}", name="layer")
        if verdict == Verdict.ERROR:
            ET.SubElement(case, "error", message=str(cut or "layer could not run"))
            counts["errors"] += 1
        elif verdict in (Verdict.SKIPPED, Verdict.NOT_JUDGED):
            ET.SubElement(case, "skipped", message=str(cut or f"layer {verdict}"))
            counts["skipped"] += 1
    suite.set("tests", str(len(suite.findall("testcase"))))
    for k, v in counts.items():
        suite.set(k, str(v))
    return suite


def _case(suite: ET.Element, classname: str, name: str, findings: list[Finding], record: RunRecord,
          verdict: str, cut: object, counts: dict[str, int]) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name)
    failing = [f for f in findings if record.gates(f)]
    not_run = [f for f in failing if f.not_measured or f.not_judged]
    bad = [f for f in failing if not (f.not_measured or f.not_judged)]
    unjudged = [f for f in findings if f.not_judged]
    text = "\n\n".join(_finding_text(f) for f in findings)
    if bad:
        failure = ET.SubElement(case, "failure", message=_summary(bad),
                                type=max((f.severity for f in bad), key=lambda s: s.rank).value)
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


def _summary(findings: list[Finding]) -> str:
    first = findings[0]
    more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
    return f"{first.entity}: {first.message}{more}"


def _finding_text(f: Finding) -> str:
    ev = f.evidence
    lines = [f"entity: {f.entity} ({f.entity_kind.value})",
             f"rule: {f.rule}", f"severity: {f.severity.value}",
             f"message: {f.message}"]
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


def write(record: RunRecord, rows: Any, path: str | os.PathLike, template_dirs: tuple = ()) -> None:  # noqa: ARG001 -- the report format hook (sncheck.report): the record only
    """The report formats' hook (sncheck.report.FORMATS)."""
    write_junit(path, record)
