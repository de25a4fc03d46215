"""One parser, one judgement for the AMD views and the kernel log (issue 28, Done-when): a run's
host facts over real sshd hosts whose fake tools replay an output give the verdict that
``sncheck parse VIEW`` gives the same output, for every view an AMD host's run reads: its fact
commands given failing outputs (tests/test_vendor_amd.py compares passing ones), TransferBench's
p2p preset (the copy test a connectivity plan names) and the kernel log (amdgpu RAS/ACA and
APEI GHES reports judged by the shipped kernel-log policy). (``amd-smi xgmi`` is a parse view
and a check no MI300X run reads: the platform's checks leave it out.)

The outputs: real captures (fixtures/real/amd, fixtures/real/harvest*/kernel-log), edited where
a failing one is needed, each edit asserted to change the text."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sshd_harness import install_fake_tool
from vendor_ssh import disagreements, facts_of, host_facts, install_replay, real

from sncheck.backends.ssh import SshBackend
from sncheck.health import kernel
from sncheck.health.metrics import DetectContext, rows_context
from sncheck.health.rules import evaluate, load_rules
from sncheck.probeplan import connectivity_plan
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology
from sncheck.vendors import registry
from sncheck.vendors.amd import sim as amd_sim
from sncheck.model import card_id
from sncheck.vendors import kernel_log
from sncheck.vendors.parsers import failures, parse_text

pytestmark = pytest.mark.sshd


def amd(name: str) -> str:
    return real(next((Path(__file__).resolve().parents[1] / "fixtures/real/amd").glob(f"{name}_*")).relative_to(
        Path(__file__).resolve().parents[1] / "fixtures/real").as_posix())


def inventory(path: Path, cluster, checks: str = "") -> Path:
    hosts = "\n".join(f"  {h.name}: {{address: {h.address}, port: {h.port}}}" for h in cluster)
    sns = "\n".join(f"  - {{name: {h.name}, hosts: \"{h.name}\"}}" for h in cluster)
    path.write_text(f"name: amd-ssh\nplatform: amd-mi300x\n{checks}supernodes:\n{sns}\n"
                    f"backend: {{type: ssh, dist_backend: gloo}}\nhosts:\n{hosts}\n")
    return path


def install_amd(host, monitor: str | None = None, ecc: str | None = None, metric: str | None = None,
                kernel_log: str = "", bdfs: tuple[str, ...] = amd_sim.BLOG_BDFS) -> None:
    """The fake tools of an 8-GPU MI300X host: each output the capture's (the one-GPU ECC and
    metric captures as each GPU's, the blog's truncation marker dropped: a real run prints it
    whole) unless given; dmesg replays ``kernel_log`` (whatever its arguments), no journal."""
    whole = amd("04").replace("[output truncated]\n", "")
    install_replay(host, "amd-smi", {"list": amd_sim.gpu_list(bdfs), "monitor -putm": monitor or amd("05"),
                                     "metric --ecc-blocks": ecc or amd_sim.per_card(amd("09"), 8),
                                     "metric": metric or amd_sim.per_card(whole, 8)})
    install_replay(host, "rocm-smi", {"--showtopo": amd("13")})
    install_replay(host, "ibstat", {"": real("ib/04_ibstat_h100_roce_12CA_all_active_eth.txt")})
    data = host.directory / "dmesg.txt"
    data.write_text(kernel_log)
    install_fake_tool(host, "journalctl", "#!/bin/sh\nexit 0\n")
    install_fake_tool(host, "dmesg", f"#!/bin/sh\nexec cat '{data}'\n")


# mi01's GPUs at the buses its log's amdgpu reports name (1b, 9d, dd) among five others
MI01_BDFS = ("0000:0c:00.0", "0000:1b:00.0", "0000:2a:00.0", "0000:3b:00.0", "0000:9d:00.0", "0000:ad:00.0",
             "0000:bd:00.0", "0000:dd:00.0")
BDFS = {"mi01": MI01_BDFS, "mi02": amd_sim.BLOG_BDFS}
KERNEL_LOGS = (  # real captures an AMD host's dmesg replays (the read keeps the lines kernel_log.PATTERN names)
    "harvest/kernel-log/01_dmesg_amdgpu_erREVENT_athub_aca_banks_mi300x_rocm6.2.3_rocm-issue4021_head.txt",
    "harvest5/kernel-log/15_kernel_prefix_aer_layer_line_then_apei_ghes_hardware_error_pcie_corrected_root_port_"
    "20_03.1_1022_1483_cut_legacy-rocm-build-issue2927.txt",
)


def test_amd_facts_that_fail_over_ssh_fail_sncheck_parse_too(sshd_cluster, tmp_path: Path) -> None:
    """The views an MI300X host's run reads (amd-smi monitor, metric --ecc-blocks, metric;
    rocm-smi --showtopo; ibstat), each given an output that fails: a monitor table cut after 7
    of 8 GPUs, an uncorrectable ECC count, a throttled GPU, a metric read cut inside a GPU's
    block. ``sncheck parse VIEW --expect 8`` exits 1 exactly where the run's fact of that
    command fails (tests/test_vendor_amd.py compares their passing outputs).

    And each host's kernel log (a real capture its dmesg replays, read through sncheck's bounded
    read) judged by the shipped policy gives the verdicts ``sncheck parse kernel-log FILE --rules
    default`` gives the same log: the same entities, table keys, severities, actions and report
    counts, parse's entity (a GPU's bus id, or "log") mapped through the host's ``amd-smi list``
    to the card at that bus id (or the host): a run names the card, and a record at a bus id
    that is no GPU of the host (a root port) names the host, never a card."""
    logs = {}
    for host, rel in zip(("mi01", "mi02"), KERNEL_LOGS):
        text = real(rel)
        logs[host] = text if text.endswith("\n") else text[:text.rindex("\n") + 1]  # a paste cut mid-line: its lines
    monitor = amd("05").rstrip("\n").rsplit("\n", 1)[0] + "\n"
    ecc = amd_sim.per_card(amd("09"), 8)
    ecc = ecc.replace("UNCORRECTABLE_COUNT: 0", "UNCORRECTABLE_COUNT: 3", 1)
    metric = amd_sim.per_card(amd("04").replace("[output truncated]\n", ""), 8)
    throttled = metric.replace("UNTHROTTLED", "THROTTLED", 1)
    cut = metric[:metric.index("GPU: 5")]
    assert len({monitor, amd("05")}) == len({ecc, amd_sim.per_card(amd("09"), 8)}) == len({throttled, metric}) == 2
    cluster = sshd_cluster(3, ["mi01", "mi02", "mi03"])
    install_amd(cluster["mi01"], monitor=monitor, ecc=ecc, kernel_log=logs["mi01"], bdfs=MI01_BDFS)
    install_amd(cluster["mi02"], metric=throttled, kernel_log=logs["mi02"])
    install_amd(cluster["mi03"], metric=cut)
    outputs: dict[str, list[dict]] = {}
    rows, findings = host_facts(inventory(tmp_path / "inv.yaml", cluster), cluster, outputs)
    wrong, compared = disagreements(outputs, rows, registry.vendors()["amd"].commands, 8)
    assert not wrong, "\n".join(wrong)
    assert compared == 3 * 6, compared  # list, monitor, showtopo, ecc_blocks, metric, ibstat of each host
    ok = {h: {f: r["ok"] for f, r in facts_of(rows, h).items()} for h in ("mi01", "mi02", "mi03")}
    assert (ok["mi01"]["card_count"], ok["mi01"]["ecc"], ok["mi02"]["throttle"], ok["mi03"]["throttle"]) == \
        (False, False, False, False), ok
    rules = load_rules("default")
    named: dict[str, set[str]] = {}
    for host, text in logs.items():
        read = facts_of(rows, host)["kernel_log"]
        assert read["ok"], read["message"]
        parsed = parse_text("kernel-log", text)
        judged = kernel.judged(parsed, list(rules.rules), rows_context())
        card = {kernel_log.bus_id(b): card_id(host, i) for i, b in enumerate(BDFS[host])}
        by_parse = sorted((card.get(j["entity"], host if j["entity"] == "log" else j["entity"]), j["rule"], j["key"],
                           j["severity"], j["action"]) for j in judged for _ in range(j["reports"]))
        by_run = sorted((f.entity, f.rule, f.evidence["key"], f.severity, f.evidence["action"]) for f in findings
                        if f.entity.split("/")[0] == host and f.rule.startswith("kernel")
                        for _ in range(f.evidence["reports"]))
        assert by_run == by_parse and by_run, (host, by_run, by_parse)  # each log holds reports the policy judges
        assert len(read["value"]["events"]) == len(parsed["events"]), host
        named[host] = {e for e, *_ in by_run}
    # the amdgpu reports name three of mi01's cards; the GHES record at a root port, mi02 (no card)
    assert named == {"mi01": {"mi01/gpu1", "mi01/gpu4", "mi01/gpu7"}, "mi02": {"mi02"}}, named



def test_transferbench_p2p_over_ssh_and_parse_agree(sshd_cluster, tmp_path: Path) -> None:
    """The copy test's fact and ``sncheck parse transferbench``: the vendor guide's whole p2p run
    passes both; the same run cut before its last Averages line, or ended by a HIP error, fails
    both. (A slow pair fails the run only: the 48 GB/s it is judged against is the platform's
    design, which no output carries; tests/test_vendor_amd.py runs that case.)"""
    whole = amd("22")
    cut = whole[:whole.rindex("Averages")]
    failed = whole + "[ERROR] HIP Error: invalid resource handle\n"
    cluster = sshd_cluster(3, ["mi01", "mi02", "mi03"])
    for name, text in (("mi01", whole), ("mi02", cut), ("mi03", failed)):
        install_replay(cluster[name], "TransferBench", {"p2p": text})
    topo = Topology(load_inventory(inventory(tmp_path / "inv.yaml", cluster)))
    backend = SshBackend(topo, known_hosts=str(cluster.known_hosts), ssh_config=str(cluster.ssh_config))
    rows: list[dict] = []
    try:
        backend.scale_out(connectivity_plan(topo, tools=("transferbench",)), rows.append)
    finally:
        backend.close()
    p2p = {r["host"]: r for r in rows if r["kind"] == "host_fact" and r["fact"] == "transferbench_p2p"}
    for host, text in (("mi01", whole), ("mi02", cut), ("mi03", failed)):
        parse_fails = bool(failures(parse_text("transferbench", text)))
        assert parse_fails == (not p2p[host]["ok"]), (host, p2p[host]["message"])
    assert [p2p[h]["ok"] for h in ("mi01", "mi02", "mi03")] == [True, False, False]
    found = evaluate(load_rules("default").rules, pd.DataFrame(rows), DetectContext(topo, topo.inventory.design))
    assert {f.entity for f in found} == {"mi02", "mi03"}, [f.message for f in found]
