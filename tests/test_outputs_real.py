"""sncheck's metrics and JUnit read by the tools operators run, not by sncheck's own code.

* A real Prometheus scrapes a real node_exporter whose textfile collector reads the mock
  run's ``sncheck.prom`` next to a dcgm-exporter-format file in the current label names
  (``hostname``, NVIDIA/dcgm-exporter#655). Checked through Prometheus' HTTP API: one
  min-bandwidth series per card and tier by ``(hostname, gpu)``, the README's DCGM joins
  return a series per card, busbw in bytes per second, every query of
  ``dashboards/sncheck.json`` returns data; and ``promtool check metrics`` is clean.
* ``junit.xml`` read by junitparser (one testcase per host) and validated against the
  JUnit XSD of Jenkins' xunit plugin (``tests/data/junit-10.xsd``, with its source) by
  xmlschema.

The expected values are computed here from the run's rows (pandas over the Parquet
parts), not by sncheck's renderers. Skipped, with the reason, where Debian's
``prometheus`` / ``prometheus-node-exporter`` are not installed (scripts/setup.sh
installs them).
"""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from prometheus_harness import NODE_EXPORTER, PROMETHEUS, PrometheusStack, binaries
from sncheck.cli.main import main
from sncheck.report.junit import render_junit
from sncheck.store.results import from_json
from sncheck.topology import natural_key

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")
XSD = Path(__file__).resolve().parent / "data" / "junit-10.xsd"
DASHBOARD = ROOT / "dashboards" / "sncheck.json"
TOOLS = binaries()
needs_prometheus = pytest.mark.skipif(
    not (TOOLS[PROMETHEUS] and TOOLS[NODE_EXPORTER] and TOOLS["promtool"]),
    reason="prometheus / prometheus-node-exporter are not installed (scripts/setup.sh installs them)")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """The demo gate with its mixed faults (a slow card, a degraded link, a down host...)."""
    out = tmp_path_factory.mktemp("outputs") / "run"
    r = CliRunner().invoke(main, ["run", "pre-upgrade-gate", "-i", DEMO, "--backend", "mock", "--seed", "1",
                                  "--faults", str(ROOT / "fixtures/faults/demo-mixed.yaml"), "-q",
                                  "--out", str(out), "--format", "junit,prometheus"])
    assert r.exit_code == 1, r.output  # the faults fail the gate
    return out


def uuid_facts(run: Path) -> dict[tuple[str, str], str]:
    """(host, gpu index) -> UUID, as the hosts' nvidia-smi listed them (the gpu_uuid facts)."""
    facts = pd.read_parquet(run / "rows" / "host_fact")
    facts = facts[(facts["fact"] == "gpu_uuid") & (facts["status"] == "ok")]
    return {(host, i): uuid for host, value in zip(facts["host"], facts["value"])
            for i, uuid in json.loads(value).items()}


def dcgm_textfile(uuids: dict[tuple[str, str], str]) -> str:
    """What dcgm-exporter exposes for these cards, in its current label names."""
    lines = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for n, ((host, gpu), uuid) in enumerate(sorted(uuids.items())):
        lines.append(f'DCGM_FI_DEV_GPU_TEMP{{gpu="{gpu}",UUID="{uuid}",pci_bus_id="00000000:{0x18 + int(gpu):02X}:00.0",'
                     f'device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",hostname="{host}",'
                     f'DCGM_FI_DRIVER_VERSION="535.161.08"}} {30 + n % 20}')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def prom(run_dir, tmp_path_factory):
    textfiles = tmp_path_factory.mktemp("textfile")
    (textfiles / "sncheck.prom").write_text((run_dir / "sncheck.prom").read_text())
    (textfiles / "dcgm.prom").write_text(dcgm_textfile(uuid_facts(run_dir)))
    with PrometheusStack(textfiles) as stack:
        stack.wait_for('sncheck_run_info and on() DCGM_FI_DEV_GPU_TEMP')  # the first scrape landed
        yield stack


def cards_of(result: list[dict]) -> list[tuple[str, str]]:
    return [(r["metric"].get("hostname", ""), r["metric"].get("gpu", "")) for r in result]


@needs_prometheus
def test_node_exporter_reads_both_files(prom):
    assert [float(r["value"][1]) for r in prom.query('up{job="node"}')] == [1.0]
    assert [float(r["value"][1]) for r in prom.query("node_textfile_scrape_error")] == [0.0]
    files = {Path(r["metric"]["file"]).name for r in prom.query("node_textfile_mtime_seconds")}
    assert files == {"sncheck.prom", "dcgm.prom"}


@needs_prometheus
def test_one_min_bandwidth_series_per_card_and_tier(prom, run_dir):
    p2p = pd.read_parquet(run_dir / "rows" / "p2p")
    measured = p2p[(p2p["status"] == "ok") & (p2p["bw_GBps"].notna() | p2p["bw_rev_GBps"].notna())]
    expected = set()
    for end in ("src", "dst"):
        parts = measured[end].astype(str).str.rsplit("/gpu", n=1)
        expected |= set(zip(parts.str[0], parts.str[1], measured["tier"].astype(str)))
    per = prom.query("count by (hostname, gpu, tier) (sncheck_card_p2p_bandwidth_min_bytes_per_second)")
    assert {float(r["value"][1]) for r in per} == {1.0}
    assert {(r["metric"]["hostname"], r["metric"]["gpu"], r["metric"]["tier"]) for r in per} == expected
    # By (hostname, gpu) the cards stay apart (with the old Hostname label 64 cards fell into 4).
    cards = prom.query("count by (hostname, gpu) (sncheck_card_p2p_bandwidth_min_bytes_per_second)")
    assert len(cards) == len({(h, g) for h, g, _ in expected}) == 60  # 64 cards less the down host's 4
    # The down host's cards still have their series: every pair failed.
    down = prom.query('sncheck_card_p2p_failed_pairs{hostname="node007"} > 0')
    assert sorted(r["metric"]["gpu"] for r in down) == ["0", "1", "2", "3"]


def expected_card_figures(run: Path) -> tuple[dict, dict, dict]:
    """What the README says the card and host p2p series hold, computed here with pandas
    from the run's rows: each pair (its two ends, as measured, per tier) one value over its
    rounds (the median; a failed round counts as none), then per card over both ends of its
    pairs the highest p99, per host the median over its cards of each card's median
    bandwidth and median p99. Keys: (hostname, gpu, tier) and (hostname, tier)."""
    p2p = pd.read_parquet(run / "rows" / "p2p")
    ok = p2p["status"].fillna("ok") == "ok"
    bw = p2p[["bw_GBps", "bw_rev_GBps"]].mean(axis=1).where(ok) * 1e9   # (one direction missing: the other)
    p2p = pd.DataFrame({"src": p2p["src"].astype(str), "dst": p2p["dst"].astype(str),
                        "tier": p2p["tier"].astype(str), "bw": bw, "p99": p2p["lat_p99_us"].where(ok) * 1e-6})
    pairs = p2p.groupby(["src", "dst", "tier"], sort=False)[["bw", "p99"]].median().reset_index()
    ends = pd.concat([pairs.rename(columns={"src": "card"}).drop(columns="dst"),
                      pairs.rename(columns={"dst": "card"}).drop(columns="src")])
    cards = ends.groupby(["card", "tier"]).agg(bw=("bw", "median"), p99=("p99", "median"),
                                               p99_max=("p99", "max")).reset_index()
    split = cards["card"].str.rsplit("/gpu", n=1)
    cards["hostname"], cards["gpu"] = split.str[0], split.str[1]
    worst = {(h, g, t): v for h, g, t, v in zip(cards["hostname"], cards["gpu"], cards["tier"], cards["p99_max"])
             if pd.notna(v)}
    hosts = cards.groupby(["hostname", "tier"])[["bw", "p99"]].median()
    return (worst, {k: v for k, v in hosts["bw"].items() if pd.notna(v)},
            {k: v for k, v in hosts["p99"].items() if pd.notna(v)})


@needs_prometheus
def test_card_worst_p99_and_host_medians_through_prometheus(prom, run_dir):
    """Review #5 (stop 46): per card and tier the worst pair's p99 latency, beside its
    worst pair's bandwidth with the same labels, and the two per-host families, each asked
    of Prometheus by name: one series per card (host) and tier, each value the rows'."""
    worst, host_bw, host_p99 = expected_card_figures(run_dir)
    assert len(worst) > 60 and len(host_bw) > 15 and len(host_p99) > 15   # (every card, host: not a blind check)
    got = prom.query("sncheck_card_p2p_latency_p99_max_seconds")
    by_card = {(r["metric"]["hostname"], r["metric"]["gpu"], r["metric"]["tier"]): float(r["value"][1]) for r in got}
    assert len(by_card) == len(got) and set(by_card) == set(worst)
    for key, value in worst.items():
        assert by_card[key] == pytest.approx(value, rel=1e-5), key
    # The same label set as the worst bandwidth's: one joins the other card for card.
    joined = prom.query("sncheck_card_p2p_latency_p99_max_seconds"
                        " * on(hostname, gpu, UUID, supernode, tier) group_left()"
                        " (0 * sncheck_card_p2p_bandwidth_min_bytes_per_second + 1)")
    assert {(r["metric"]["hostname"], r["metric"]["gpu"], r["metric"]["tier"]) for r in joined} == set(worst)
    assert all(r["metric"].get("supernode") for r in joined)
    for name, want in (("sncheck_host_p2p_bandwidth_median_bytes_per_second", host_bw),
                       ("sncheck_host_p2p_latency_p99_seconds", host_p99)):
        got = prom.query(name)
        by_host = {(r["metric"]["hostname"], r["metric"]["tier"]): float(r["value"][1]) for r in got}
        assert len(by_host) == len(got) and set(by_host) == set(want), name
        assert all("gpu" not in r["metric"] and r["metric"].get("supernode") for r in got), name
        for key, value in want.items():
            assert by_host[key] == pytest.approx(value, rel=1e-5), (name, key)


def readme_joins() -> list[str]:
    """The PromQL the README documents for joining with dcgm-exporter (```promql blocks)."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```promql\n(.*?)```", text, re.S)
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip() and not line.startswith("#")]


@needs_prometheus
def test_readme_dcgm_joins_return_a_series_per_card(prom, run_dir):
    joins = readme_joins()
    assert len(joins) >= 2 and all("on(hostname, gpu)" in q for q in joins), joins
    uuids = uuid_facts(run_dir)
    for q in joins:
        result = prom.query(q)
        cards = cards_of(result)
        assert len(cards) == len(set(cards)), (q, "more than one series per card")
        assert set(cards) == set(uuids), q
        for r in result:  # the joined series keeps or gains what each side knows of the card
            m = r["metric"]
            assert m.get("supernode") == ("sn0" if int(m["hostname"][4:]) <= 8 else "sn1"), (q, m)
            assert m.get("UUID") == uuids[(m["hostname"], m["gpu"])], (q, m)


@needs_prometheus
def test_busbw_is_in_bytes_per_second(prom, run_dir):
    coll = pd.read_parquet(run_dir / "rows" / "collective")
    coll = coll[(coll["status"] == "ok") & ~coll["group"].astype(str).str.startswith("pair:")]
    coll = coll.assign(group=coll["group"].astype(str), collective=coll["collective"].astype(str))
    largest = coll.groupby(["group", "collective"])["size_bytes"].transform("max")
    expected = coll[coll["size_bytes"] == largest].groupby(["group", "collective"])["busbw_GBps"].median() * 1e9
    result = prom.query("sncheck_busbw_bytes_per_second")
    got = {(r["metric"]["group"], r["metric"]["collective"]): float(r["value"][1]) for r in result}
    assert set(got) == set(expected.index)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-9), key
    assert min(got.values()) > 1e9  # tens of GB/s and more, in bytes


def dashboard_targets() -> list[tuple[str, str]]:
    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels") or [])
    dash = json.loads(DASHBOARD.read_text())
    return [(p["title"], t["expr"]) for p in panels(dash["panels"]) for t in p.get("targets") or []]


@needs_prometheus
def test_every_dashboard_query_returns_data(prom):
    targets = dashboard_targets()
    titles = {title for title, _ in targets}
    for topic in ("verdict", "severity", "against design", "per group", "quarantined or isolated"):
        assert any(topic in t for t in titles), (topic, titles)
    for title, expr in targets:
        assert "$" not in expr, (title, expr)   # no dashboard variable the test would have to guess
        assert prom.query(expr), f"panel {title!r}: no data for {expr}"
    verdict = prom.query(next(e for t, e in targets if "verdict" in t))
    assert [float(r["value"][1]) for r in verdict] == [1.0]   # the run failed: FAIL in the timeline
    isolated = prom.query(next(e for t, e in targets if "quarantined" in t))
    assert {(r["metric"]["hostname"], r["metric"]["gpu"]) for r in isolated} == {("node003", "2"), ("node012", "3")}


@needs_prometheus
def test_promtool_check_metrics_is_clean(run_dir):
    r = subprocess.run(["promtool", "check", "metrics"], input=(run_dir / "sncheck.prom").read_text(),
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout + r.stderr) == (0, "")
    # ...and the check is not blind: the gauge name the file used to have fails it.
    old = "# HELP sncheck_findings_total x\n# TYPE sncheck_findings_total gauge\nsncheck_findings_total 1\n"
    r = subprocess.run(["promtool", "check", "metrics"], input=old, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "_total" in r.stdout + r.stderr


# ---- JUnit ---------------------------------------------------------------------------

def test_junitparser_reads_one_testcase_per_host(run_dir):
    junitparser = pytest.importorskip("junitparser")
    results = json.loads((run_dir / "results.json").read_text())
    hosts = sorted((h for sn in results["topology"]["supernodes"] for h in sn["hosts"]), key=natural_key)
    xml = junitparser.JUnitXml.fromfile(str(run_dir / "junit.xml"))
    suites = {s.name: s for s in xml}
    assert set(suites) >= {"sncheck.connectivity", "sncheck.stress", "sncheck.golden"}
    for layer in ("connectivity", "stress", "golden"):
        suite = suites[f"sncheck.{layer}"]
        cases = list(suite)
        assert [c.name for c in cases] == hosts, layer
        outcome = {c.name: {type(r).__name__ for r in c.result} for c in cases}
        assert outcome["node007"] == {"Error"}, layer            # down: it could not run anything
        counted = {kind: sum(kind in o for o in outcome.values()) for kind in ("Failure", "Error", "Skipped")}
        assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (
            len(cases), counted["Failure"], counted["Error"], counted["Skipped"]), layer
        for f in results["findings"]:
            on = {e.split("/")[0] for e in f["entity"].split("<->")}
            if f["layer"] == layer and f["rule"] != "host-unreachable":
                assert all(outcome[h] == {"Failure"} for h in on), (layer, f["entity"])
        assert outcome["node016"] == set(), layer                # nothing found there: it passed


def test_junit_validates_against_the_xunit_plugin_schema(run_dir):
    xmlschema = pytest.importorskip("xmlschema")
    schema = xmlschema.XMLSchema(str(XSD))
    schema.validate(str(run_dir / "junit.xml"))
    # Harder shapes: a skipped and an errored layer, a finding on no known host, control characters.
    # (no topology: a record holding one names only its own entities, d782f5e)
    results = {"run_id": "r\x1b[31m", "gate": "warning",
               "layers": [{"name": "connectivity", "verdict": "fail"}, {"name": "stress", "verdict": "skipped",
                                                                         "summary": {"cut_short": "not asked"}},
                          {"name": "golden", "verdict": "error", "summary": {"cut_short": "no \x00 torch"}}],
               "findings": [{"entity": "fabric-x", "entity_kind": "supernode", "layer": "connectivity",
                             "rule": "r", "severity": "warning", "message": "m\x07", "evidence": {}}],
               "isolation_blocked": "cap"}
    text = render_junit(from_json(results))
    schema.validate(text)
    # The validator is not blind: a testcase without its name is refused.
    root = ET.fromstring(text.split("\n", 1)[1])
    del next(root.iter("testcase")).attrib["name"]
    assert not schema.is_valid(ET.tostring(root, encoding="unicode"))
