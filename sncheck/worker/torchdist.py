"""The torch.distributed probe: connectivity, stress and golden layers for real.

Run one process per card::

    python -m sncheck.worker.torchdist --job JOB.json --out OUT.jsonl

or, for a launcher on this machine, one fork server that imports torch once and forks
a rank per request (``--serve``; see :func:`serve_forks`).

This module is the entry point (jobs, the fork server); the probe is split by concern:
:mod:`~sncheck.worker.faults` (the fault actor), :mod:`~sncheck.worker.context` (a
rank's context), :mod:`~sncheck.worker.clock` (clock sync), :mod:`~sncheck.worker.p2p`,
:mod:`~sncheck.worker.collectives`, :mod:`~sncheck.worker.calibrate` and
:mod:`~sncheck.worker.golden_model`.

Rank, world size and rendezvous come from the torchrun variables (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT), so ``torchrun`` can launch it on remote hosts
too; the local backend starts it with the same variables. ``gloo`` is used on CPU and
``nccl`` (one process per GPU, device ``cuda:LOCAL_RANK``) where CUDA is available,
unless the job names a ``dist_backend``; an Ascend job (the vendor's ``torch_device``
``npu``, or ``hccl``) runs ``hccl`` on ``npu:LOCAL_RANK`` through torch_npu
(:mod:`~sncheck.worker.device`).

Rank 0 appends result rows (:mod:`sncheck.rows`) to OUT as JSON lines, flushed as they
are produced, after gathering every rank's measurements with ``gather_object``. OUT
also carries lines ``{"_progress": "..."}`` for the launcher; they are not rows. The
probe never writes to the terminal.

The job (``schema: sncheck.job/1``) is a :class:`sncheck.worker.job.Job`: its fields and
their defaults are stated there, once, for the launcher and this worker.

Methods (the why of each number):

* Clocks: at start each rank estimates its offset to rank 0 with an NTP-style
  handshake over send/recv (8 samples; the sample with the smallest round trip wins;
  offset = t_rank0 - (t_send + t_recv) / 2). Timestamps are ``perf_counter_ns`` plus
  that offset, so op starts on different hosts compare. Half that smallest round trip
  is also the base latency that latency faults scale.
* p2p: per pair, a small-message ping-pong (median round trip / 2, and the 99th
  percentile and the largest round trip / 2 for the tail), then
  ``bw_iters`` back-to-back sends of ``bw_bytes`` src->dst, then dst->src, then both
  at once (batch_isend_irecv); with ``serialize_pairs`` the pairs of a round take
  turns in three passes, each doing a third of the iterations. A transfer's time is the gap between successive
  completions on a rank; a direction's time is the larger of the two ranks' lower
  quartiles of those gaps (not the mean: on a shared host the scheduler only adds
  delay, and one descheduled transfer must not speak for the link). Payloads are
  float32 small integers derived from (sender rank, round), checked on receipt (the
  last one of each direction; all of a direction's payloads are the same).
* calibrate: the p2p measurement over every pair of a round-robin, few iterations;
  one ``calibration`` row with the 90th percentile of the directional bandwidths and
  the 10th percentile of the latencies (faults act here too, so one bad card must
  not set the design values).
* collectives, the nccl-tests way: warmup, a group barrier, ``iters`` back-to-back
  timed ops, then one check op on fresh inputs. Each rank timestamps every timed op.
  ``time_us`` is a rank's (end of last op - start of first) / iters, for the slowest
  rank. ``skew_us`` is a rank's op start minus the group's earliest start of that op
  and ``op_us`` its own end minus start, both means over the timed ops (a slow rank
  starts last and waits least). Buffers are float32 (count = size // 4); for
  all_to_all the size is the whole buffer per rank, as nccl-tests prints it, and the
  count is rounded down to a multiple of the ranks (a size below 4 x ranks is
  skipped), so ``size_bytes`` is the size actually moved. On nccl every timed op is
  followed by a device sync so that host timestamps bracket it, which adds a few us
  to small-message times compared with nccl-tests' unsynchronised loop. The check
  op's inputs are small integers derived from (rank, iteration), so results are
  exact and every element of every rank's result is checked (``wrong``, summed over
  ranks).
* golden: see :mod:`sncheck.worker.golden_model`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import select
import signal
import sys
import time
import traceback

from sncheck.worker.calibrate import run_calibrate
from sncheck.worker.clock import clock_sync
from sncheck.worker.collectives import run_collectives
from sncheck.worker.context import Ctx
from sncheck.worker.device import DeviceUnavailableError
from sncheck.worker.lifeline import die_with_parent, pending_jobs, remove_workdirs
from sncheck.worker.p2p import run_p2p
from sncheck.worker.job import JOB_SCHEMA, Job  # noqa: F401 (JOB_SCHEMA re-exported) the job's one home
from sncheck.worker.golden_model import run_golden
import importlib


def run_job(job: Job, out_path: str, env: dict[str, str] | None = None) -> None:
    """Run one job as one rank; ``env`` holds the torchrun variables."""
    layer = job.layer
    ctx = Ctx(job, out_path, dict(os.environ if env is None else env))
    try:
        ctx.init()
        clock_sync(ctx)
        plan = job.plan
        if layer == "p2p":
            run_p2p(ctx, plan)
        elif layer == "calibrate":
            run_calibrate(ctx, plan)
        elif layer == "collectives":
            run_collectives(ctx, plan)
        else:
            run_golden(ctx, plan, job.golden_config)
        ctx.barrier()
    finally:
        ctx.close()


def _quiet() -> None:
    # The probe never writes to the terminal; the launcher keeps stderr in a file.
    logging.disable(logging.CRITICAL)
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")


def _run_forked(req: dict, server_pid: int) -> None:
    """In a child of the fork server: become a rank, run the job, never return."""
    code = 1
    try:
        die_with_parent(server_pid)  # a rank never outlives its server
        os.setsid()  # its own process group, so the launcher can kill it and anything it starts
        fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # off the server's request pipe ...
        os.dup2(fd, 1)    # ... and its reply pipe: output goes to the rank's log
        os.dup2(fd, 2)
        os.close(fd)
        os.close(null)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.environ.update(req["env"])
        run_job(Job.load(req["job"]), req["out"])
        code = 0
    except DeviceUnavailableError as e:  # one line in the rank's log, not a traceback
        print(f"DeviceUnavailableError: {e}", file=sys.stderr, flush=True)
        code = 3
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # the process boundary: record why, exit non-zero
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve_forks(launcher: int | None = None) -> None:
    """A fork server for launchers on this machine: torch is imported once, ranks fork.

    Requests on stdin, one JSON line each: ``{"id", "job", "out", "env", "log"}``.
    Replies on stdout: ``{"id", "pid"}`` when a rank started, ``{"pid", "code"}`` when
    it ended (code < 0: killed by that signal). On end of stdin (the launcher is gone)
    the server kills the ranks it started and exits.
    """
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    children: set[int] = set()
    jobs: set[str] = set()  # job files of the ranks started, for clean-up after the launcher dies
    pending = b""
    launcher = launcher or os.getppid()

    def launcher_died(_signum: int, _frame: object) -> None:
        # Also while torch is still importing: stop the ranks, remove the temp dirs of
        # every job started or still waiting in the pipe, and go.
        for pid in children:
            _kill_group(pid)
        for pid in children:
            _reap(pid)
        jobs.update(pending_jobs(stdin, pending))
        remove_workdirs(jobs)
        os._exit(0)

    signal.signal(signal.SIGTERM, launcher_died)
    die_with_parent(launcher, signal.SIGTERM)  # the kernel tells us when the launcher dies
    _quiet()
    _preload()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the launcher's to handle

    def reply(msg: dict) -> None:
        os.write(stdout, (json.dumps(msg) + "\n").encode())

    while True:
        # poll for exits only while ranks run; an idle server sleeps until the next request
        # (an idle server still wakes each second to see whether the launcher is alive)
        ready, _, _ = select.select([stdin], [], [], 0.05 if children else 1.0)
        orphaned = os.getppid() != launcher
        if ready or orphaned:
            data = os.read(stdin, 1 << 16) if ready else b""
            if not data:
                for pid in children:
                    _kill_group(pid)
                if orphaned:  # the launcher died (SIGKILL): nobody else removes its temp dirs
                    for pid in children:
                        _reap(pid)
                    remove_workdirs(jobs)
                return
            *lines, pending = (pending + data).split(b"\n")
            for line in filter(None, (ln.strip() for ln in lines)):
                req = json.loads(line)
                server = os.getpid()
                pid = os.fork()
                if pid == 0:
                    _run_forked(req, server)
                children.add(pid)
                jobs.add(req["job"])
                reply({"id": req["id"], "pid": pid})
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            children.discard(pid)
            reply({"pid": pid, "code": os.waitstatus_to_exitcode(status)})


def _preload() -> None:
    """Import, once, what every rank would import lazily (torch.optim pulls in dynamo:
    seconds per rank). Imports only: running ops would start thread pools, and a
    process with thread pools does not fork safely."""

    for name in ("torch._dynamo", "torch.optim", "torch.nn.parallel", "sncheck.worker.golden_model"):
        try:
            importlib.import_module(name)
        except ImportError:  # a leaner torch build: the rank imports what it needs itself
            continue


def _reap(pid: int, timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.02)


def _kill_group(pid: int) -> None:
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
            return
        except ProcessLookupError:
            continue


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sncheck.worker.torchdist",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--job", help="job JSON file")
    ap.add_argument("--out", help="JSON lines file that rank 0 appends rows to")
    ap.add_argument("--serve", action="store_true",
                    help="be a fork server for a launcher on this machine (requests on stdin)")
    args = ap.parse_args(argv)
    if args.serve:
        serve_forks()
        return 0
    if not (args.job and args.out):
        ap.error("--job and --out are required")
    _quiet()
    if os.environ.get("SNCHECK_DIE_WITH_PARENT") == "1":  # the local backend's subprocess launcher
        die_with_parent(os.getppid())
    job = Job.load(args.job)
    try:
        run_job(job, args.out)
    except DeviceUnavailableError as e:  # one line for the launcher's log, not a traceback
        print(f"DeviceUnavailableError: {e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
