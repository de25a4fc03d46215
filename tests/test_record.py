"""The typed run record (issue 27): one builder, one reader and writer, the verdict and
flags as properties, findings built typed by the code that makes them."""

from __future__ import annotations

import ast
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.model import (About, Action, Basis, EntityKind, ExitCode, Finding, LayerRecord, RunRecord, Severity,
                           Verdict)
from sncheck.run.recorder import RunRecorder
from sncheck.store.results import from_json, read_record, to_json

ROOT = Path(__file__).resolve().parent.parent
SNCHECK = ROOT / "sncheck"
DATA = ROOT / "tests/data"
BEFORE_FLAGS = DATA / "run-614f5fd/run"   # written before the flags existed (issue 17)
WITH_NOT_RUN = DATA / "run-5e5f3b1"       # written the day the record was typed: flags and evidence.not_run


# ---- one reader and writer, every layout ----------------------------------------------

def test_a_document_written_today_reads_back_and_writes_the_same_document():
    doc = json.loads((WITH_NOT_RUN / "results.json").read_text())
    record = read_record(WITH_NOT_RUN)
    assert record.verdict == doc["verdict"] == "fail"
    for f, d in zip(record.findings, doc["findings"]):
        assert record.flags(f) == {k: d[k] for k in ("gates", "not_measured", "not_judged")}, d["rule"]
        assert f.about == (d.get("about") or "hardware")
    assert [layer["verdict"] for layer in to_json(record)["layers"]] == [layer["verdict"] for layer in doc["layers"]]
    # Read and written back: the same document (its evidence is data, kept as it was written;
    # today's code writes no evidence.not_run, the flags say it).
    assert to_json(record) == doc
    assert any("not_run" in d["evidence"] for d in doc["findings"])


def test_a_document_written_before_the_flags_reads_by_its_rules():
    doc = json.loads((BEFORE_FLAGS / "results.json").read_text())
    assert not any("gates" in f for f in doc["findings"])
    record = read_record(BEFORE_FLAGS)
    assert record.verdict == doc["verdict"] == "fail"
    unreachable = [f for f in record.findings if f.rule == "host-unreachable"]
    assert unreachable and all(f.basis == Basis.NOT_MEASURED for f in unreachable)
    assert {f.entity for f in record.findings if f.basis == Basis.MEASURED} >= {"node012/gpu3"}
    again = from_json(to_json(record))  # written as v1 today, read back: the same record
    assert [(f.entity, f.rule, f.basis, record.gates(f)) for f in again.findings] == \
        [(f.entity, f.rule, f.basis, record.gates(f)) for f in record.findings]


def test_diff_reads_both_layouts(tmp_path):
    for d in (BEFORE_FLAGS, WITH_NOT_RUN):
        shutil.copytree(d, tmp_path / d.parent.name / d.name)
    r = CliRunner().invoke(main, ["diff", str(tmp_path / BEFORE_FLAGS.parent.name / BEFORE_FLAGS.name),
                                  str(tmp_path / WITH_NOT_RUN.parent.name / WITH_NOT_RUN.name), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["a"]["verdict"] == out["b"]["verdict"] == "fail"
    assert ("node012/gpu3", "p2p-data-corruption") in {(f["entity"], f["rule"]) for f in out["findings"]["resolved"]}


def test_a_document_that_is_not_a_run_is_refused_naming_it(tmp_path):
    from sncheck.errors import ConfigError

    bad = tmp_path / "results.json"
    bad.write_text(json.dumps({"findings": [{"entity": "a", "entity_kind": "rack", "severity": "critical"}]}))
    with pytest.raises(ConfigError, match=re.escape(str(bad))):
        read_record(tmp_path)


# ---- the builder and the typed values ---------------------------------------------------

def test_the_recorder_builds_a_run_its_verdict_and_flags_are_properties():
    rec = RunRecorder(run_id="r1", playbook="p", backend="mock", inventory="i", gate="warning", seed=3)
    slow = Finding("n1/gpu0", EntityKind.CARD, "connectivity", "p2p-bandwidth-below-design", Severity.WARNING, "slow")
    gone = Finding("n2", EntityKind.HOST, "connectivity", "host-unreachable", Severity.CRITICAL, "no answer",
                   basis=Basis.NOT_MEASURED)
    tool = Finding("n3", EntityKind.HOST, "connectivity", "not-run-missing-tool", Severity.CRITICAL, "no dcgmi",
                   basis=Basis.NOT_MEASURED, about=About.CHECK)
    rec.layer("connectivity", {"pairs": 4}, [slow, gone, tool])
    rec.layer("stress", {}, cut_short="interrupted (SIGTERM)")
    assert rec.snapshot().verdict == Verdict.ERROR  # unfinished: never a pass
    rec.merge()
    steps = rec.quarantine()
    assert [(e.entity, e.action) for e in steps] == [("n2", Action.QUARANTINE), ("n1/gpu0", Action.QUARANTINE)]
    record = rec.finish()
    assert record.error == "layer stress cut short: interrupted (SIGTERM)"
    assert [record.layer_verdict(layer) for layer in record.layers] == [Verdict.FAIL, Verdict.ERROR]
    assert record.verdict == Verdict.ERROR and ExitCode.of(record.verdict) == ExitCode.HARNESS
    # merged: the most severe first, a finding about a check before one about the hardware
    assert [(f.entity, record.flags(f)) for f in record.findings] == [
        ("n3", {"gates": True, "not_measured": True, "not_judged": False}),
        ("n2", {"gates": True, "not_measured": True, "not_judged": False}),
        ("n1/gpu0", {"gates": True, "not_measured": False, "not_judged": False})]
    assert not any("not_run" in f["evidence"] for f in to_json(record)["findings"])
    with pytest.raises(AttributeError):
        record.error = None  # frozen
    assert from_json(to_json(record)) == record  # one writer, one reader: the same value


def test_a_finding_is_refused_with_a_kind_severity_or_basis_sncheck_does_not_know():
    for bad in ({"entity_kind": "rack"}, {"severity": "fatal"}, {"basis": "guessed"}, {"about": "weather"}):
        args = {"entity": "a", "entity_kind": EntityKind.CARD, "layer": "l", "rule": "r",
                "severity": Severity.INFO, "message": "m", **bad}
        with pytest.raises(ValueError):
            Finding(**args)


def _finding_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding":
            yield node


def test_every_finding_is_built_with_typed_kind_severity_and_basis():
    """The code that makes a finding says its kind, severity, basis and what it blames as
    members of the enums (``EntityKind.CARD``, ``Basis.NOT_MEASURED``): never a string
    literal, never a rule-name convention read later."""
    literal = []
    count = 0
    for path in sorted(SNCHECK.rglob("*.py")):
        for call in _finding_calls(ast.parse(path.read_text(), str(path))):
            count += 1
            args = {i: a for i, a in enumerate(call.args)} | {k.arg: k.value for k in call.keywords}
            for key in (1, 4, "entity_kind", "severity", "basis", "about"):
                value = args.get(key)
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    literal.append(f"{path.relative_to(ROOT)}:{call.lineno}: {value.value!r}")
    assert count > 20  # the scan sees the findings' makers
    assert not literal, "\n".join(literal)


def test_the_record_is_read_through_its_types_outside_the_json_reader():
    """No ``results["..."]`` and no ``.get("evidence")`` reads outside model.py and the JSON reader
    (the isolation journal reads its own requests' evidence: not the run's record)."""
    allowed = {SNCHECK / "model.py", SNCHECK / "store/results.py", SNCHECK / "actions/transaction.py"}
    found = []
    for path in sorted(SNCHECK.rglob("*.py")):
        if path in allowed:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r'results\["|\.get\("evidence"\)', line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_a_layer_skipped_or_not_judged_is_never_a_pass():
    judged = Finding("sn0", EntityKind.SUPERNODE, "golden", "golden-not-judged", Severity.INFO, "no reference",
                     basis=Basis.NOT_JUDGED, about=About.CHECK)
    record = RunRecord("r", "p", "mock", "i", "t0", "t1", gate=Severity.CRITICAL,
                       layers=(LayerRecord("golden"), LayerRecord("soak", skipped=True)), findings=(judged,))
    assert [record.layer_verdict(layer) for layer in record.layers] == [Verdict.NOT_JUDGED, Verdict.SKIPPED]
    assert record.verdict == Verdict.PASS  # below the gate: on record, the layer says not judged


# ---- watch through the same record (the example) -------------------------------

def test_watch_on_an_unreadable_dump_reports_an_error_not_a_failure(tmp_path):
    """`sncheck watch` on a directory with an unreadable dump: nothing was measured there, so
    JUnit says <error> (it said <failure>, a hardware fault), results.json flags it not
    measured, the HTML says so; the readable dumps are still judged (the clean job: no
    other finding)."""
    dumps = tmp_path / "dumps"
    shutil.copytree(DATA / "reference/watch-dumps", dumps)
    r = CliRunner().invoke(main, ["watch", str(dumps), "--once", "--out", str(tmp_path / "o"),
                                  "--format", "html,junit", "-q"])
    assert r.exit_code == 1, r.output
    res = json.loads((tmp_path / "o/results.json").read_text())
    (f,) = res["findings"]
    assert (f["rule"], f["not_measured"], f["gates"], f.get("about")) == ("watch-dump-unreadable", True, True, "check")
    root = ET.fromstring((tmp_path / "o/junit.xml").read_text())
    assert root.get("failures") == "0" and root.get("errors") == "1"
    (case,) = root.iter("testcase")
    assert [c.tag for c in case if c.tag in ("failure", "error")] == ["error"]
    assert "nccl_trace_rank_7" in case.find("error").get("message")
    html = (tmp_path / "o/report.html").read_text()
    assert "not measured; about the check" in html
