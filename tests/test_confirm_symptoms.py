"""The confirmation retest judges every symptom it releases (issue 18.1), by the same
measurement and the same rule (issue 17.4), and says "inconclusive" on a busy machine
(issue 18.8). Mock backend through the CLI, as a user would run it, plus the verdict's
own guard against releasing what was not measured."""

import json
import random
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from sncheck.backends.mock import MockBackend
from sncheck.cli.main import main
from sncheck.run.inputs import load_faults, load_inventory
from sncheck.health.findings import fold, merge_findings
from sncheck.health.rules import load_rules
from sncheck.layers.base import LayerContext
from sncheck.run.confirm import Retest, _busy_reason
from sncheck.model import Basis, Finding, LayerRecord, RunRecord
from sncheck.run import isolation
from sncheck.store.rundir import read_rows
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")
GATE = str(ROOT / "playbooks/pre-upgrade-gate.yaml")
CONNECTIVITY = "name: connectivity-only\nlayers:\n  - connectivity\ngate: warning\n"


def verdict_of(findings: list, layers: tuple = (LayerRecord("connectivity"),)) -> str:
    """The verdict of a finished run of these findings (of the layer that measured them), at gate warning."""
    return RunRecord("r", "p", "mock", "i", "t0", finished="t1", gate="warning", layers=layers,
                     findings=tuple(findings)).verdict.value


def run(tmp_path: Path, inv: str, faults: list[str], *extra, playbook: str = GATE, seed: int = 0,
        out: str = "out") -> tuple[int, dict]:
    plan = tmp_path / f"{out}-faults.yaml"
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    if not playbook.endswith(".yaml"):
        (tmp_path / "pb.yaml").write_text(playbook)
        playbook = str(tmp_path / "pb.yaml")
    r = CliRunner().invoke(main, ["run", playbook, "-i", inv, "--backend", "mock", "--faults", str(plan),
                                  "--seed", str(seed), "--out", str(tmp_path / out), "-q", *extra])
    res = json.loads((tmp_path / out / "results.json").read_text())
    return r.exit_code, res


def decisions(res: dict) -> list[tuple[str, str]]:
    return [(i["entity"], i["action"]) for i in res["isolation"]]


def finding(res: dict, entity: str) -> dict:
    return next(f for f in res["findings"] if f["entity"] == entity)


# ------------------------------------------------------------------ 18.1: folded symptoms
def test_a_diverging_card_with_a_transient_throttle_fails_the_gate(tmp_path):
    code, res = run(tmp_path, DEMO, ["{type: diverge, target: node003/gpu2}",
                                     "{type: thermal_throttle, target: node003/gpu2, transient: true}"])
    assert code == 1 and res["verdict"] == "fail", res["findings"]
    f = finding(res, "node003/gpu2")
    assert f["evidence"]["confirmed"] is True and f["severity"] == "critical"
    outcome = {s["rule"]: s["outcome"] for s in f["evidence"]["retest_symptoms"]}
    # Every folded symptom was retested by its own test: the golden loss reproduced,
    # the throttle (gone) did not.
    assert outcome["golden-loss-out-of-band"] is True and outcome["host-fact"] is False, outcome
    assert decisions(res) == [("node003/gpu2", "quarantine"), ("node003/gpu2", "isolate")]
    layers = {layer["name"]: layer["verdict"] for layer in res["layers"]}
    assert layers["golden"] == "fail", layers


def _context(inv_path: str, faults: list[str], tmp_path: Path) -> tuple[LayerContext, list[dict]]:
    inv = load_inventory(inv_path)
    topo = Topology(inv)
    plan = tmp_path / "plan.yaml"
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults) if faults else "faults: []\n")
    rows: list[dict] = []
    ctx = LayerContext(topo, MockBackend(topo, load_faults(str(plan), topo), seed=1), rows.append,
                       dict(inv.design), rules=load_rules("default"), rows=rows)
    return ctx, rows


def _steps(ctx: LayerContext, findings: list[Finding]):
    return isolation.isolation_steps(findings, ctx, True, lambda e: None, datetime.now(timezone.utc))


def _clock_finding(host: str) -> Finding:
    """What detection saw: a transient HW-slowdown clock event on one host."""
    return Finding(host, "host", "connectivity", "host-fact", "critical",
                   f"{host}: clock event reasons: HW Slowdown",
                   {"measured": 1, "expected": 0, "unit": None, "fact": "clock_reasons"})


def test_a_folded_not_run_is_never_released(tmp_path):
    ctx, _ = _context(DEMO, [], tmp_path)
    not_run = Finding("node005", "host", "stress", "not-run-error", "critical",
                      "node005: torchrun exited 1", {"measured": "error", "expected": "measured", "unit": None},
                      basis=Basis.NOT_MEASURED)
    [f] = merge_findings([_clock_finding("node005"), not_run])
    assert f.rule == "host-fact" and [r["rule"] for r in f.evidence["related"]] == ["not-run-error"]
    steps = _steps(ctx, [f])
    assert [(s.entity, s.action) for s in steps] == [("node005", "quarantine"), ("node005", "quarantine")]
    assert f.evidence["confirmed"] is None and f.severity == "critical"
    outcome = {s["rule"]: s["outcome"] for s in f.evidence["retest_symptoms"]}
    assert outcome == {"host-fact": False, "not-run-error": None}, outcome


def test_the_verdict_never_releases_what_was_not_measured_even_if_a_retest_says_so(tmp_path, monkeypatch):
    # The guard is code, not an assert that `python -O` removes.
    ctx, _ = _context(DEMO, [], tmp_path)
    f = Finding("node005", "host", "stress", "host-fact", "critical", "x")
    fold(f, Finding("node005", "host", "stress", "not-run-timeout", "critical", "timed out",
                    basis=Basis.NOT_MEASURED))
    monkeypatch.setattr(isolation, "confirm", lambda ctx, fs: {"node005": Retest(False, "host facts", "quiet")})
    steps = _steps(ctx, [f])
    assert [s.action for s in steps] == ["quarantine", "quarantine"]
    assert f.evidence["confirmed"] is None and f.severity == "critical"


def test_a_retest_that_reads_a_pending_remap_confirms_the_host(tmp_path):
    # Detection saw a clock event; by the retest the host's tool shows a pending remap.
    ctx, rows = _context(DEMO, ["{type: remap_pending, target: node004/gpu1}"], tmp_path)
    f = _clock_finding("node004")
    steps = _steps(ctx, [f])
    assert [(s.entity, s.action) for s in steps] == [("node004", "quarantine"), ("node004", "isolate")]
    assert f.evidence["confirmed"] is True and "new in the retest" in f.evidence["retest"], f.evidence["retest"]
    new = [s for s in f.evidence["retest_symptoms"] if s["how"] == "retest"]
    # the pending remap's fact, and the driver's Xid 63 the host's kernel log shows at this first read of it (parse32)
    assert [s["rule"] for s in new] == ["host-fact-hardware-fault", "kernel-xid"], new
    assert any(r.get("fact") == "remapped_rows" and not r["ok"] for r in rows if r.get("layer") == "confirm")


@pytest.mark.parametrize("suspect", ["card", "host"])
def test_a_retest_that_lists_other_devices_neither_confirms_nor_releases(tmp_path, monkeypatch, suspect):
    """A tray whose card warning (Limited Capacity on gpu1) or host symptom (a clock event
    gone by the retest) is retested while the tray lists another GPU than at its first
    read: what the retest re-read is not what was found. The suspect stays quarantined
    (the card was confirmed on the other devices' facts, the host released), and the
    change is a finding of its own on the host, quarantined; the gate fails."""
    import sncheck.backends.mockfacts as mockfacts

    nvl72 = str(ROOT / "fixtures/inventories/nvl72-rack.yaml")
    ctx, rows = _context(nvl72, ["{type: fabric_degraded, target: tray03/gpu1}"], tmp_path)
    ctx.backend.host_facts(("tray03",), rows.append)  # detection's read: the devices it lists
    relabel = mockfacts._relabel

    def swapped(row: dict, host: str, *uuids) -> dict:  # the tray lists another last GPU now
        out = relabel(row, host, *uuids)
        if host == "tray03" and out.get("ids"):
            out["ids"] = [*out["ids"][:-1], "GPU-ffffffff-0000-0000-0000-000000000000"]
        return out

    monkeypatch.setattr(mockfacts, "_relabel", swapped)
    if suspect == "card":
        f = Finding("tray03/gpu1", "card", "connectivity", "host-fact-warning", "warning",
                    "tray03/gpu1: fabric health (Limited Capacity)", {"measured": 1, "expected": 0, "unit": None,
                                                                      "fact": "fabric_state"})
    else:
        f = _clock_finding("tray03")
    findings = [f]
    steps = _steps(ctx, findings)
    assert [(s.entity, s.action) for s in steps if s.entity == f.entity] == [(f.entity, "quarantine")] * 2
    assert f.evidence["confirmed"] is None and "the devices changed" in f.evidence["retest"], f.evidence["retest"]
    assert all(s["outcome"] is None for s in f.evidence["retest_symptoms"])
    if suspect == "card":  # the host's change: a finding of its own
        [changed] = [g for g in findings if g.entity == "tray03"]
        assert changed.entity_kind == "host" and changed.evidence["fact"] == "devices_changed"
        assert ("tray03", "quarantine") in [(s.entity, s.action) for s in steps]
    assert verdict_of(findings) == "fail"


def test_a_fault_seen_on_a_control_is_a_finding_of_its_own_and_retested(tmp_path):
    # The suspect's symptom (on a scale-up pair) is gone; a card on another host of its
    # supernode, one of the retest's controls, is slow now. Issue 29: that finding is
    # retested by the measurement that showed it, as any other, and decided (on main it
    # ended the run in quarantine, failing the gate with nothing decided).
    ctx, _ = _context(DEMO, ["{type: slow_card, target: node003/gpu0, factor: 0.4}"], tmp_path)
    suspect = Finding("node002/gpu0", "card", "connectivity", "p2p-bandwidth-below-design", "critical",
                      "card node002/gpu0: bandwidth below design",
                      {"measured": 100.0, "expected": 450.0, "unit": "GB/s",
                       "worst": [{"link": "node002/gpu0<->node001/gpu0", "value": 100.0}]})
    findings = [suspect]
    steps = _steps(ctx, findings)
    assert ("node002/gpu0", "release") in [(s.entity, s.action) for s in steps]
    seen = [f for f in findings if f.entity == "node003/gpu0"]
    assert seen and "seen during the confirmation retest of card node002/gpu0" in seen[0].message
    assert [s.action for s in steps if s.entity == "node003/gpu0"] == ["quarantine", "isolate"]
    assert seen[0].evidence["confirmed"] is True, seen[0].evidence["retest"]
    assert len(findings) == 2, [(f.entity, f.rule) for f in findings]
    assert verdict_of(findings) == "fail"


def _permuted_rules(tmp_path: Path, order: list[int], name: str) -> str:
    data = yaml.safe_load((ROOT / "fixtures/rules/default.yaml").read_text())
    data["rules"] = [data["rules"][i] for i in order]
    out = tmp_path / f"{name}.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(out)


def test_rule_order_never_changes_the_verdict(tmp_path):
    # A 4x latency card that also showed a transient throttle: whichever rule comes first
    # in the rules file, every symptom is retested and the card is isolated.
    n = len(yaml.safe_load((ROOT / "fixtures/rules/default.yaml").read_text())["rules"])
    names = [r["name"] for r in yaml.safe_load((ROOT / "fixtures/rules/default.yaml").read_text())["rules"]]
    facts_first = sorted(range(n), key=lambda i: not names[i].startswith("host-fact"))
    rng = random.Random(18)
    orders = [list(range(n)), list(reversed(range(n))), facts_first, rng.sample(range(n), n)]
    faults = ["{type: high_latency_card, target: node003/gpu2, factor: 4}",
              "{type: thermal_throttle, target: node003/gpu2, factor: 0.95, transient: true}"]
    outcomes = set()
    for k, order in enumerate(orders):
        code, res = run(tmp_path, DEMO, faults, "--rules", _permuted_rules(tmp_path, order, f"r{k}"),
                        playbook=CONNECTIVITY, out=f"o{k}")
        outcomes.add((code, res["verdict"], tuple(decisions(res))))
    assert outcomes == {(1, "fail", (("node003/gpu2", "quarantine"), ("node003/gpu2", "isolate")))}, outcomes


# ------------------------------------------------- 17.4: the same measurement, the same rule
def test_a_slow_nic_is_retested_over_scale_out_pairs(tmp_path):
    # MI300X: every host its own domain; all of mi01/gpu3's cross-host pairs at 0.5.
    faults = [f'{{type: degraded_link, target: "mi01/gpu3<->mi{h:02d}/gpu3", factor: 0.5}}' for h in range(2, 9)]
    inv = str(ROOT / "fixtures/inventories/mi300x-pod.yaml")
    code, res = run(tmp_path, inv, faults, playbook=CONNECTIVITY)
    assert code == 1, res["findings"]
    # The culprit is the card's rail NIC (<host>/nic<rail>) where localization names it, else the card.
    f = next(f for f in res["findings"] if f["entity"] in ("mi01/nic3", "mi01/gpu3"))
    assert f["evidence"]["confirmed"] is True, f["evidence"]["retest"]
    assert (f["entity"], "isolate") in decisions(res)
    retest = [r for r in read_rows(tmp_path / "out") if r.get("layer") == "confirm" and r["kind"] == "p2p"]
    mine = [r for r in retest if "mi01/gpu3" in (r["src"], r["dst"])]
    controls = [r for r in retest if "mi01/gpu3" not in (r["src"], r["dst"])]
    assert mine and {r["tier"] for r in mine} == {"scale_out"}, {r["tier"] for r in mine}
    # Known-good controls on the same rail, in other domains, measured in the same window.
    assert controls and {r["tier"] for r in controls} == {"scale_out"}
    assert {r["src"].rsplit("/", 1)[1] for r in retest} | {r["dst"].rsplit("/", 1)[1] for r in retest} == {"gpu3"}


def test_an_nvl72_rack_at_0_9_is_a_confirmed_supernode_finding(tmp_path):
    # The whole rack at 0.9, judged by a design bar of 0.91: the retest re-measures the
    # domain's own pairs and judges with that same rule; never "within bounds".
    faults = [f"{{type: slow_card, target: tray{t:02d}/gpu{g}, factor: 0.9}}" for t in range(1, 19) for g in range(4)]
    rules = yaml.safe_load((ROOT / "fixtures/rules/default.yaml").read_text())
    for r in rules["rules"]:
        if r["name"] == "p2p-bandwidth-below-design":
            r["below"] = 0.91
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules, sort_keys=False))
    code, res = run(tmp_path, str(ROOT / "fixtures/inventories/nvl72-rack.yaml"), faults,
                    "--rules", str(tmp_path / "rules.yaml"), playbook=CONNECTIVITY)
    assert code == 1
    f = finding(res, "rack0")
    assert f["entity_kind"] == "supernode" and f["evidence"]["confirmed"] is True, f["evidence"]["retest"]
    assert "within bounds" not in f["evidence"]["retest"]
    assert decisions(res) == [("rack0", "quarantine"), ("rack0", "isolate")]
    retest = [r for r in read_rows(tmp_path / "out") if r.get("layer") == "confirm" and r["kind"] == "p2p"]
    assert retest and {r["tier"] for r in retest} == {"scale_up"}
    assert len({r["src"].split("/")[0] for r in retest} | {r["dst"].split("/")[0] for r in retest}) == 18


def test_a_card_at_0_925_is_confirmed(tmp_path):
    # Just beyond the card-slow bar (0.93): the retest re-measures it near the bar, and a
    # symptom within the measured noise of its bar is never released.
    code, res = run(tmp_path, DEMO, ["{type: slow_card, target: node003/gpu2, factor: 0.925}"], seed=3)
    assert code == 1, res["findings"]
    f = finding(res, "node003/gpu2")
    assert f["rule"] == "p2p-bandwidth-card-slow" and f["evidence"]["confirmed"] is True, f["evidence"]["retest"]
    assert decisions(res) == [("node003/gpu2", "quarantine"), ("node003/gpu2", "isolate")]


def test_a_transient_slow_card_is_released(tmp_path):
    # Released only when re-measured inside the bar by more than the noise.
    code, res = run(tmp_path, DEMO, ["{type: slow_card, target: node003/gpu2, factor: 0.6, transient: true}"],
                    playbook=CONNECTIVITY)
    assert code == 0, res["findings"]
    f = finding(res, "node003/gpu2")
    assert f["evidence"]["confirmed"] is False and "by more than the measured noise" in f["evidence"]["retest"]
    assert decisions(res)[-1] == ("node003/gpu2", "release")


# ------------------------------------------------------------ 18.8: judging on a busy machine
def test_a_reproduced_symptom_on_a_busy_machine_is_inconclusive(tmp_path, monkeypatch):
    monkeypatch.setattr(MockBackend, "machine_load", lambda self: {"runnable": 4.0, "cores": 2, "steal": 0.0},
                        raising=False)
    code, res = run(tmp_path, DEMO, ["{type: slow_card, target: node003/gpu2, factor: 0.6}"], playbook=CONNECTIVITY)
    assert code == 4 and res["verdict"] == "inconclusive", res["findings"]
    f = finding(res, "node003/gpu2")
    assert f["evidence"]["inconclusive"] == "inconclusive: the machine was busy (load 4.0 on 2 cores)"
    assert "isolate" not in {a for _, a in decisions(res)} and "release" not in {a for _, a in decisions(res)}
    assert {layer["verdict"] for layer in res["layers"]} == {"inconclusive"}
    assert "INCONCLUSIVE" in (tmp_path / "out" / "report.html").read_text()


ONE_HOST = ("name: one-host\ndesign:\n  scale_up: {bandwidth: 450 GB/s, latency: 3 us}\n"
            "supernodes:\n  - {name: sn0, hosts: node003, cards_per_host: 4}\nbackend: {type: mock}\n")


@pytest.mark.parametrize("others,transient,expected", [
    (1.2, False, (4, "inconclusive", None)),  # others burn 1.2 of 2 cores between the samples
    (0.0, False, (1, "fail", "isolate")),     # a quiet machine: the host's own pairs re-measured
    (0.0, True, (0, "pass", "release")),
])
def test_a_host_wide_slowdown_with_no_control_is_re_measured_on_its_own_pairs(tmp_path, monkeypatch, others,
                                                                           transient, expected):
    """Every card of the only host slow alike (as on the local backend): no control outside
    the host. The host's own pairs are re-measured against the design bar; a load that comes
    and goes (the run queue short at both samples, other processes busy in between) makes it
    inconclusive. Before: never re-measured, quarantined, and the run failed."""
    ticks = iter(range(1_000_000))

    def load(self):
        t = next(ticks)  # each sample a second later
        return {"runnable": 0.0, "cores": 2, "steal": 0.0, "mark": {"t": t, "busy_s": others * t, "own_s": 0.0}}

    monkeypatch.setattr(MockBackend, "machine_load", load, raising=False)
    one_host = tmp_path / "one-host.yaml"
    one_host.write_text(ONE_HOST)
    t = ", transient: true" if transient else ""
    code, res = run(tmp_path, str(one_host),
                    [f"{{type: slow_card, target: node003/gpu{i}, factor: 0.5{t}}}" for i in range(4)],
                    playbook=CONNECTIVITY)
    assert (code, res["verdict"]) == expected[:2], res["findings"]
    host = finding(res, "node003")
    assert "not re-measured" not in host["evidence"]["retest"], host["evidence"]["retest"]
    if expected[2] is None:
        assert "other processes used 60% of the cores" in host["evidence"]["inconclusive"]
        assert not {"isolate", "release"} & {a for _, a in decisions(res)}
    else:
        assert decisions(res)[-1] == ("node003", expected[2])


@pytest.mark.parametrize("runnable,transient,expected", [
    (4.0, False, (4, "inconclusive", None)),
    (0.0, False, (1, "fail", "isolate")),
    (4.0, True, (0, "pass", "release")),  # busy, but gone at the retest: the machine's passing load
    (0.0, True, (0, "pass", "release")),
])
def test_links_with_no_control_are_re_measured_on_their_own_pair(tmp_path, monkeypatch, runnable, transient,
                                                                 expected):
    """Two slow links covering every card of the only host (CI's busy gate, and a local run
    on a busy machine: gpu0<->gpu3 and gpu1<->gpu2 at 10x latency in one round): no
    known-good card to re-measure them against. Each link's own pair is re-measured against
    the design bar, as a host's own pairs are: gone now, released; still there, confirmed on
    a quiet machine and inconclusive on a busy one. Before: never re-measured, so a symptom
    of the machine's load during detection stayed quarantined and failed the gate."""
    monkeypatch.setattr(MockBackend, "machine_load", lambda self: {"runnable": runnable, "cores": 2, "steal": 0.0},
                        raising=False)
    one_host = tmp_path / "one-host.yaml"
    one_host.write_text(ONE_HOST)
    t = ", transient: true" if transient else ""
    code, res = run(tmp_path, str(one_host),
                    [f"{{type: high_latency_link, target: node003/gpu0<->node003/gpu1, factor: 4{t}}}",
                     f"{{type: high_latency_link, target: node003/gpu2<->node003/gpu3, factor: 4{t}}}"],
                    playbook=CONNECTIVITY)
    assert (code, res["verdict"]) == expected[:2], res["findings"]
    links = [f for f in res["findings"] if f["entity_kind"] == "link"]
    assert {f["entity"] for f in links} == {"node003/gpu0<->node003/gpu1", "node003/gpu2<->node003/gpu3"}, links
    assert not any("not re-measured" in f["evidence"]["retest"] for f in links), links
    ends = {a for e, a in decisions(res) if e in {f["entity"] for f in links}}
    if expected[2] is None:
        assert all(f["evidence"]["inconclusive"].startswith("inconclusive: the machine was busy") for f in links)
        assert not {"isolate", "release"} & ends
    else:
        assert ends >= {expected[2]} and not {"isolate", "release"} - {expected[2]} & ends, decisions(res)


@pytest.mark.parametrize("runnable,expected", [(4.0, (4, "inconclusive")), (0.0, (1, "fail"))])
def test_a_card_with_too_few_controls_on_a_busy_machine_is_inconclusive(tmp_path, monkeypatch, runnable, expected):
    """CI's busy gate: a card slow beside its peers and a slow link at it on the only host of
    4 cards; the link's other end is a suspect, so the card's retest has 2 partners, fewer
    than its bar's min_pairs. On a busy shared machine that is its load, inconclusive (it
    failed the gate); on a quiet one it stays quarantined, the gate failing, as before."""
    monkeypatch.setattr(MockBackend, "machine_load", lambda self: {"runnable": runnable, "cores": 2, "steal": 0.0},
                        raising=False)
    one_host = tmp_path / "one-host.yaml"
    one_host.write_text(ONE_HOST)
    code, res = run(tmp_path, str(one_host), ["{type: slow_card, target: node003/gpu3, factor: 0.9}",
                                              "{type: high_latency_link, target: node003/gpu2<->node003/gpu3, "
                                              "factor: 10}"], playbook=CONNECTIVITY)
    assert (code, res["verdict"]) == expected, res["findings"]
    card = finding(res, "node003/gpu3")
    assert "too few partners" in card["evidence"]["retest"], card
    assert not {"isolate", "release"} & {a for e, a in decisions(res) if e == "node003/gpu3"}
    if runnable:
        assert card["evidence"]["inconclusive"].startswith("inconclusive: the machine was busy"), card


def test_a_retest_that_could_not_run_on_a_busy_machine_stays_quarantined(tmp_path, monkeypatch):
    """Only a speed re-measured against no or too few controls may be the machine's load: a
    retest whose measurement broke ('the retest could not run') stays quarantined, the gate
    failing, busy or not (the busy rule had matched every 'not re-measured' note)."""
    from sncheck.errors import HarnessError

    monkeypatch.setattr(MockBackend, "machine_load", lambda self: {"runnable": 4.0, "cores": 2, "steal": 0.0},
                        raising=False)
    p2p, begun = MockBackend.p2p, []
    monkeypatch.setattr(MockBackend, "begin_confirmation", lambda self: begun.append(True))

    def broken(self, plan, emit):
        if begun:
            raise HarnessError("the probe's workers died")
        return p2p(self, plan, emit)

    monkeypatch.setattr(MockBackend, "p2p", broken)
    one_host = tmp_path / "one-host.yaml"
    one_host.write_text(ONE_HOST)
    code, res = run(tmp_path, str(one_host), ["{type: high_latency_link, target: node003/gpu0<->node003/gpu1, "
                                              "factor: 4}"], playbook=CONNECTIVITY)
    assert (code, res["verdict"]) == (1, "fail"), res["findings"]
    link = finding(res, "node003/gpu0<->node003/gpu1")
    assert "could not run" in link["evidence"]["retest"] and "inconclusive" not in link["evidence"], link
    assert decisions(res)[-1] == ("node003/gpu0<->node003/gpu1", "quarantine")


def test_busy_means_load_or_degraded_controls():
    idle = {"runnable": 0.2, "cores": 2, "steal": 0.0}
    assert _busy_reason(None, ["p2p-latency-spikes"]) is None  # a backend without a shared machine
    assert _busy_reason(idle, []) is None
    assert _busy_reason(idle, ["p2p-latency-spikes"]).startswith("inconclusive: the machine was busy")
    assert _busy_reason({"runnable": 2.0, "cores": 2, "steal": 0.0}, []) is not None
    assert "steal 20%" in _busy_reason({"runnable": 0.0, "cores": 2, "steal": 0.2}, [])
    assert _busy_reason({**idle, "others": 0.2}, []) is None
    assert "other processes used 30%" in _busy_reason({**idle, "others": 0.3}, [])


@pytest.mark.parametrize("findings,expected", [
    ([], "pass"),
    ([Finding("a/gpu0", "card", "connectivity", "r", "critical", "m", {"inconclusive": "busy"})], "inconclusive"),
    ([Finding("a/gpu0", "card", "connectivity", "r", "critical", "m", {"inconclusive": "busy"}),
      Finding("b/gpu0", "card", "connectivity", "r", "warning", "m")], "fail"),
])
def test_the_run_verdict_is_inconclusive_only_when_nothing_else_fails(findings, expected):
    assert verdict_of(findings, (LayerRecord("connectivity"),)) == expected


def test_a_control_beside_a_slow_host_is_never_judged_drifting(tmp_path):
    """Issue 29: a healthy card used as a control in a slow host's retest got a
    p2p-bandwidth-drift warning ('897.7 -> 711.6 GB/s ... seen during the confirmation
    retest of host b02'): its pairs with the host were judged against its own history.
    Pairs with a known culprit never feed another entity's drift: the controls keep their
    level, and the host is confirmed."""
    ctx, _ = _context(DEMO, [f"{{type: slow_card, target: node003/gpu{g}, factor: 0.6}}" for g in range(4)],
                      tmp_path)
    level = {f"p2p_bandwidth/{t}": [(450.0, 0.5), (449.0, 0.5)] for t in ("intra_host", "scale_up", "scale_out")}
    ctx.history = {"runs": ["r1", "r2"], "cards": {c: dict(level) for c in ctx.topo.card_ids}}
    host = Finding("node003", "host", "connectivity", "p2p-bandwidth-below-design", "critical",
                   "host node003: bandwidth below design",
                   {"measured": 270.0, "expected": 450.0, "unit": "GB/s", "tier": "scale_up"})
    findings = [host]
    steps = _steps(ctx, findings)
    drifting = [f for f in findings if f.rule == "p2p-bandwidth-drift"]
    assert drifting == [], [(f.entity, f.message) for f in drifting]
    # (main: the controls "drifted", so the host's retest said they showed it too and left
    # it quarantined)
    assert "drifting" not in host.evidence["retest"].split("reproduced:")[0], host.evidence["retest"]
    assert [(s.entity, s.action) for s in steps] == [("node003", "quarantine"), ("node003", "isolate")]


@pytest.mark.parametrize("confirmed,action", [(False, "release"), (True, "isolate")])
def test_a_finding_seen_busy_in_anothers_retest_and_decided_by_its_own_is_not_inconclusive(confirmed, action,
                                                                                          monkeypatch):
    """A local run on a busy machine (test_slow_card_is_the_card_not_its_links): gpu0, seen
    during gpu1's retest while the machine was busy, was tagged inconclusive; its own retest
    then released it, and the finding said both 'inconclusive' and released. A finding its
    own retest decided carries that decision only."""
    from types import SimpleNamespace

    from sncheck.model import EntityKind, Severity

    busy = "inconclusive: the machine was busy (load 3.4 on 2 cores)"
    f = Finding("localhost/gpu0", EntityKind.CARD, "confirm", "p2p-latency-spikes", Severity.WARNING,
                "card localhost/gpu0: latency spikes (seen during the confirmation retest of card localhost/gpu1)",
                {"seen_in_retest_of": "localhost/gpu1", "inconclusive": busy, "tier": "intra_host"})
    monkeypatch.setattr(isolation, "confirm", lambda ctx, fs: {
        g.entity: Retest(confirmed, "peer-to-peer pairs", "decided") for g in fs})
    monkeypatch.setattr(isolation, "hard_of", lambda *a: {})
    ctx = SimpleNamespace(backend=SimpleNamespace(begin_confirmation=lambda: None), progress=lambda *a: None,
                          known=frozenset())
    steps = isolation.isolation_steps([f], ctx, True, lambda e: None, datetime.now(timezone.utc))
    assert [s.action.value for s in steps] == ["quarantine", action]
    assert "inconclusive" not in f.evidence and f.evidence["confirmed"] is confirmed


@pytest.mark.parametrize("runnable,expected", [(4.0, (4, "inconclusive")), (0.0, (1, "fail"))])
def test_a_near_card_with_no_control_pair_on_a_busy_machine_is_inconclusive(tmp_path, monkeypatch, runnable,
                                                                            expected):
    """A local run on a busy machine (test_slow_card_is_the_card_not_its_links): a card named
    near its card bar whose one control left (its other mates a suspect and a suspect link's
    end) gives no control pair to set the level: 'no control pairs beside its own to compare
    with'. On a busy shared machine that is its load, inconclusive (it failed the gate, exit 1,
    a healthy card's); on a quiet one it stays quarantined and gates, as before."""
    monkeypatch.setattr(MockBackend, "machine_load", lambda self: {"runnable": runnable, "cores": 2, "steal": 0.0},
                        raising=False)
    one_host = tmp_path / "one-host.yaml"
    one_host.write_text(ONE_HOST)
    code, res = run(tmp_path, str(one_host), ["{type: slow_card, target: node003/gpu1, factor: 0.5}",
                                              "{type: slow_card, target: node003/gpu3, factor: 0.925}",
                                              "{type: high_latency_link, target: node003/gpu2<->node003/gpu3, "
                                              "factor: 10}"], playbook=CONNECTIVITY, seed=0)
    assert (code, res["verdict"]) == expected, res["findings"]
    card = finding(res, "node003/gpu3")
    assert card["evidence"].get("near_bar") and "no control pairs beside its own" in card["evidence"]["retest"], card
    assert not {"isolate", "release"} & {a for e, a in decisions(res) if e == "node003/gpu3"}
    assert bool(card["evidence"].get("inconclusive")) == bool(runnable), card
