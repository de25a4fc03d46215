"""The grammar of the plain ``nvidia-smi`` table (:mod:`sncheck.vendors.nvidia.smi_table`).
nvidia-smi is closed: its documentation and every real capture found, not a source file."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

GRAMMAR = {"nvidia-smi": Grammar(
    tool="nvidia-smi (no options: the standard table)",
    versions="drivers 418 to 610 (the 2-line GPU block to 440, 3 lines with MIG M. from 450, the wider box of 525+, "
             "its banner's rule joined by '+' on 580, 'KMD Version' and 'CUDA UMD Version' in the banner from 610; "
             "on Windows the 'TCC/WDDM' column)",
    sources=(
        "closed: NVIDIA nvidia-smi documentation (nvidia-smi.txt man page, 'Standard output'; r535, r550, r570)",
        "closed: the real captures under fixtures/real/ (harvest/nvidia-smi: gpud's 525.125.06 with ERR! and "
        "550.90.07 8xH100; harvest and harvest5: 515.65.01 to 555.42.02; nvidia-versions: 418.87.01 P100, "
        "580.105.08 T4, 580.159.03 cut, 610.57.04 RTX 2080 SUPER of utkuozdemir/nvidia_gpu_exporter's captures)",
        "closed: Windows (NVIDIA nvidia-smi documentation, 'Driver Model': WDDM, TCC, MCDM; 'Always N/A on Linux'): "
        "the table's header names 'TCC/WDDM' where Linux prints 'Persistence-M', each GPU's first cell ending in "
        "its driver model (harvest 29's 527.41 Azure Stack HCI GPU-P host, HPE-Japan-Presales/e-learning @ "
        "b353016: read as no GPU at all, exit 0, before); a terminal that wrapped the banner leaves a run of "
        "spaces after 'CUDA Version:' (harvest 29's 550.54.14: its CUDA version was not read)",
    ),
    lines=("an optional time line ('Mon Jan 20 10:18:26 2025'); a box: '+---+', '| NVIDIA-SMI V  Driver Version: V  "
           "CUDA Version: V|N/A |', a '|---+---+---|' rule, the header (2 lines to 440, 3 with 'MIG M.' from 450), "
           "a '|===+===+===|' rule; per GPU a block of 2 (3 from 450) lines of 3 cells split by '|': 'INDEX NAME "
           "PERSISTENCE | BUS-ID DISP.A | VOLATILE UNCORR. ECC' and 'FAN TEMP PERF PWR:USAGE / CAP | USED / TOTAL "
           "MiB | UTIL COMPUTE-MODE' (then '| | MIG M.'), blocks separated by '+---+---+---+' rules (older: "
           "'|---+---|'), the last closed by one; 'N/A' where the GPU does not say, 'ERR!' where nvidia-smi could "
           "not read it; a 'MIG devices:' table; a 'Processes:' box (header, '|===|', a row per process 'GPU GI CI "
           "PID TYPE NAME USAGE' (before 450 'GPU PID Type Process name Usage') or 'No running processes found', "
           "closed by '+---+'); a reporter's excerpt may start inside the GPU table (no banner): read from its first "
           "whole GPU block, and cut (errors)"),
    end="the GPU table closed by its '+---+' rule with every GPU block's second line, then the Processes box closed "
        "(printed under every table, 'No running processes found' when none)",
    failures=("'NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver', 'No devices were "
              "found', 'Unable to determine the device handle for GPU ...: Unknown Error' / 'GPU is lost', 'Failed to "
              "initialize NVML: Driver/library version mismatch' (faults); ERR! in a GPU's cells and a volatile "
              "uncorrected ECC count above zero (faults); a table cut short (errors); a GPU block (its index "
              "and bus id there) whose first cell ends in neither a Persistence-M value nor a driver model: the GPU "
              "not read (errors)"),
    values=("nvidia_smi_version, driver_version, cuda_version, gpus[{index, name, persistence_mode, driver_model "
            "(Windows; null on Linux), bus_id, "
            "display_active, ecc_uncorrected, fan, temp_C, perf, power_W, power_cap_W, memory_used_MiB, "
            "memory_total_MiB, util_pct, compute_mode, mig_mode}], processes[{gpu, gi, ci, pid, type, name, "
            "memory_MiB}], faults, errors"),
)}
