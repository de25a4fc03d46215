"""Launcher labels on NCCL and PyTorch lines (reviews14 #3, #5): torchrun's --tee header
'[{role}{local_rank}]:' (elastic's TailLog, no blank after it) and c10's '[rankN]:' are a line's
delivery, never its HOST or its message."""

from __future__ import annotations

from sncheck.vendors.delivery import unwrap
from sncheck.vendors.parsers import parse_text

INIT = "node1:4000:4000 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x1234 - Init COMPLETE\n"
INIT2 = "node2:4100:4100 [1] NCCL INFO comm 0x66d0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2b000 commId 0x1234 - Init COMPLETE\n"
AGENT = "W1206 12:00:00.000000 123 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable\n"


def test_torchrun_header_on_every_line_is_delivery():
    text = "[default0]:" + INIT + "[default1]:" + INIT2
    assert unwrap(text) == INIT + INIT2
    out = parse_text("nccl-debug", text)
    assert out["hosts"] == ["node1", "node2"] and not out["errors"], out["errors"]


def test_torchrun_header_beside_the_agents_own_lines_is_no_part_of_the_host():
    """torchrun's own lines carry no header, so delivery leaves every line as it is: the view reads
    the header off the HOST (before: host ':node1', 'interleaved mid-line', exit 1)."""
    out = parse_text("nccl-debug", AGENT + "[default0]:" + INIT + "[trainer1]:" + INIT2)
    assert out["hosts"] == ["node1", "node2"], out
    assert [r["host"] for r in out["ranks"]] == ["node1", "node2"]
    assert not out["errors"], out["errors"]


def test_a_cut_head_glued_before_a_line_is_still_said():
    out = parse_text("nccl-debug", INIT + INIT2 + "node0:400" + INIT)
    assert out["errors"] and "interleaved" in out["errors"][0]


def test_c10_rank_label_is_not_taken_as_torchrun_s():
    """'[rank3]:' is c10's: the torch-nccl view reads the process's rank from it, so delivery keeps it."""
    line = "[rank3]:[E ProcessGroupNCCL.cpp:1] [PG 0 Rank 3] Watchdog caught collective operation timeout\n"
    assert unwrap(line * 2) == line * 2


ERROR = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
         "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5\n"
         "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
         "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 10\n")


def test_last_error_under_a_rank_label_is_kept():
    """torch >= 2.3 prints '[rankN]: ' before every stderr line; torchrun '[defaultN]:' (before: null)."""
    for label in ("[rank3]: ", "[default0]:", "[default0]:[rank0]: "):
        text = "".join(label + ln + "\n" for ln in ERROR.splitlines())
        out = parse_text("torch-nccl", AGENT + text)
        assert [e["last_error"] for e in out["nccl_errors"]] == [
            "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 10"], (label, out["nccl_errors"])

