"""Isolation actions against fake ``sinfo``, ``scontrol`` and ``kubectl`` that keep state.

The fakes are small Python scripts written into a bin directory put first on PATH. They
log their argv and keep the cluster's state (node state and drain reason; taints,
cordon and annotations) in a JSON file, so a drain and a resume round-trip for real.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sncheck.actions import ACTIONS, ActionContext, ActionRequest, AuditLog, Isolated, LocalRunner, get_action, perform
from sncheck.actions.base import SshRunner, read_audit
from sncheck.actions.files import service_view
from sncheck.actions.kubernetes import TAINT_KEY, desired_taint, label_value
from sncheck.actions.slurm import drain_reason, is_ours, parse_node_states, parse_reason
from sncheck.errors import ConfigError
from sncheck.run.inputs import load_inventory

INVENTORY = Path(__file__).resolve().parent.parent / "fixtures" / "inventories" / "demo-2sn.yaml"

FAKE_TOOL = r'''#!{python}
"""Fake {tool} for sncheck tests: logs argv, keeps cluster state in a JSON file."""
import fcntl, json, os, sys

STATE = {state!r}
LOG = {log!r}


def out(text):
    sys.stdout.write(text + "\n")


def err(text):
    sys.stderr.write(text + "\n")


def sinfo(st, args):
    host = args[args.index("-n") + 1]
    assert args[args.index("-o") + 1] == "%E", args
    node = st["slurm"].get(host)
    if node is None:
        return 0  # sinfo prints nothing for an unknown node
    for _ in range(node.get("partitions", 1)):
        out(node["reason"] or "none")
    return 0


def scontrol(st, args):
    if args[:1] != ["update"]:
        err("fake scontrol: only 'update' is faked")
        return 2
    kv = dict(a.split("=", 1) for a in args[1:])
    node = st["slurm"].get(kv.get("NodeName"))
    if node is None:
        err("scontrol: error: Invalid node name specified")
        return 1
    if kv.get("State") == "DRAIN":
        if not kv.get("Reason"):
            err("You must specify a reason when DOWNING or DRAINING a node. Request denied")
            return 1
        node["state"], node["reason"] = "DRAIN", kv["Reason"]
    elif kv.get("State") == "RESUME":
        node["state"], node["reason"] = "IDLE", ""
    else:
        err("fake scontrol: unsupported update " + repr(kv))
        return 2
    return 0


def kubectl(st, args):
    verb = args[0]
    name = args[2] if verb in ("get", "taint", "annotate") else args[1]
    node = st["k8s"].get(name)
    if node is None:
        err('Error from server (NotFound): nodes "%s" not found' % name)
        return 1
    if verb == "get":
        spec = {{"taints": node["taints"]}} if node["taints"] else {{}}
        if node["unschedulable"]:
            spec["unschedulable"] = True
        out(json.dumps({{"metadata": {{"name": name, "annotations": node["annotations"]}}, "spec": spec}}))
    elif verb == "taint":
        t = args[3]
        if t.endswith("-"):
            key = t[:-1]
            kept = [x for x in node["taints"] if x["key"] != key]
            if len(kept) == len(node["taints"]):
                err('error: taint "%s" not found' % key)
                return 1
            node["taints"] = kept
        else:
            key, rest = t.split("=", 1)
            value, effect = rest.rsplit(":", 1)
            same = [x for x in node["taints"] if x["key"] == key and x["effect"] == effect]
            if same and "--overwrite" not in args:
                err("error: node %s already has %s taint(s) with same effect(s) and --overwrite is false" % (name, key))
                return 1
            node["taints"] = [x for x in node["taints"] if not (x["key"] == key and x["effect"] == effect)]
            node["taints"].append({{"key": key, "value": value, "effect": effect}})
        out("node/%s tainted" % name)
    elif verb in ("cordon", "uncordon"):
        node["unschedulable"] = verb == "cordon"
        out("node/%s %sed" % (name, verb))
    elif verb == "annotate":
        a = args[3]
        if a.endswith("-"):
            node["annotations"].pop(a[:-1], None)
        else:
            key, value = a.split("=", 1)
            if key in node["annotations"] and "--overwrite" not in args:
                err("error: --overwrite is false but found the following declared annotation(s): " + key)
                return 1
            node["annotations"][key] = value
        out("node/%s annotated" % name)
    else:
        err("fake kubectl: unsupported " + repr(args))
        return 2
    return 0


def signal_parent(tool, when, calls):
    """FAKE_SIGNAL_AT=tool:before|after:SIGNAME:n signals this tool's caller (sncheck) at its
    n-th call, before or after it acts: the steps of an action a test interrupts."""
    spec = os.environ.get("FAKE_SIGNAL_AT", "").split(":")
    if len(spec) == 4 and spec[0] == tool and spec[1] == when and int(spec[3]) == calls:
        import signal, time
        os.kill(os.getppid(), getattr(signal, "SIG" + spec[2]))
        time.sleep(float(os.environ.get("FAKE_SIGNAL_PAUSE", "0.2")))


def main():
    tool = os.path.basename(sys.argv[0])
    with open(STATE + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(LOG, "a") as fh:
            fh.write(json.dumps([tool] + sys.argv[1:]) + "\n")
        with open(LOG) as fh:
            calls = sum(1 for line in fh if line.startswith('["' + tool + '"'))
        signal_parent(tool, "before", calls)
        with open(STATE) as fh:
            st = json.load(fh)
        code = {{"sinfo": sinfo, "scontrol": scontrol, "kubectl": kubectl}}[tool](st, sys.argv[1:])
        with open(STATE, "w") as fh:
            json.dump(st, fh, indent=1)
    signal_parent(tool, "after", calls)
    sys.exit(code)


main()
'''

TOOLS = ("sinfo", "scontrol", "kubectl")


@dataclass
class FakeCluster:
    """The fakes' files: bin directory, JSON state and argv log."""

    bin_dir: Path
    state_path: Path
    log_path: Path

    @classmethod
    def create(cls, root: Path, hosts: list[str], bin_dir: Path | None = None) -> FakeCluster:
        root.mkdir(parents=True, exist_ok=True)
        fc = cls(bin_dir or root / "bin", root / "cluster.json", root / "tools.log")
        fc.bin_dir.mkdir(parents=True, exist_ok=True)
        fc.log_path.write_text("")
        fc.write_state({
            "slurm": {h: {"state": "IDLE", "reason": ""} for h in hosts},
            "k8s": {h: {"taints": [], "unschedulable": False, "annotations": {}} for h in hosts},
        })
        for tool in TOOLS:
            path = fc.bin_dir / tool
            path.write_text(FAKE_TOOL.format(python=sys.executable, tool=tool,
                                             state=str(fc.state_path), log=str(fc.log_path)))
            path.chmod(0o755)
        return fc

    def state(self) -> dict:
        return json.loads(self.state_path.read_text())

    def write_state(self, st: dict) -> None:
        self.state_path.write_text(json.dumps(st, indent=1))

    def slurm(self, host: str) -> dict:
        return self.state()["slurm"][host]

    def k8s(self, host: str) -> dict:
        return self.state()["k8s"][host]

    def set_slurm(self, host: str, **fields: object) -> None:
        st = self.state()
        st["slurm"][host].update(fields)
        self.write_state(st)

    def set_k8s(self, host: str, **fields: object) -> None:
        st = self.state()
        st["k8s"][host].update(fields)
        self.write_state(st)

    def log(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line.strip()]

    def clear_log(self) -> None:
        self.log_path.write_text("")


@pytest.fixture
def inventory():
    return load_inventory(INVENTORY)


@pytest.fixture
def fake_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inventory) -> Iterator[FakeCluster]:
    fc = FakeCluster.create(tmp_path / "fake", list(inventory.hosts))
    monkeypatch.setenv("PATH", f"{fc.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    yield fc


def req(entity: str, kind: str, action: str = "isolate", **kw: object) -> ActionRequest:
    kw.setdefault("reason", "slow card")
    kw.setdefault("rule", "p2p-bandwidth-below-design")
    kw.setdefault("run_id", "20261129T103000Z-ab12")
    kw.setdefault("evidence", {"measured": 270.1, "expected": 450.0, "unit": "GB/s"})
    return ActionRequest(entity, kind, action, **kw)  # type: ignore[arg-type]


def ctx_with(*isolated: tuple[str, str], inventory=None, out_dirs=()) -> ActionContext:
    return ActionContext({e: Isolated(e, k, "p2p-bandwidth-below-design") for e, k in isolated},
                         inventory, tuple(out_dirs))


# -- runners ----------------------------------------------------------------------

def test_local_runner_runs_argv_without_a_shell(tmp_path: Path) -> None:
    nasty = f"a; touch {tmp_path}/pwned $(id)"
    res = LocalRunner().run(["printf", "%s", nasty])
    assert res.ok and res.stdout == nasty and res.host == "localhost"
    assert not (tmp_path / "pwned").exists()


def test_local_runner_missing_tool_and_timeout() -> None:
    res = LocalRunner().run(["sncheck-no-such-tool-xyz"])
    assert res.exit_code == 127 and not res.ok and "command not found" in res.stderr
    res = LocalRunner(timeout=0.3).run([sys.executable, "-c", "import time; print('x', flush=True); time.sleep(5)"])
    assert res.timed_out and res.exit_code is None and not res.ok
    with pytest.raises(TypeError):
        LocalRunner().run("scontrol update")  # type: ignore[arg-type]  # a string is refused


def test_registry_is_explicit_and_names_valid_actions() -> None:
    assert set(ACTIONS) == {"hostfile", "cuda_visible_devices", "slurm", "kubernetes"}
    with pytest.raises(ConfigError, match="valid: hostfile, cuda_visible_devices, slurm, kubernetes"):
        get_action("ansible")


# -- dry run -------------------------------------------------------------------------

def test_dry_run_runs_nothing(fake_cluster: FakeCluster, tmp_path: Path, inventory) -> None:
    audit = AuditLog([tmp_path / "state"])
    ctx = ctx_with(("node007", "host"), inventory=inventory, out_dirs=[tmp_path / "state"])
    records = [perform(ACTIONS[v], req("node007", "host"), ctx, LocalRunner(), apply=False, audit=audit)
               for v in ("slurm", "kubernetes", "hostfile", "cuda_visible_devices")]
    assert fake_cluster.log() == []  # not even the read-only sinfo / kubectl get
    assert fake_cluster.slurm("node007")["state"] == "IDLE"
    assert not (tmp_path / "state" / "exclude_hosts.txt").exists()
    assert [r["outcome"] for r in records] == ["dry-run"] * 4
    assert not any(r["applied"] for r in records)
    slurm = records[0]
    assert slurm["argv"][0] == ["sinfo", "-h", "-N", "-n", "node007", "-o", "%E"]
    assert slurm["argv"][1][:4] == ["scontrol", "update", "NodeName=node007", "State=DRAIN"]
    assert "would check the drain reason" in slurm["message"]
    assert len(read_audit(tmp_path / "state")) == 4


# -- Slurm ---------------------------------------------------------------------------

def test_slurm_drain_and_resume_round_trip(fake_cluster: FakeCluster) -> None:
    slurm = ACTIONS["slurm"]
    rec = perform(slurm, req("node003", "host"), ctx_with(("node003", "host")), LocalRunner(), apply=True)
    assert rec["outcome"] == "ok", rec
    node = fake_cluster.slurm("node003")
    assert node["state"] == "DRAIN"
    assert node["reason"] == "sncheck: p2p-bandwidth-below-design (run 20261129T103000Z-ab12)"
    assert rec["argv"] == [["sinfo", "-h", "-N", "-n", "node003", "-o", "%E"],
                           ["scontrol", "update", "NodeName=node003", "State=DRAIN", f"Reason={node['reason']}"]]

    rec = perform(slurm, req("node003", "host", "release"), ctx_with(), LocalRunner(), apply=True)
    assert rec["outcome"] == "ok", rec
    assert fake_cluster.slurm("node003") == {"state": "IDLE", "reason": ""}
    assert fake_cluster.log()[-1] == ["scontrol", "update", "NodeName=node003", "State=RESUME"]


def test_slurm_never_resumes_a_node_drained_for_a_foreign_reason(fake_cluster: FakeCluster) -> None:
    fake_cluster.set_slurm("node005", state="DRAIN", reason="maintenance by ops", partitions=2)
    rec = perform(ACTIONS["slurm"], req("node005", "host", "release"), ctx_with(), LocalRunner(), apply=True)
    assert rec["outcome"] == "skipped"
    assert "maintenance by ops" in rec["message"] and "did not resume" in rec["message"]
    assert fake_cluster.slurm("node005")["state"] == "DRAIN"
    assert fake_cluster.slurm("node005")["reason"] == "maintenance by ops"
    assert [c[0] for c in fake_cluster.log()] == ["sinfo"]  # read, never scontrol


def test_slurm_does_not_overwrite_a_foreign_drain_reason(fake_cluster: FakeCluster) -> None:
    fake_cluster.set_slurm("node005", state="DOWN", reason="Not responding")
    rec = perform(ACTIONS["slurm"], req("node005", "host"), ctx_with(("node005", "host")), LocalRunner(), apply=True)
    assert rec["outcome"] == "skipped" and "Not responding" in rec["message"]
    assert fake_cluster.slurm("node005")["reason"] == "Not responding"


def test_slurm_release_of_an_undrained_node_is_skipped(fake_cluster: FakeCluster) -> None:
    rec = perform(ACTIONS["slurm"], req("node002", "host", "release"), ctx_with(), LocalRunner(), apply=True)
    assert rec["outcome"] == "skipped" and "not drained" in rec["message"]
    assert [c[0] for c in fake_cluster.log()] == ["sinfo"]


def test_slurm_skips_cards_and_points_at_the_device_map(fake_cluster: FakeCluster) -> None:
    rec = perform(ACTIONS["slurm"], req("node003/gpu2", "card"), ctx_with(("node003/gpu2", "card")),
                  LocalRunner(), apply=True)
    assert rec["outcome"] == "skipped" and "CUDA_VISIBLE_DEVICES" in rec["message"]
    assert fake_cluster.log() == []


def test_slurm_failure_is_a_failed_outcome(fake_cluster: FakeCluster) -> None:
    st = fake_cluster.state()
    del st["slurm"]["node004"]
    st["slurm"]["node004x"] = {"state": "IDLE", "reason": ""}
    fake_cluster.write_state(st)
    # sinfo prints nothing for an unknown node; scontrol then refuses it.
    rec = perform(ACTIONS["slurm"], req("node004", "host"), ctx_with(("node004", "host")), LocalRunner(), apply=True)
    assert rec["outcome"] == "failed"
    assert "Invalid node name" in rec["message"] and "exit 1" in rec["message"]


def test_slurm_reason_parsing_and_shape() -> None:
    assert parse_reason("none\nnone\n") is None
    assert parse_reason("") is None
    assert parse_reason("sncheck: x (run r)\nsncheck: x (run r)\n") == "sncheck: x (run r)"  # two partitions
    # a wrapper's whitespace-only lines after the text end the output (leftops2)
    assert parse_reason("sncheck: x (run r)\nsncheck: x (run r)\n \t\n\r\n") == "sncheck: x (run r)"
    # a whitespace-only reason is someone's (Slurm keeps Reason="   "), never none
    assert parse_reason("   \n   \n") == "   " and not is_ours(parse_reason("   \n"))
    assert parse_node_states("node2|drained|   \nnode1|idle|none\n") == {"node2": ("drained", "   "),
                                                                         "node1": ("idle", None)}
    # sinfo -h prints no blank line of its own: one is a newline in the reason, never sncheck's (hostile round 12)
    assert not is_ours(parse_reason("\nsncheck: x (run r)\nsncheck: x (run r)\n"))
    reason = drain_reason(req("node1", "host", rule="a\nb" + "x" * 300))
    assert reason.startswith("sncheck: a b") and len(reason) <= 120 and "\n" not in reason


# -- Kubernetes ----------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("gpu2", "gpu2"),
    ("p2p bandwidth / below design!", "p2p-bandwidth-below-design"),
    ("--..x..--", "x"),
    ("", "unhealthy"),
    ("???", "unhealthy"),
    ("a" * 100, "a" * 63),
    ("x" * 62 + ".y", "x" * 62),
])
def test_label_value_is_valid(text: str, expected: str) -> None:
    value = label_value(text)
    assert value == expected
    assert len(value) <= 63 and value[0].isalnum() and value[-1].isalnum()
    assert all(c.isalnum() or c in "._-" for c in value)


def test_kubernetes_card_taints_round_trip(fake_cluster: FakeCluster) -> None:
    k8s, run = ACTIONS["kubernetes"], LocalRunner()
    rec = perform(k8s, req("node003/gpu2", "card"), ctx_with(("node003/gpu2", "card")), run, apply=True)
    assert rec["outcome"] == "ok", rec
    assert fake_cluster.k8s("node003")["taints"] == [{"key": TAINT_KEY, "value": "gpu2", "effect": "NoSchedule"}]
    assert not fake_cluster.k8s("node003")["unschedulable"]  # a card taints; it never cordons

    both = ctx_with(("node003/gpu2", "card"), ("node003/gpu3", "card"))
    perform(k8s, req("node003/gpu3", "card"), both, run, apply=True)
    assert fake_cluster.k8s("node003")["taints"][0]["value"] == "gpu2.gpu3"

    perform(k8s, req("node003/gpu2", "card", "release"), ctx_with(("node003/gpu3", "card")), run, apply=True)
    assert fake_cluster.k8s("node003")["taints"][0]["value"] == "gpu3"  # gpu3 stays isolated

    rec = perform(k8s, req("node003/gpu3", "card", "release"), ctx_with(), run, apply=True)
    assert rec["outcome"] == "ok" and fake_cluster.k8s("node003")["taints"] == []
    assert fake_cluster.log()[-1] == ["kubectl", "taint", "nodes", "node003", f"{TAINT_KEY}-"]

    rec = perform(k8s, req("node003/gpu3", "card", "release"), ctx_with(), run, apply=True)
    assert rec["outcome"] == "skipped" and "already as wanted" in rec["message"]  # idempotent


def test_kubernetes_host_taint_and_cordon_round_trip(fake_cluster: FakeCluster) -> None:
    k8s, run = ACTIONS["kubernetes"], LocalRunner()
    rec = perform(k8s, req("node007", "host", rule="host-unreachable"),
                  ActionContext({"node007": Isolated("node007", "host", "host unreachable!")}), run, apply=True)
    assert rec["outcome"] == "ok", rec
    node = fake_cluster.k8s("node007")
    assert node["unschedulable"] is True
    assert node["taints"] == [{"key": TAINT_KEY, "value": "host-unreachable", "effect": "NoSchedule"}]
    assert node["annotations"] == {"sncheck.io/cordoned": "20261129T103000Z-ab12"}
    assert ["kubectl", "cordon", "node007"] in rec["argv"]

    rec = perform(k8s, req("node007", "host", "release"), ctx_with(), run, apply=True)
    assert rec["outcome"] == "ok", rec
    assert fake_cluster.k8s("node007") == {"taints": [], "unschedulable": False, "annotations": {}}
    assert ["kubectl", "uncordon", "node007"] in rec["argv"]


def test_kubernetes_never_uncordons_a_foreign_cordon(fake_cluster: FakeCluster) -> None:
    fake_cluster.set_k8s("node008", unschedulable=True)  # cordoned by ops before sncheck came
    k8s, run = ACTIONS["kubernetes"], LocalRunner()
    rec = perform(k8s, req("node008", "host"), ctx_with(("node008", "host")), run, apply=True)
    assert rec["outcome"] == "ok" and "someone else" in rec["message"]
    assert ["kubectl", "cordon", "node008"] not in rec["argv"]
    assert fake_cluster.k8s("node008")["annotations"] == {}

    rec = perform(k8s, req("node008", "host", "release"), ctx_with(), run, apply=True)
    assert "left cordoned" in rec["message"]
    node = fake_cluster.k8s("node008")
    assert node["unschedulable"] is True and node["taints"] == []
    assert not any(c[:2] == ["kubectl", "uncordon"] for c in fake_cluster.log())


def test_kubernetes_release_of_a_card_keeps_the_isolated_hosts_taint() -> None:
    ctx = ctx_with(("node001", "host"), ("node001/gpu1", "card"))
    assert desired_taint(ctx, "node001") == "p2p-bandwidth-below-design"
    assert desired_taint(ctx_with(("node001/gpu10", "card"), ("node001/gpu9", "card")), "node001") == "gpu9.gpu10"
    assert desired_taint(ctx_with(("node002/gpu1", "card")), "node001") is None


def test_kubernetes_and_slurm_skip_links(fake_cluster: FakeCluster) -> None:
    link = "node001/gpu0<->node001/gpu1"
    for name in ("kubernetes", "slurm", "hostfile"):
        rec = perform(ACTIONS[name], req(link, "link"), ctx_with(), LocalRunner(), apply=True)
        assert rec["outcome"] == "skipped", (name, rec)
    assert fake_cluster.log() == []


# -- files ---------------------------------------------------------------------------

def test_files_leave_out_isolated_hosts_and_cards(tmp_path: Path, inventory) -> None:
    out = tmp_path / "state"
    run_dir = tmp_path / "run"
    ctx = ActionContext({
        "node007": Isolated("node007", "host"),
        "node003/gpu2": Isolated("node003/gpu2", "card"),
        "node010/gpu0": Isolated("node010/gpu0", "card"), "node010/gpu1": Isolated("node010/gpu1", "card"),
        "node010/gpu2": Isolated("node010/gpu2", "card"), "node010/gpu3": Isolated("node010/gpu3", "card"),
        "node001/gpu0<->node001/gpu1": Isolated("node001/gpu0<->node001/gpu1", "link"),
    }, inventory, (out, run_dir))
    for name in ("hostfile", "cuda_visible_devices"):
        rec = perform(ACTIONS[name], req("node003/gpu2", "card"), ctx, None, apply=True)
        assert rec["outcome"] == "ok", rec
        assert len(rec["files"]) == 4
    for d in (out, run_dir):
        assert (d / "exclude_hosts.txt").read_text() == "node007\nnode010\n"  # node010 lost every card
        hostfile = (d / "hostfile.txt").read_text().splitlines()
        assert "node003 slots=3" in hostfile and "node001 slots=4" in hostfile
        assert not any(line.startswith(("node007", "node010")) for line in hostfile)
        cvd = json.loads((d / "cuda_visible_devices.json").read_text())
        assert cvd["node003"] == "0,1,3" and cvd["node007"] == "" and cvd["node001"] == "0,1,2,3"
        assert len(cvd) == 16


def test_cuda_env_file_is_sourceable_per_host(tmp_path: Path, inventory) -> None:
    import subprocess

    ctx = ActionContext({"node003/gpu2": Isolated("node003/gpu2", "card"), "node007": Isolated("node007", "host")},
                        inventory, (tmp_path,))
    perform(ACTIONS["cuda_visible_devices"], req("node003/gpu2", "card"), ctx, None, apply=True)
    env_file = tmp_path / "cuda_visible_devices.env"

    script = 'CUDA_VISIBLE_DEVICES=unset; . "$1"; printf "%s|%s" "$CUDA_VISIBLE_DEVICES" "${CUDA_DEVICE_ORDER:-}"'
    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_ORDER"}

    def cvd(host: str) -> str:
        return subprocess.run(["sh", "-c", script, "sh", str(env_file)], env={**env, "SNCHECK_HOST": host},
                              capture_output=True, text=True, check=True).stdout

    assert cvd("node003") == "0,1,3|PCI_BUS_ID"
    assert cvd("node007") == "|PCI_BUS_ID"
    assert cvd("node001") == "unset|"  # untouched


def test_files_need_the_inventory(tmp_path: Path) -> None:
    rec = perform(ACTIONS["hostfile"], req("node003", "host"), ctx_with(("node003", "host"), out_dirs=[tmp_path]),
                  None, apply=True)
    assert rec["outcome"] == "skipped" and "-i INVENTORY" in rec["message"]


def test_service_view_ignores_unknown_entities(inventory) -> None:
    view = service_view(inventory, {"node999": Isolated("node999", "host"),
                                    "node999/gpu0": Isolated("node999/gpu0", "card")})
    assert view.excluded_hosts == () and view.hidden_cards == ()


# -- audit ---------------------------------------------------------------------------

def test_audit_log_has_a_line_per_action_with_run_rule_and_evidence(fake_cluster: FakeCluster, tmp_path: Path) -> None:
    audit = AuditLog([tmp_path / "state", tmp_path / "run"])
    ctx = ctx_with(("node003", "host"))
    perform(ACTIONS["slurm"], req("node003", "host"), ctx, LocalRunner(), apply=True, audit=audit)
    perform(ACTIONS["kubernetes"], req("node003", "host"), ctx, LocalRunner(), apply=False, audit=audit)
    for d in ("state", "run"):
        lines = read_audit(tmp_path / d)
        assert len(lines) == 2
        for line in lines:
            assert line["run_id"] == "20261129T103000Z-ab12"
            assert line["rule"] == "p2p-bandwidth-below-design"
            assert line["evidence"] == {"measured": 270.1, "expected": 450.0, "unit": "GB/s"}
            assert line["entity"] == "node003" and line["kind"] == "host" and line["action"] == "isolate"
            assert {"ts", "argv", "applied", "outcome", "message"} <= set(line)
        assert (lines[0]["via"], lines[0]["applied"], lines[0]["outcome"]) == ("slurm", True, "ok")
        assert (lines[1]["via"], lines[1]["applied"], lines[1]["outcome"]) == ("kubernetes", False, "dry-run")


# -- over SSH, on a control host -----------------------------------------------------

@pytest.mark.sshd
def test_ssh_runner_drains_on_the_control_host(sshd_cluster, tmp_path: Path) -> None:
    cluster = sshd_cluster(1, names=["admin01"])
    fc = FakeCluster.create(tmp_path / "remote", ["node003"], bin_dir=cluster["admin01"].bin_dir)
    with cluster.connection("admin01") as conn:
        runner = SshRunner(conn, timeout=30)
        assert runner.host == "admin01"
        rec = perform(ACTIONS["slurm"], req("node003", "host", rule="it's; $(bad)"),
                      ctx_with(("node003", "host")), runner, apply=True)
        assert rec["outcome"] == "ok", rec
        assert fc.slurm("node003")["reason"] == "sncheck: it's; $(bad) (run 20261129T103000Z-ab12)"
        rec = perform(ACTIONS["slurm"], req("node003", "host", "release"), ctx_with(), runner, apply=True)
        assert rec["outcome"] == "ok", rec
    assert fc.slurm("node003") == {"state": "IDLE", "reason": ""}
    assert fc.log()[1][-1] == "Reason=sncheck: it's; $(bad) (run 20261129T103000Z-ab12)"
