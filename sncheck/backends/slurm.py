"""The Slurm backend: sncheck runs on a Slurm login (control) node, or inside an
allocation (``salloc``/``sbatch``), and every job goes through ``srun``, locally, not over
SSH (inventory ``backend: {type: slurm}``). The campaign is split into steps
(:mod:`sncheck.launch.campaign`), run at most ``launcher.parallel_steps`` at once
(:mod:`sncheck.backends.slurmsteps`):

* host facts: one node-local step per node set (a supernode's hosts with the same fact
  commands), one task per node running the host's fact commands (its vendor plug-in's)
  and writing their outcomes as JSON lines naming the node to ``<shared>/facts-<task>.jsonl``
  (``srun -o``); judged by the same checks as the SSH backend's as each set's step ends.
  A node of a set that gave no outcome while the set's step failed (a node down at
  launch fails the whole step) is read again alone, so it costs only itself.
* the torch probe (p2p, collectives, golden): a step per supernode, a small torch world
  of its cards, the supernodes at once; then the cross-supernode plan as a step per rail
  (one rank per host, card k); a task per card, ``python3 -m sncheck.worker.slurm_rank``
  (ranks mapped to cards from ``SLURMD_NODENAME``/``SLURM_LOCALID``, rendezvous at rank
  0's node, whose ``NodeAddr`` comes from ``scontrol show nodes``), ``--kill-on-bad-exit=1``
  so one failed task stops its step. Rank 0 appends rows to a file on the shared
  directory, passed on while the step runs.
* a step that fails, loses a node, is cancelled (``scancel``, preemption, the job's time
  limit) or runs past ``job_timeout_s`` (then it is interrupted twice, which makes srun
  cancel the step, and killed) gives ``not_run`` rows for what that step held only (its
  supernode's hosts, a rail's cards), naming the node and the cause from srun's and
  slurmstepd's lines (:mod:`sncheck.slurm.steps`): findings, not a hang; the other steps
  are judged.

Every step has ``-n`` (a step inside an allocation would take ``SLURM_NTASKS`` from it)
and ``--overlap``: inside an allocation a step takes every CPU and GRES of the job on its
nodes, so rail steps over the same nodes (and any step beside the one sncheck itself may
run in) would wait for each other; sncheck itself never runs two steps on one card.

Collectives run with the hosts' vendor's collective tool (nccl-tests, rccl-tests: its
plug-in's ``collective``) instead of the torch probe when ``launcher.nccl_tests_dir`` is
set: one step per stress group and collective, through the same srun launch lines as
the SSH backend's (``sncheck.launch.commands``), parsed by the tool's parser.

The job files live in a directory the nodes also see (``shared_dir``: the backend
option, ``$SNCHECK_SHARED_DIR``, else the current directory), as on any Slurm cluster
with a shared home or scratch. ``launcher.extra_args`` go to every srun (``--partition``,
``--account``...).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from sncheck.errors import ConfigError, HarnessError
from sncheck.config.faultplan import FaultPlan
from sncheck.config.inventory import TierDesign
from sncheck.launch.campaign import StepSpec, split_connectivity, split_groups
from sncheck.launch.job import build_job
from sncheck.probeplan import ConnectivityPlan, GoldenPlan, StressPlan
from sncheck.rows import host_fact_row, not_run_row
from sncheck.slurm.steps import allocation_gone, cancelled, failed_nodes
from sncheck.topology import Topology, host_of
from sncheck.vendors import facts as hostfacts
from sncheck.vendors import after_end, hostjudge, registry
from sncheck.vendors.base import CollectiveTool
from sncheck.vendors.sim import ToolOutput
from sncheck.backends.base import KEPT_OF_CUT, Backend, Emit, Progress
from sncheck.transport.connection import MAX_OUTPUT_BYTES
from sncheck.backends.slurmsteps import Ended, Step, StepRunner
from sncheck.backends.processes import RowTail
from sncheck.backends.local import CPU_P2P_BYTES, CPU_STRESS
from sncheck.launch import commands as launch
from sncheck.model import rail_of
from sncheck.errors import ParseError
from sncheck.slurm.cluster import parse_scontrol_records

JOB_LAYER = {"p2p": "connectivity", "collectives": "stress", "golden": "golden"}
# Runs on each node: every fact command, one JSON line per outcome (inputs in argv: the commands,
# the timeout, the bound on output). Each stream goes to a file the kernel bounds (RLIMIT_FSIZE: a
# tool writing past it gets SIGXFSZ), so a tool printing without end is cut there, as the SSH
# transport cuts one (MAX_OUTPUT_BYTES; hostile round 16): the outcome says `cut`, and only the
# head of its output (KEPT_OF_CUT) travels back.
FACTS_PROGRAM = (
    "import json, os, resource, subprocess, sys, tempfile, time\n"
    "node = os.environ.get('SLURMD_NODENAME', '')\n"
    "cap = int(sys.argv[3])\n"
    "def bound():\n"
    "    resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))\n"
    "for argv in json.loads(sys.argv[1]):\n"
    "    t0 = time.monotonic()\n"
    "    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:\n"
    "        try:\n"
    "            p = subprocess.run(argv, stdout=fo, stderr=fe, timeout=float(sys.argv[2]),\n"
    "                               stdin=subprocess.DEVNULL, preexec_fn=bound)\n"
    "            r = {'rc': p.returncode, 'to': False}\n"
    "        except FileNotFoundError:\n"
    "            r = {'rc': 127, 'to': False, 'err': argv[0] + ': command not found'}\n"
    "        except subprocess.TimeoutExpired:\n"
    "            r = {'rc': None, 'to': True, 'err': ''}\n"
    "        cut = max(os.fstat(fo.fileno()).st_size, os.fstat(fe.fileno()).st_size) >= cap\n"
    f"        keep = {KEPT_OF_CUT} if cut else cap\n"
    "        for k, f in (('out', fo), ('err', fe)):\n"
    "            f.seek(0)\n"
    "            r.setdefault(k, f.read(keep).decode('utf-8', 'replace'))\n"
    "        if cut:\n"
    "            r.update(rc=None, cut=cap)\n"
    "    r.update(node=node, argv=argv, s=time.monotonic() - t0)\n"
    "    print(json.dumps(r), flush=True)\n"
)


class SlurmBackend(Backend):
    name = "slurm"
    rereads_facts = False  # one srun step collects every outcome

    def __init__(self, topo: Topology, faults: FaultPlan | None = None, seed: int = 0,
                 progress: Progress | None = None, **options: Any) -> None:
        super().__init__(topo, faults, seed, progress, **options)
        for f in self.faults.unsupported(self.name):
            raise ConfigError(f"the slurm backend cannot act out fault type {f.type!r} (target {f.target}); "
                              "the torch probe's fault types only")
        if shutil.which("srun") is None:
            raise HarnessError("the slurm backend runs on a Slurm login node: srun is not on the PATH")
        inv = topo.inventory
        self.python = str(options.get("python") or "python3")
        self.dist_backend = options.get("dist_backend") or inv.dist_backend
        self.op_timeout_s = float(options.get("op_timeout_s") or 60.0)
        self.job_timeout_s = float(options.get("job_timeout_s") or 600.0)
        self.fact_timeout_s = float(options.get("fact_timeout_s") or 60.0)
        self.extra_args = tuple(options.get("srun_args") or inv.launcher.extra_args)
        self.shared_dir = Path(options.get("shared_dir") or os.environ.get("SNCHECK_SHARED_DIR") or os.getcwd())
        self.parallel_steps = int(options.get("parallel_steps") or inv.launcher.parallel_steps)
        if self.parallel_steps < 1:
            raise ConfigError(f"parallel_steps must be at least 1, got {self.parallel_steps}")
        self._addr: dict[str, str] | None = None
        self._ports: set[int] = set()  # rendezvous ports handed to steps of this run
        self.last_stderr = ""  # srun's error output of the last step that failed, for messages and tests
        self.step_records: list[dict] = []  # every step: name, wall-clock start and end, exit code

    def plan_defaults(self, layer: str) -> dict:
        # gloo (CPU ranks): the local backend's sizes; a CPU cannot move GPU-sized messages.
        if self.dist_backend == "gloo":
            defaults: dict[str, dict] = {"connectivity": {"bw_bytes": CPU_P2P_BYTES}, "stress": dict(CPU_STRESS)}
            return defaults.get(layer, {})
        return {}

    def default_rules(self) -> str:
        return "local-cpu" if self.dist_backend == "gloo" else "default"

    # ------------------------------------------------------------------ facts

    def host_facts(self, hosts: tuple[str, ...], emit: Emit) -> None:
        """One srun step per set of fact commands, judged with the judgement every backend
        shares (:class:`sncheck.vendors.hostjudge.FactJudge`)."""
        self.fact_judge.read(hosts, self._read_hosts, emit)

    def _read_hosts(self, todo: tuple[str, ...], reached, lost) -> None:
        """One node-local step per node set: a supernode's hosts with the same fact commands."""
        inv = self.topo.inventory
        sets: dict[tuple, list[str]] = {}
        for h in todo:
            cmds = registry.vendor_of(inv.platform_of(h)).commands_for(inv.platform_of(h))
            sets.setdefault((self.topo.supernode_of_host(h), tuple(c.name for c in cmds)), []).append(h)
        again = self._facts_steps(list(sets.values()), reached, lost, retry=True)
        if again:  # nodes of a failed set that gave nothing: each alone, so one bad node costs only itself
            self._facts_steps([[h] for h in again], reached, lost, retry=False)

    def _facts_steps(self, node_sets: list[list[str]], reached, lost, retry: bool) -> list[str]:
        """A step per node set, every fact command of each node, its outcomes as JSON lines,
        judged as the set's step ends; a command an outcome is missing for did not run.
        Returns the nodes to read again alone (``retry``: those of a failed multi-node step
        that wrote no outcome), having reported every other node."""
        again: list[str] = []
        root = Path(tempfile.mkdtemp(prefix="sncheck-facts-", dir=self.shared_dir))

        def ended(hosts: list[str], work: Path, end: Ended) -> None:
            failed = failed_nodes(end.stderr)
            by_node: dict[str, list[dict]] = {}
            tasks: dict[str, set[str]] = {}  # node -> the tasks' files that answered as it
            for path in work.glob("facts-*.jsonl"):
                try:  # read as a rows file is: a FIFO or link planted on the shared directory answers nothing
                    tail = RowTail(path)
                    read = tail.lines() + tail.split.feed(b"\n")  # (a last line without its newline too)
                except HarnessError:
                    continue
                for o in read:  # a stray line (a tool writing to the terminal) is no outcome
                    if isinstance(o, dict) and "argv" in o:
                        by_node.setdefault(str(o.get("node")), []).append(o)
                        tasks.setdefault(str(o.get("node")), set()).add(path.name)
            if not end.ok:
                self.last_stderr = end.stderr
            answered = _answered_otherwise(hosts, tasks)
            for h in hosts:
                outcomes = by_node.get(h, [])
                if len(tasks.get(h, ())) > 1:  # two tasks said they were h: neither answer is known to be h's
                    lost(h, host_fact_row(h, "reachable", False, True, False, status="error", tool="srun",
                                          message=f"{h}: no facts through srun: {len(tasks[h])} tasks of the step "
                                                  f"answered as {h} (a task's SLURMD_NODENAME is not its node's): "
                                                  f"which answer is {h}'s cannot be told"))
                elif outcomes:
                    reached(h, "srun", "srun step ran", self._reader(h, outcomes))
                elif retry and len(hosts) > 1 and not end.ok:
                    again.append(h)
                else:
                    gone = allocation_gone(end.stderr)
                    why = failed.get(h) or answered or ("the step timed out" if end.timed_out else
                                            f"the job's allocation is gone (srun: {gone})" if gone else
                                            f"srun exited {end.rc}: "
                                            + (end.stderr.strip().splitlines() or ["no output"])[-1])
                    lost(h, host_fact_row(h, "reachable", False, True, False, status="unreachable", tool="srun",
                                          message=f"{h}: no facts through srun: {why}"))

        try:
            steps = []
            for i, hosts in enumerate(node_sets):
                cmds = self.fact_judge.commands(hosts[0]) + list(hostjudge.HOST_WIDE)
                work = root / f"set{i}"
                # %t (task), not %N: under multiple-slurmd %N is the machine's host name; each
                # line names its node (SLURMD_NODENAME) anyway.
                argv = [*self._srun_head(hosts, 1, f"facts-{self.topo.supernode_of_host(hosts[0])}"),
                        "-o", str(work / "facts-%t.jsonl"), self.python, "-c", FACTS_PROGRAM,
                        json.dumps([list(c.argv) for c in cmds]), str(self.fact_timeout_s), str(MAX_OUTPUT_BYTES)]
                steps.append(Step(f"facts {_hostlist(hosts)}", argv, frozenset(hosts),
                                  self.fact_timeout_s * len(cmds) + 30, work,
                                  on_end=partial(ended, hosts, work)))
            self.progress(f"host facts on {sum(map(len, node_sets))} nodes through srun, {len(steps)} steps")
            self._run_steps(steps)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        return again

    def _reader(self, host: str, outcomes: list[dict]):
        """``run(cmd)`` over the outcomes the step wrote for ``host`` (read once: a command
        is never read again here, so a "not ready yet" output is judged as it is)."""
        seen = {tuple(o["argv"]): o for o in outcomes}

        def run(cmd: hostfacts.FactCommand) -> ToolOutput:
            o = seen.get(tuple(cmd.argv))
            if o is None:
                raise hostfacts.NotRun("no outcome from the srun step")
            cut = o.get("cut") if isinstance(o.get("cut"), int) else None
            self.keep_output(host, cmd.tool, cmd.display, o["out"], o["err"], o["rc"], cut_at=cut)
            return ToolOutput(o["rc"], o["out"], o["err"], bool(o["to"]), o.get("s"), cut_at=cut)

        return run

    # ------------------------------------------------------------------ layers

    def calibrate(self, emit: Emit) -> dict[str, TierDesign]:  # noqa: ARG002 -- the Backend interface: this backend measures nothing to calibrate
        raise HarnessError("the slurm backend needs design values in the inventory (design:)")

    def p2p(self, plan: ConnectivityPlan, emit: Emit) -> None:
        self._torch_steps("p2p", split_connectivity(self.topo, plan), emit)

    def collectives(self, plan: StressPlan, emit: Emit) -> None:
        used = {host_of(m) for g in plan.groups for m in g.members}
        hosts = [h for h in self.topo.hosts if h in used]
        tests_dir = self.options.get("nccl_tests_dir") or self.topo.inventory.launcher.nccl_tests_dir
        tool = registry.collective_tool(self.topo.inventory, hosts)
        if tests_dir and tool:
            self._collective_tests(plan, tool, str(tests_dir), emit)
            return
        self._torch_steps("collectives", split_groups(self.topo, plan), emit)

    # ------------------------------------------------------------------ the vendor's collective tool

    def _collective_tests(self, plan: StressPlan, tool: CollectiveTool, tests_dir: str, emit: Emit) -> None:
        """The vendor's collective tool (nccl-tests, rccl-tests; ``launcher.nccl_tests_dir``),
        one srun step per group and collective, a task per member (the vendor's
        ``CUDA_VISIBLE_DEVICES`` per part where the members' GPU indices differ)."""

        assert tool.argv is not None and tool.rows is not None
        layer = JOB_LAYER["collectives"]
        env = registry.vendor_of(self.topo.inventory.platform_of(host_of(plan.groups[0].members[0]))
                                 ).visible_devices_env if plan.groups else launch.VISIBLE_DEVICES
        sizes = sorted(plan.sizes)
        factor = max(2, sizes[1] // sizes[0]) if len(sizes) > 1 else 2
        for gi, group in enumerate(plan.groups):
            by_host: dict[str, list[int]] = {}
            for m in group.members:
                by_host.setdefault(host_of(m), []).append(rail_of(m))
            parts = [launch.LaunchPart(h, len(idx), None if sorted(idx) == list(range(len(idx))) else tuple(sorted(idx)))
                     for h, idx in by_host.items()]
            self.progress(f"stress group {gi + 1}/{len(plan.groups)} {group.id} ({tool.name} via srun)")
            for collective in list(plan.collectives) + (["sendrecv"] if group.kind == "pair" else []):
                cmd = tool.argv(collective, sizes[0], sizes[-1], step_factor=factor,
                                iters=plan.iters, warmup=plan.warmup, directory=tests_dir)
                # -n: inside an allocation srun would take the job's SLURM_NTASKS (a heterogeneous
                # step names each component's); --overlap: the steps' module docstring
                ntasks = ["-n", str(len(group.members))] if len({(p.ranks, p.devices) for p in parts}) == 1 else []
                argv = launch.launcher_argv("srun", parts, [*ntasks, "--overlap", *self.extra_args,
                                                            "--kill-on-bad-exit=1"], cmd, env=env)
                for rep in range(max(1, plan.repeats)):
                    rc, err, timed_out, out = self._run_step(argv, self.job_timeout_s)
                    shown = " ".join(argv)
                    if timed_out:
                        emit(not_run_row(layer, group.id, "group", "timeout",
                                         f"{group.id}: `{shown}` ran past {self.job_timeout_s:g}s and was cancelled"))
                        continue
                    try:
                        parsed = after_end.read_job(tool.parse, out, err, collective=collective)
                    except ParseError as e:
                        failed = failed_nodes(err)
                        where = "; ".join(f"{h}: {c}" for h, c in failed.items()) or (err.strip().splitlines()
                                                                                        or ["no output"])[-1]
                        emit(not_run_row(layer, group.id, "group", "error" if rc else "parse_failed",
                                         f"{group.id}: no {tool.name} results (srun exit {rc}): {e.message}; {where}"))
                        continue
                    for row in tool.rows(parsed, group, collective, rep):
                        emit(row)
                    problems = list(parsed["errors"]) + [f"{h}: {c}" for h, c in failed_nodes(err).items()]
                    if rc != 0 and not problems:
                        problems.append(f"srun exit {rc}")
                    if problems:
                        emit(not_run_row(layer, group.id, "group", "error", f"{group.id}: {'; '.join(problems[:3])}"))

    def golden(self, plan: GoldenPlan, emit: Emit) -> None:
        self._torch_steps("golden", split_groups(self.topo, plan), emit)

    # ------------------------------------------------------------------ torch steps

    def _torch_steps(self, job_layer: str, specs: list[StepSpec], emit: Emit) -> None:
        """Each step a small torch world (:mod:`sncheck.launch.campaign`), run side by side;
        rows passed on as rank 0 writes them; a step that did not end well is ``not_run``
        for what it held only."""
        layer = JOB_LAYER[job_layer]
        if not specs:
            return
        root = Path(tempfile.mkdtemp(prefix=f"sncheck-{job_layer}-", dir=self.shared_dir))
        try:
            steps = []
            passed: dict[str, int] = {}  # rows each step's rank 0 wrote, by step name
            for spec in specs:
                work = root / spec.name
                work.mkdir()
                job, out = work / "job.json", work / "rows.jsonl"
                job.write_text(build_job(self, job_layer, spec.cards, spec.plan).to_json(), encoding="utf-8")
                out.touch()
                argv = [*self._srun_head(spec.hosts, spec.per_host, f"{job_layer}-{spec.name}"),
                        "--kill-on-bad-exit=1", self.python, "-m", "sncheck.worker.slurm_rank",
                        "--job", str(job), "--out", str(out)]
                steps.append(Step(
                    f"{layer}: {spec.describe()} ({_hostlist(spec.hosts)}, {len(spec.cards)} tasks)", argv,
                    frozenset(spec.cards), self.job_timeout_s, work, rows=out,
                    env=partial(self._rendezvous, spec.hosts[0]), rendezvous=True,
                    on_rows=partial(self._step_rows, layer, spec, passed, emit),
                    on_end=partial(self._step_end, layer, spec, passed, emit)))
            self.progress(f"{layer}: {len(steps)} srun steps ({', '.join(s.describe() for s in specs[:6])}"
                          f"{', ...' if len(specs) > 6 else ''}), at most {self.parallel_steps} at once")
            self._run_steps(steps)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def _step_rows(self, layer: str, spec: StepSpec, passed: dict[str, int], emit: Emit, items: list) -> None:
        """Pass on the rows a step's rank 0 wrote since the last look, counting them."""
        passed[spec.name] = passed.get(spec.name, 0) + self.pass_worker_rows(items, layer, spec.hosts[0], emit)

    def _step_end(self, layer: str, spec: StepSpec, passed: dict[str, int], emit: Emit, end: Ended) -> None:
        self._step_ended(layer, spec, end, emit, passed.get(spec.name, 0))

    def _step_ended(self, layer: str, spec: StepSpec, end: Ended, emit: Emit, rows: int = 1) -> None:
        """``not_run`` rows for what a step that did not end well held: its hosts (a rail
        step: its cards), naming the failed node and the cause, or Slurm's cancellation.
        A step that exited 0 without a row (``rows``: those its rank 0 wrote) did not run
        the probe: its plan is never empty, and a rail step's cards are covered by their
        supernodes' pairs, so nothing downstream would notice the lost cross-supernode plan."""
        where = f"the {layer} step of {spec.describe()}"
        if end.ok and rows == 0:
            for entity, kind in spec.entities():
                emit(not_run_row(layer, entity, kind, "not_run", f"{entity}: {where} exited 0 but its rank 0 "
                                 "wrote no row: the probe did not run"))
            return
        if end.ok:
            return
        self.last_stderr = end.stderr
        gone = cancelled(end.stderr, nodes=spec.hosts)
        failed = failed_nodes(end.stderr, cancelled=gone is not None)  # after a cancel: Slurm's word only
        last = (end.stderr.strip().splitlines() or ["no error output"])[-1]
        expired = allocation_gone(end.stderr)
        for entity, kind in spec.entities():
            h = host_of(entity)
            if end.timed_out:
                emit(not_run_row(layer, entity, kind, "timeout",
                                 f"{entity}: {where} ran past {self.job_timeout_s:g}s and was cancelled"))
            elif h in failed:
                emit(not_run_row(layer, entity, kind, "error", f"{entity}: {where} failed there: {failed[h]}"))
            elif failed:
                emit(not_run_row(layer, entity, kind, "not_run", f"{entity}: {where} did not finish: stopped "
                                 f"when it failed on {', '.join(sorted(failed))}"))
            elif gone is not None:
                status = "timeout" if gone.due_to == "TIME LIMIT" else "not_run"
                emit(not_run_row(layer, entity, kind, status, f"{entity}: {where} did not finish: "
                                 f"{gone.describe()}; nothing it had left to measure was measured"))
            elif expired is not None:
                emit(not_run_row(layer, entity, kind, "not_run", f"{entity}: {where} could not start: the "
                                 f"job's allocation is gone (srun: {expired})"))
            else:
                emit(not_run_row(layer, entity, kind, "not_run",
                                 f"{entity}: {where} did not finish: srun exited {end.rc}: {last}"))

    def _run_steps(self, steps: list[Step]) -> None:
        runner = StepRunner(self.parallel_steps, progress=self.progress)
        try:
            runner.run(steps)
        finally:
            self.step_records += runner.records

    def _rendezvous(self, node: str) -> dict[str, str]:
        """Rank 0's node address and a port no other step of this run was given."""
        addr = self._node_addr(node)
        port = _port_for(addr)
        for _ in range(50):
            if port not in self._ports:
                break
            port = _port_for(addr)
        self._ports.add(port)
        return {"SNCHECK_MASTER_ADDR": addr, "SNCHECK_MASTER_PORT": str(port)}

    # ------------------------------------------------------------------ srun

    def _srun_head(self, hosts: Sequence[str], per_node: int, name: str) -> list[str]:
        """``-n`` as well as ``--ntasks-per-node``: inside an allocation srun would take the
        job's ``SLURM_NTASKS`` and refuse the geometry. ``--overlap``: see the module docstring."""
        return ["srun", "-N", str(len(hosts)), "-n", str(len(hosts) * per_node), "--ntasks-per-node", str(per_node),
                "-w", ",".join(hosts), "--job-name", f"sncheck-{name}", "--overlap", *self.extra_args]

    def _run_step(self, argv: list[str], timeout: float,
                  env: dict[str, str] | None = None) -> tuple[int, str, bool, str]:
        """Run one srun; on ``timeout`` interrupt it twice (srun then cancels the step) and kill it.

        (exit code, stderr tail, timed out, stdout)."""
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err, \
                tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out:
            proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err,
                                    start_new_session=True)
            timed_out = False
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                for _ in range(2):
                    proc.send_signal(signal.SIGINT)
                    time.sleep(0.3)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            except BaseException:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise
            err.seek(0)
            self.last_stderr = err.read()[-20000:]
            out.seek(0)
            return proc.returncode, self.last_stderr, timed_out, out.read(4 << 20)

    def _node_addr(self, node: str) -> str:
        if self._addr is None:
            res = subprocess.run(["scontrol", "show", "nodes", "-o"], capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)

            self._addr = {r["NodeName"]: r.get("NodeAddr") or r["NodeName"]
                          for r in parse_scontrol_records(res.stdout) if r.get("NodeName")} if res.returncode == 0 else {}
        return self._addr.get(node, node)


def _answered_otherwise(hosts: Sequence[str], tasks: Mapping[str, set[str]]) -> str | None:
    """What a node of ``hosts`` that no task answered as got instead, when the step's tasks
    answered as nodes outside it or as one node twice (``tasks``: node -> the tasks' files that
    answered as it); else None."""
    strangers = sorted(n for n in tasks if n not in hosts)
    twice = sorted(n for n in tasks if n in hosts and len(tasks[n]) > 1)
    said = ([f"as {', '.join(strangers)}, not a node of this step"] if strangers else []) + \
        [f"as {n} {len(tasks[n])} times" for n in twice]
    return f"no task answered as it: the step's tasks answered {'; '.join(said)}" if said else None


def _hostlist(hosts: Sequence[str]) -> str:
    """A few hosts by name, more as the first and a count (for progress lines)."""
    return ",".join(hosts) if len(hosts) <= 3 else f"{hosts[0]}..{hosts[-1]} ({len(hosts)} nodes)"


def _port_for(addr: str) -> int:
    """A rendezvous port: a free one when rank 0's node is this machine, else a random high port."""
    try:
        with socket.socket() as s:
            s.bind((addr, 0))
            return int(s.getsockname()[1])
    except OSError:
        return random.randint(20000, 40000)

