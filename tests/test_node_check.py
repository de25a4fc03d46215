"""``sncheck node-check``: as a real HealthCheckProgram on the loopback Slurm cluster, with
fake vendor tools replaying real captures; one node's nvidia-smi -q reports a pending row
remap, and only that node is drained, with a reason naming the card and the rule."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_ssh_backend import FAKE_NVIDIA_SMI, PROFILES, REAL, first_cards, write_profile

from sncheck.run.nodecheck import OWN_PREFIX, Problem, drain_reason
from sncheck.vendors.parsers import strip_source_header
from sncheck.vendors.sim import own_ids

REPO = Path(__file__).resolve().parents[1]
CARDS = 2  # the captured --query-gpu CSV has two A100 lines

HEALTH_CHECK = """#!/bin/sh
# slurmd runs this with only SLURMD_NODENAME set: PATH and SLURM_CONF are ours to give.
export PATH="{{root}}/bin/$SLURMD_NODENAME:/usr/local/bin:/usr/bin:/bin"
export SLURM_CONF="{{conf}}" PYTHONPATH={repo} HOME=/tmp
echo "start $(date +%s.%N)" >> "{{root}}/nc-$SLURMD_NODENAME.log"
{python} -m sncheck node-check {args} >> "{{root}}/nc-$SLURMD_NODENAME.log" 2>&1
echo "exit $?" >> "{{root}}/nc-$SLURMD_NODENAME.log"
"""


def health_check(args: str) -> str:
    return HEALTH_CHECK.format(repo=shlex.quote(str(REPO)), python=shlex.quote(sys.executable), args=args)


def install_tools(bin_dir: Path, profile: str, cards: int = CARDS, nodes: tuple[str, ...] = ()) -> None:
    """Fake nvidia-smi, ibstat and dcgmi replaying a PROFILES entry of test_ssh_backend; where
    one ``bin_dir`` serves the srun tasks of ``nodes``, each lists that node's own GPUs."""
    data = bin_dir / "data"
    write_profile(data, profile, cards, None)
    for node in nodes:
        write_profile(data / "hosts" / node, profile, cards, node)
    tools = {"nvidia-smi": FAKE_NVIDIA_SMI.format(data=shlex.quote(str(data)))}
    for tool, src in (("ibstat", PROFILES["a100"]["ibstat"]), ("dcgmi", PROFILES["a100"]["dcgmi"])):
        (data / tool).write_text(strip_source_header((REAL / src).read_text()))
        tools[tool] = f"#!/bin/sh\nexec cat {shlex.quote(str(data / tool))}\n"
    for node in nodes:  # each node's adapters its own GUIDs, as its GPUs are its own UUIDs (H20-11)
        (data / "hosts" / node / "ibstat").write_text(own_ids((data / "ibstat").read_text(), node))
    tools["ibstat"] = (f"#!/bin/sh\nD={shlex.quote(str(data))}\n"
                       '[ -n "$SLURMD_NODENAME" ] && [ -f "$D/hosts/$SLURMD_NODENAME/ibstat" ] && '
                       'D="$D/hosts/$SLURMD_NODENAME"\nexec cat "$D/ibstat"\n')
    for name, text in tools.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)


def runs_done(cluster, node: str) -> int:  # type: ignore[no-untyped-def]
    log = cluster.root / f"nc-{node}.log"
    return log.read_text().count("\nexit ") + log.read_text().startswith("exit ") if log.exists() else 0


def wait_runs(cluster, nodes, n: int, timeout: float = 90.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(runs_done(cluster, node) >= n for node in nodes):
            return
        time.sleep(0.5)
    logs = {node: (cluster.root / f"nc-{node}.log").read_text()[-1500:]
            for node in nodes if (cluster.root / f"nc-{node}.log").exists()}
    raise AssertionError(f"node-check did not run {n} times on every node: {logs}\n{cluster.logs_tail()}")


@pytest.mark.slurm
def test_health_check_program_drains_only_the_node_with_a_pending_remap(slurm_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Host facts only (--no-collectives): four node-checks at once each starting torch workers
    # would not fit a small CI machine's budget; the pairs and all-reduce are tested below.
    cluster = slurm_cluster(cards=CARDS, health_check=health_check("--no-collectives --budget 20s"),
                            health_interval=10, _defer=True)
    for node in cluster.names:
        install_tools(cluster.bin_dir(node), "sick" if node == "node2" else "a100")
    # sick: nvidia-smi -q with the last card's Remapped Rows Pending: Yes (the simulator's, whole,
    # the section of capture 02), NVLinks inactive.
    # Keep node2's other tools healthy so the remap is what drains it.
    for key in ("nvlink_s", "topo"):
        healthy = strip_source_header((REAL / PROFILES["a100"][key]).read_text())
        (cluster.bin_dir("node2") / "data" / key).write_text(first_cards(key, healthy, CARDS))
    # node4 was drained by an operator: node-check must leave it so, healthy or not.
    cluster.start()
    foreign = "ops: cable swap (ticket 99)"
    done = cluster.run(["scontrol", "update", "NodeName=node4", "State=DRAIN", f"Reason={foreign}"])
    assert done.returncode == 0, done.stderr
    after_drain = runs_done(cluster, "node4")

    cluster.wait_state("node2", ("drained", "draining"), timeout=60)
    wait_runs(cluster, cluster.names, 1)
    wait_runs(cluster, ["node4"], after_drain + 1)  # node4 checked since the operator drained it
    reason = cluster.node_reason("node2")
    # The listing is whole (every card's section, as a host prints it): the reason names the
    # card with the remap and the rule. (Capture 02 itself, an excerpt with '[...]', names
    # only the node: test_a_card_is_named_only_where_the_tool_says_which.)
    assert reason.startswith(f"{OWN_PREFIX} node2/gpu{CARDS - 1} remapped_rows: ") and "row remap pending" in reason, reason
    assert {n: cluster.node_state(n) for n in ("node1", "node3")} == {"node1": "idle", "node3": "idle"}
    assert cluster.node_state("node4") == "drained" and cluster.node_reason("node4") == foreign
    log2 = (cluster.root / "nc-node2.log").read_text()
    assert "UNHEALTHY" in log2 and "exit 1" in log2 and "row remap pending" in log2, log2
    log1 = (cluster.root / "nc-node1.log").read_text()
    assert "node-check node1: healthy (2 cards from Slurm GRES" in log1 and "exit 0" in log1, log1

    # The card is repaired: node-check resumes the drain it made; node4 stays drained.
    clean = strip_source_header((REAL / PROFILES["a100"]["q"]).read_text())
    (cluster.bin_dir("node2") / "data" / "q").write_text(first_cards("q", clean, CARDS))
    cluster.wait_state("node2", ("idle",), timeout=60)
    wait_runs(cluster, ["node4"], runs_done(cluster, "node4") + 1)
    assert cluster.node_state("node4") == "drained" and cluster.node_reason("node4") == foreign
    assert "left drained: the reason is not node-check's" in (cluster.root / "nc-node4.log").read_text()


@pytest.mark.slurm
def test_node_check_never_resumes_an_isolation_drain(slurm_cluster, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    cluster = slurm_cluster(cards=CARDS)
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    install_tools(cluster.bin_dir("node3"), "a100")
    run_reason = "sncheck: p2p-bandwidth-below-design (run 20261130T101010Z-ab12)"
    assert cluster.run(["scontrol", "update", "NodeName=node3", "State=DRAIN", f"Reason={run_reason}"]).returncode == 0
    env = cluster.env | {"PATH": f"{cluster.bin_dir('node3')}:/usr/bin:/bin", "SLURMD_NODENAME": "node3"}
    res = subprocess.run([sys.executable, "-m", "sncheck", "node-check", "--no-collectives", "--json"],
                         env=env | {"PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    doc = json.loads(res.stdout)
    assert res.returncode == 0 and doc["verdict"] == "pass", res.stdout + res.stderr
    assert "left drained" in doc["slurm"]
    assert cluster.node_reason("node3") == run_reason


@pytest.mark.torch
def test_node_check_pairs_and_all_reduce_on_this_machine(tmp_path: Path) -> None:
    """The collectives part for real (gloo on CPU): every card pair and an all-reduce, no Slurm."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    install_tools(bin_dir, "a100")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    res = subprocess.run([sys.executable, "-m", "sncheck", "node-check", "--node", "nodeX", "--cards", "2",
                          "--budget", "240s", "--no-drain", "--json"], env=env, capture_output=True,
                         text=True, timeout=300)
    doc = json.loads(res.stdout)
    assert res.returncode == 0 and doc["verdict"] == "pass", res.stdout + res.stderr
    assert "1 card pairs" in doc["ran"] and "all_reduce over 2 cards" in doc["ran"], doc["ran"]
    assert "nvidia-smi -q" in doc["ran"]


@pytest.mark.torch
def test_node_check_budget_overrun_is_a_failure_not_a_hang(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    install_tools(bin_dir, "a100")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "sncheck", "node-check", "--node", "nodeX", "--cards", "2",
                          "--budget", "1s", "--no-drain", "--json"], env=env, capture_output=True,
                         text=True, timeout=120)
    doc = json.loads(res.stdout)
    assert res.returncode == 1 and doc["problems"][0]["rule"] == "node-check-budget", res.stdout + res.stderr
    assert doc["elapsed_s"] < 5 and time.monotonic() - start < 60


def test_drain_reason_names_card_and_rule_and_fits_slurm() -> None:
    r = drain_reason(Problem("node3/gpu2", "remapped_rows", "row remap pending (remapped rows: 1 correctable, "
                             "0 uncorrectable)\nand a very long tail " + "x" * 200))
    assert r.startswith("sncheck: node-check: node3/gpu2 remapped_rows: row remap pending")
    assert len(r) <= 120 and "\n" not in r


def test_a_card_is_named_only_where_the_tool_says_which() -> None:
    """node-check names culprits from the rows every backend's judgement gives: a whole
    nvidia-smi -q listing names the card (section i is card i), an excerpt names the node."""
    from sncheck.run.nodecheck import NodeReport, check_facts
    from sncheck.transport import Result
    from sncheck.vendors.nvidia.checks import COMMANDS

    def problems(rel: str, cards: int) -> list[tuple[str, str]]:
        text = strip_source_header((REAL / rel).read_text())

        def run(argv: list[str], timeout: float) -> Result:
            if argv == ["nvidia-smi", "-q"]:
                return Result("node3", " ".join(argv), text, "", 0, 0.1)
            return Result("node3", " ".join(argv), "", "not this test's", 1, 0.1)

        report = NodeReport("node3", cards, "--cards")
        check_facts("node3", cards, time.monotonic() + 60, report, run=run)
        return [(p.entity, p.rule) for p in report.problems if p.rule in COMMANDS["query"].facts]

    whole = problems("nvidia-smi-q/06_535.129.03_a10_remapped_rows_uncorrectable4_pending_yes.txt", 1)
    assert whole == [("node3/gpu0", "remapped_rows")]
    excerpt = problems("nvidia-smi-q/02_a100_ecc_dram_correctable_177_remap_pending_elided.txt", 2)
    # the remap named on the node, and every other fact of the excerpt (1 GPU listed of 2,
    # its last section cut) not judged: a problem on the node, never a pass
    assert ("node3", "gpu_report") in excerpt and ("node3", "remapped_rows") in excerpt, excerpt
    assert sorted(excerpt) == sorted(("node3", f) for f in COMMANDS["query"].facts), excerpt
