"""results.json, report.html, JUnit and Prometheus are rendered once, after the
--state-dir isolation actions and the final verdict, so they agree (issue 8 item 8)."""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")


def run(tmp_path, name, faults, *extra):
    plan = tmp_path / f"{name}.yaml"
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    out = tmp_path / name
    r = CliRunner().invoke(main, ["connectivity", "-i", DEMO, "--backend", "mock", "--faults", str(plan),
                                  "--seed", "3", "--out", str(out), "--state-dir", str(tmp_path / "state"),
                                  "--format", "html,junit,prometheus", "-q", *extra])
    return r, out


def outputs(out: Path) -> dict:
    html = (out / "report.html").read_text()
    prom = (out / "sncheck.prom").read_text()
    junit = ET.parse(out / "junit.xml")
    return {"results": json.loads((out / "results.json").read_text()), "html": html, "prom": prom, "junit": junit}


def html_isolation(html: str) -> list[tuple[str, str, str]]:
    section = html.split('id="isolation"')[1].split("</section>")[0]
    rows = re.findall(r"<tr>\s*<td>([^<]*)</td>\s*<td>[^<]*</td>\s*<td>([^<]*)</td>\s*<td>.*?</td>\s*<td>([^<]*)</td>",
                      section, re.S)
    return [(e, a, applied) for e, a, applied in rows]


def banner_verdict(html: str) -> str:
    return re.search(r'<header class="banner v-(pass|fail|error)"', html).group(1)


def test_outputs_agree_after_apply(tmp_path):
    r, out = run(tmp_path, "apply", ["{type: slow_card, target: node002/gpu1, factor: 0.5}"], "--apply",
                 "--via", "cuda_visible_devices")
    assert r.exit_code == 1, r.output
    o = outputs(out)
    res = o["results"]
    assert [(i["entity"], i["action"], i["applied"]) for i in res["isolation"]] == [
        ("node002/gpu1", "quarantine", False), ("node002/gpu1", "isolate", True)]
    assert html_isolation(o["html"]) == [("node002/gpu1", "quarantine", "no"), ("node002/gpu1", "isolate", "yes")]
    assert re.search(r'^sncheck_isolation_applied\{entity="node002/gpu1",entity_kind="card",action="isolate",'
                     r'hostname="node002",gpu="1",UUID="GPU-[^"]+",supernode="sn0"\} 1$', o["prom"], re.M)
    assert 'sncheck_run_verdict{verdict="fail"} 1' in o["prom"]
    assert banner_verdict(o["html"]) == res["verdict"] == "fail"
    assert int(o["junit"].getroot().get("failures")) >= 1


def test_outputs_agree_after_a_cap_block(tmp_path):
    # Every card of sn0 slow: a fabric-wide fault, more than the safety cap lets automation isolate.
    every_card = [f"{{type: slow_card, target: node{h:03d}/gpu{g}, factor: 0.4}}" for h in range(1, 9) for g in range(4)]
    r, out = run(tmp_path, "cap", every_card, "--apply", "--via", "hostfile")
    assert r.exit_code == 1, r.output
    o = outputs(out)
    res = o["results"]
    assert "fabric-wide or harness problem" in res["isolation_blocked"]
    assert res["verdict"] == "fail" and banner_verdict(o["html"]) == "fail"
    assert "Isolation blocked" in o["html"] and "fabric-wide" in o["html"]
    assert "sncheck_isolation_blocked 1" in o["prom"]
    assert not any(i["applied"] for i in res["isolation"])
    assert all(applied == "no" for *_, applied in html_isolation(o["html"]))
    suites = {s.get("name"): s for s in o["junit"].getroot().iter("testsuite")}
    assert int(suites["sncheck.isolation"].get("failures")) == 1

    # The same batch through `sncheck isolate` is refused with the same exit code.
    entities = [i["entity"] for i in res["isolation"] if i["action"] == "isolate"]
    isolate = CliRunner().invoke(main, ["isolate", *[f"node{h:03d}" for h in range(1, 9)], "-i", DEMO,
                                        "--state-dir", str(tmp_path / "state2"), "--via", "hostfile", "--apply"])
    assert entities and isolate.exit_code == r.exit_code == 1, isolate.output
    assert "Nothing was applied" in isolate.output
