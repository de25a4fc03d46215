"""Harvest 22's first-try misses, each read now by its tool's grammar (README "Harvest 22").

Each case is written from the tool's source (the line it prints), not from the capture that
showed it: NCCL's ``[DEV]`` field before its level, PyTorch's ``getNcclErrorDetailStr`` ('Last
error:'), c10's ``[rankN]:`` log prefix (the global rank) beside a group's ``[PG P Rank R]``, the
older driver's one-line fallen-off-the-bus message, rocm-smi 1.x/2.x's printLog names, and the
perftest result table before its MsgRate column."""

from __future__ import annotations

from sncheck.vendors.parsers import parse_text


def test_an_nccl_line_quoted_from_its_device_on_keeps_the_device() -> None:
    """A reporter trimmed 'HOST:PID:TID ' and kept '[DEV] FILE:LINE NCCL WARN MSG' (ncclDebugLog's own
    layout from its device field on): every line's '[N] ' was taken for MPICH's -prepend-rank label,
    the lines regrouped by it and the device lost (warnings' device null)."""
    text = ("[3] NCCL INFO 2 coll channels, 2 p2p channels, 2 p2p channels per peer\n\n"
            "[1] misc/shmutils.cc:103 NCCL WARN Cuda failure 'invalid argument'\n\n"
            "[0] misc/shmutils.cc:114 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 9)\n")
    out = parse_text("nccl-debug", text)
    assert [(w["device"], w["line"]) for w in out["warnings"]] == [(1, 103), (0, 114)]
    # MPICH's -prepend-rank label before a whole NCCL line is still the launcher's: taken, the device read
    tagged = parse_text("nccl-debug", "[1] h1:10:11 [1] misc/shmutils.cc:103 NCCL WARN Cuda failure 'x'\n"
                                      "[0] h1:12:13 [0] NCCL INFO Using network IB\n")
    assert [(w["host"], w["device"]) for w in tagged["warnings"]] == [("h1", 1)]


def test_a_distbackenderror_keeps_ncclS_last_error() -> None:
    """C10D_NCCL_CHECK's message is 'NCCL error in: FILE:LINE, RESULT, NCCL version V' then
    getNcclErrorDetailStr's '\\nncclInvalidUsage: ...\\nLast error:\\n<ncclGetLastError>': the last
    error (what NCCL's WARN said) was dropped."""
    one = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
           "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5\n"
           "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
           "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 10\n")
    out = parse_text("torch-nccl", one)
    assert out["nccl_errors"][0]["last_error"] == "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 10"
    # two errors, each its own last error; one without a 'Last error:' keeps null
    two = one + one.replace("rank 1 and", "rank 7 and") + (
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.14.3\n")
    errs = parse_text("torch-nccl", two)["nccl_errors"]
    assert [e["last_error"] for e in errs] == [
        "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 10",
        "Duplicate GPU detected : rank 7 and rank 0 both on CUDA device 10", None]


def test_the_rank_prefix_is_the_process_not_the_groupS_rank() -> None:
    """c10's '[rankN]:' log prefix is the global rank (SetGlobalRank); a group's logPrefix '[PG 5 Rank 0]'
    its rank inside that group. Two processes, each rank 0 of its own PG 5, were read as one rank 0."""
    head = "[E ProcessGroupNCCL.cpp:1316] [PG 5 Rank 0] Heartbeat monitor timed out! Process will be terminated " \
           "after dumping debug info. workMetaList_.size()=3\n"
    out = parse_text("torch-nccl", "[rank0]:" + head + "[rank4]:" + head)
    assert sorted(out["heartbeat_timeouts"]) == [0, 4] and out["ranks"] == [0, 4]
    timeout = ("[rank6]:[E626 05:06:30.929096625 ProcessGroupNCCL.cpp:632] [PG ID 3 PG GUID 3 Rank 2] Watchdog caught "
               "collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
               "Timeout(ms)=600000) ran for 600013 milliseconds before timing out.\n")
    t = parse_text("torch-nccl", timeout)["timeouts"][0]
    assert (t["rank"], t["pg"]) == (6, "3")


def test_the_older_one_line_fallen_off_the_bus_message_is_an_xid_79() -> None:
    """Drivers of the 331 era print 'NVRM: GPU at 0000:01:00.0 has fallen off the bus.' (no ': GPU' before
    'has'): read as no event, exit 0 on a lost GPU."""
    out = parse_text("kernel-log", "[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus.\n"
                                   "[   49.261465] NVRM: os_pci_init_handle: invalid context!\n")
    assert [(e["code"], e["bus_id"], e["xid_line"]) for e in out["events"]] == [(79, "0000:01:00", False)]


def test_rocm_smi_1x_and_2x_printlog_names() -> None:
    """ROC-smi's rocm_smi.py (1.x) printLog: 'Temperature: %sc', 'GPU Clock Level: L (FREQ)', 'GPU Memory
    Clock Level: L (FREQ)', 'Fan Level: L (S)%', 'Average Graphics Package Power: %sW', 'Current GPU use: %s%';
    2.x 'Temperature (Sensor edge) (c)' and 'Fan Level: L (S%)'. None of them was read."""
    one = ("GPU[0] \t\t: Temperature: 81.0c\nGPU[0] \t\t: GPU Clock Level: 1 (991Mhz)\n"
           "GPU[0] \t\t: GPU Memory Clock Level: 3 (945Mhz)\nGPU[0] \t\t: Fan Level: 124 (48.63)%\n"
           "GPU[0] \t\t: Average Graphics Package Power: 73.68W\nGPU[0] \t\t: Current GPU use: 12%\n"
           "GPU[0] \t\t: Current PowerPlay Level: manual\n"
           "....................           End of ROCm SMI Log          ....................\n")
    g = parse_text("rocm-smi", one)["gpus"][0]
    assert (g["temp_C"], g["sclk_MHz"], g["mclk_MHz"], g["fan_pct"], g["power_W"], g["gpu_pct"], g["perf"]) == (
        81.0, 991, 945, 48.63, 73.68, 12, "manual")
    two = ("GPU[0] \t\t: Temperature (Sensor edge) (c): 50.0\nGPU[0] \t\t: sclk clock level: 0 (852Mhz)\n"
           "GPU[0] \t\t: Fan Level: 79 (30%)\n==============================End of ROCm SMI Log ==============================\n")
    g = parse_text("rocm-smi", two)["gpus"][0]
    assert (g["temp_C"], g["sclk_MHz"], g["fan_pct"]) == (50.0, 852, 30)


def test_perftest_before_its_msgrate_column() -> None:
    """Old perftest (OFED 1.5's send_bw.c) printed '#bytes #iterations BW peak[MB/sec] BW average[MB/sec]'
    and four figures a row: read as a header with no row, cut short (exit 1 on a whole run)."""
    text = ("                    Send BW Test\nConnection type : UD\nMtu : 2048\n"
            "------------------------------------------------------------------\n"
            " #bytes #iterations    BW peak[MB/sec]    BW average[MB/sec]\n"
            "      2        1000               7.51                  7.21\n"
            "   2048        1000            2923.29               2919.91\n"
            "------------------------------------------------------------------\n")
    out = parse_text("ib-write-bw", text)
    assert out["errors"] == [] and [(r["bytes"], r["printed_avg"], r["msg_rate_Mpps"]) for r in out["rows"]] == [
        (2, 7.21, None), (2048, 2919.91, None)]
    cut = parse_text("ib-write-bw", text.rsplit("-" * 66, 1)[0])
    assert any("closing line" in e for e in cut["errors"])


def test_a_wrapped_nccl_error_still_keeps_its_last_error() -> None:
    """The error's own line wrapped by a terminal (its tail pieces read with it) ended the wait for its
    'Last error:' before the detail and 'Last error:' lines came: last_error null."""
    msg = ("[rank3]:[E0709 17:05:38.162814866 ProcessGroupNCCL.cpp:1414] [PG 0 Rank 3] Process group watchdog thread "
           "terminated with exception: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, invalid usage, "
           "NCCL version 2.20.5")
    text = "\n".join(msg[i:i + 80] for i in range(0, len(msg), 80)) + (
        "\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
        "Duplicate GPU detected : rank 3 and rank 0 both on CUDA device 1000\n")
    errors = parse_text("torch-nccl", text)["nccl_errors"]
    assert [(e["where"], e["last_error"]) for e in errors] == [
        ("../torch/csrc/distributed/c10d/NCCLUtils.hpp:275", "Duplicate GPU detected : rank 3 and rank 0 both on CUDA device 1000")]
