"""Verdicts on real sshd test hosts with confirmation on (issue 8 "Done when"):

* a host whose `nvidia-smi -q` shows a pending row remap (a whole listing, the Remapped Rows
  section of the real capture nvidia-smi-q/02, an excerpt) is isolated (not
  released) and the gate fails, both as hard evidence (shipped rules, confirm: none) and
  after a retest that re-reads the host's facts (confirm: retest);
* `checks: {dcgmi: false}` skips dcgmi (recorded as skipped, no finding); dcgmi expected
  but missing is one not-run finding about the check that fails the gate and isolates
  nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from test_ssh_backend import PROFILES, install_profile, query_remap_pending, rules_without_timing_peers, write_inventory

from sncheck.cli.main import main
from sncheck.store.rundir import read_rows

pytestmark = pytest.mark.sshd

PLAYBOOK = ("name: ssh-verdict\nlayers:\n  - connectivity: {bw_bytes: 1M, lat_iters: 5, bw_iters: 2}\n"
            "gate: warning\n")


@pytest.fixture(autouse=True)
def remap_profile():
    # The healthy A100 host, except that `nvidia-smi -q` shows a pending row remap.
    PROFILES["remap"] = {**PROFILES["a100"], "q": query_remap_pending}
    PROFILES["a100-no-dcgmi"] = {**PROFILES["a100"], "dcgmi": None}
    yield
    PROFILES.pop("remap")
    PROFILES.pop("a100-no-dcgmi")


def run(tmp_path: Path, cluster, inv: Path, rules: Path, name: str):
    pb = tmp_path / "pb.yaml"
    pb.write_text(PLAYBOOK)
    out = tmp_path / name
    r = CliRunner().invoke(main, ["run", str(pb), "-i", str(inv), "--backend", "ssh", "--rules", str(rules),
                                  "--known-hosts", str(cluster.known_hosts), "--ssh-config", str(cluster.ssh_config),
                                  "--out", str(out), "-q"])
    rows = read_rows(out)
    return r, json.loads((out / "results.json").read_text()), rows


def test_pending_remap_is_isolated_not_released(sshd_cluster, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cluster = sshd_cluster(3, ["node1", "node2", "node3"])
    for name, profile in (("node1", "a100"), ("node2", "a100"), ("node3", "remap")):
        install_profile(cluster[name], profile, cards=1)
    inv = write_inventory(tmp_path / "inv.yaml", cluster)

    # Shipped rules: a pending remap is hard evidence (confirm: none), isolated at once.
    rules = rules_without_timing_peers(tmp_path / "rules.yaml")
    r, res, _ = run(tmp_path, cluster, inv, rules, "hard")
    assert r.exit_code == 1, r.output
    # the listing is whole (every card's section): the card with the remap is named, not the host
    remap = [f for f in res["findings"] if f["entity"].startswith("node3")]
    assert {f["entity"] for f in remap} == {"node3/gpu0"}, res["findings"]
    assert [f["rule"] for f in remap] == ["host-fact-hardware-fault"], res["findings"]
    assert "row remap pending" in remap[0]["message"] and remap[0]["evidence"]["confirm"] == "none"
    assert [(i["entity"], i["action"]) for i in res["isolation"]] == \
        [("node3/gpu0", "quarantine"), ("node3/gpu0", "isolate")], res["isolation"]

    # The same with confirm: retest: the retest re-reads node3's facts and confirms.
    data = yaml.safe_load(rules.read_text())
    for rule in data["rules"]:
        rule["confirm"] = "retest"
    rules.write_text(yaml.safe_dump(data, sort_keys=False))
    r, res, rows = run(tmp_path, cluster, inv, rules, "retest")
    assert r.exit_code == 1, r.output
    assert [(i["entity"], i["action"]) for i in res["isolation"]] == \
        [("node3/gpu0", "quarantine"), ("node3/gpu0", "isolate")], res["isolation"]
    assert res["isolation"][1]["reason"].startswith("confirmed by the retest")
    f = next(f for f in res["findings"] if f["entity"] == "node3/gpu0")
    assert f["evidence"]["confirmed"] is True and f["evidence"]["retest"].startswith("host facts: reproduced")
    retest = [r for r in rows if r.get("layer") == "confirm"]
    assert retest and {r["kind"] for r in retest} == {"host_fact"} and {r["host"] for r in retest} == {"node3"}
    assert any(r["fact"] == "remapped_rows" and not r["ok"] for r in retest)


def test_dcgmi_switched_off_or_missing(sshd_cluster, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cluster = sshd_cluster(2, ["node1", "node2"])
    install_profile(cluster["node1"], "a100", cards=1)
    install_profile(cluster["node2"], "a100-no-dcgmi", cards=1)
    rules = rules_without_timing_peers(tmp_path / "rules.yaml")

    # The cluster says it has no DCGM: dcgmi is skipped on every host, and recorded so.
    inv = write_inventory(tmp_path / "off.yaml", cluster, extra="checks: {dcgmi: false}\n")
    r, res, rows = run(tmp_path, cluster, inv, rules, "off")
    assert r.exit_code == 0, (r.output, res["findings"])
    assert not any("dcgmi" in json.dumps(f) for f in res["findings"])
    skipped = [r for r in rows if r["kind"] == "host_fact" and r["status"] == "skipped"]
    assert {(r["host"], r["fact"], r["tool"]) for r in skipped} == {("node1", "dcgmi_diag", "dcgmi"),
                                                                   ("node2", "dcgmi_diag", "dcgmi")}

    # DCGM expected: node2's missing dcgmi is one finding about the check; nothing isolated.
    inv = write_inventory(tmp_path / "on.yaml", cluster)
    r, res, _ = run(tmp_path, cluster, inv, rules, "on")
    assert r.exit_code == 1, r.output
    assert [(f["entity"], f["rule"], f.get("about")) for f in res["findings"]] == [
        ("node2", "not-run-missing-tool", "check")]
    assert res["isolation"] == []
