"""The grammar of nccl-tests' and rccl-tests' output (:mod:`sncheck.vendors.nccltests.parse`),
read in NVIDIA/nccl-tests' own source (``src/common.cu``, ``src/util.cu``, ``src/common.h``) at
the versions each line names, and ROCm/rccl-tests' for its differences."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

_SRC = "NVIDIA/nccl-tests"
GRAMMAR = {
    "nccl-tests": Grammar(
        tool="nccl-tests `*_perf` (all_reduce_perf, all_gather_perf, ...): stdout, and the `-J` JSON file",
        versions="2.0 to 2.19.6 text; -J JSON 2.17 on (file version 3); PR #318 fork --json",
        sources=(
            f"{_SRC} src/common.cu @ v2.0.0, v2.10.0: nThread line, '#   Rank %2d Pid' lines, rows "
            "'%12li  %12li  %8s  %6s' (+ collective's own columns: src/all_reduce.cu print_header), halves "
            "'  %7s  %6.2f  %6.2f  %5.0le' (error) or '%5s' N/A, footer 'Out of bounds values', 'Avg bus bandwidth'",
            f"{_SRC} src/common.cu @ v2.13.8: '#  Rank %2d Group %2d Pid', redop and root always, '#wrong' as %5g, "
            "'agg iters' and 'graph' in the nThread line",
            f"{_SRC} src/common.cu @ v2.14.1: rank lines' bus id '[%04x:%02x:%02x]' (was '[0x%02x]')",
            f"{_SRC} src/common.cu @ v2.16.9: '# Collective test starting: %s' / '# Collective test concluded: %s'",
            f"{_SRC} src/util.cu @ v2.18.0: '# nccl-tests version %s nccl-headers=%d nccl-library=%d', footer "
            "'# %-20s : ...', '# GPU memory usage', '# error: %s' (ncclGetLastError), timestamp column (-Z), "
            "getFloatStr cells; JSON keys (writeDeviceReport, writeBenchmarkLine*, writeResultFooter)",
            "nccl-tests 2.20.0 as built (dgx-spark-playbooks PR 103's capture): the version followed by the "
            "build's git hash, '# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102'",
            f"{_SRC} src/util.cu @ v2.19.6: per-iteration columns i_min i_max i_p99 i_cv% per half (-I 1), "
            "'unalign' in the nThread line, blocking modes",
            f"{_SRC} src/common.h @ v2.19.6: failure lines '%s: Test CUDA failure', '%s: Test NCCL failure', "
            "' .. %s pid %d: Test failure'; src/common.cu: '%s: Test timeout (%ds)'",
            f"{_SRC} PR #318 (2025-06, not merged; its fork's source is not public here: the PR's sample output): "
            "--json, a text preamble then {identifier, version, benchmark[{size: {count, type, redop, root, "
            "oop_time, oop_algbw, oop_busbw, oop_error, ip_*}}]}",
        ),
        lines=(
            "[2.18+] '# nccl-tests version V nccl-headers=N nccl-library=N'; [2.16+] '# Collective test starting: "
            "PROG'; '# nThread T nGpus G minBytes B maxBytes B step: S(factor|bytes) warmup iters: W iters: I "
            "[agg iters: A] validation: V [graph: G] [unalign: U]'; optional '# Blocking Enabled', '# Per-Iteration "
            "Report', '# Parallel Init'; '#'; '# Using devices'; one '#  Rank R [Group g] Pid P on HOST device D "
            "[BUS] NAME' per rank (a process's list cut at 2048 bytes ends '...'); NCCL's own banner 'NCCL version "
            "X.Y.Z+cudaA.B' on rank 0 (NVIDIA/nccl src/init.cc showVersion; 2.9.6 and 2.29.3 in harvest7's captures, "
            "after the device list or between WARN lines; under NCCL_DEBUG=INFO an INFO line, 'HOST:PID:TID [D] NCCL INFO NCCL "
            "version X.Y.Z+cudaA.B', harvest 21): nccl_release; '#'; the column header (two "
            "or three '#' lines: 'size count type [redop] [root] time|cputime algbw busbw #wrong|error ...'); "
            "one row per size: size (B), count (elements), type, [redop], [root], then per half (out-of-place, "
            "in-place): time (us), algbw (GB/s), busbw (GB/s), #wrong (count, %6g) or error (float) or N/A, "
            "[+ i_min i_max i_p99 (us) i_cv% with -I 1]; [timestamp '%Y-%m-%d %H:%M:%S' with -Z]; footer "
            "'# Out of bounds values : N OK|FAILED', '# Avg bus bandwidth : X [OK|FAILED]', '#', [2.16+] "
            "'# Collective test concluded: PROG'; [2.18+] '# GPU memory usage : ...', '#', '# error: E' or ''. "
            "-J JSON: {version, start_time, args, env, nccl_version, config{..., devices[]}, results[{size, "
            "count, type, redop, root (\"%6i\"), out_of_place{time|cpu_time, alg_bw, bus_bw, nwrong}, in_place, "
            "[*_per_iter]}], out_of_bounds{count, okay}, average_bus_bandwidth{bandwidth, okay} (spelt "
            "'bandwidith' before 2.18), errors[], end_time}. Delivered under MPICH hydra's -prepend-rank, whose label "
            "comes before each chunk a rank writes: a row printed in its three pieces (the size/count/type/redop/"
            "root part, each half's timing) carries '[0] ' before each (nccl#1453, harvest8), read out of a line "
            "that then reads as a row; Open MPI's --tag-output alike, '[1,0]<stdout>:' before each chunk "
            "(open-mpi/ompi orte/mca/iof/base/iof_base_output.c orte_iof_base_write_output: the tag at a chunk's "
            "start and after each newline in it; harvest 30's EKS p5 log)."
        ),
        end=("the 'Avg bus bandwidth' line; where the log has '# Collective test starting' (2.16 on), its "
             "'# Collective test concluded' line. After it only the job's libraries and launcher print: NCCL's and "
             "UCX's log lines, the MPI library's Slingshot summary at MPI_Finalize ('MPICH Slingshot Network Summary: N "
             "network timeouts', Cray MPICH, real capture harvest 30's Polaris files; 'OpenMPI Slingshot Network "
             "Summary: N network timeouts', HPE's ompi_hwpc_cxi counters), Open MPI's help aggregation (orte/util/show_help.c: '[host:pid] N more processes "
             "have sent help message FILE / TOPIC', 'Set MCA parameter \"orte_base_help_aggregate\" to 0 to see "
             "all help / error messages'; a TOPIC naming an abort or a fatal error is a failure) and the shell's "
             "`time` lines (real/user/sys), ssh -t's 'Connection to HOST closed.' (clientloop.c); any other text there is not this run's (after_end.not_read). JSON: the document closes and holds end_time. The rows: one per "
             "size of the loop (common.cu: minBytes to maxBytes, size*stepfactor or size+stepbytes, 'step: "
             "%ld(factor|bytes)' on the nThread line, kept as config step_factor / step_bytes; a printed size is the "
             "loop's rounded down to whole elements): a reporter's '...' where a size of the loop is missing (before "
             "the first row: above minBytes; after the last: one more fits under maxBytes, or the log names no maxBytes; "
             "between two: the next "
             "is beyond the step) left rows out, not whole; a '...' between adjacent rows stood for other lines. A loop "
             "stepping by a factor (an integer, at least 2) prints no size above 0 twice in a sweep: a size repeated is "
             "a row duplicated, not whole (the row count it keeps would hide a row lost). After the footer "
             "common.cu and util.cu print only '#' lines ('#', '# Collective test concluded', '# GPU memory usage', "
             "'# error:') and the failure lines; the job adds NCCL's own log lines: a run begun again there is two "
             "runs in one file, rows without a header another task's, other text not read (sncheck.vendors.after_end). "
             "The header (src/common.cu run(), src/util.cu writeDeviceReport @ v2.19.6: the nThread line's last field "
             "validation/graph/unalign, '# Using devices', each process's block of nThreads x nGpus Rank lines gathered "
             "in process order from rank 0, each ending '[BUS] NAME', then the column header above the rows) is whole "
             "where printed with its '#': a splice leaving lines out of its middle is not whole (header.py; whole "
             "processes' blocks left out at a block's start cannot be told: no process count is printed, but rccl-tests' "
             "nRanks)"),
        failures=("a #wrong above 0; 'Out of bounds values : N FAILED'; 'Avg bus bandwidth : X FAILED' "
                  "(NCCL_TESTS_MIN_BW); 'Test NCCL failure', 'Test CUDA failure', 'Test failure', 'Test timeout'; "
                  "'# error: E' (2.18); a crash or launcher abort line (core dumped, MPI_ABORT, srun: error); a "
                  "next test's banner after this run; the JSON's errors[] and out_of_bounds.count."),
        values="see the module docstring: version, nccl_version, nccl_release, collective, ranks, config, devices, rows, "
               "avg_busbw_GBps, out_of_bounds, errors",
    ),
    "rccl-tests": Grammar(
        tool="rccl-tests `*_perf` (the nccl-tests layout, ROCm fork): stdout, JSON lines (--output_format json)",
        versions="rccl-tests develop 2022 to 2025 (ROCm 5.x to 6.4)",
        sources=(
            "ROCm/rccl-tests src/common.cu @ ae3e635 (2024-09): '#   Rank %2d Pid %6d on %10s device %2d [%s] %s' "
            "(bus id 0000:03:00.0), 'rccl-tests: Version %s' (the git hash: version), "
            "in-place-only header and rows (-O 0), '# Testing %lu cycle.' (stress "
            "cycles, the sizes again), '# Errors with asterisks indicate errors that have exceeded the "
            "maximum threshold.' and '*' after a #wrong, footer as nccl-tests 2.13",
            "ROCm/rccl-tests PR #93 (2024-10; after our mirror, so its sample and the real captures): "
            "--output_format json, one object a line and half {#wrong, algBw, busBw, gpus, inPlace, name, redop, "
            "size, time, type}; no footer: a size with one half is a cut, the judge's count the rest",
            "ROCm/rocm-systems rccl-tests 2.17.x (real capture rocm-systems PR 3415, fixtures/real/harvest6): "
            "nccl-tests' version line under rccl's names, '# rccl-tests version %s rccl-headers=%d rccl-library=%d' "
            "(version, nccl_version)",
            "real captures (2025 builds, rocm-systems#3272, fixtures/real/rccl-tests/01): 'RCCL version : V', "
            "'HIP version  : V', 'ROCm version : V', 'Hostname     : H', 'Librccl path : P' before the table "
            "(library.rccl_version ...)",
        ),
        lines="as nccl-tests 2.13 (see its grammar), with the rccl-tests lines above",
        end="the 'Avg bus bandwidth' line; a wrapper's banner naming the next test after it is a log cut there; "
            "the rows' sizes as nccl-tests' (a '...' where one is missing: not whole)",
        failures="as nccl-tests; a '*' marks a #wrong above the threshold",
        values="as nccl-tests",
    ),
}
