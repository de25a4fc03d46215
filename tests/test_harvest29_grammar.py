"""Harvest 29's first-try misses, read now by their tools' grammars (README "Harvest 29").

Written from what the tools print, not from the captures that showed them:

- nvidia-smi on Windows heads its first column ``TCC/WDDM`` where Linux prints ``Persistence-M``
  and ends each GPU's first cell in its driver model (NVIDIA's nvidia-smi documentation, "Driver
  Model": WDDM, TCC, MCDM); the table was read as one of no GPU, exit 0. A GPU block whose first
  cell ends in a word the grammar does not hold is now a GPU not read, never a pass.
- a terminal that wrapped the banner leaves a run of spaces after ``CUDA Version:``.
- rocm-smi's main() (ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py, 8f9f943 to rocm-5.0.2)
  prints ``WARNING:  \\t\\t One or more commands failed`` before its footer when a command failed
  (RETCODE), then exits RETCODE; the line was dropped and the output read as whole and fine."""

from __future__ import annotations

from sncheck.vendors.delivery import unwrap
from sncheck.vendors.parsers import failures, parse_text

_W = (31, 22, 22)


def _row(cells: list[str]) -> str:
    return "|" + "|".join(c.ljust(w) for c, w in zip(cells, _W)) + "|"


def _table(first_cells: list[str], banner: str = " NVIDIA-SMI 527.41       Driver Version: 527.41       "
           "CUDA Version: N/A") -> str:
    rule = "+" + "+".join("-" * w for w in _W) + "+"
    lines = ["+" + "-" * 77 + "+", "|" + banner.ljust(77) + "|", "|" + "+".join("-" * w for w in _W) + "|",
             _row([" GPU  Name            TCC/WDDM", " Bus-Id        Disp.A ", " Volatile Uncorr. ECC "]),
             _row([" Fan  Temp  Perf  Pwr:Usage/Cap", "         Memory-Usage ", " GPU-Util  Compute M. "]),
             _row(["", "", "               MIG M. "]), "|" + "+".join("=" * w for w in _W) + "|"]
    for i, first in enumerate(first_cells):
        lines += [_row([first, f" 00000000:{0x37 + i:02X}:00.0 Off ", "                  Off "]),
                  _row([f"  0%   3{i}C    P8    12W / 300W ", f"  {100 + i:>5}MiB / 49140MiB ", "      0%      Default "]),
                  _row(["", "", "                  N/A "]), rule]
    lines += ["", "+" + "-" * 77 + "+", "| Processes:".ljust(78) + "|", "|" + "=" * 77 + "|",
              "|  No running processes found".ljust(78) + "|", "+" + "-" * 77 + "+"]
    return "\n".join(lines) + "\n"


def test_a_windows_table_reads_its_gpus_and_their_driver_model() -> None:
    """It read no GPU at all and exited 0 (the first cell ends in WDDM, not On/Off)."""
    out = parse_text("nvidia-smi", _table(["   0  NVIDIA A40         WDDM  ", "   1  NVIDIA A40          TCC  "]))
    assert failures(out) == []
    assert [(g["index"], g["bus_id"], g["driver_model"], g["persistence_mode"], g["memory_used_MiB"])
            for g in out["gpus"]] == [(0, "00000000:37:00.0", "WDDM", None, 100), (1, "00000000:38:00.0", "TCC", None, 101)]
    assert out["cuda_version"] is None and out["driver_version"] == "527.41"


def test_a_gpu_block_the_grammar_does_not_hold_is_a_gpu_not_read() -> None:
    """A first cell ending in a word that is neither Persistence-M nor a driver model: before, no GPU and exit 0."""
    out = parse_text("nvidia-smi", _table(["   0  NVIDIA A40         XYZ   "]))
    assert out["gpus"] == []
    assert any("GPU 0" in f and "not read" in f for f in failures(out))


def test_a_wrapped_banner_keeps_its_cuda_version() -> None:
    out = parse_text("nvidia-smi", _table(["   0  NVIDIA L40S        WDDM  "], banner=" NVIDIA-SMI 550.54.14   Driver "
                                          "Version:    550.54.14   CUDA Version:" + " " * 40 + "12.4"))
    assert (out["driver_version"], out["cuda_version"]) == ("550.54.14", "12.4")


_FAILED = "WARNING:  \t\t One or more commands failed\n"
_CONCISE = ("======================= ROCm System Management Interface =======================\n"
            "================================= Concise Info =================================\n"
            "GPU  Temp   AvgPwr  SCLK    MCLK     Fan  Perf  PwrCap  VRAM%  GPU%  \n"
            "0    39.0c  88.0W   800Mhz  1600Mhz  0%   auto  560.0W    0%   0%    \n"
            "1    45.0c  N/A     800Mhz  1600Mhz  0%   auto  0.0W      0%   0%    \n"
            "================================================================================\n")
_FOOTER = "============================= End of ROCm SMI Log ==============================\n"


def test_rocm_smi_failed_command_warning_is_a_failure_in_each_view() -> None:
    """main()'s warning said the tool exited non-zero; it was dropped (the concise table read whole and fine)."""
    assert failures(parse_text("rocm-smi", _CONCISE + _FOOTER)) == []
    out = parse_text("rocm-smi", _CONCISE + _FAILED + _FOOTER)
    assert [g["power_W"] for g in out["gpus"]] == [88.0, None]
    assert any("One or more commands failed" in f for f in failures(out))
    bus = ("=== ROCm System Management Interface ===\n=== PCI Bus ID ===\nGPU[0]\t\t: PCI Bus: 0000:C9:00.0\n"
           "======\n")
    assert failures(parse_text("rocm-smi", bus + _FOOTER)) == []
    assert any("One or more commands failed" in f for f in failures(parse_text("rocm-smi", bus + _FAILED + _FOOTER)))
    pids = ("=== ROCm System Management Interface ===\n=== KFD Processes ===\nKFD process information:\n"
            "PID\tPROCESS NAME\tGPU(s)\tVRAM USED\tSDMA USED\tCU OCCUPANCY\n42\tpython3\t1\t1024\t0\t0\n======\n")
    assert failures(parse_text("rocm-smi-showpids", pids + _FOOTER)) == []
    assert any("One or more commands failed" in f
               for f in failures(parse_text("rocm-smi-showpids", pids + _FAILED + _FOOTER)))


_PERFQUERY = ("# Port extended counters: Lid 274 port 1 (CapMask: 0x200)\nPortSelect:......................1\n"
              "CounterSelect:...................0x0000\nPortXmitData:....................4372366170488\n"
              "PortRcvData:.....................4395837050794\nPortXmitPkts:....................15541365352\n"
              "PortRcvPkts:.....................15589048273\nPortUnicastXmitPkts:.............23547071\n"
              "PortUnicastRcvPkts:..............65353049\nPortMulticastXmitPkts:...........764\n"
              "PortMulticastRcvPkts:............1890846\n")


def test_an_output_kept_as_a_scripts_comment_reads_as_the_output() -> None:
    """Every line behind a comment's '# ' (perfquery -x in a script's header): refused before, exit 2."""
    commented = "# $ perfquery -x\n#\n" + "".join(f"# {ln}\n" for ln in _PERFQUERY.splitlines())
    assert parse_text("perfquery", commented)["ports"] == parse_text("perfquery", _PERFQUERY)["ports"]
    assert unwrap(commented).endswith(_PERFQUERY)


def test_a_tools_own_hash_lines_are_no_comment_quote() -> None:
    """nccl-tests' header alone and ibqueryerrors' summary alone: every line starts with '#', none is a quote."""
    header = ("# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20\n#\n"
              "# Using devices\n#  Rank  0 Group  0 Pid  4242 on node7 device  0 [0x19] NVIDIA H100 80GB HBM3\n")
    summary = "## Summary: 4 nodes checked, 0 bad nodes found\n##          8 ports checked, 0 ports have errors\n"
    assert unwrap(header) == header and unwrap(summary) == summary
