"""Hostile inputs, round 16: SSH answers that lie (on real sshd servers on loopback), Slurm
answers that lie (on the loopback cluster), and new instances in the classes the held-out probe
missed most, against what landed in stop 46. Each test names its case id; README's round 16
table lists them. New instances only: no case of ``../shared/adversarial-r3/cases.tsv`` or of an
earlier round is tested again."""

from __future__ import annotations

import gzip
import json
import os
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_hardening import one_line_error
from test_hostile_r10 import _facts, _q_does, _two_hosts

from sncheck.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "inventories" / "demo-2sn.yaml"


def _cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def _rules(tmp_path: Path) -> Path:
    """The shipped rules without those judging gloo's timing on a shared machine (as the SSH tests do)."""
    from test_ssh_backend import rules_without_timing_peers

    return rules_without_timing_peers(tmp_path / "rules.yaml")


def _common(cluster) -> list[object]:
    return ["--backend", "ssh", "--known-hosts", cluster.known_hosts, "--ssh-config", cluster.ssh_config]


# -- SSH answers that lie ----------------------------------------------------------------------------

@pytest.mark.sshd
def test_h16_01_nvidia_smi_q_answering_for_8_gpus_on_a_1_card_host(sshd_cluster, tmp_path: Path) -> None:
    """H16-01: node2's `--query-gpu` lists the inventory's one card, its `nvidia-smi -q` eight (the
    tools of one host disagree: a listing of another, bigger machine)."""
    from test_ssh_backend import PROFILES, profile_output

    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    (cluster["node2"].directory / "data" / "q").write_text(profile_output(PROFILES["a100"], "q", 8))
    bad, findings = _facts(inv, cluster)
    assert set(bad) == {"node2"}, bad
    assert "gpu_report" in {r["fact"] for r in bad["node2"]}, bad["node2"]
    assert any("8" in r["message"] and "1" in r["message"] for r in bad["node2"]), [r["message"] for r in bad["node2"]]
    assert findings and {f.entity.split("/")[0] for f in findings} == {"node2"}


@pytest.mark.sshd
def test_h16_02_a_host_listing_another_host_s_gpu_uuid(sshd_cluster, tmp_path: Path) -> None:
    """H16-02: node2's `nvidia-smi` answers with node1's GPU (node1's UUID and serial: a wrapper
    replaying another machine's output, or node2's name reaching node1 by a second address). A GPU
    UUID is one GPU's: two hosts listing it are not two measured machines."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    _own_uuid(cluster["node1"], "GPU-11111111-1111-1111-1111-111111111111")
    _own_uuid(cluster["node2"], "GPU-11111111-1111-1111-1111-111111111111")
    bad, findings = _facts(inv, cluster)
    assert {"node1", "node2"} <= set(bad), bad
    assert all(any("GPU-11111111-1111-1111-1111-111111111111" in r["message"] for r in bad[h]) for h in ("node1", "node2"))
    shared = {h: [r["message"] for r in bad[h] if r["fact"] == "devices_shared"] for h in ("node1", "node2")}
    assert "(also node2)" in shared["node1"][0] and "(also node1)" in shared["node2"][0], shared
    assert {f.entity for f in findings if f.evidence.get("fact") == "devices_shared"} == {"node1", "node2"}, findings


def _own_uuid(host, uuid: str) -> None:
    """``host``'s fake nvidia-smi lists its one GPU under ``uuid`` (-q and --query-gpu alike)."""
    data = host.directory / "data"
    for key in ("q", "csv"):
        text = (data / key).read_text()
        (data / key).write_text(re.sub(r"GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", uuid, text))


@pytest.mark.sshd
def test_h16_03_amd_smi_list_that_never_ends_names_host_and_command(sshd_cluster, tmp_path: Path) -> None:
    """H16-03: on an MI300X host, `amd-smi list` never ends (a driver wedged in its ioctl): the
    rows say the host and the command, bounded by the command timeout, never a pass."""
    from test_vendor_amd import _install_amd, amd
    from vendor_ssh import host_facts, write_inventory

    cluster = sshd_cluster(2, ["mi01", "mi02"])
    for h in cluster:
        _install_amd(h, amd("13"))
    tool = cluster["mi02"].bin_dir / "amd-smi"
    tool.write_text(tool.read_text().replace("case \"$*\" in\n", "case \"$*\" in\n  list) exec sleep 120 ;;\n", 1))
    inv = write_inventory(tmp_path / "inv.yaml", cluster, "amd-mi300x", {"mi01": ["mi01"], "mi02": ["mi02"]})
    started = time.monotonic()
    rows, findings = host_facts(inv, cluster, command_timeout=3)
    assert time.monotonic() - started < 45
    hung = [r for r in rows if r.get("host") == "mi02" and r.get("status") == "timeout"]
    assert hung and all(r["message"].startswith("mi02: ") and "`amd-smi list`" in r["message"] and "timed out" in
                        r["message"] for r in hung), [r["message"] for r in rows if r.get("host") == "mi02" and not r["ok"]]
    assert not [r for r in rows if r.get("host") == "mi02" and r.get("fact") in ("gpu_bus", "card_count") and r["ok"]]
    assert findings and all(f.entity.startswith("mi02") for f in findings)


@pytest.mark.sshd
def test_h16_04_npu_smi_info_printing_its_whole_table_then_exit_1(sshd_cluster, tmp_path: Path) -> None:
    """H16-04: a CloudMatrix node's `npu-smi info` prints its whole, healthy table and exits 1
    (dcmi's 'ret is -8005' after the table): a command that says it failed is not trusted."""
    from test_vendor_ascend import _install_cm_node
    from vendor_ssh import facts_of, host_facts, write_inventory

    cluster = sshd_cluster(2, ["cm01", "cm02"])
    _install_cm_node(cluster["cm01"], 16777216, None)
    _install_cm_node(cluster["cm02"], 16777232, None)
    tool = cluster["cm02"].bin_dir / "npu-smi"
    text = tool.read_text()
    line = '  "info") exec cat "$D/info" ;;'
    assert line in text, text
    tool.write_text(text.replace(line, '  "info") cat "$D/info"; echo "dcmi module initialize failed. ret is -8005" >&2; '
                                       'exit 1 ;;'))
    inv = write_inventory(tmp_path / "inv.yaml", cluster, "ascend-cm384", {"sp0": ["cm01", "cm02"]})
    rows, findings = host_facts(inv, cluster)
    sick = facts_of(rows, "cm02")
    assert not sick["card_count"]["ok"] and "exit 1" in sick["card_count"]["message"], sick["card_count"]
    assert "ret is -8005" in sick["card_count"]["message"]
    assert all(r["ok"] for r in facts_of(rows, "cm01").values())
    assert findings and {f.entity.split("/")[0] for f in findings} == {"cm02"}


@pytest.mark.sshd
def test_h16_05_query_gpu_printing_an_nvml_error_beside_its_row_and_exit_0(sshd_cluster, tmp_path: Path) -> None:
    """H16-05: node2's `nvidia-smi --query-gpu` prints its CSV row and then NVML's 'Unable to
    determine the device handle for gpu 0000:07:00.0: Unknown Error' on stdout, and exits 0 (as
    nvidia-smi does for a GPU fallen off the bus while another still answers)."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    csv = cluster["node2"].directory / "data" / "csv"
    csv.write_text(csv.read_text() + "Unable to determine the device handle for gpu 0000:07:00.0: Unknown Error\n")
    bad, findings = _facts(inv, cluster)
    assert "card_count" in {r["fact"] for r in bad.get("node2", [])}, bad
    assert any("Unable to determine the device handle" in r["message"] for r in bad["node2"])
    assert findings and {f.entity.split("/")[0] for f in findings} == {"node2"}


@pytest.mark.sshd
def test_h16_06_a_tool_whose_output_never_ends_is_cut_not_held(sshd_cluster, tmp_path: Path) -> None:
    """H16-06: node2's `nvidia-smi -q` prints its listing and then 100 MB of 'A' lines (a tool in
    a loop; `yes` without end read the same, every byte held in memory until the command timeout,
    300 s by default: gigabytes). Now a command's output is cut at 64 MiB, the command killed, and
    what it read is no pass. (The test prints 100 MB, not forever: main holds what it reads.)"""
    from vendor_ssh import host_facts

    cluster, inv = _two_hosts(sshd_cluster, tmp_path, extra="ssh: {command_timeout: 40}\n")
    _q_does(cluster["node2"], 'cat "$D/q"; yes AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA | head -c 100000000')
    outputs: dict[str, list[dict]] = {}
    started = time.monotonic()
    rows, findings = host_facts(inv, cluster, outputs)
    took = time.monotonic() - started
    q = [o for o in outputs["node2"] if o["command"] == "nvidia-smi -q"]
    # the evidence keeps the head of it, saying where it was cut (a 64 MiB text parsed again by
    # each read of the host's outputs took a minute)
    assert q and len(q[0]["stdout"]) < 1 << 20 and "output cut here" in q[0]["stdout"], [len(o["stdout"]) for o in q]
    bad = [r for r in rows if r.get("host") == "node2" and r.get("tool") == "nvidia-smi" and r.get("fact") == "gpu_report"]
    assert bad and not bad[0]["ok"] and "printed more than 64 MiB" in bad[0]["message"], bad
    assert took < 40, took  # cut at the bound, not at the command timeout
    assert findings and {f.entity for f in findings} == {"node2"}


@pytest.mark.sshd
def test_h16_07_ibstat_answering_in_gzip_is_no_port_state(sshd_cluster, tmp_path: Path) -> None:
    """H16-07: node2's `ibstat` prints its listing gzip-compressed (a wrapper that forgot to
    decompress a cached answer): binary bytes, exit 0."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    data = cluster["node2"].directory / "data" / "ibstat"
    data.write_bytes(gzip.compress(data.read_bytes()))
    bad, findings = _facts(inv, cluster)
    assert [(r["fact"], r["ok"]) for r in bad.get("node2", [])] == [("ib_ports", False)], bad
    assert bad["node2"][0]["status"] in ("parse_failed", "error")
    assert findings and {f.entity for f in findings} == {"node2"}


def _sshd_option(host, line: str) -> None:
    """``host``'s sshd restarted with ``line`` first in its configuration (sshd keeps a
    keyword's first value)."""
    host.config_path.write_text(line + "\n" + host.config_path.read_text())
    host.restart()


@pytest.mark.sshd
def test_h16_08_an_sshd_that_accepts_the_login_and_refuses_every_channel(sshd_cluster, tmp_path: Path) -> None:
    """H16-08: node2's sshd authenticates sncheck and refuses every session channel (`MaxSessions
    0`: 'open failed: administratively prohibited'): no command ever runs there."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path, extra="ssh: {command_timeout: 10, connect_timeout: 5}\n")
    _sshd_option(cluster["node2"], "MaxSessions 0")
    started = time.monotonic()
    r = _cli("connectivity", "-i", inv, *_common(cluster), "--rules", _rules(tmp_path), "--out", tmp_path / "run", "-q")
    assert time.monotonic() - started < 60
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert doc["verdict"] == "fail"
    node2 = {f["rule"]: f["message"] for f in doc["findings"] if f["entity"] == "node2"}
    assert "cannot open a session" in node2.get("host-unreachable", ""), doc["findings"]


@pytest.mark.sshd
def test_h16_09_an_sshd_whose_every_command_exits_0_silently(sshd_cluster, tmp_path: Path) -> None:
    """H16-09: node2's sshd forces every session to `true` (`ForceCommand true`: an account
    locked to nothing): every tool 'exits 0' and prints nothing."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    _sshd_option(cluster["node2"], "ForceCommand true")
    bad, findings = _facts(inv, cluster)
    facts = {r["fact"] for r in bad.get("node2", [])}
    assert {"card_count", "gpu_report", "ib_ports", "dcgmi_diag"} <= facts, bad
    assert not bad.get("node1")
    assert findings and {f.entity for f in findings} == {"node2"}


@pytest.mark.sshd
def test_h16_10_accept_new_host_keys_never_accepts_a_changed_key(sshd_cluster, tmp_path: Path) -> None:
    """H16-10: a run with --accept-new-host-keys after node2 came back with another host key
    (a reinstall, or a machine impersonating it): 'new' is a host known_hosts lacks, not one whose
    key changed. node2 is unreachable (the key named), known_hosts unchanged."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    before = cluster.known_hosts.read_text()
    cluster["node2"].regenerate_host_key()
    r = _cli("connectivity", "-i", inv, *_common(cluster), "--rules", _rules(tmp_path), "--accept-new-host-keys",
             "--out", tmp_path / "run", "-q")
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    node2 = [f for f in doc["findings"] if f["entity"] == "node2"]
    assert node2 and re.search(r"host key", node2[0]["message"], re.I), doc["findings"]
    assert cluster.known_hosts.read_text() == before


def test_h16_11_an_ssh_config_include_is_followed_and_its_commands_refused(tmp_path: Path) -> None:
    """H16-11: the ssh config reaches node2 through `Include hosts.d/*.conf` (OpenSSH reads it;
    paramiko keeps 'include' as a key and drops the file): node2 was dialled at its bare name,
    not the HostName its included block gives. An included file's ProxyCommand is refused like
    one in the file itself, naming the included file and line."""
    from sncheck.errors import ConfigError
    from sncheck.transport import load_ssh_config, resolve_host

    d = tmp_path / "hosts.d"
    d.mkdir()
    (d / "b.conf").write_text("Host node2\n  HostName 127.0.1.2\n  Port 2202\n")
    cfg = tmp_path / "config"
    cfg.write_text(f"Host node1\n  HostName 127.0.1.1\n\nInclude {d}/*.conf\n")
    spec = resolve_host("node2", config=load_ssh_config(cfg))
    assert (spec.hostname, spec.port) == ("127.0.1.2", 2202), spec
    (d / "c.conf").write_text("Host *\n  ProxyCommand sh -c 'touch /tmp/h16-11-pwned'\n")
    with pytest.raises(ConfigError) as e:
        load_ssh_config(cfg)
    assert f"{d / 'c.conf'}:2" in str(e.value) and "ProxyCommand" in str(e.value), str(e.value)
    # a relative Include is read from ~/.ssh, as OpenSSH reads a user's; a loop of Includes ends
    (d / "c.conf").write_text(f"Include {cfg}\n")
    with pytest.raises(ConfigError) as e:
        load_ssh_config(cfg)
    assert "Include" in str(e.value) and "deep" in str(e.value), str(e.value)


@pytest.mark.parametrize("what", ["identity_file", "known_hosts"])
def test_h16_12_an_identity_or_known_hosts_file_that_is_a_fifo(tmp_path: Path, what: str) -> None:
    """H16-12: the inventory's `ssh.identity_file` (or --known-hosts) is a FIFO no one writes to:
    opening it blocks forever. One line naming the file, exit 2, before anything is dialled."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    inv = tmp_path / "inv.yaml"
    key = f"ssh: {{identity_file: {fifo}, connect_timeout: 2}}\n" if what == "identity_file" else \
        "ssh: {connect_timeout: 2}\n"
    inv.write_text("name: t\ndesign:\n  scale_up: {bandwidth: '1 GB/s', latency: '100 ms'}\n"
                   "supernodes:\n  - {name: sn0, hosts: 'n[1-2]', cards_per_host: 1}\n"
                   f"backend: {{type: ssh}}\n{key}"
                   "hosts:\n  n1: {address: 127.0.9.1, port: 2}\n  n2: {address: 127.0.9.2, port: 2}\n")
    extra = ["--known-hosts", fifo] if what == "known_hosts" else []
    started = time.monotonic()
    line = one_line_error(_cli("connectivity", "-i", inv, "--backend", "ssh", *extra, "--out", tmp_path / "run", "-q"))
    assert time.monotonic() - started < 30
    assert str(fifo) in line and "not a regular file" in line, line


@pytest.mark.sshd
def test_h16_13_a_gpu_name_carrying_a_prometheus_line_is_one_label(sshd_cluster, tmp_path: Path) -> None:
    """H16-13: node2's `nvidia-smi --query-gpu` names its GPU `A100"} 1\\nsncheck_fake 1 #`: a quote,
    a brace and a line break from a tool's answer, carried into the reports' labels and cells."""
    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    csv = cluster["node2"].directory / "data" / "csv"
    csv.write_text(csv.read_text().replace("NVIDIA A100-SXM4-80GB", 'A100"} 1\\nsncheck_fake{x="y"} 1 #<script>'))
    r = _cli("connectivity", "-i", inv, *_common(cluster), "--rules", _rules(tmp_path), "--out", tmp_path / "run",
             "-q", "--format", "html,junit,prometheus")
    assert r.exit_code in (0, 1) and "Traceback" not in r.output, r.output
    prom = (tmp_path / "run" / "sncheck.prom").read_text()
    assert not [ln for ln in prom.splitlines() if ln.startswith("sncheck_fake")], prom[:2000]
    assert "<script>" not in (tmp_path / "run" / "report.html").read_text()


# -- Slurm answers that lie (the loopback cluster) -----------------------------------------------------

def _slurm_facts(setup, monkeypatch, node2: str) -> dict[str, list[dict]]:
    """Host facts of the four loopback nodes through srun, every tool replaying a clean A100, with
    node2's python doing ``node2`` (shell) first: each node's rows."""
    from test_node_check import install_tools
    from test_srun_launcher import backend, fake_python

    cluster, topo, tmp = setup
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    install_tools(bin_dir, "a100", nodes=tuple(cluster.names))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    rows: list[dict] = []
    backend(topo, tmp, python=fake_python(tmp, "node2", node2)).host_facts(("node1", "node2", "node3", "node4"),
                                                                          rows.append)
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r["host"], []).append(r)
    return out


@pytest.mark.slurm
def test_h16_14_a_node_whose_step_answers_as_another_node(shared_slurm_cluster, tmp_path: Path, monkeypatch) -> None:
    """H16-14: node2's task of the facts step says it is node1 (SLURMD_NODENAME rewritten by a
    wrapper): node1 had two sets of answers and was judged on whichever came last, maybe node2's.
    Neither node is judged on an answer that may be the other's."""
    from test_srun_launcher import _setup

    rows = _slurm_facts(_setup(shared_slurm_cluster, tmp_path, monkeypatch), monkeypatch,
                        "export SLURMD_NODENAME=node1")
    for node in ("node1", "node2"):
        assert rows[node] and not [r for r in rows[node] if r["ok"] and r["fact"] != "reachable"], rows[node]
    assert any("answered as node1" in r["message"] for r in rows["node1"]), [r["message"] for r in rows["node1"]]
    assert all(r["ok"] for n in ("node3", "node4") for r in rows[n])


@pytest.mark.slurm
def test_h16_15_a_node_whose_step_answers_as_a_node_outside_the_step(shared_slurm_cluster, tmp_path: Path,
                                                                     monkeypatch) -> None:
    """H16-15: node2's task answers as `node9`, a node neither the step nor the inventory has: node2
    is not measured, and its row says what answered instead of 'no output'."""
    from test_srun_launcher import _setup

    rows = _slurm_facts(_setup(shared_slurm_cluster, tmp_path, monkeypatch), monkeypatch,
                        "export SLURMD_NODENAME=node9")
    (r,) = [r for r in rows["node2"] if not r["ok"]]
    assert r["status"] == "unreachable" and "node9" in r["message"], r
    assert "node9" not in rows
    assert all(r["ok"] for n in ("node1", "node3", "node4") for r in rows[n])


@pytest.mark.slurm
def test_h16_16_a_facts_step_that_exits_0_with_no_output(shared_slurm_cluster, tmp_path: Path, monkeypatch) -> None:
    """H16-16: node2's task of the facts step exits 0 printing nothing: srun exits 0."""
    from test_srun_launcher import _setup

    rows = _slurm_facts(_setup(shared_slurm_cluster, tmp_path, monkeypatch), monkeypatch, "exit 0")
    (r,) = rows["node2"]
    assert (r["fact"], r["ok"], r["status"]) == ("reachable", False, "unreachable"), r
    assert "node2: no facts through srun" in r["message"], r
    assert all(r["ok"] for n in ("node1", "node3", "node4") for r in rows[n])


@pytest.mark.slurm
def test_h16_27_a_slurm_node_s_tool_printing_without_end_is_cut(shared_slurm_cluster, tmp_path: Path,
                                                              monkeypatch) -> None:
    """H16-27: on node2, `nvidia-smi -q` prints its listing and then 80 MB of `yes` (without end
    alike): the facts step's task held it all (subprocess.run's capture), wrote it as one JSON line
    and the login node read it whole, up to the fact timeout. Now cut at the SSH transport's 64
    MiB by the kernel (RLIMIT_FSIZE), its facts an error, only its head sent back."""
    from test_srun_launcher import _setup

    bin2 = tmp_path / "bin2"
    bin2.mkdir()
    (bin2 / "nvidia-smi").write_text(f'#!/bin/sh\nif [ "$*" = "-q" ]; then cat {tmp_path}/bin/data/q; '
                                     'yes | head -c 80000000; exit 0; fi\n'
                                     f'exec {tmp_path}/bin/nvidia-smi "$@"\n')
    (bin2 / "nvidia-smi").chmod(0o755)
    rows = _slurm_facts(_setup(shared_slurm_cluster, tmp_path, monkeypatch), monkeypatch, f"export PATH={bin2}:$PATH")
    q = [r for r in rows["node2"] if r["fact"] == "gpu_report"]
    assert q and not q[0]["ok"] and q[0]["status"] == "error", q
    assert "printed more than 64 MiB" in q[0]["message"], q[0]["message"]
    assert all(r["ok"] for n in ("node1", "node3", "node4") for r in rows[n])
    assert [r["fact"] for r in rows["node2"] if not r["ok"]] == \
        ["gpu_report", "pcie_width", "pcie_gen", "ecc", "remapped_rows", "retired_pages", "clock_reasons"]


def test_h16_17_a_task_printing_another_step_s_cancel_line_hides_no_failure() -> None:
    """H16-17: srun's stderr holds a task's own line `slurmstepd: error: *** STEP 77.0 ON node9
    CANCELLED AT ... DUE TO TIME LIMIT ***` (a task echoing another job's log) beside srun's
    `node1: task 0: Exited with exit code 1` of this step (on node1, node2): read as Slurm's cancel
    of the step, the failed node was dropped and every host read 'timed out'. A cancel line of a
    node outside the step is not this step's."""
    from sncheck.slurm.steps import cancelled, failed_nodes

    err = ("slurmstepd: error: *** STEP 77.0 ON node9 CANCELLED AT 2026-12-06T16:00:00 DUE TO TIME LIMIT ***\n"
           "srun: error: node1: task 0: Exited with exit code 1\n")
    assert cancelled(err, nodes=("node1", "node2")) is None
    assert failed_nodes(err, cancelled=False) == {"node1": "task 0: Exited with exit code 1"}
    own = err.replace("node9", "node2")
    assert cancelled(own, nodes=("node1", "node2")) is not None  # the step's own node: Slurm's cancel
    assert cancelled(err) is not None  # no nodes given: as before


# -- what landed in stop 46 ---------------------------------------------------------------------------

def _golden_copy(tmp_path: Path, name: str, ranks: object) -> Path:
    doc = json.loads((ROOT / "fixtures" / "golden" / "mock-demo.json").read_text())
    doc["config"]["ranks"] = ranks
    doc["name"] = name
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("ranks", [0, -4, True, 4.0, 10 ** 12])
def test_h16_18_a_golden_curve_for_replicas_of_no_size(tmp_path: Path, ranks: object) -> None:
    """H16-18: a playbook's per-size golden list holding a curve whose `config.ranks` is 0, -4,
    true, 4.0 or 10^12: a replica size no host has or can have. Exit 2 naming the curve."""
    curve = _golden_copy(tmp_path, "odd", ranks)
    pb = tmp_path / "pb.yaml"
    pb.write_text(f"name: g\nlayers:\n  - golden: {{reference: [{curve}, mock-8]}}\n")
    line = one_line_error(_cli("run", pb, "-i", DEMO, "--backend", "mock", "--seed", 1, "-q", "--out", tmp_path / "r"))
    assert str(curve) in line and "ranks" in line, line
    assert not (tmp_path / "r" / "results.json").exists()


def test_h16_19_a_golden_list_naming_one_curve_twice_says_so(tmp_path: Path) -> None:
    """H16-19: `reference: [mock-demo, mock-demo]`: refused, but the message said 'must be ... a
    non-empty list of them, got a list' (what is wrong with the list: not said)."""
    pb = tmp_path / "pb.yaml"
    pb.write_text("name: g\nlayers:\n  - golden: {reference: [mock-demo, mock-8, mock-demo]}\n")
    line = one_line_error(_cli("run", pb, "-i", DEMO, "--backend", "mock", "--seed", 1, "-q", "--out", tmp_path / "r"))
    assert f"{pb}:3:" in line and "'mock-demo'" in line and "twice" in line, line


@pytest.mark.parametrize("platform", ["", "AMD-MI300X", "amd-mi300x ", "../fixtures/inventories/demo-2sn"])
def test_h16_20_parse_platform_spelled_otherwise(tmp_path: Path, platform: str) -> None:
    """H16-20: `parse rocm-smi-showtopo --platform` given empty, in capitals, with a trailing blank
    or as a path: a platform is one of the shipped names exactly; exit 2 listing them."""
    cap = ROOT / "fixtures" / "real" / "amd" / "16_rocm-smi_showtopo_4gpu_pcie_only_weight52_hops3_issue108.txt"
    line = one_line_error(_cli("parse", "rocm-smi-showtopo", cap, "--platform", platform))
    assert f"unknown platform {platform!r}" in line and "amd-mi300x" in line, line


@pytest.mark.parametrize(("view", "capture"), [
    ("amd-smi-monitor", "04_amd-smi_metric_mi300x_blog_truncated.txt"),
    ("amd-smi-topology", "07_amd-smi_xgmi_link_metric_table_mi300x_blog_truncated.txt"),
    ("amd-smi-xgmi", "06_amd-smi_topology_access_weight_mi300x_8gpu_blog_truncated.txt"),
    ("amd-smi", "05_amd-smi_monitor_putm_mi300x_8gpu_blog.txt"),
    ("rocm-smi-showtopo", "06_amd-smi_topology_access_weight_mi300x_8gpu_blog_truncated.txt"),
    ("rocm-smi", "05_amd-smi_monitor_putm_mi300x_8gpu_blog.txt"),
])
def test_h16_21_amd_views_fed_the_same_vendor_s_other_views(tmp_path: Path, view: str, capture: str) -> None:
    """H16-21: each AMD view fed another AMD view's capture (amd-smi metric as monitor, the xgmi
    table as topology, amd-smi monitor as rocm-smi): after the key vocabulary (stop 46) these
    share upper-case keys and GPU columns. Exit 1, never a reading of the wrong table."""
    from sncheck.vendors.parsers import strip_source_header

    path = tmp_path / capture
    path.write_text(strip_source_header((ROOT / "fixtures" / "real" / "amd" / capture).read_text()))
    r = _cli("parse", view, path)
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output


def test_h16_22_watch_a_dump_that_is_a_fifo_never_hangs(tmp_path: Path) -> None:
    """H16-22: a dump directory whose `ras.txt` is a FIFO no one writes to (a job's pipe left
    behind): opening it would block forever. Unreadable dump, a finding, exit 1."""
    d = tmp_path / "dumps"
    d.mkdir()
    os.mkfifo(d / "ras.txt")
    started = time.monotonic()
    r = _cli("watch", d, "--once", "--out", tmp_path / "out")
    assert time.monotonic() - started < 30
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [f["rule"] for f in doc["findings"]] == ["watch-dump-unreadable"], doc["findings"]
    assert "FIFO" in doc["findings"][0]["message"]


@pytest.mark.parametrize("args", [("status",), ("history", "node1"), ("capacity",)])
def test_h16_23_a_state_directory_that_is_a_device(args: tuple[str, ...]) -> None:
    """H16-23: `--state-dir /dev/null` (a character device) for the store's readers."""
    r = _cli(*args, "--state-dir", "/dev/null")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "/dev/null" in r.output and "not a directory" in r.output, r.output


def test_h16_24_two_supernodes_naming_one_host_in_two_cases(tmp_path: Path) -> None:
    """H16-24: `node1` in sn0 and `NODE1` in sn1: one DNS name (case is no part of it), so one
    host in two supernodes."""
    inv = tmp_path / "inv.yaml"
    inv.write_text("name: t\ndesign:\n  scale_up: {bandwidth: '1 GB/s', latency: '100 ms'}\n"
                   "supernodes:\n  - {name: sn0, hosts: 'node[1-2]', cards_per_host: 1}\n"
                   "  - {name: sn1, hosts: 'NODE1,node3', cards_per_host: 1}\n")
    line = one_line_error(_cli("inventory", "check", inv))
    assert f"{inv}:6:" in line and "NODE1" in line and "node1" in line, line


def test_h16_25_a_kernel_log_xid_line_journalctl_cut_still_reports_the_xid(tmp_path: Path) -> None:
    """H16-25: journalctl cut an Xid 79 line with its '…' (stop 46 reads such a line as cut): the
    Xid, whose number came before the cut, is still reported, and the cut is said: exit 1."""
    log = tmp_path / "k.txt"
    log.write_text("2026-12-06T10:00:00+0000 host kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fal…\n")
    r = _cli("parse", "kernel-log", log, "--json")
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "Xid 79" in r.output, r.output


def test_h16_26_an_aer_message_with_no_details_on_a_gpu_names_the_gpu_bus(tmp_path: Path) -> None:
    """H16-26: an AER 'Uncorrected (Fatal) error message received from 0000:3b:00.0 (no details
    found' (6.16) alone in a log: a fatal report with no details is a fault (details false), exit 1,
    never a quiet log."""
    log = tmp_path / "k.txt"
    log.write_text("[ 12.345678] pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error message received from "
                   "0000:3b:00.0 (no details found\n")
    r = _cli("parse", "kernel-log", log, "--json")
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    doc = json.loads(r.output[: r.output.rindex("}") + 1])
    assert doc["events"] and doc["events"][0].get("details") is False, doc["events"]
    assert "0000:3b:00" in json.dumps(doc["events"]), doc["events"]
