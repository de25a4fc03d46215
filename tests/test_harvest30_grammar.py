"""Harvest 30's first-try misses, read now by their tools' grammars (README "Harvest 30").

Written from what the tools and launchers print, not from the captures that showed them:

- Open MPI's ``--tag-output`` tags each chunk it forwards, not each line
  (open-mpi/ompi orte/mca/iof/base/iof_base_output.c, orte_iof_base_write_output: the tag at the
  chunk's start and after each newline inside it): nccl-tests prints a row in three pieces
  (common.cu: size/count/type/redop/root, then each half's timing), so a row may carry
  ``[1,0]<stdout>:`` before each piece, as MPICH hydra's ``-prepend-rank`` puts ``[0] ``. The row
  was 'unreadable', exit 1.
- the MPI library's Slingshot summary at MPI_Finalize (Cray MPICH's ``MPICH Slingshot Network
  Summary: N network timeouts``; HPE's Open MPI counters print ``OpenMPI Slingshot Network
  Summary: %ld network timeouts``) after nccl-tests' footer was 'not read: 1 line after the end',
  exit 1.
- PyTorch's C10D_NCCL_CHECK message (``NCCL error in: FILE:LINE, <result>, NCCL version V``) word
  wrapped after ``NCCL error in:`` with its tail indented: no message was found at all
  ('no PyTorch ProcessGroupNCCL watchdog ...')."""

from __future__ import annotations

from sncheck.vendors.parsers import failures, parse_text

_TAG = "[1,0]<stdout>:"
_HEAD = ("# nThread 1 nGpus 1 minBytes 8 maxBytes 32 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
         "validation: 1 graph: 0\n#\n# Using devices\n"
         "#  Rank  0 Group  0 Pid     25 on node-0 device  0 [0x53] NVIDIA H100 80GB HBM3\n"
         "#  Rank  1 Group  0 Pid     25 on node-1 device  0 [0x53] NVIDIA H100 80GB HBM3\n#\n"
         "#                                                              out-of-place                       in-place\n"
         "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
         "#wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
_ROWS = ((8, 2, "85.14", "62.82"), (16, 4, "62.46", "63.09"), (32, 8, "63.27", "63.52"))
_FOOT = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.00124 \n#\n"


def _row(size: int, count: int, oop: str, ip: str, tag: str = "") -> str:
    """A row as common.cu prints it, its three pieces each behind ``tag`` (an Open MPI chunk tag)."""
    return (f"{size:>12}  {count:>12}  {'float':>8}  {'sum':>6}  {-1:>6}{tag}  {oop:>7}  {0.0:6.2f}  {0.0:6.2f}  "
            f"{0:>5}{tag}  {ip:>7}  {0.0:6.2f}  {0.0:6.2f}  {0:>5}")


def _tagged(text: str) -> str:
    return "".join(f"{_TAG}{ln}\n" for ln in text.splitlines())


def test_a_row_tagged_before_each_of_its_pieces_reads_as_the_row() -> None:
    """'unreadable result row' for every row, exit 1."""
    rows = "".join(_row(*r, tag=_TAG) + "\n" for r in _ROWS)
    out = parse_text("nccl-tests", _tagged(_HEAD) + "".join(_TAG + ln + "\n" for ln in rows.splitlines())
                     + _tagged(_FOOT), collective="all_reduce")
    assert failures(out) == []
    assert [(r["size_bytes"], r["out_of_place"]["time_us"], r["in_place"]["time_us"]) for r in out["rows"]] == \
        [(8, 85.14, 62.82), (16, 62.46, 63.09), (32, 63.27, 63.52)]


def test_the_mpi_librarys_slingshot_summary_after_the_footer_is_no_stray_text() -> None:
    """'not read: 1 line after the end', exit 1; any other line there is still not this run's."""
    run = _HEAD + "".join(_row(*r) + "\n" for r in _ROWS) + _FOOT
    for lib in ("MPICH", "OpenMPI"):
        out = parse_text("nccl-tests", run + f"\n{lib} Slingshot Network Summary: 3 network timeouts\n\n",
                         collective="all_reduce")
        assert failures(out) == [] and out["avg_busbw_GBps"] == 0.00124
    out = parse_text("nccl-tests", run + "MPICH Slingshot Network Summary: many timeouts\n", collective="all_reduce")
    assert any("not read: 1 line after the end" in f for f in failures(out))


def test_an_nccl_error_wrapped_after_its_head_is_read_whole() -> None:
    """'no PyTorch ProcessGroupNCCL watchdog or Flight Recorder message' (the head names no ProcessGroupNCCL)."""
    text = ("torch.distributed.DistBackendError: NCCL error in: \r\n"
            "  ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error (run with \r\n"
            "  NCCL_DEBUG=INFO for details), NCCL version 2.18.6\r\n"
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\r\n"
            "Last error:\r\nsocketStartConnect: Connect to 10.1.2.3<43515> failed : Software caused connection abort\r\n")
    out = parse_text("torch-nccl", text)
    assert out["nccl_version"] == "2.18.6"
    assert [(e["where"], e["result"], e["last_error"]) for e in out["nccl_errors"]] == [
        ("../torch/csrc/distributed/c10d/NCCLUtils.hpp:275", "unhandled system error (run with NCCL_DEBUG=INFO for details)",
         "socketStartConnect: Connect to 10.1.2.3<43515> failed : Software caused connection abort")]
    assert failures(out)
