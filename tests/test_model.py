"""The typed names (sncheck/model.py): values are today's strings, one host_of, light imports."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from enum import Enum
from pathlib import Path

import pytest

from sncheck.model import EntityKind, Finding, Severity, Status, Tier, Verdict, card_of, host_of, hosts_of

ROOT = Path(__file__).resolve().parents[1]


def test_values_are_the_strings_results_json_holds():
    assert [s.value for s in Severity] == ["info", "warning", "critical"]
    assert {v.value for v in Verdict} >= {"pass", "fail", "error", "skipped"}
    assert {t.value for t in Tier} == {"intra_host", "scale_up", "scale_out"}
    assert {k.value for k in EntityKind} == {"card", "nic", "link", "host", "supernode", "switch"}
    assert {s.value for s in Status} == {"ok", "error", "timeout", "unreachable", "missing_tool", "parse_failed",
                                         "not_run", "skipped", "not_measured"}
    for enum in (Severity, Verdict, Status, Tier, EntityKind):
        assert issubclass(enum, Enum)
        for member in enum:
            # compares, hashes, formats and serialises as its string: results.json is unchanged
            assert member == member.value and hash(member) == hash(member.value)
            assert f"{member}" == member.value and str(member) == member.value
            assert json.dumps({member: member}) == json.dumps({member.value: member.value})


def test_severity_order_and_gate():
    assert Severity.INFO.rank < Severity.WARNING.rank < Severity.CRITICAL.rank
    assert Severity.most_severe_first() == (Severity.CRITICAL, Severity.WARNING, Severity.INFO)
    card = Finding("n/gpu0", EntityKind.CARD, "connectivity", "r", Severity.WARNING, "m")
    assert card.gates("warning") and card.gates(Severity.INFO) and not card.gates(Severity.CRITICAL)
    with pytest.raises(ValueError):
        Severity("fatal")


@pytest.mark.parametrize("entity, host", [("node003/gpu2", "node003"), ("node003/nic4", "node003"),
                                          ("node003", "node003"), ("rack/a/node1/gpu0", "rack/a/node1")])
def test_host_of(entity, host):
    assert host_of(entity) == host


def test_hosts_of_and_card_of():
    assert hosts_of("a/gpu0<->b/gpu7") == ["a", "b"]
    assert hosts_of("a/gpu0") == ["a"]
    assert card_of("node003/nic4") == "node003/gpu4"
    assert card_of("node003/gpu4") == "node003/gpu4"
    assert card_of("nicole/nicx") == "nicole/nicx"  # not a rail NIC: named as it is


def test_model_imports_only_the_standard_library():
    # The worker imports it on the hosts: no pandas, YAML, inventory or vendor registry.
    code = ("import sys; import sncheck.model; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('pandas', 'numpy', 'yaml', 'pydantic', 'torch') "
            "or (m.startswith('sncheck.') and m != 'sncheck.model')]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_one_host_of():
    """The host of a card is spelled once, in model.host_of (topology re-exports it)."""
    from sncheck import topology
    assert topology.host_of is host_of
    inlined = [f"{p.relative_to(ROOT)}:{n}" for p in (ROOT / "sncheck").rglob("*.py") if p.name != "model.py"
               for n, line in enumerate(p.read_text().splitlines(), 1)
               if re.search(r"""\.rsplit\(\s*["']/["']\s*,\s*1\s*\)\s*\[\s*0\s*\]""", line)]
    assert not inlined, inlined
