"""A host's fact output that is not the host's whole listing is never a pass (issue 18 item 4).

Every backend judges host facts through one path (:func:`sncheck.vendors.hostjudge.judge_host`
-> :func:`sncheck.vendors.facts.outcome`); each fact command is bound there to the parse view
its parser is (``nvidia-smi -q`` -> ``nvidia-smi-q``) and that view's Listing. An output cut
mid-record or mid-line, a device listed twice, or a listing of the host's cards with another
count than the inventory's makes every fact it passed ``parse_failed``; what it shows wrong
stays a finding. A whole capture gives no such row.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sncheck.transport.result import Result
from sncheck.vendors import registry
from sncheck.vendors.facts import Expect
from sncheck.vendors.hostjudge import bind, judge_host
from sncheck.vendors.parsers import parse_text, strip_source_header

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
HGX = registry.platform("nvidia-hgx")


def real(rel: str) -> str:
    return strip_source_header((REAL / rel).read_text(encoding="utf-8"))


def judged(name: str, text: str, cards: int, platform=HGX) -> list[dict]:
    """The rows of one fact command of ``platform`` whose output is ``text``."""
    cmd = registry.vendor_of(platform).commands[name]
    res = Result(host="h1", command=cmd.display, stdout=text, stderr="", exit_code=0, duration=0.1)
    return list(judge_host("h1", Expect(cards=cards, platform=platform), [cmd], lambda c: res))


def sections(text: str, start: str) -> tuple[str, list[str]]:
    at = [m.start() for m in re.finditer(start, text, re.MULTILINE)]
    return text[: at[0]], [text[i:j] for i, j in zip(at, at[1:] + [len(text)])]


Q = "nvidia-smi-q/03_535.161.08_8xH100_full_hw_slowdown_power_brake_active.txt"


def test_every_fact_command_of_the_builtin_vendors_is_bound_to_its_view() -> None:
    """The command -> view mapping: each command's parser is one view's, and the views that
    list records give the command their Listing (only systemctl's one-word answer lists none)."""
    unbound = {(v.name, c.name) for v in registry.vendors().values() for c in v.commands.values()
               if bind(c).listing is None}
    assert unbound == {("nvidia", "fabric_manager")}, unbound
    assert bind(registry.vendors()["nvidia"].commands["query"]).view == "nvidia-smi-q"
    assert bind(registry.vendors()["amd"].commands["ecc_blocks"]).view == "amd-smi"
    assert bind(registry.vendors()["ascend"].commands["health"]).view == "ascend-sweep"


def test_a_whole_nvidia_smi_q_gives_no_parse_failed_row() -> None:
    rows = judged("query", real(Q), 8)
    assert rows and not [r for r in rows if r["status"] == "parse_failed"], rows
    # the capture's own faults (HW slowdown on its GPUs) are findings as before
    assert any(r["fact"] == "clock_reasons" and not r["ok"] for r in rows)


@pytest.mark.parametrize("how", ["mid_record", "mid_line", "at_a_section", "twice", "every_section_twice",
                                 "one_more_than_the_inventory"])
def test_a_listing_that_is_not_the_hosts_whole_one_is_never_a_pass(how: str) -> None:
    """nvidia-smi -q of 8 H100s, as a host could print it: cut inside GPU 5's section, cut
    mid-line, cut after 6 whole sections, one section listed twice (in place of the last),
    every section twice (the issue's case: 16 sections for 8 attached), or 9 sections for an
    inventory of 8. No fact of the command passes; each says why."""
    text = real(Q)
    head, secs = sections(text, r"^GPU [0-9A-F]{8}:")
    assert len(secs) == 8
    cards = 8
    if how == "mid_record":
        body = head + "".join(secs[:5]) + secs[5][: secs[5].index("ECC Errors")]
    elif how == "mid_line":
        body = text[: text.index("Remapped Rows", len(head) + len("".join(secs[:7])))] + "Remapp"
    elif how == "at_a_section":
        body = head + "".join(secs[:6])
    elif how == "twice":
        body = head + "".join(secs[:7]) + secs[3]
    elif how == "every_section_twice":
        body = head + "".join(secs) + "".join(secs)
    else:
        body, cards = text, 7
    rows = judged("query", body, cards)
    assert rows and not [r for r in rows if r["ok"]], [(r["fact"], r["message"]) for r in rows if r["ok"]]
    failed = [r for r in rows if r["status"] == "parse_failed"]
    assert failed and all("nvidia-smi-q output is not whole" in r["message"] for r in failed), failed
    assert {r["fact"] for r in rows} >= set(registry.vendors()["nvidia"].commands["query"].facts)


def test_a_count_other_than_the_inventorys_names_it() -> None:
    rows = judged("nvlink_errors", real("nvidia-smi-nvlink/04_errors_h100_18links_elided.txt"), 8)
    (row,) = rows
    assert row["status"] == "parse_failed" and not row["ok"]
    assert "listing has 1 GPU records, expected 8 (the inventory's cards)" in row["message"], row["message"]


def test_the_last_gpu_alone_without_a_clock_reason_is_a_whole_listing() -> None:
    """A list of values (active clock event reasons) is one field, however long: seven idle
    GPUs and the last one busy at full clocks (no reason active) is a whole listing, in
    ``sncheck parse`` and in a run (it read as "the last GPU lacks clock_reasons.active[0]:
    cut short" before)."""
    text = real("nvidia-smi-q/08_535.154.05_8xRTX4090_sw_power_cap_ecc_disabled.txt")
    head, secs = sections(text, r"^GPU [0-9A-F]{8}:")
    last = re.sub(r"(Idle|SW Power Cap)(\s+): Active", r"\1\2: Not Active", secs[-1])
    body = head + "".join(secs[:-1]) + last
    data = parse_text("nvidia-smi-q", body)
    assert [bool(g["clock_reasons"]["active"]) for g in data["gpus"]][-1] is False
    assert not [e for e in data["errors"] if "cut short" in e], data["errors"]
    assert not [r for r in judged("query", body, 8) if r["status"] == "parse_failed"]


CM384 = registry.platform("ascend-cm384")


@pytest.mark.parametrize("name", ["health", "ecc"])
def test_an_ascend_sweep_cut_after_some_dies_is_not_a_pass(name: str) -> None:
    """``npu-smi -t health|ecc`` on every die in one sweep: the simulated node's whole output
    passes; cut after 10 of its 16 dies, or inside the last die's section, no fact passes (the
    checks judged the dies listed only)."""
    from sncheck.backends.mockfacts import render
    from sncheck.vendors.sim import HostState

    cmd = registry.vendor_of(CM384).commands[name]
    whole = render(cmd, HostState("h1", 16, CM384.name, domain_hosts=48)).stdout
    assert [r for r in judged(name, whole, 16, CM384) if not r["ok"]] == []
    at = [m.start() for m in re.finditer(r"^== device \d+", whole, re.MULTILINE)]
    last = whole[at[-1]:]
    for body in (whole[: at[10]], whole[: at[-1]] + last[: last.index(":") + 6]):
        rows = judged(name, body, 16, CM384)
        assert rows and not [r for r in rows if r["ok"]], rows


@pytest.mark.sshd
def test_cut_and_spliced_listings_over_ssh_are_findings(sshd_cluster, tmp_path: Path) -> None:
    """Over real SSH (fake amd-smi replaying real captures): a host whose ``amd-smi metric``
    is cut after 6 of its 8 GPUs, one whose ``metric --ecc-blocks`` lists GPU 3 twice, and a
    whole host. Only the whole host passes throttle, pcie_width and ecc (the throttle check
    counts its GPUs itself; pcie_width and ecc were passed on main)."""
    from test_vendor_amd import _install_amd, amd
    from vendor_ssh import host_facts, install_replay, write_inventory

    from sncheck.vendors.amd import sim as amd_sim

    cluster = sshd_cluster(3, ["mi01", "mi02", "mi03"])
    for name in ("mi01", "mi02", "mi03"):
        _install_amd(cluster[name], amd("13"))
    metric = amd_sim.per_card(amd("04").replace("[output truncated]\n", ""), 8)
    head, gpus = sections(metric, r"^GPU: \d+")
    install_replay(cluster["mi02"], "amd-smi", {"list": amd_sim.gpu_list(), "monitor -putm": amd("05"),
                                                 "metric --ecc-blocks": amd_sim.per_card(amd("09"), 8),
                                                 "metric": head + "".join(gpus[:6])})
    ecc_head, ecc = sections(amd_sim.per_card(amd("09"), 8), r"^GPU: \d+")
    install_replay(cluster["mi03"], "amd-smi", {"list": amd_sim.gpu_list(), "monitor -putm": amd("05"),
                                                 "metric --ecc-blocks": ecc_head + "".join(ecc[:7]) + ecc[3],
                                                 "metric": metric})
    inv = write_inventory(tmp_path / "inv.yaml", cluster, "amd-mi300x",
                          {"mi01": ["mi01"], "mi02": ["mi02"], "mi03": ["mi03"]})
    rows, findings = host_facts(inv, cluster)
    by = {(r["host"], r["fact"]): r for r in rows}
    assert all(by[("mi01", f)]["ok"] for f in ("throttle", "pcie_width", "ecc")), rows
    for host, facts in (("mi02", ("throttle", "pcie_width")), ("mi03", ("ecc",))):
        assert not [by[(host, f)] for f in facts if by[(host, f)]["ok"]]  # the throttle check counts too
        assert [f for f in facts if by[(host, f)]["status"] == "parse_failed"
                and "amd-smi output is not whole" in by[(host, f)]["message"]], [by[(host, f)] for f in facts]
    assert {f.entity for f in findings} >= {"mi02", "mi03"} and "mi01" not in {f.entity for f in findings}


def test_the_slurm_backend_judges_a_cut_listing_the_same_way(monkeypatch) -> None:
    """The Slurm backend's host facts (its srun step's outcomes faked, the rest its own): a
    tray whose ``nvidia-smi nvlink -e`` lists 3 of its 4 GPUs (cut at a GPU's line: whole by
    its grammar, and its check counts nothing) does not pass ``nvlink_errors``; the other
    trays, served whole, do."""
    from imex_replay import replay_runner, slurm_fact_rows

    from sncheck.run.inputs import load_inventory

    inv = load_inventory(Path(__file__).resolve().parents[1] / "fixtures" / "inventories" / "nvl72-rack.yaml")

    def runner(host: str):
        hosts = inv.supernode_of(host).hosts
        run = replay_runner(host, hosts.index(host), inv.platform_of(host), ())
        if host != "tray02":
            return run

        def cut(argv: list[str], timeout: float):
            res = run(argv, timeout)
            if argv == ["nvidia-smi", "nvlink", "-e"]:
                res.stdout = res.stdout[: res.stdout.index("GPU 3:")]
            return res
        return cut

    rows = slurm_fact_rows(inv, runner, monkeypatch)
    bad = sorted({(r["host"], r["fact"], r["status"]) for r in rows if r["ok"] is False})
    assert bad == [("tray02", "nvlink_errors", "parse_failed")], bad
