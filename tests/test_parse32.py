"""parse32 (issue 28): values the formats carry that the parsers dropped, and the kernel log's link events."""

from __future__ import annotations

from sncheck.vendors.parsers import parse_text

_NOT_FOUND = ("[rank{r}]:[E1218 20:27:21.484941868 ProcessGroupNCCL.cpp:667] Stack trace of the failed collective not "
              "found, potentially because FlightRecorder is disabled. You can enable it by setting "
              "TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.\n")


def test_a_stack_trace_not_found_is_no_trace_printed() -> None:
    """printTraceback's 'not found' line was counted as a stack trace (the needle matched both)."""
    out = parse_text("torch-nccl", _NOT_FOUND.format(r=1) + _NOT_FOUND.format(r=0))
    fr = out["flight_recorder"]
    assert (fr["stack_traces"], fr["stack_traces_not_found"], fr["frames"]) == (0, 2, [])
    assert out["faults"] == ["a failed collective's stack trace was not found (the Flight Recorder is disabled: "
                             "TORCH_NCCL_TRACE_BUFFER_SIZE=0)"]


def test_the_message_head_alone_is_a_cut_message() -> None:
    out = parse_text("torch-nccl", _NOT_FOUND.format(r=1) + "[rank0]:[E1218 20:27:21.484955368 ProcessGroupNCCL.cpp:667] "
                     "Stack trace of the failed collective not fo")
    assert out["flight_recorder"]["stack_traces_not_found"] == 1 and out["flight_recorder"]["stack_traces"] == 0
    assert any("cut short" in e for e in out["errors"]), out["errors"]


def test_each_nccl_error_keeps_who_printed_it() -> None:
    """nccl_errors listed each result once and dropped which hosts, pids and ranks printed it."""
    text = ("node1:4000:4000 [0] NCCL INFO misc/socket.cc:50 -> 2 (unhandled system error)\n"
            "node2: Test NCCL failure common.cu:1032 'unhandled system error / '\n"
            "node2: Test NCCL failure common.cu:1032 'unhandled system error / '\n"
            "[rank7]: torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:275, unhandled system error "
            "(run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n")
    out = parse_text("nccl-debug", text)
    assert out["nccl_errors"] == ["unhandled system error"]
    assert [(s["host"], s["pid"], s["rank"], s["lines"]) for s in out["nccl_error_sources"]] == [
        ("node1", 4000, None, 1), ("node2", None, None, 2), (None, None, 7, 1)]
    assert "NCCL error: unhandled system error (on node1, node2, rank 7)" in out["faults"]


def test_the_ssh_read_keeps_the_link_lines() -> None:
    """sncheck's read greps the log by kernel_log.PATTERN: the link lines must pass it, the bond's not needed."""
    import re
    from pathlib import Path

    from sncheck.vendors import kernel_log
    from sncheck.vendors.parsers import strip_source_header

    real = Path(__file__).resolve().parents[1] / "fixtures/real/harvest28/kernel-log"
    for name, n in (("05_dmesg_bond0", 9), ("06_dmesg_grep_limited_by", 2)):
        raw = strip_source_header(next(real.glob(name + "*")).read_text())
        kept = "".join(line + "\n" for line in raw.splitlines() if re.search(kernel_log.PATTERN, line))
        events = kernel_log.parse_kernel_log(kept + kernel_log.END_MARKER + "\n")["events"]
        assert len(events) == n and {e["source"] for e in events} <= {"nic_link", "pcie_link"}, events


def test_a_pcie_link_names_what_it_lost() -> None:
    line = ("[    3.1] {drv} 0000:41:00.0: 63.012 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at "
            "<unknown> (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link), in Flit mode\n")
    [e] = parse_text("kernel-log", line.format(drv="pci"))["events"]
    assert (e["limited"], e["limited_at"], e["flit"], e["bus_id"], e["driver"]) == ("width+speed", None, True,
                                                                                     "0000:41:00", "pci")
    # the same call where nothing limits the link prints no 'limited by': no event
    assert parse_text("kernel-log", "[    3.1] mlx5_core 0000:41:00.0: 252.048 Gb/s available PCIe bandwidth "
                      "(16.0 GT/s PCIe x16 link)\n")["events"] == []


def _demo():
    from pathlib import Path

    from sncheck.run.inputs import load_inventory
    from sncheck.topology import Topology

    return Topology(load_inventory(Path(__file__).resolve().parents[1] / "fixtures/inventories/demo-2sn.yaml"))


def _mock_kernel_rows(faults: str, read: set[str]) -> list[dict]:
    """The kernel_log rows the mock's host facts give on three hosts of demo-2sn with ``faults`` (``read``: the hosts
    read before)."""
    from sncheck.backends import mockfacts
    from sncheck.run.inputs import load_faults_text

    topo = _demo()
    rows: list[dict] = []
    mockfacts.host_facts(topo, load_faults_text(faults, topo).active(), ("node001", "node006", "node007"), rows.append,
                         kernel_read=read)
    return [r for r in rows if r.get("fact") == "kernel_log"]


ECC_REMAP = ("faults:\n  - {type: ecc_uncorrectable, target: node006/gpu1, count: 3}\n"
             "  - {type: remap_pending, target: node007/gpu2}\n")


def test_the_mock_kernel_log_prints_the_drivers_xids_for_ecc_and_remap_faults() -> None:
    """reviews19 #10: the mock acted ecc_uncorrectable / remap_pending out in nvidia-smi -q alone; the driver also
    prints Xid 48 per DBE and Xid 63 for a row marked for remapping: kernel-xid judges them, on the card."""
    import pandas as pd

    from sncheck.health.metrics import DetectContext
    from sncheck.health.rules import evaluate
    from test_kernel_policy import shipped

    read: set[str] = set()
    rows = _mock_kernel_rows(ECC_REMAP, read)
    assert len(rows) == 3 and all(r["status"] == "ok" for r in rows) and read == {"node001", "node006", "node007"}
    events = {r["host"]: [(e["code"], e["card"]) for e in r["value"]["events"]] for r in rows if r["value"]["events"]}
    assert events == {"node006": [(48, 1)] * 3, "node007": [(63, 2)]}
    topo = _demo()
    found = evaluate([r for r in shipped().rules if r.op == "kernel_events"], pd.DataFrame(rows),
                     DetectContext(topo, topo.inventory.design))
    assert {(f.rule, f.entity, f.severity, f.evidence["reports"]) for f in found} == {
        ("kernel-xid", "node006/gpu1", "critical", 3), ("kernel-xid", "node007/gpu2", "warning", 1)}
    # a later read of the run (the confirmation's) starts after the lines read: no report again
    assert not any(r["value"]["events"] for r in _mock_kernel_rows(ECC_REMAP, read))
