"""The SSH backend against real sshd servers on 127.0.1.x ("mocked hosts": real SSH, recorded tools).

Each host's PATH starts with a directory of fake tools that replay real captures from
fixtures/real: nvidia-smi (chosen by its arguments), ibstat, dcgmi, and for the launcher
tests mpirun and nccl-tests binaries. A `python3` there runs this interpreter, so
torchrun and the torch probe run for real (gloo over loopback).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shlex
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from sshd_harness import SshdCluster, SshdHost, install_fake_tool, known_hosts_name

from sncheck.backends.ssh import SshBackend
from sncheck.cli.main import main
from sncheck.config.faultplan import Fault
from sncheck.run.inputs import load_inventory
from sncheck.probeplan import Group, StressPlan, connectivity_plan
from sncheck.vendors.nvidia.checks import COMMANDS, DEFAULT_CHECKS
from sncheck.vendors.nccltests.parse import parse_nccl_tests
from sncheck.vendors.nccltests.tool import collective_rows as nccl_collective_rows
from sncheck.vendors.parsers import strip_source_header
from sncheck.topology import Topology
from sncheck.store.rundir import read_rows
from sncheck.vendors.nvidia import sim as nvidia_sim
from sncheck.vendors.sim import HostState, own_ids

pytestmark = pytest.mark.sshd

REPO = Path(__file__).resolve().parents[1]
REAL = REPO / "fixtures" / "real"

# No real capture of `nvidia-smi --query-gpu=... --format=csv,noheader` exists, so these
# are synthesised, one line per GPU in the field order of nvidia_smi.QUERY_GPU_FIELDS,
# consistent with the -q capture each profile replays (names, bus ids, driver, PCIe).
# Not the H100 capture (03) for healthy hosts: it has HW Slowdown active, a real fault.
CSV_LINES = {
    "a100": [  # -q 01 (8x A100, driver 535.86.10) with the UUIDs of nvlink -s 05
        ("0, NVIDIA A100-SXM4-80GB, GPU-5269b708-678a-b1a8-60f0-c90406537486, 00000001:00:00.0, 81920 MiB, "
         "535.86.10, 4, 4, 16, 16, 33, 62.29 W, 0"),
        ("1, NVIDIA A100-SXM4-80GB, GPU-a7605225-d684-1f65-4ad4-ee2ab39338b4, 00000002:00:00.0, 81920 MiB, "
         "535.86.10, 4, 4, 16, 16, 31, 60.12 W, 0"),
    ],
    "rtx4090": [  # -q 08 (8x RTX 4090, driver 535.154.05; idle GPUs at PCIe gen 1 of 4, ECC N/A)
        ("0, NVIDIA GeForce RTX 4090, GPU-1c6f4e1e-6ba6-ba5d-2e3f-1bd2bb0a1fd3, 00000000:01:00.0, 24564 MiB, "
         "535.154.05, 1, 4, 16, 16, 34, 21.57 W, [N/A]"),
        ("1, NVIDIA GeForce RTX 4090, GPU-7a0b2a44-8c1d-5a32-0e3b-2a5c0c3d6e41, 00000000:23:00.0, 24564 MiB, "
         "535.154.05, 4, 4, 16, 16, 41, 49.88 W, [N/A]"),
    ],
}


def nvlink_errors_whole(cards: int) -> str:
    """``nvidia-smi nvlink -e`` of a healthy host of ``cards`` GPUs, every link's counters 0:
    the simulator's, whole. The real capture of that class (nvidia-smi-nvlink/04) elides 15
    of its 18 links with the author's '[...]', so it is not whole output and is not a host's."""
    return nvidia_sim.render_nvlink_errors(HostState("host", cards))


def query_remap_pending(cards: int) -> str:
    """``nvidia-smi -q`` of a host of ``cards`` GPUs whose last card has a row remap pending: the
    simulator's, whole, with that card's Remapped Rows section of the real capture
    nvidia-smi-q/02 (an excerpt with '[...]': not whole, so not a host's output itself)."""
    fault = Fault("remap_pending", f"host/gpu{cards - 1}")
    return nvidia_sim.render_query(HostState("host", cards, None, (fault,)))


# Each tool's output: a real capture (fixtures/real; a host's first cards of it) or, where no
# whole real capture of the class exists, a function of the host's cards rendering it.
Source = str | Callable[[int], str] | None
PROFILES: dict[str, dict[str, Any]] = {  # tool -> Source; "csv" -> a CSV_LINES key
    # healthy: every fact passes
    "a100": {"topo": "nvidia-smi-topo/05_a100_8gpu_nv12_2numa_author_compacted_spacing.txt",
             "nvlink_s": "nvidia-smi-nvlink/05_status_a100_8gpu_12links_25GBs.txt",
             "nvlink_e": nvlink_errors_whole,
             "q": "nvidia-smi-q/01_q_d_page_retirement_8gpu_a100_clean.txt",
             "ibstat": "ib/06_ibstat_2CA_cx6dx_roce_100g_space_indented.txt",
             "dcgmi": "dcgmi-diag/01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt", "csv": "a100"},
    # healthy: no NVLink (nvlink -s prints nothing, as the A10 capture 06 shows; -e likewise)
    "rtx4090": {"topo": "nvidia-smi-topo/04_2x1080ti_phb_consumer_numa_na.txt",
                "nvlink_s": "nvidia-smi-nvlink/06_status_a10_no_nvlink.txt", "nvlink_e": None,
                "q": "nvidia-smi-q/08_535.154.05_8xRTX4090_sw_power_cap_ecc_disabled.txt",
                "ibstat": "ib/04_ibstat_h100_roce_12CA_all_active_eth.txt",
                "dcgmi": "dcgmi-diag/04_r3_json_1gpu_pass_eud_skip.json.txt", "csv": "rtx4090"},
    # sick: all NVLinks inactive, a row remap pending, DCGM fails, and no ibstat installed
    "sick": {"topo": "nvidia-smi-topo/05_a100_8gpu_nv12_2numa_author_compacted_spacing.txt",
             "nvlink_s": "nvidia-smi-nvlink/02_status_a100_all_links_inactive_error.txt",
             "nvlink_e": nvlink_errors_whole, "q": query_remap_pending,
             "ibstat": None, "dcgmi": "dcgmi-diag/03_r2_fragment_gpu_memory_fail_gpu0_thermal_warning.txt",
             "csv": "a100"},
}
FAKE_NVIDIA_SMI = """#!/bin/sh
# fake nvidia-smi: replays captured output chosen by its arguments (a Slurm node's own, by its
# name, where one bin directory serves every node)
D={data}
[ -n "$SLURMD_NODENAME" ] && [ -d "$D/hosts/$SLURMD_NODENAME" ] && D="$D/hosts/$SLURMD_NODENAME"
case "$*" in
  --query-gpu=*) exec cat "$D/csv" ;;
  "topo -m") exec cat "$D/topo" ;;
  "nvlink -s") exec cat "$D/nvlink_s" ;;
  "nvlink -e") exec cat "$D/nvlink_e" ;;
  "-q") exec cat "$D/q" ;;
esac
echo "fake nvidia-smi: unexpected arguments: $*" >&2
exit 2
"""


def sh_quote(path: Path | str) -> str:
    return shlex.quote(str(path))


_GPU_START = {"q": r"^GPU [0-9A-Fa-f]{8}:", "nvlink_s": r"^GPU \d+:", "nvlink_e": r"^GPU \d+:"}


def first_cards(key: str, text: str, cards: int) -> str:
    """A capture of a bigger host as a host of ``cards`` GPUs prints it: its first ``cards``
    GPU sections (and ``Attached GPUs`` of -q), or rows and columns of the topo matrix. A
    run holds each listing of the host's cards to the inventory's count (an 8-GPU listing
    on a 1-card host is not judged); an excerpt with fewer GPUs is kept as it is."""
    if key == "topo":
        lines = text.splitlines()
        head = next(i for i, ln in enumerate(lines) if re.match(r"^\s+GPU0\b", ln))
        n = len(re.findall(r"\bGPU\d+\b", lines[head]))
        if n <= cards:
            return text
        out = lines[:head] + [" " * 8 + "".join(f"GPU{j}".ljust(8) for j in range(cards))
                              + lines[head].split(f"GPU{n - 1}", 1)[1].strip()]
        for ln in lines[head + 1:]:
            m = re.match(r"^GPU(\d+)\s", ln)
            if not m:
                out.append(ln)
            elif int(m.group(1)) < cards:
                cells = ln.split()
                out.append(cells[0].ljust(8) + "".join(c.ljust(8) for c in cells[1:1 + cards])
                           + "  ".join(cells[1 + n:]))
        return "\n".join(out) + "\n"
    at = [m.start() for m in re.finditer(_GPU_START[key], text, re.MULTILINE)]
    if len(at) <= cards:
        return text
    text = text[: at[cards]]
    return re.sub(r"^(Attached GPUs\s*:\s*)\d+", lambda m: f"{m.group(1)}{cards}", text, flags=re.MULTILINE)


def profile_output(spec: dict[str, Any], key: str, cards: int) -> str:
    """What the fake nvidia-smi prints for ``key`` on a host of ``cards`` cards."""
    source = spec[key]
    if source is None:
        return ""
    if callable(source):
        return source(cards)
    return first_cards(key, strip_source_header((REAL / source).read_text()), cards)


def write_profile(data: Path, profile: str, cards: int, host: str | None) -> None:
    """The fake nvidia-smi's (and ibstat's) outputs of ``profile`` in ``data``: the captures' GPU UUIDs
    and adapter GUIDs made ``host``'s own (:func:`sncheck.vendors.sim.own_ids`: one card is in one machine), or the
    captures' as they are (None)."""
    spec = PROFILES[profile]
    data.mkdir(parents=True, exist_ok=True)
    mine = (lambda text: own_ids(text, host)) if host else (lambda text: text)
    for key in ("topo", "nvlink_s", "nvlink_e", "q"):
        (data / key).write_text(mine(profile_output(spec, key, cards)))
    (data / "csv").write_text(mine("\n".join(CSV_LINES[spec["csv"]][:cards]) + "\n"))
    if spec["ibstat"]:  # its adapters' GUIDs the host's own too (one adapter is in one machine: H20-11)
        (data / "ibstat").write_text(mine(strip_source_header((REAL / spec["ibstat"]).read_text())))


def install_profile(host: SshdHost, profile: str, cards: int) -> None:
    spec = PROFILES[profile]
    data = host.directory / "data"
    write_profile(data, profile, cards, host.name)
    install_fake_tool(host, "nvidia-smi", FAKE_NVIDIA_SMI.format(data=sh_quote(data)))
    for tool in ("ibstat", "dcgmi"):
        if spec[tool]:
            if tool == "dcgmi":
                (data / tool).write_text(strip_source_header((REAL / spec[tool]).read_text()))
            install_fake_tool(host, tool, f"#!/bin/sh\nexec cat {sh_quote(data / tool)}\n")
    install_python(host)


def install_python(host: SshdHost) -> None:
    """`python3` on the host's PATH is this interpreter; all "hosts" talk over loopback."""
    install_fake_tool(host, "python3", (
        "#!/bin/sh\n"
        f"export GLOO_SOCKET_IFNAME=lo PYTHONPATH={sh_quote(REPO)}\n"
        f'exec {sh_quote(sys.executable)} "$@"\n'))


def write_inventory(path: Path, cluster: SshdCluster, cards: int = 1, extra: str = "",
                    names: list[str] | None = None) -> Path:
    names = names or cluster.names
    hosts = "\n".join(f"  {n}: {{address: {cluster[n].address}, port: {cluster[n].port}}}" for n in names)
    path.write_text(
        "name: ssh-test\n"
        "design:\n"
        # loopback gloo, not NVLink: design values that any working pair meets
        '  scale_up: {bandwidth: "0.001 GB/s", latency: "100 ms"}\n'
        "supernodes:\n"
        f"  - {{name: sn0, hosts: \"{','.join(names)}\", cards_per_host: {cards}}}\n"
        "backend: {type: ssh, dist_backend: gloo}\n"
        f"{extra}"
        f"hosts:\n{hosts}\n")
    return path


def gateway_pair(sshd_cluster: Callable[..., SshdCluster], tmp_path: Path,
                 gateways: tuple[str, ...]) -> tuple[SshdCluster, Path]:
    """Two loopback hosts (one machine), python3 on each this interpreter, ``gateways`` marked
    ``ssh_gateway: true`` in their inventory: (cluster, inventory path)."""
    cluster = sshd_cluster(2)
    for host in cluster:
        install_python(host)
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=1)
    text = inv.read_text()
    for g in gateways:
        text = text.replace(f"port: {cluster[g].port}}}", f"port: {cluster[g].port}, ssh_gateway: true}}")
    inv.write_text(text)
    assert text.count("ssh_gateway: true") == len(gateways)
    return cluster, inv


def skip_where_resolves(name: str) -> None:
    """Skip a test that needs ``name`` to resolve nowhere on this machine."""
    import socket  # noqa: PLC0415 -- this helper alone needs it
    try:
        socket.getaddrinfo(name, None)
    except OSError:
        return
    pytest.skip(f"{name} resolves on this machine")


def backend_for(inventory: Path, cluster: SshdCluster, **options) -> SshBackend:
    options.setdefault("known_hosts", str(cluster.known_hosts))
    options.setdefault("ssh_config", str(cluster.ssh_config))
    return SshBackend(Topology(load_inventory(inventory)), **options)


def collect(fn: Callable[..., None], *args) -> list[dict]:
    rows: list[dict] = []
    fn(*args, rows.append)
    return rows


def all_reduce_rows(backend: SshBackend, group: Group) -> tuple[list[dict], float]:
    """One small all_reduce over ``group`` on ``backend``, closed after: its rows, and the
    seconds it took (a job that fails must not wait out a rendezvous)."""
    plan = StressPlan(groups=(group,), collectives=("all_reduce",), sizes=(4096,), warmup=1, iters=1)
    started = time.monotonic()
    try:
        rows = collect(backend.collectives, plan)
    finally:
        backend.close()
    return rows, time.monotonic() - started


def probe_rows(inventory: Path, cluster: SshdCluster) -> list[dict]:
    """The connectivity probe over ``cluster``: every row it gives."""
    backend = backend_for(inventory, cluster)
    try:
        return collect(backend.p2p, connectivity_plan(backend.topo))
    finally:
        backend.close()


def rules_without_timing_peers(path: Path) -> Path:
    """The shipped rules minus those judging timing against peers or the pair's own tail.

    Four gloo ranks on a shared two-core machine do not time alike, and that is the
    machine, not a host; those rules are tested on deterministic data elsewhere. What
    this backend must get right is still judged: host facts, reachability, not-run,
    payload integrity and the design ratios. The group rule (collective-group-slow) stays:
    two hosts' stress groups differ by 25% and 20 us at 4 KiB on a quiet machine, and a
    group with one peer of its rank count is judged only where bandwidth-bound, beyond the
    run's measured noise (reviews16 #9), so a healthy loopback night is no finding of it.
    """
    shipped = yaml.safe_load((REPO / "fixtures" / "rules" / "default.yaml").read_text())
    kept = [r for r in shipped["rules"] if r["op"] not in ("peer_outlier", "threshold")]
    assert {"host-fact", "not-run", "p2p-data-corruption", "collective-group-slow"} <= {r["name"] for r in kept}
    path.write_text(yaml.safe_dump({**shipped, "rules": kept}, sort_keys=False))
    return path


def failed_facts(rows: list[dict]) -> dict[str, list[dict]]:
    """Host -> its host_fact rows that are not a pass (each becomes a finding)."""
    out: dict[str, list[dict]] = {}
    for r in rows:
        if r["kind"] == "host_fact" and not r["ok"]:
            out.setdefault(r["host"], []).append(r)
    return out


def all_text(finding: dict) -> str:
    """A finding's message and those merged into it as related evidence."""
    related = finding["evidence"].get("related", [])
    return " ".join([finding["rule"], finding["message"], *(f"{r['rule']} {r['message']}" for r in related)])


# --------------------------------------------------------------------------- the whole layer

def test_connectivity_names_the_sick_and_the_down_host_only(sshd_cluster, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cluster = sshd_cluster(5, ["node1", "node2", "node3", "node4", "node5"])
    for name, profile in (("node1", "a100"), ("node2", "rtx4090"), ("node3", "sick"), ("node4", "a100")):
        install_profile(cluster[name], profile, cards=1)
    cluster["node5"].kill()  # in the inventory, nothing listening: refused, retried, reported
    inv = write_inventory(tmp_path / "inv.yaml", cluster)
    playbook = tmp_path / "pb.yaml"
    # confirm: false, so that the layer runs once (each retest would be another torchrun job)
    playbook.write_text("name: ssh-connectivity\nlayers:\n  - connectivity: {bw_bytes: 1M, lat_iters: 5, "
                        "bw_iters: 2}\ngate: warning\nconfirm: false\n")
    rules = rules_without_timing_peers(tmp_path / "rules.yaml")
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(playbook), "-i", str(inv), "--backend", "ssh",
                                       "--rules", str(rules),
                                       "--known-hosts", str(cluster.known_hosts),
                                       "--ssh-config", str(cluster.ssh_config), "--out", str(out), "-q"])
    assert result.exit_code == 1, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["verdict"] == "fail" and results["backend"] == "ssh"
    by_entity = {f["entity"]: f for f in results["findings"] if f.get("about") != "check"}

    # node3's host findings, and its card's: the -q listing is whole, so the remap names gpu0
    sick = " ".join(all_text(f) for f in results["findings"] if f["entity"] in ("node3", "node3/gpu0"))
    assert "node3" in sick
    for expected in ("all links are inactive", "row remap pending", "ibstat not found on the PATH",
                     "dcgmi diag: Fail: GPU Memory"):
        assert expected in sick, (expected, sick)

    down = by_entity["node5"]
    assert down["rule"] == "host-unreachable" and down["entity_kind"] == "host"
    assert "connection refused" in down["message"] and "gave up after 3 attempts" in down["message"]

    # node2's dcgmi (the r3 JSON capture) skipped its EUD Test: that test is not judged, a
    # finding about the check (nothing isolated), never a pass
    skipped = [f for f in results["findings"] if f["entity"] == "node2" and f["rule"] == "not-measured"]
    assert [f["about"] for f in skipped] == ["check"] and "EUD Test" in skipped[0]["message"], skipped
    healthy = [f for f in results["findings"] if any(h in f["entity"] for h in ("node1", "node2", "node4"))
               and f not in skipped]
    assert healthy == [], healthy
    assert set(by_entity) == {"node3", "node3/gpu0", "node5"}, sorted(by_entity)
    assert by_entity["node3/gpu0"]["entity_kind"] == "card" and "row remap pending" in all_text(by_entity["node3/gpu0"])
    # The missing ibstat is a finding about the check, apart from node3's hardware findings.
    assert sorted(f["rule"] for f in results["findings"] if f.get("about") == "check") == \
        ["not-measured", "not-run-missing-tool"]

    rows = read_rows(out)
    p2p = [r for r in rows if r["kind"] == "p2p"]
    live = [r for r in p2p if "node5" not in r["link"]]
    assert len(live) == 6 and all(r["status"] == "ok" and r["checksum_ok"] and r["bw_GBps"] > 0 for r in live)
    assert {r["status"] for r in p2p if "node5" in r["link"]} == {"unreachable"}
    facts = {(r["host"], r["fact"]): r for r in rows if r["kind"] == "host_fact"}
    assert facts[("node2", "nvlink")]["ok"] and "no NVLink" in facts[("node2", "nvlink")]["message"]
    assert facts[("node2", "pcie_gen")]["ok"] and facts[("node2", "pcie_gen")]["value"] == 1
    assert facts[("node1", "card_count")]["value"] == 1


# --------------------------------------------------------------------------- host keys, injection

def test_unknown_host_key_is_refused_then_accepted_on_request(sshd_cluster, tmp_path: Path) -> None:
    cluster = sshd_cluster(2)
    for host in cluster:
        install_profile(host, "a100", cards=1)
    inv = write_inventory(tmp_path / "inv.yaml", cluster)
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["connectivity", "-i", str(inv), "--backend", "ssh",
                                       "--known-hosts", str(known_hosts), "--ssh-config", str(cluster.ssh_config),
                                       "--out", str(out), "-q"])
    assert result.exit_code == 1, result.output
    findings = {f["entity"]: f for f in json.loads((out / "results.json").read_text())["findings"]}
    assert set(findings) == {"node1", "node2"}
    for name, f in findings.items():
        assert f["rule"] == "host-unreachable"
        assert f"unknown host key for [{cluster[name].address}]:{cluster[name].port}" in f["message"]
        assert "add it" in f["message"] and "--accept-new-host-keys" in f["message"]
    assert known_hosts.read_text() == ""

    backend = backend_for(inv, cluster, known_hosts=str(known_hosts), accept_new_host_keys=True)
    try:
        rows = collect(backend.host_facts, ("node1", "node2"))
    finally:
        backend.close()
    reachable = {r["host"]: r["ok"] for r in rows if r["fact"] == "reachable"}
    assert reachable == {"node1": True, "node2": True}
    assert failed_facts(rows) == {}
    recorded = known_hosts.read_text()
    for host in cluster:
        key_type, key = host.host_key_pub.split()[:2]
        assert f"{known_hosts_name(host.address, host.port)} {key_type} {key}" in recorded


def test_inventory_names_and_addresses_cannot_inject(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    runner = CliRunner()
    for hosts, overrides in ((f"node1,node$(touch {marker})", ""),
                             ("node1", f"hosts:\n  node1: {{address: '127.0.1.1;touch {marker}'}}\n"),
                             ("node1", f"hosts:\n  node1: {{address: '127.0.1.1', user: 'root$(touch {marker})'}}\n")):
        inv = tmp_path / "bad.yaml"
        inv.write_text(f"supernodes:\n  - {{name: sn0, hosts: '{hosts}', cards_per_host: 1}}\n{overrides}")
        result = runner.invoke(main, ["connectivity", "-i", str(inv), "--backend", "ssh", "--out",
                                      str(tmp_path / "run"), "-q"])
        assert result.exit_code == 2, result.output
        assert "bad.yaml:" in result.output and ("bad host name" in result.output or "not allowed" in result.output)
    assert not marker.exists()
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------- timeouts, hosts going down

def test_command_timeout_is_a_finding_for_that_host_only(sshd_cluster, tmp_path: Path) -> None:
    cluster = sshd_cluster(3)
    for host in cluster:
        install_profile(host, "a100", cards=1)
    install_fake_tool(cluster["node2"], "nvidia-smi", "#!/bin/sh\nexec sleep 30\n")
    inv = write_inventory(tmp_path / "inv.yaml", cluster, extra="ssh: {command_timeout: 2}\n")
    backend = backend_for(inv, cluster)
    started = time.monotonic()
    try:
        rows = collect(backend.host_facts, ("node1", "node2", "node3"))
    finally:
        backend.close()
    assert time.monotonic() - started < 15  # one timeout, then nvidia-smi is not tried again
    bad = failed_facts(rows)
    assert set(bad) == {"node2"}
    by_fact = {r["fact"]: r for r in bad["node2"]}
    first = by_fact["card_count"]
    assert (first["status"], first["tool"]) == ("timeout", "nvidia-smi")
    assert "node2: `nvidia-smi --query-gpu=" in first["message"] and "timed out after 2." in first["message"]
    later = by_fact["ecc"]
    assert later["status"] == "timeout" and "`nvidia-smi -q` not run: nvidia-smi timed out" in later["message"]
    assert set(by_fact) == {f for c in (COMMANDS[n] for n in DEFAULT_CHECKS) if c.tool == "nvidia-smi" for f in c.facts}
    others = {(r["host"], r["fact"]): r for r in rows if r["host"] != "node2"}
    assert others[("node1", "dcgmi_diag")]["ok"] and others[("node3", "ib_ports")]["ok"]


def test_sshd_killed_mid_run_is_that_host_only(sshd_cluster, tmp_path: Path) -> None:
    cluster = sshd_cluster(3)
    for host in cluster:
        install_profile(host, "a100", cards=1)
    started = tmp_path / "ibstat-started"
    install_fake_tool(cluster["node2"], "ibstat", f"#!/bin/sh\ntouch {sh_quote(started)}\nexec sleep 30\n")
    inv = write_inventory(tmp_path / "inv.yaml", cluster)
    backend = backend_for(inv, cluster)

    def kill_when_started() -> None:
        deadline = time.monotonic() + 120  # a loaded machine (load 14) took over 20 s to reach ibstat
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        cluster["node2"].kill()

    killer = threading.Thread(target=kill_when_started)
    killer.start()
    try:
        rows = collect(backend.host_facts, ("node1", "node2", "node3"))
    finally:
        killer.join()
        backend.close()
    bad = failed_facts(rows)
    assert set(bad) == {"node2"}
    assert [(r["fact"], r["status"]) for r in bad["node2"]] == [("reachable", "unreachable")]
    assert "node2: unreachable: connection lost during host facts" in bad["node2"][0]["message"]
    node2 = [r["fact"] for r in rows if r["host"] == "node2" and r["ok"]]
    assert node2[:2] == ["reachable", "card_count"]  # it was up, then went down
    assert "node2" in backend.down


def test_torch_missing_remotely_is_not_run_naming_the_module(sshd_cluster, tmp_path: Path) -> None:
    cluster = sshd_cluster(2)
    for host in cluster:  # an interpreter without site-packages: sncheck (PYTHONPATH) but no torch
        install_fake_tool(host, "python3", f"#!/bin/sh\nexport PYTHONPATH={sh_quote(REPO)}\n"
                                           f'exec {sh_quote(sys.executable)} -S "$@"\n')
    rows = probe_rows(write_inventory(tmp_path / "inv.yaml", cluster), cluster)
    not_run = {r["entity"]: r for r in rows if r["kind"] == "not_run"}
    assert set(not_run) == {"node1", "node2"}
    for name, r in not_run.items():
        assert (r["status"], r["entity_kind"], r["layer"]) == ("error", "host", "connectivity")
        assert f"{name}: cannot run the torch probe: python3 cannot import torch" in r["message"]
    p2p = [r for r in rows if r["kind"] == "p2p"]
    assert len(p2p) == 1 and p2p[0]["status"] == "unreachable"


# --------------------------------------------------------------------------- launchers

FAKE_MPIRUN = """#!/bin/sh
# fake mpirun: log the argv (one word a line) and the hostfile, then run the first program
LOG={log}
printf '%s\\n' "$@" '---' >> "$LOG"
while [ $# -gt 0 ]; do
  case "$1" in
    --hostfile) cat "$2" >> "$LOG.hostfiles"; shift 2 ;;
    env|*_perf) break ;;
    *) shift ;;
  esac
done
exec "$@"
"""


def test_nccl_tests_through_mpirun_quote_everything(sshd_cluster, tmp_path: Path) -> None:
    cluster = sshd_cluster(2)
    first = cluster["node1"]
    remote_home = Path(pwd.getpwuid(os.getuid()).pw_dir)  # where a remote `touch x` would land
    mark = f"sncheck-pwned-{time.time_ns()}"
    tests_dir = tmp_path / f"nccl tests;touch {mark};$(touch {mark}2)"
    tests_dir.mkdir()
    for name, rel in (("all_reduce_perf", "nccl-tests/all_reduce_perf/01_h100_16ranks_2nodes_float_newcols.txt"),
                      ("alltoall_perf", "nccl-tests/all_reduce_perf/03_p5_2nodes_srun_label_prefix_8B_16G.txt")):
        (tests_dir / f"{name}.out").write_text(strip_source_header((REAL / rel).read_text()))
        tool = tests_dir / name
        tool.write_text(f"#!/bin/sh\nexec cat {sh_quote(tests_dir / (name + '.out'))}\n")
        tool.chmod(0o755)
    log = tmp_path / "mpirun.log"
    install_fake_tool(first, "mpirun", FAKE_MPIRUN.format(log=sh_quote(log)))
    evil = [f"$(touch {tmp_path}/m1)", f"; touch {tmp_path}/m2", f"`touch {tmp_path}/m3`", "--mca", "btl", "^openib"]
    launcher = ("launcher:\n  type: mpirun\n  extra_args: " + json.dumps(evil) + "\n"
                f"  nccl_tests_dir: {json.dumps(str(tests_dir))}\n")
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=2, extra=launcher)
    backend = backend_for(inv, cluster)
    c = [f"node{h}/gpu{g}" for h in (1, 2) for g in (0, 1)]
    plan = StressPlan(groups=(Group("domain:sn0", "domain", tuple(c)),
                              Group("rail:sn0:gpu1", "rail", ("node1/gpu1", "node2/gpu1")),
                              Group("pair:node1/gpu0<->node2/gpu1", "pair", ("node1/gpu0", "node2/gpu1"))),
                      collectives=("all_reduce", "all_to_all"), sizes=(8, 16, 32), warmup=2, iters=5)
    try:
        rows = collect(backend.collectives, plan)
    finally:
        backend.close()

    assert not any((tmp_path / m).exists() for m in ("m1", "m2", "m3"))
    for where in (tmp_path, remote_home, tests_dir):
        assert not (where / mark).exists() and not (where / f"{mark}2").exists()

    coll = [r for r in rows if r["kind"] == "collective"]
    domain_ar = [r for r in coll if r["group"] == "domain:sn0" and r["collective"] == "all_reduce"]
    assert len(domain_ar) == 31 and all(r["status"] == "ok" and r["wrong"] == 0 for r in domain_ar)
    last = domain_ar[-1]
    assert (last["size_bytes"], last["time_us"], last["busbw_GBps"], last["ranks"]) == (8589934592, 47535.0, 338.82, 16)
    # all_to_all replays a run cut short: its rows are kept and the cut is a not_run row naming the command
    cut = [r for r in rows if r["kind"] == "not_run" and r["entity"] == "domain:sn0"]
    assert len(cut) == 1 and cut[0]["status"] == "error" and "truncated run" in cut[0]["message"]
    assert "alltoall_perf -b 8 -e 32 -f 2 -g 1 -c 1 -n 5 -w 2" in cut[0]["message"]
    # the pair runs sendrecv too; there is no sendrecv_perf: an error naming it, never a pass
    pair = [r for r in rows if r["kind"] == "not_run" and r["entity"].startswith("pair:")]
    assert any("sendrecv_perf" in r["message"] and r["status"] == "error" for r in pair), pair

    calls = log.read_text().split("---\n")[:-1]
    words = [call.splitlines() for call in calls]
    domain = words[0]
    assert domain[:4] == ["--hostfile", domain[1], "-np", "4"] and domain[4:10] == evil
    assert domain[10:] == [f"{tests_dir}/all_reduce_perf", "-b", "8", "-e", "32", "-f", "2", "-g", "1", "-c", "1",
                           "-n", "5", "-w", "2"]
    rail = next(w for w in words if "CUDA_VISIBLE_DEVICES=1" in w and "--hostfile" in w)
    assert rail[rail.index("-np") + 1] == "2"
    mpmd = next(w for w in words if ":" in w)
    assert mpmd[:6] == evil and mpmd.count("--host") == 2 and "CUDA_VISIBLE_DEVICES=1" in mpmd
    hostfiles = (tmp_path / "mpirun.log.hostfiles").read_text()
    assert f"{first.address} slots=2\n{cluster['node2'].address} slots=2\n" in hostfiles
    assert f"{first.address} slots=1\n{cluster['node2'].address} slots=1\n" in hostfiles


def test_nccl_collective_rows_from_a_parsed_log() -> None:
    rel = "nccl-tests/all_reduce_perf/02_a100_8gpu_1proc_oldcols_error_NA_interleaved_info.txt"
    text = strip_source_header((REAL / rel).read_text())
    rows = nccl_collective_rows(parse_nccl_tests(text), Group("host:n1", "host", ("n1/gpu0", "n1/gpu1")),
                                "all_reduce", repeat=3)
    assert len(rows) == 34 and {r["repeat"] for r in rows} == {3}
    assert all(r["wrong"] is None for r in rows)  # an old layout: an error column, no #wrong
    assert rows[-1]["busbw_GBps"] == 235.26 and rows[-1]["ranks"] == 8


# --------------------------------------------------------------------------- torchrun for real

def test_torchrun_all_reduce_over_ssh(sshd_cluster, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cluster = sshd_cluster(2)
    for host in cluster:
        install_python(host)  # no nccl-tests anywhere: the torch probe runs the collectives
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=2)
    said: list[str] = []
    backend = backend_for(inv, cluster, progress=said.append)
    cards = ("node1/gpu0", "node1/gpu1", "node2/gpu0", "node2/gpu1")
    plan = StressPlan(groups=(Group("domain:sn0", "domain", cards),), collectives=("all_reduce",),
                      sizes=(4096, 1 << 16), warmup=1, iters=3)
    try:
        rows = collect(backend.collectives, plan)
    finally:
        backend.close()
    assert [r for r in rows if r["kind"] == "not_run"] == []
    coll = [r for r in rows if r["kind"] == "collective"]
    assert [r["size_bytes"] for r in coll] == [4096, 1 << 16]
    for r in coll:
        assert (r["ranks"], r["status"], r["wrong"], r["collective"]) == (4, "ok", 0, "all_reduce")
        assert r["busbw_GBps"] > 0 and r["time_us"] > 0
    assert sorted(r["card"] for r in rows if r["kind"] == "rank") == sorted(cards * 2)
    assert any(f"rendezvous {cluster['node1'].address}:" in m for m in said), said
    # One SSH connection per host for the whole job (ready check, staging, launch, rows,
    # cleanup): the backend holds each host's connection and opens channels on it.
    for host in cluster:
        assert host.log_path.read_text().count("Accepted publickey") == 1, host.name


def _alive(pid: int) -> bool:
    """A process exists and is not a zombie (this container's init does not reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_failing_node_stops_the_job_everywhere(sshd_cluster, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cluster = sshd_cluster(2)
    pids = tmp_path / "node1-pids"
    install_fake_tool(cluster["node1"], "python3", (  # the real thing, recording its pid
        "#!/bin/sh\n"
        f'echo "$$" >> {sh_quote(pids)}\n'
        f"export GLOO_SOCKET_IFNAME=lo PYTHONPATH={sh_quote(REPO)}\n"
        f'exec {sh_quote(sys.executable)} "$@"\n'))
    install_fake_tool(cluster["node2"], "python3", (  # passes the module check, then torchrun dies
        "#!/bin/sh\n"
        f'case "$2" in torch.distributed.run) echo "RuntimeError: node2 is broken" >&2; exit 1 ;; esac\n'
        f"export PYTHONPATH={sh_quote(REPO)}\n"
        f'exec {sh_quote(sys.executable)} "$@"\n'))
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=1)
    said: list[str] = []
    backend = backend_for(inv, cluster, poll_s=0.1, progress=said.append)
    rows, took = all_reduce_rows(backend, Group("rail:sn0:gpu0", "rail", ("node1/gpu0", "node2/gpu0")))
    assert took < 20  # node1 does not wait out the rendezvous
    not_run = [r for r in rows if r["kind"] == "not_run"]
    assert [(r["entity"], r["status"]) for r in not_run] == [("node2", "error")]
    assert not_run[0]["message"] == "node2: torchrun for the stress job exited 1: RuntimeError: node2 is broken"
    assert "stopping torchrun on node1" in said, said
    torchrun_pid = int(pids.read_text().split()[-1])  # the module check ran first, torchrun last
    deadline = time.monotonic() + 5
    while _alive(torchrun_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(torchrun_pid)
