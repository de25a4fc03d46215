"""The grammar of ``NCCL_DEBUG`` logs (:mod:`sncheck.vendors.nccl.debug_log`), from NCCL's source."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

GRAMMAR = {"nccl-debug": Grammar(
    tool="NCCL_DEBUG=WARN or INFO output in a job's log (any launcher's, with other programs' lines between)",
    versions="NCCL 2.4 to 2.30 (RCCL alike)",
    sources=(
        "NVIDIA/nccl src/debug.cc @ v2.8.3-1, v2.18.1-1, v2.23.4-1, v2.26.2-1, v2.27.3-1, v2.30 (ncclDebugLog: "
        "'%s:%d:%d [%d] NCCL INFO ' the host, pid, tid and CUDA device; a WARN '\\n%s:%d:%d [%d] %s:%d NCCL WARN ' "
        "with the file and line, from 2.30 ' (%s)' the function; TRACE's milliseconds and function; CALL without "
        "the device; NCCL_DEBUG_TIMESTAMP_FORMAT's '[%F %T] ' before the host from 2.26, on WARN lines by default)",
        "NVIDIA/nccl src/init.cc (VERSION_STRING 'NCCL version %d.%d.%d%s+cuda%d.%d'; 'comm %p rank %d nRanks %d "
        "nNodes %d localRanks %d localRank %d MNNVL %d' and '... cudaDev %d nvmlDev %d busId %lx ... - Init "
        "COMPLETE'; 'Using network %s'; ncclGetErrorString's results)",
        "NVIDIA/nccl src/transport/net_ib.cc, net_ib/p2p.cc, net_socket.cc ('NET/IB : Using [%d]%s:%d/%s ...; OOB "
        "%s', 2.20.3 to 2.23 a merged device ' [%d]={' '[%d] %s:%d/%s' ', ' ... '}' and a plain one beside it with its "
        "IB device's index (ncclIbInit, v2.21.5-1; real capture NVIDIA/nccl-tests#373, IBext_v8); from 2.30.7 "
        "' [%d]%s:%d' then ':%d' rail or ':' and ':%d' plane where NCCL_IB_HCA names them, then '/%s' (net_ib/init.cc); the completion error's layouts: '... with error %d, opcode %d, len %d, vendor err %d' to 2.9, "
        "'from peer %s with error ...' 2.11-2.19, 'with status=%d opcode=%d len=%d vendor err %d (%s)' 2.20-2.28 "
        "with ' localGid %s remoteGids%s hca %s' from 2.22, 'status=%s(%d) opcode=%s(%d) vendor_err=%u' from 2.29)",
        "NVIDIA/nccl src/transport/p2p.cc, shm.cc, net.cc ('Channel %02d/%d : %d[%d] -> %d[%d] via %s'; up to 2.6 "
        "'Ring %02d : %d[%lx] -> %d[%lx] via P2P/IPC', read at v2.5.6 and in RCCL's copy; real capture "
        "NVIDIA/nccl#302, 2.5.6); a reporter's removed host name leaves ':PID:TID [DEV]' (real capture "
        "autoscriptlabs/nccl-mesh-plugin#56): the line is NCCL's, its host unknown; a WARN whose whole "
        "'HOST:PID:TID [DEV] ' was removed, 'FILE:LINE NCCL WARN MSG' (real capture NVIDIA/nccl#296, in markdown "
        "inline code): NCCL's by that layout alone, its host, pid and tid null; a line quoted from its '[DEV] ' on, "
        "'[1] misc/shmutils.cc:103 NCCL WARN ...' / '[3] NCCL INFO ...' (real capture NVIDIA/nccl#1518): NCCL's, its device "
        "read (before a WARN's FILE:LINE never MPICH's -prepend-rank label); a line quoted with nothing "
        "before its level, 'NCCL WARN MSG' / 'NCCL INFO MSG' (real capture: a B200 cluster report's quoted "
        "completion error, harvest 21): NCCL's by its level and message, its process, file and line null; "
        "init.cc 'Using network %s' and net.cc 'via NET/%s/%d' print the net's name as its plugin gives it, a "
        "blank and all (aws-ofi-nccl's 'AWS Libfabric'); graph/connect.cc's 'Channel %02d/%02d : %s' lists a "
        "ring's ranks and is no connection; "
        "linux-rdma/rdma-core libibverbs/enum_strs.c (ibv_wc_status_str: the completion status names)",
        "NVIDIA/nccl-tests and ROCm/rccl-tests src/common.h NCCLCHECK: '%s: Test NCCL failure %s:%d '%s / %s'' (getHostName's "
        "host, cut at its first '.'; built against NCCL 2.13+, '%s' alone before) and TESTCHECK's ' .. %s pid %d: Test "
        "failure %s:%d'; PyTorch's c10 '[rankN]:' and logPrefix '[... Rank N] ' on its 'NCCL error' lines: who printed "
        "each error result (sncheck/vendors/nccl/results.py; real capture harvest 28's g7e EFA log, two hosts' "
        "'unhandled cuda error')",
    ),
    lines=("'[TS ]HOST:PID:TID [DEV] NCCL INFO MSG'; '[TS ]HOST:PID:TID [DEV] FILE:LINE[ (FUNC)] NCCL WARN MSG' "
           "(an empty line before it); 'NCCL version X.Y.Z[suffix]+cudaA.B' (INFO or bare); '... - Init COMPLETE' "
           "(comm, rank, nranks, cudaDev, nvmlDev from 2.19, busId); 'NET/IB : Using [0]mlx5_0:1/IB ...; OOB "
           "ib0:ADDR<0>', 'NET/Socket : Using ...', 'Using network IB'; 'Channel CC/S : R[D] -> P[E] via "
           "P2P/IPC|SHM/direct/direct|NET/IB/0[/GDRDMA]|NET/AWS Libfabric/0...' (to 2.6: 'Ring RR : R[BUSID] -> P[BUSID] via ...'; "
           "'Channel CC/NN :    0   1', a ring's ranks, is no connection); the NET/IB completion error in its five layouts; "
           "NCCL's error results where its callers print them ('NCCL error in: FILE:LINE, unhandled system error', "
           "ncclSystemError); every other line is another program's"),
    end=("none: a log is a stream, a cut between lines a shorter log; a last line without its newline is a cut "
         "(under a launcher's tags too: the cut line stays last when the tasks' lines are regrouped, horovod#3751); "
         "interleaved mid-line: debug.cc (2.30) prints each line with one vfprintf to ncclDebugFile, stdout unless "
         "NCCL_DEBUG_FILE names a file (made line-buffered: setlinebuf); stdout into a pipe or a file is "
         "block-buffered, so processes sharing it (torchrun's children, mpirun without --tag-output) interleave "
         "at any byte: a line holding another's ':PID:TID [DEV] NCCL LEVEL', a HOST holding ':' (a cut prefix "
         "glued before a line's start) and an Init COMPLETE whose cudaDev is not its [DEV] show it; a splice "
         "inside a value of the same message from another process (a pid, a busId) shows nothing"),
    failures=("a log interleaved mid-line (errors: the lines that show it; a cut head gives no value, a WARN's "
              "stays a warning marked cut without its completion numbers, the line begun inside is read); "
              "every WARN (NCCL's documentation: WARN prints only fatal errors) and every error result named "
              "('unhandled cuda error', 'unhandled system error', 'internal error', 'invalid argument', 'invalid "
              "usage', 'remote process exited or there was a network error'), two NCCL versions in one log: faults; only "
              "the RAS client's 'NCCL version ... compiled with CUDA' banner: not this view's (parse error)"),
    values=("nccl_version, cuda_version, lines, hosts, processes, nranks, ranks[{host, pid, rank, nranks, cuda_dev, "
            "nvml_dev, bus_id, comm}], net{network, devices[{index, device, port, link, address (a Socket device's), "
            "members (a merged device's: [{index, device, port, link}], its device the names joined by '+'), ib_index (a "
            "plain device's printed index beside a merged one), rail, plane (2.30.7, where printed)}], oob}, transports{KIND: n}, "
            "channels, warnings[{host, pid, tid, device, file, line, func, time, message, cut (a head another line cut)}], completion_errors[{peer, "
            "status, status_name, opcode, len, vendor_err, type, hca, local_gid, remote_gids, host, pid}], "
            "nccl_errors (each result once), nccl_error_sources[{result, host, pid, rank, lines}] (each result by who "
            "printed it: an NCCL line's host and pid, nccl-tests' host, PyTorch's rank, where the line carries them; "
            "lines: how many), faults, errors"),
)}
