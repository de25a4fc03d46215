"""Stop 43's leftovers of the run and ops code (leftops2): the near-bar budget on a quiet
machine says the suspect was not judged, the budget is an inventory option, validated; a
baseline rule is told the NICs a listing names; a results.json linked into a subfolder of its
run directory is its own; SSH gateway hosts that are one machine, or whose rendezvous name a
peer cannot resolve, fail at once. The Slurm reason's case is in tests/test_slurm_cluster.py."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner
from mock_gate import ROOT, mock_gate
from test_hardening import one_line_error

from sncheck.backends.mock import MockBackend
from sncheck.cli.main import main
from sncheck.errors import ConfigError
from sncheck.model import ExitCode, Verdict
from sncheck.run.inputs import load_inventory
from sncheck.run.nearbar import NEAR_BUDGET_SPENT
from sncheck.topology import Topology


def test_a_near_card_the_budget_stopped_on_a_quiet_machine_is_not_judged_and_fails_the_gate(tmp_path) -> None:
    """mi02/gpu3 at 0.915 against the 0.93 bar, near it at the first look; the near-bar budget
    (1e-9 s) spent by its first batch on a machine that reports no load. main: the gate failed
    (exit 1) and the card stayed quarantined, but its finding kept the first look's measured
    basis and said nothing of why (final read a #1). Now: not judged, ``evidence.not_decided``
    naming the budget and its samples, its message saying so; still exit 1, never exit 4."""
    outcome = mock_gate(tmp_path, "mi300x-pod", ["{type: slow_card, target: mi02/gpu3, factor: 0.915}"],
                        backend_options={"near_budget_s": 1e-9})
    res = outcome.results
    [f] = [f for f in res["findings"] if f["entity"] == "mi02/gpu3"]
    why = f["evidence"].get("not_decided", "")
    assert why.startswith("not decided: its near-bar budget of 1e-09 s cannot hold 16 more repeats"), f["evidence"]
    assert "still within the noise of the bar: median" in why, why
    assert f["not_judged"] is True, f
    assert f["message"].endswith(NEAR_BUDGET_SPENT), f["message"]
    assert "inconclusive" not in f["evidence"], f["evidence"]
    [step] = [i for i in res["isolation"] if i["entity"] == "mi02/gpu3" and i["reason"].startswith("not decided")]
    assert step["action"] == "quarantine" and "neither isolated nor released" in step["reason"], step
    assert res["verdict"] == Verdict.FAIL and outcome.exit_code == ExitCode.FAIL == 1


def test_the_near_budget_is_an_inventory_option_of_the_backend(tmp_path) -> None:
    """``backend.near_budget_s`` in the inventory reaches the near-bar retest (main: the key was
    refused, and the budget reachable only through the Python API's backend options): the same
    card and budget as above, set in the inventory, stops the retest the same way."""
    inv = tmp_path / "inv.yaml"
    inv.write_text((ROOT / "fixtures/inventories/mi300x-pod.yaml").read_text()
                   .replace("backend:\n  type: mock\n", "backend:\n  type: mock\n  near_budget_s: 1.0e-9\n"))
    assert "near_budget_s: 1.0e-9" in inv.read_text()
    res = mock_gate(tmp_path, load_inventory(inv), ["{type: slow_card, target: mi02/gpu3, factor: 0.915}"]).results
    [f] = [f for f in res["findings"] if f["entity"] == "mi02/gpu3"]
    assert f["evidence"]["not_decided"].startswith("not decided: its near-bar budget of 1e-09 s"), f["evidence"]


@pytest.mark.parametrize("value, shown", [("0", "0"), ("-5", "-5"), (".nan", "nan"), ("'600'", "'600'"),
                                          ("true", "True")])
def test_a_bad_near_budget_in_the_inventory_is_one_line_naming_the_key(tmp_path, value: str, shown: str) -> None:
    inv = tmp_path / "inv.yaml"
    inv.write_text((ROOT / "fixtures/inventories/mi300x-pod.yaml").read_text()
                   .replace("backend:\n  type: mock\n", f"backend:\n  type: mock\n  near_budget_s: {value}\n"))
    line = one_line_error(CliRunner().invoke(main, ["connectivity", "-i", str(inv), "-q",
                                                    "--out", str(tmp_path / "run")]))
    assert "backend.near_budget_s" in line and "inv.yaml:" in line, line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), 8 * 86400.0, "600", True])
def test_a_bad_near_budget_option_is_refused_when_the_backend_is_made(value) -> None:
    """The Python API's option was read with an unvalidated float() when the first near
    suspect's retest began ('600' read as 600 s, -1 stopped every batch, nan never did)."""
    topo = Topology(load_inventory(ROOT / "fixtures/inventories/mi300x-pod.yaml"))
    with pytest.raises(ConfigError, match="backend option near_budget_s must be a positive number of seconds"):
        MockBackend(topo, near_budget_s=value)
    assert MockBackend(topo, near_budget_s=30).near_budget() == 30.0


def test_a_baseline_rule_names_the_nic_its_listing_shows_down_as_the_design_rule_does(tmp_path) -> None:
    """hgx-pair (two hosts, each NIC meeting one card of the other) against a baseline of its
    own clean run, ibstat showing dgx-a/nic0 Down: the design rule's search is told the NICs a
    host's listing names (culprits.listed_nics) and names the NIC alone; the baseline rule's
    (explain_reference) was not, and named the link 'dgx-a/gpu0<->dgx-b/gpu0' beside it, which
    the retest isolated too (final read a #4). One search, one input: the NIC alone."""
    from mock_gate import ends, named

    from sncheck.health.baseline import make_baseline
    assert mock_gate(tmp_path / "clean", "hgx-pair", []).exit_code == ExitCode.PASS
    (tmp_path / "b.json").write_text(json.dumps(make_baseline([tmp_path / "clean/run"], "b")))
    res = mock_gate(tmp_path / "bad", "hgx-pair", ["{type: ib_port_down, target: dgx-a, port: 1}"],
                    baseline=str(tmp_path / "b.json")).results
    assert named(res) == {("dgx-a/nic0", "nic")}, named(res)
    assert ends(res) == {"dgx-a/nic0": "isolate"}, ends(res)
    [nic] = res["findings"]
    assert "p2p-bandwidth-below-baseline" in {r["rule"] for r in nic["evidence"]["related"]}, nic["evidence"]


def test_a_results_json_linked_into_a_subfolder_of_its_run_directory_is_its_own(tmp_path) -> None:
    """own_record's docstring said a link inside the run directory is its own; its check
    refused any target not directly in it, so a link into a subfolder (``archive/record.json``,
    which a copy of the directory whole keeps) was 'outside its run directory' (final read a #5).
    The contract (CONTRACTS.md: a link *out of* the directory is refused) is the docstring's:
    inside is its own, in a subfolder too, unless a folder on the way is another run's
    directory nested in this one (it holds rows of its own), or the link leaves the directory."""
    from sncheck.store.results import own_record

    run = tmp_path / "run"
    (run / "rows").mkdir(parents=True)
    (run / "archive").mkdir()
    (run / "archive/record.json").write_text("{}")
    (run / "results.json").symlink_to("archive/record.json")
    assert own_record(run / "results.json") == run / "results.json"
    (run / "results.json").unlink()
    (run / "results.json").symlink_to(run / "archive/record.json")  # absolute, still inside
    assert own_record(run / "results.json") == run / "results.json"

    (run / "archive/nested/rows").mkdir(parents=True)  # another run's directory inside this one
    (run / "archive/nested/deep").mkdir()
    (run / "archive/nested/deep/results.json").write_text("{}")
    (run / "results.json").unlink()
    (run / "results.json").symlink_to("archive/nested/deep/results.json")
    with pytest.raises(ConfigError, match=r"in another run's directory \(.*archive/nested\) inside this one"):
        own_record(run / "results.json")

    other = tmp_path / "other"
    other.mkdir()
    (other / "results.json").write_text("{}")
    (run / "results.json").unlink()
    (run / "results.json").symlink_to(other / "results.json")
    with pytest.raises(ConfigError, match="outside its run directory"):
        own_record(run / "results.json")
    (run / "results.json").unlink()
    (run / "results.json").symlink_to("archive/../../other/results.json")  # climbs out through a subfolder
    with pytest.raises(ConfigError, match="outside its run directory"):
        own_record(run / "results.json")


def test_a_gateway_name_a_peer_cannot_resolve_fails_the_job_before_torchrun_naming_both(sshd_cluster,
                                                                                        tmp_path) -> None:
    """node1 behind an SSH gateway, reached by the others at its name 'node1', which resolves on
    node1 (its free-port read answers) and not on node2: main launched torchrun on both, and
    node2's agent waited for a rendezvous at a name it cannot resolve until job_timeout_s
    (review s43o). Now every other host is asked first: the job is not run, one line naming
    node2, the name node1 and the gateway, and no torchrun starts."""
    pytest.importorskip("torch")
    from test_ssh_backend import REPO, all_reduce_rows, backend_for, gateway_pair, sh_quote, skip_where_resolves
    from sshd_harness import install_fake_tool

    from sncheck.probeplan import Group

    skip_where_resolves("node1")
    cluster, inv = gateway_pair(sshd_cluster, tmp_path, ("node1",))
    started = tmp_path / "torchrun-started"
    python = sh_quote(sys.executable)
    install_fake_tool(cluster["node1"], "python3", (  # node1 resolves its own name: its free port is 127.0.0.1's
        "#!/bin/sh\n"
        f"export GLOO_SOCKET_IFNAME=lo PYTHONPATH={sh_quote(REPO)}\n"
        'if [ "$1" = "-c" ] && [ "$3" = "node1" ] && [ $# -eq 3 ]; then set -- "$1" "$2" 127.0.0.1; fi\n'
        f'case "$2" in torch.distributed.run) echo node1 >> {sh_quote(started)} ;; esac\n'
        f'exec {python} "$@"\n'))
    install_fake_tool(cluster["node2"], "python3", (
        "#!/bin/sh\n"
        f"export GLOO_SOCKET_IFNAME=lo PYTHONPATH={sh_quote(REPO)}\n"
        f'case "$2" in torch.distributed.run) echo node2 >> {sh_quote(started)} ;; esac\n'
        f'exec {python} "$@"\n'))
    backend = backend_for(inv, cluster, job_timeout_s=60)
    rows, took = all_reduce_rows(backend, Group("domain:sn0", "domain", ("node1/gpu0", "node2/gpu0")))
    assert not started.exists(), started.read_text()
    not_run = [r for r in rows if r["kind"] == "not_run"]
    assert sorted(r["entity"] for r in not_run) == ["node1", "node2"], not_run
    for r in not_run:
        assert f"node2 cannot resolve node1, the name the hosts reach node1 at behind its SSH gateway " \
            f"({cluster['node1'].address} port {cluster['node1'].port}, ssh_gateway: true)" in r["message"], r
        assert "\n" not in r["message"], r
    assert took < 45


def test_two_gateway_hosts_that_answer_as_one_machine_are_refused_before_anything_runs(sshd_cluster,
                                                                                       tmp_path) -> None:
    """node1 and node2 both behind SSH gateways (ssh_gateway: true), each its own route, both
    landing on one machine (the loopback hosts are one: one /etc/machine-id). main measured
    and judged that machine as two hosts (review s43o: no machine identity read). Now one error
    naming both, exit 2, no run directory. Given machines of their own (node2's machine id its
    own), the same inventory passes the check."""
    from test_ssh_backend import backend_for, gateway_pair
    from sshd_harness import install_fake_tool

    cluster, inv = gateway_pair(sshd_cluster, tmp_path, ("node1", "node2"))
    r = CliRunner().invoke(main, ["connectivity", "-i", str(inv), "--backend", "ssh", "--known-hosts",
                                  str(cluster.known_hosts), "--ssh-config", str(cluster.ssh_config), "-q",
                                  "--out", str(tmp_path / "run")])
    line = one_line_error(r)
    assert line.startswith("sncheck: error: hosts node1, node2 answer as one machine (machine id "), line
    assert "ssh_gateway: true" in line and "measured and judged as two hosts" in line, line
    assert not (tmp_path / "run").exists()

    install_fake_tool(cluster["node2"], "cat", '#!/bin/sh\nif [ "$1" = /etc/machine-id ]; then echo node2-own-id; '
                                               'exit 0; fi\nexec /bin/cat "$@"\n')
    backend = backend_for(inv, cluster)
    try:
        backend.preflight()  # two machines: nothing to refuse
    finally:
        backend.close()
