"""The local backend: real worker processes on this machine, real torch.distributed.

One worker per card (``localhost/gpu0`` .. ``gpuN-1`` -> ranks 0..N-1) runs the probe
:mod:`sncheck.worker.torchdist` with the torchrun variables set; gloo on CPU, nccl where
CUDA is available (or as the ``dist_backend`` option says). Rows are read from the
probe's JSON lines file as rank 0 appends them and passed to ``emit`` at once.

Usage::

    topo = Topology(local_inventory(4))
    backend = LocalBackend(topo, faults=FaultPlan(), seed=0, progress=print,
                           op_timeout_s=60)
    try:
        design = backend.calibrate(emit)          # {"intra_host": TierDesign(...)}
        backend.p2p(connectivity_plan(topo), emit)
    finally:
        backend.close()

Workers never outlive a layer call: on Ctrl-C, a rank that exits non-zero, or no
progress from any rank for ``op_timeout_s`` (no heartbeat, no row), every worker's
process group is killed and :class:`~sncheck.errors.HarnessError` names the layer and
the cause. Rows already emitted stay emitted. The processes themselves (ports, the fork
server, the workers, the rows file as it grows) are :mod:`sncheck.backends.processes`.

Options (keyword arguments):

``dist_backend``      ``gloo`` | ``nccl`` | None (auto: nccl when CUDA is available)
``op_timeout_s``      longest silence of all ranks before the run counts as hung (60)
``start_timeout_s``   allowance for workers to start and meet (120)
``p2p_bytes``         bandwidth message size; default: the playbook's, else 8 MiB on gloo
``launcher``          ``forkserver`` (default: a server process imports torch once and
                      forks the ranks) | ``subprocess`` (``python -m`` per rank, as
                      torchrun would start it)
``serialize_pairs``   p2p: one pair of a round at a time (default: on gloo only)
``golden_config``     overrides of :class:`~sncheck.worker.golden_model.GoldenConfig`
``keep_workdir``      keep the job directory (job JSON, rows, per-rank logs) for debugging
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sncheck.errors import ConfigError, HarnessError
from sncheck.config.inventory import DIST_BACKENDS, TierDesign
from sncheck.launch.job import Job, build_job, plan_payload
from sncheck.probeplan import ConnectivityPlan, GoldenPlan, Round, StressPlan
from sncheck.rows import host_fact_row, not_run_row
from sncheck.errors import interrupt_cause
from sncheck.topology import Topology, round_robin
from sncheck.worker.device import BACKEND_DEVICE, DEVICE_MODULES
from sncheck.backends.base import Backend, Emit
from sncheck.backends.load import machine_load
from sncheck.backends.processes import (
    PortInUse,
    RowTail,
    ServedWorker,
    SubprocessWorker,
    Worker,
    exit_cause,
    fork_server,
    loopback_ifname,
    port_taken,
    package_env,
    release_port,
    reserve_port,
    running_fork_server,
)
from sncheck.worker.device import DeviceUnavailableError, choose
from sncheck.worker.golden_config import GoldenConfig

# dist backend -> the module its device needs (hccl: torch_npu)
DEVICE_MODULES_OF_BACKEND = {b: DEVICE_MODULES[k] for b, k in BACKEND_DEVICE.items() if k in DEVICE_MODULES}

LAUNCHERS = ("forkserver", "subprocess")
CPU_P2P_BYTES = 8 << 20  # gloo over loopback moves ~1 GB/s; 64 MiB x 15 transfers x pairs is slow
# On CPU a 1 GiB all-reduce takes seconds per op and gigabytes per rank: sweep to 16 MiB.
CPU_STRESS = {"min_bytes": 8, "max_bytes": 16 << 20, "step_factor": 4, "narrow_sizes": (8 << 10, 4 << 20)}
GOLDEN_REFERENCE = {("gloo", 4): "local-4"}  # curves recorded in fixtures/golden/
POLL_S = 0.05
PORT_ATTEMPTS = 3
# The calibration run: every pair once, few iterations (it runs before every local run).
CALIBRATION_LAT_ITERS, CALIBRATION_BW_ITERS = 20, 3

# --------------------------------------------------------------------------- backend

class LocalBackend(Backend):
    name = "local"
    # one CPU machine shared with its controls: a repeat of a near card's gloo pairs costs
    # seconds (~4 s beside other work), so the samples a GPU cluster gets in minutes take hours
    near_budget_s = 120.0

    def __init__(self, topo: Topology, faults=None, seed: int = 0, progress=None, **options) -> None:
        super().__init__(topo, faults, seed, progress, **options)
        if len(topo.hosts) != 1:
            raise ConfigError(f"the local backend runs one host; the inventory has {len(topo.hosts)} "
                              f"({', '.join(topo.hosts[:4])}{', ...' if len(topo.hosts) > 4 else ''})")
        self.host = topo.hosts[0]
        self.cards = topo.cards_of_host(self.host)
        for f in self.faults.unsupported(self.name):
            raise ConfigError(f"the local backend cannot act out fault type {f.type!r} "
                              f"(target {f.target}): one machine has no links or hosts to break "
                              f"and its tools are its own; use the mock backend for it")
        dist_backend = options.get("dist_backend") or topo.inventory.dist_backend
        if dist_backend not in (None, *DIST_BACKENDS):
            raise ConfigError(f"dist_backend must be one of {', '.join(DIST_BACKENDS)}, got {dist_backend!r}")
        if dist_backend in DEVICE_MODULES_OF_BACKEND and importlib.util.find_spec(
                DEVICE_MODULES_OF_BACKEND[dist_backend]) is None:
            # the workers would each die on the import: say it once, before starting any
            raise HarnessError(f"dist_backend {dist_backend} needs {DEVICE_MODULES_OF_BACKEND[dist_backend]}, "
                               f"which this Python cannot import; install it (Ascend: the torch_npu build "
                               f"matching torch) or use --dist-backend gloo")
        self._dist_backend = dist_backend
        self.launcher = options.get("launcher") or "forkserver"
        if self.launcher not in LAUNCHERS:
            raise ConfigError(f"launcher must be one of {', '.join(LAUNCHERS)}, got {self.launcher!r}")
        self.op_timeout_s = float(options.get("op_timeout_s") or 60.0)
        self.start_timeout_s = float(options.get("start_timeout_s") or 120.0)
        self.p2p_bytes = options.get("p2p_bytes")
        self._serialize = options.get("serialize_pairs")
        self.golden_config = dict(options.get("golden_config") or {})
        if self.golden_config:  # a bad key is a usage error now, not a crashed rank later
            GoldenConfig.from_dict(self.golden_config)
        self.keep_workdir = bool(options.get("keep_workdir", False))
        self._workers: list[Worker] = []
        self._lock = threading.Lock()

    # ---- public API

    @property
    def dist_backend(self) -> str:
        """The torch.distributed backend the workers use (resolved on first use)."""
        if self._dist_backend is None:
            import torch  # noqa: PLC0415 -- torch: an optional extra; constructing the backend must not need it

            self._dist_backend = choose(None, None, torch).backend  # nccl where CUDA is, else gloo
            if self._dist_backend == "gloo" and importlib.util.find_spec("torch_npu") is not None:
                try:  # an Ascend machine: npu + hccl through torch_npu
                    self._dist_backend = choose(None, "npu", torch).backend
                except DeviceUnavailableError:
                    pass
        return self._dist_backend

    @property
    def serialize_pairs(self) -> bool:
        """Run a round's pairs one at a time: the default on CPU, where all "links"
        share the same cores and memory and concurrent pairs would measure each other."""
        if self._serialize is None:
            return self.dist_backend == "gloo"
        return bool(self._serialize)

    @property
    def worker_pids(self) -> list[int]:
        """Pids of the workers of the layer running now (empty between layers)."""
        with self._lock:
            return [w.pid for w in self._workers if w.pid is not None]

    def default_rules(self) -> str:
        # Ranks sharing CPU cores measure clean pairs 20-30% apart run to run.
        return "local-cpu" if self.dist_backend == "gloo" else "default"

    def plan_defaults(self, layer: str) -> dict:
        cpu = self.dist_backend == "gloo"
        if layer == "connectivity" and cpu:
            return {"bw_bytes": CPU_P2P_BYTES}
        if layer == "stress" and cpu:
            return dict(CPU_STRESS)
        if layer == "golden":
            ref = GOLDEN_REFERENCE.get((self.dist_backend, len(self.cards)))
            return {"reference": ref} if ref else {}
        return {}

    def host_facts(self, hosts: tuple[str, ...], emit: Emit) -> None:
        for host in hosts:
            if host != self.host:
                emit(not_run_row("connectivity", host, "host", "not_run",
                                 f"the local backend only runs on this machine ({self.host})"))
                continue
            for row in self._local_facts():
                emit(row)

    def calibrate(self, emit: Emit) -> dict[str, TierDesign]:
        rounds = tuple(Round(i, "scale_up", tuple(pairs)) for i, pairs in enumerate(round_robin(self.cards)))
        plan = ConnectivityPlan(rounds=rounds, hosts=(self.host,), lat_iters=CALIBRATION_LAT_ITERS,
                                bw_iters=CALIBRATION_BW_ITERS)
        rows: list[dict] = []

        def keep(row: dict) -> None:
            rows.append(row)
            emit(row)

        self._run("calibrate", self._p2p_plan_dict(plan), keep)
        cal = [r for r in rows if r.get("kind") == "calibration"]
        if not cal:
            raise HarnessError("local backend: calibrate layer produced no calibration row")
        return {cal[-1]["tier"]: TierDesign(cal[-1]["bandwidth_GBps"], cal[-1]["latency_us"])}

    def p2p(self, plan: ConnectivityPlan, emit: Emit) -> None:
        self._run("p2p", self._p2p_plan_dict(plan), emit)

    def collectives(self, plan: StressPlan, emit: Emit) -> None:
        self._run("collectives", plan_payload(plan), emit)

    def golden(self, plan: GoldenPlan, emit: Emit) -> None:
        self._run("golden", plan_payload(plan), emit)

    def close(self) -> None:
        self._kill_all()

    def machine_load(self) -> dict | None:
        """This machine's own load between measurements: suspect and controls share it.
        The fork server and the ranks it forks are sncheck's own CPU, not other load."""
        server = running_fork_server()
        return machine_load([server.proc.pid] if server is not None else [])

    # ---- facts

    def _local_facts(self) -> list[dict]:
        h, n = self.host, len(self.cards)
        rows = [host_fact_row(h, "reachable", True, True, True, tool="local",
                              message="this machine")]
        cpus = os.cpu_count() or 0
        rows.append(host_fact_row(h, "cpu_count", cpus, None, True, tool="os.cpu_count",
                                  message=(f"{n} ranks share {cpus} CPUs: measurements contend"
                                           if cpus < n else "")))
        if importlib.util.find_spec("torch") is None:
            rows.append(host_fact_row(h, "torch_version", None, None, False, status="missing_tool",
                                      message="torch is not installed (pip install 'sncheck[local]')",
                                      tool="torch"))
            rows.append(host_fact_row(h, "card_count", None, n, False, status="missing_tool",
                                      message="needs torch", tool="torch"))
            return rows
        import torch  # noqa: PLC0415 -- torch: an optional extra; this module imports without it
        import torch.distributed as dist  # noqa: PLC0415 -- torch: an optional extra; this module imports without it

        rows.append(host_fact_row(h, "torch_version", torch.__version__, None, True, tool="torch"))
        avail = {"gloo": dist.is_available() and dist.is_gloo_available(),
                 "nccl": dist.is_available() and dist.is_nccl_available() and torch.cuda.is_available(),
                 "hccl": importlib.util.find_spec("torch_npu") is not None and _npu_available(torch)}
        chosen = self.dist_backend
        rows.append(host_fact_row(
            h, "dist_backend", chosen, chosen, avail[chosen], tool="torch.distributed",
            message=", ".join(f"{k} {'available' if v else 'unavailable'}" for k, v in avail.items())))
        if chosen == "nccl":
            # one process per GPU: the cards are the GPUs torch sees
            value, msg = torch.cuda.device_count(), "CUDA devices"
        elif chosen == "hccl":
            npu: Any = getattr(torch, "npu")  # torch_npu adds it at import: torch's own types lack it
            value, msg = npu.device_count(), "NPU devices (torch_npu)"
        else:
            value, msg = n, "worker ranks (gloo on CPU: one process per card)"
        rows.append(host_fact_row(h, "card_count", value, n, value == n, tool="torch", message=msg))
        return rows

    # ---- jobs

    def _p2p_plan_dict(self, plan: ConnectivityPlan) -> dict:
        d = plan_payload(plan)
        if self.p2p_bytes:
            d["bw_bytes"] = int(self.p2p_bytes)
        return d

    def _job(self, layer: str, plan: dict, workdir: Path) -> Job:
        return build_job(self, layer, self.cards, plan, heartbeat_dir=str(workdir),
                         golden_config=self.golden_config, serialize_pairs=self.serialize_pairs)

    def _run(self, layer: str, plan: dict, emit: Emit) -> None:
        workdir = Path(tempfile.mkdtemp(prefix=f"sncheck-local-{layer}-"))
        try:
            for attempt in range(1, PORT_ATTEMPTS + 1):
                port = reserve_port()
                try:
                    self._attempt(layer, plan, emit, workdir / f"try{attempt}", port)
                    return
                except PortInUse:
                    self.progress(f"{layer}: rendezvous port {port} was taken; retrying")
                finally:
                    release_port(port)
            raise HarnessError(f"local backend: {layer} layer: the rendezvous port was taken "
                               f"{PORT_ATTEMPTS} times in a row")
        finally:
            if self.keep_workdir:
                self.progress(f"{layer}: job files kept in {workdir}")
            else:
                shutil.rmtree(workdir, ignore_errors=True)

    def _attempt(self, layer: str, plan: dict, emit: Emit, workdir: Path, port: int) -> None:
        workdir.mkdir(parents=True)
        job_path, out_path = workdir / "job.json", workdir / "rows.jsonl"
        job_path.write_text(self._job(layer, plan, workdir).to_json(), encoding="utf-8")
        out_path.touch()
        self.progress(f"{layer}: starting {len(self.cards)} workers ({self.dist_backend}, port {port})")
        try:
            self._start(job_path, out_path, workdir, port)
            self._watch(layer, RowTail(out_path), workdir, emit)
        except KeyboardInterrupt as e:
            self._kill_all()
            raise HarnessError(f"local backend: {layer} layer {interrupt_cause(e)}; "
                               f"all workers stopped") from e
        finally:
            self._kill_all()

    def _env(self, rank: int, port: int) -> dict[str, str]:
        env = {"RANK": str(rank), "WORLD_SIZE": str(len(self.cards)), "LOCAL_RANK": str(rank),
               "LOCAL_WORLD_SIZE": str(len(self.cards)), "MASTER_ADDR": "127.0.0.1",
               "MASTER_PORT": str(port)}
        lo = loopback_ifname()
        if lo and "GLOO_SOCKET_IFNAME" not in os.environ:
            env["GLOO_SOCKET_IFNAME"] = lo  # all ranks are here; the hostname may resolve elsewhere
        return env

    def _start(self, job_path: Path, out_path: Path, workdir: Path, port: int) -> None:
        server = fork_server() if self.launcher == "forkserver" else None
        for rank, card in enumerate(self.cards):
            log = workdir / f"rank{rank}.log"
            env = self._env(rank, port)
            if server is not None:
                pid = server.fork(job_path, out_path, env, log, self.start_timeout_s)
                w: Worker = ServedWorker(rank, card, log, server, pid)
            else:
                argv = [sys.executable, "-m", "sncheck.worker.torchdist",
                        "--job", str(job_path), "--out", str(out_path)]
                w = SubprocessWorker(rank, card, log, argv,
                                     {**package_env(), **env, "SNCHECK_DIE_WITH_PARENT": "1"})
            with self._lock:
                self._workers.append(w)

    def _watch(self, layer: str, tail: RowTail, workdir: Path, emit: Emit) -> None:
        """Pass rows on as they come; stop everything on a crash or a hang."""
        with self._lock:
            workers = list(self._workers)
        started = time.time()
        last_line = started
        failed: dict[int, int] = {}  # rank -> exit code, in the order seen
        while True:
            lines = tail.lines()
            if lines:
                last_line = time.time()
                self.pass_worker_rows(lines, layer, self.host, emit)
            codes = {w.rank: w.exitcode() for w in workers}
            for rank, code in codes.items():
                if code not in (None, 0) and rank not in failed:
                    failed[rank] = code
            if failed:
                self._fail_crashed(layer, tail, workers, failed, emit)
            if all(code == 0 for code in codes.values()):
                self._drain(layer, tail, emit)
                return
            self._check_hang(layer, tail, workers, workdir, started, last_line, emit)
            time.sleep(POLL_S)

    def _drain(self, layer: str, tail: RowTail, emit: Emit) -> None:
        self.pass_worker_rows(tail.lines(), layer, self.host, emit)

    def _fail_crashed(self, layer: str, tail: RowTail, workers: list[Worker],
                      failed: dict[int, int], emit: Emit) -> None:
        time.sleep(POLL_S)  # let a crash's neighbours show up, and its last rows land
        self._drain(layer, tail, emit)
        by_rank = {w.rank: w for w in workers}
        if 0 in failed and port_taken(by_rank[0].log_tail(20)):
            self._kill_all()
            raise PortInUse()
        self._kill_all()
        raise HarnessError(f"local backend: {layer} layer failed: {crash_causes(failed, by_rank)}")

    def _check_hang(self, layer: str, tail: RowTail, workers: list[Worker], workdir: Path,
                    started: float, last_line: float, emit: Emit) -> None:
        beats = {}
        for w in workers:
            try:
                beats[w.rank] = (workdir / f"rank{w.rank}").stat().st_mtime
            except FileNotFoundError:
                pass
        now = time.time()
        if len(beats) < len(workers):
            if now - started > self.start_timeout_s:
                missing = [w.card for w in workers if w.rank not in beats]
                self._drain(layer, tail, emit)
                self._kill_all()
                raise HarnessError(f"local backend: {layer} layer: workers did not start within "
                                   f"{self.start_timeout_s:.0f} s ({', '.join(missing)} never joined)")
            return
        idle = now - max(last_line, *beats.values())
        if idle <= self.op_timeout_s:
            return
        self._drain(layer, tail, emit)
        self._kill_all()
        # A rank waiting on a stuck peer looks as idle as the stuck one; list them all.
        ages = ", ".join(f"rank {r} ({self.cards[r]}) {now - t:.1f} s ago" for r, t in sorted(beats.items()))
        raise HarnessError(
            f"local backend: {layer} layer hung: no progress from any rank for {idle:.1f} s "
            f"(op_timeout_s={self.op_timeout_s:g}); last heartbeats: {ages}; all workers stopped")

    def _kill_all(self) -> None:
        with self._lock:
            workers, self._workers = self._workers, []
        for w in workers:
            w.kill()
        for w in workers:
            w.wait(10.0)


def _npu_available(torch) -> bool:
    """Whether torch_npu imports and sees an NPU (it registers ``torch.npu`` on import)."""
    try:
        importlib.import_module("torch_npu")
    except ImportError:
        return False
    return bool(getattr(torch, "npu", None) and torch.npu.is_available())


def crash_causes(failed: dict[int, int], by_rank: dict[int, Worker]) -> str:
    """Each failed rank's cause, a rank killed by a signal first (then by rank): a rank killed
    is where the failure began, its peers exiting with code 1 on 'connection reset by peer'
    follow it (the whole suite of stop 48 at load 20 read rank 0's reset first). A rank that
    exited has its reason at the end of its log; a killed one has none."""
    return "; ".join(f"rank {r} ({by_rank[r].card}) {exit_cause(c)}"
                     + (f": {by_rank[r].log_tail()}" if c > 0 and by_rank[r].log_tail() else "")
                     for r, c in sorted(failed.items(), key=lambda rc: (rc[1] >= 0, rc[0])))
