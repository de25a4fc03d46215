"""The grammar of NCCL Inspector's JSON output (:mod:`sncheck.vendors.nccl_inspector`), from NCCL's source."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

GRAMMAR = {"nccl-inspector": Grammar(
    tool="NCCL Inspector profiler plug-in output (NCCL_PROFILER_PLUGIN=inspector): its JSON records files",
    versions="NCCL 2.27 to 2.30 (output formats v4.0 to v4.2)",
    sources=(
        "NVIDIA/nccl plugins/profiler/inspector/inspector_json.cc @ 5067397 (ext-profiler/inspector before the "
        "move): inspectorJsonWrite of header {id, comm_name (v4.0), rank, n_ranks, nnodes}, metadata "
        "{inspector_output_format_version, git_rev, rec_mechanism, dump_timestamp_us, hostname, pid}, coll_perf "
        "{coll, coll_sn, coll_msg_size_bytes, coll_exec_time_us, coll_timing_source, coll_algobw_gbs, "
        "coll_busbw_gbs} or p2p_perf {p2p, p2p_sn, p2p_peer, p2p_msg_size_bytes, p2p_exec_time_us, "
        "p2p_timing_source, p2p_algobw_gbs, p2p_busbw_gbs}; verbose: event_trace_sn, event_trace_ts",
        "NVIDIA/nccl plugins/profiler/inspector/README.md @ 5067397: one object per completed operation per rank, "
        "one a line (or pretty-printed), appended all job long; the example records",
        "NVIDIA/nccl plugins/profiler/inspector README.md of format v4.4 and its v4.2 change note ('adds coll_algo "
        "and coll_proto to coll_perf records', inspector_json.cc; harvest17): coll_algo (RING, TREE, ...) and "
        "coll_proto (LL, LL128, SIMPLE) in each coll_perf",
    ),
    lines=("a stream of JSON objects, one a line or pretty-printed, each {header, metadata, coll_perf | p2p_perf}: "
           "sizes in bytes, times in microseconds, bandwidths in GB/s; timing_source kernel_gpu | kernel_cpu | "
           "collective_cpu"),
    end="none: the file grows all job long; an object that does not close is a cut",
    failures=("none printed: Inspector reports performance; a stream cut inside an object or not JSON, a rank "
              "outside 0..n_ranks-1, a negative sn/size/time, one communicator of two sizes, one rank's operation "
              "twice with other values (errors)"),
    values=("format_version, records[{comm, comm_name, rank, n_ranks, nnodes, host, pid, kind, op, sn, peer, "
            "size_bytes, exec_time_us, timing_source, algbw_GBps, busbw_GBps, algo, proto}], communicators, ranks, "
            "faults, errors"),
)}
