"""The grammar of PyTorch's NCCL watchdog and Flight Recorder messages
(:mod:`sncheck.vendors.nccl.watchdog`), from PyTorch's source."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

GRAMMAR = {"torch-nccl": Grammar(
    tool="PyTorch ProcessGroupNCCL watchdog, heartbeat monitor and Flight Recorder messages in a job's log",
    versions="PyTorch 1.13 to 2.8",
    sources=(
        "pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp as 1.13, 2.0 to 2.2 and 2.3 to 2.8 print "
        "it (logPrefix(): '[Rank %d] ' to 2.2, '[PG %s Rank %d] ' 2.3, '[PG %s (%s) Rank %d] ' "
        "2.4, '[PG ID %s PG GUID %s(%s) Rank %d] ' 2.5+; WorkNCCL's operator<<: 'WorkNCCL(SeqNum=%d, OpType=%s, "
        "NumelIn=%d, NumelOut=%d, Timeout(ms)=%d)' (Numel from 2.0); 'Watchdog caught collective operation "
        "timeout: ... ran for %d milliseconds before timing out.'; the progress line in its three wordings (2.2, "
        "2.3, 2.4+); the Flight Recorder's dump signal, 'Observed flight recorder dump signal from another rank "
        "via TCPStore.', 'ProcessGroupNCCL preparing to dump debug info.', 'Stack trace of the failed "
        "collective:'; the heartbeat monitor's 'Heartbeat monitor timed out!' (2.3+), 'NCCL monitor thread "
        "timeout' (2.2); 'Some NCCL operations have failed or timed out. ... To avoid data inconsistency, we are "
        "taking the entire process down.'; 'Process group watchdog thread terminated with exception')",
        "pytorch/pytorch torch/csrc/distributed/c10d/NCCLUtils.hpp (C10D_NCCL_CHECK: 'NCCL error in: %s:%d, %s, "
        "NCCL version %s' then getNcclErrorDetailStr's '\\nncclInvalidUsage: <description>\\nLast error:\\n' and "
        "ncclGetLastError's text: the line after 'Last error:' kept as last_error; real captures NVIDIA/Megatron-LM#661, "
        "verl-project/verl#161, harvest 22)",
        "pytorch/pytorch c10/util/Logging.cpp (SetGlobalRank: the '[rank%d]:' log prefix is the global rank, the "
        "process; a group's logPrefix names its rank in that group: '[rank4]:... [PG 5 Rank 0]' is process 4, real "
        "capture xdit-project/xDiT#147)",
        "pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp checkForNCCLErrorsInternal (1.x to 2.8): a "
        "communicator's asynchronous error, '\"NCCL error: \" + ncclGetErrorWithVersion(err)' ('<ncclGetErrorString>, "
        "NCCL version %s', no FILE:LINE) then getNcclErrorDetailStr's '\\n<ncclRemoteError: ...>\\nLast error:\\n<NCCL's "
        "WARN>', inside 'Process group watchdog thread terminated with exception: ...' (harvest8's p2p-test README)",
        "google/glog and c10's logging: '[E ProcessGroupNCCL.cpp:475] ' (1.x, 2.0), '[E0709 17:05:38.162814866 "
        "ProcessGroupNCCL.cpp:2271] ' (2.2+), torch's '[rank3]:' prefix (2.3+)",
        "pytorch/pytorch PR 140969 ('[fr][ez] better log messages', 2024-11, the Flight Recorder trace analyzer "
        "fr_trace): 'Not all ranks joining collective: sequence number: S', then 'internal record id', 'group info', "
        "'collective', 'missing ranks: {r, ...}', 'input sizes', 'output sizes', 'world size', 'expected ranks', "
        "'collective state' lines and 'collective stack trace:' with its frames (harvest7's capture, the PR's test "
        "plan)",
        "pytorch/pytorch tools/flight_recorder/components/utils.py: the head as 2.5 logs it, 'Not all ranks joining "
        "collective S at entry R' ('expected ranks: %d' then the count, len(expected_ranks): the world size; the "
        "PyTorch tutorial's torchfrtrace output, harvest 14), and as EntryState.log does from 2.6, 'Not all ranks "
        "joining collective, sequence number: S' ('internal record id', 'world size: %d', 'expected ranks: {...}'; "
        "the torchcomms tutorial's fr_trace output, harvest 14)",
        "pytorch/pytorch torch/csrc/distributed/c10d/TraceUtils.h @ 3f8ce0f (retrieveDesyncReport, TORCH_NCCL_DESYNC_DEBUG=1): "
        "'\\n\\t - [R] Timeout at collective: COL, #S', then analyzeMissingRanks' ' - To our best knowledge, ranks [a, b] "
        "are the lagging ranks that caused this timeout. They never joined any collectives' or analyzeLaggingRanks' ' - To "
        "our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:' with '   - [a, b] joined but "
        "didn't finish collective #S (count from 1)' and '     [c] finished collective #S, but didn't join collective "
        "#S+1 (count from 1)', then dumpSnapshot's ' - Snapshot of ranks' latest states:' (no lagging rank in it); "
        "ProcessGroupNCCL.cpp WorkNCCL::printTraceback: 'Stack trace of the failed collective: ' and the Flight "
        "Recorder's frames '#N FUNC from FILE:LINE' on the lines after it, or, where the Flight Recorder holds no "
        "trace, 'Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. You can "
        "enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.' (a trace not printed: counted apart; "
        "pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp @ cf1380d WorkNCCL::printTraceback; real "
        "captures harvest 8's DeepSpeed log, r4's NCCL-issue 1730); real capture stas00/ml-engineering "
        "debug/pytorch.md, harvest 28)",
    ),
    lines=("glog lines '[E ProcessGroupNCCL.cpp:N] MSG' or '[EMMDD HH:MM:SS.NNNNNNNNN ProcessGroupNCCL.cpp:N] MSG', "
           "optionally after '[rankR]:' (2.3+) or a launcher's prefix, or the same MSG inside a Python exception; "
           "MSG starts with the group's logPrefix and is one of: the watchdog timeout (WorkNCCL: SeqNum, OpType, "
           "NumelIn/Out, Timeout(ms), ran for M ms), the progress ('Timeout at NCCL work: S, last enqueued NCCL "
           "work: E, last completed NCCL work: C.' 2.2; 'Exception (either an error or timeout) detected by watchdog "
           "at work: S, ...' 2.3; 'failure detected by watchdog at work sequence id: S PG status: last enqueued "
           "work: E, last completed work: C' 2.4+), the Flight Recorder lines, the heartbeat monitor's, the "
           "process-down and thread-terminated lines, a blocking wait's timeout, an NCCL call's error; a paste "
           "may wrap a message at its terminal's width (its tail on lines of their own, no prefix: real capture "
           "mila-iqia/milabench#269; an NCCL call's error broken after its 'NCCL error in: ', its FILE:LINE and "
           "its version on indented lines, CRLF ends: real capture harvest 30's LUMI AI course Q&A), read joined "
           "again; a timeout message broken after its 'timeout:' with its "
           "WorkNCCL(...) on the next line (a logger's or reporter's break: harvest8's GB200 excerpt) joined whatever "
           "its width; a launcher's bare '[rankR]' tag names the rank as '[rankR]:' does; a line naming a rank of its own (torch's '  what():  "
           "[PG 0 Rank 1] ...' under another rank's line) is never a tail; the Flight Recorder analyzer's report of "
           "a collective not every rank joined (its 'key: value' lines after 'Not all ranks joining collective', "
           "': sequence number: S', ', sequence number: S' or ' S at entry R'); the desync report's lines (each on a line "
           "of its own, no glog prefix: '- [R] Timeout at collective: COL, #S' and the lagging ranks under it); a "
           "bare 'Stack trace of the failed collective:' and its '#N FUNC from FILE:LINE' frames, or its '... not found, "
           "potentially because FlightRecorder is disabled. ...'"),
    end="none: a log is a stream, a cut between lines a shorter log; a last line without its newline is a cut",
    failures=("every one of these messages (the watchdog prints nothing on a healthy job): faults; the ranks' "
              "NCCL_DEBUG lines in the log interleaved mid-line (NVIDIA/nccl src/debug.cc @ v2.30: one vfprintf a "
              "line to stdout, block-buffered into a pipe): the nccl-debug view's interleaving error (errors)"),
    values=("ranks, timeout_ms, timeouts[{rank, pg, seq, op, numel_in, numel_out, timeout_ms, ran_ms}], "
            "progress[{rank, pg, failed_seq, last_enqueued, last_completed}], dump_signals[{rank, from, "
            "last_enqueued, last_completed}], flight_recorder{dumps, observed, stack_traces (traces printed), "
            "stack_traces_not_found (printTraceback's 'not found' lines), frames (the stack trace's "
            "frame lines, in order), mismatches[{seq, record_id, pg, op, "
            "missing_ranks, world_size, expected_ranks, state, input_sizes, output_sizes}]}, heartbeat_timeouts, "
            "process_down, terminated, blocking_wait, nccl_errors[{where, result, version, last_error}], nccl_version, "
            "desync[{rank, op, seq (counted from 1, as the report prints it), never_joined, joined_not_finished, "
            "finished_not_joined, lag_seq}], faults, errors"),
)}
