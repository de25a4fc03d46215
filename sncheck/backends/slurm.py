"""The Slurm backend: sncheck runs on a Slurm login (control) node and every job goes
through ``srun``, locally, not over SSH (inventory ``backend: {type: slurm}``).

* host facts: one step, one task per host (``srun -N n --ntasks-per-node 1 -w hosts``),
  each running the host's fact commands (its vendor plug-in's) and writing their
  outcomes as JSON lines naming the node to ``<shared>/facts-<task>.jsonl`` (``srun -o``);
  judged by the same checks as the SSH backend's.
* the torch probe (p2p, collectives, golden): one step over the job's hosts, a task per
  card, ``python3 -m sncheck.worker.slurm_rank`` (ranks mapped to cards from
  ``SLURMD_NODENAME``/``SLURM_LOCALID``, rendezvous at rank 0's node, whose
  ``NodeAddr`` comes from ``scontrol show nodes``), ``--kill-on-bad-exit=1`` so one
  failed task stops the step. Rank 0 appends rows to a file the login node reads.
* a step that fails, loses a node, or runs past ``job_timeout_s`` (then it is
  interrupted twice, which makes srun cancel the step, and killed) gives ``not_run``
  rows naming the node and the cause from srun's ``error:`` lines: findings, not a hang.

Collectives run with the hosts' vendor's collective tool (nccl-tests, rccl-tests: its
plug-in's ``collective``) instead of the torch probe when ``launcher.nccl_tests_dir`` is
set: one step per stress group and collective, through the same srun launch lines as
the SSH backend's (``sncheck.launch.commands``), parsed by the tool's parser.

The job files live in a directory the nodes also see (``shared_dir``: the backend
option, ``$SNCHECK_SHARED_DIR``, else the current directory), as on any Slurm cluster
with a shared home or scratch. ``launcher.extra_args`` go to every srun (``--partition``,
``--account``, ``--gres=gpu:8``...).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sncheck.errors import ConfigError, HarnessError
from sncheck.config.inventory import TierDesign
from sncheck.launch.job import build_job, cards_of_hosts
from sncheck.probeplan import ConnectivityPlan, GoldenPlan, StressPlan
from sncheck.rows import JsonLines, host_fact_row, not_run_row
from sncheck.topology import host_of
from sncheck.vendors import facts as hostfacts
from sncheck.vendors import hostjudge, registry
from sncheck.vendors.base import CollectiveTool
from sncheck.vendors.sim import ToolOutput
from sncheck.backends.base import Backend, Emit

JOB_LAYER = {"p2p": "connectivity", "collectives": "stress", "golden": "golden"}
_SRUN_ERROR = re.compile(r"srun: error: (\S+): tasks? ([\d,\-]+): (.+)")
_NODE_FAILURE = re.compile(r"srun: error: Node failure on (\S+)")
# Runs on each node: every fact command, one JSON line per outcome (inputs in argv).
FACTS_PROGRAM = (
    "import json, os, subprocess, sys\n"
    "node = os.environ.get('SLURMD_NODENAME', '')\n"
    "for argv in json.loads(sys.argv[1]):\n"
    "    t0 = __import__('time').monotonic()\n"
    "    try:\n"
    "        p = subprocess.run(argv, capture_output=True, text=True, errors='replace',\n"
    "                           timeout=float(sys.argv[2]), stdin=subprocess.DEVNULL)\n"
    "        r = {'rc': p.returncode, 'out': p.stdout, 'err': p.stderr, 'to': False}\n"
    "    except FileNotFoundError:\n"
    "        r = {'rc': 127, 'out': '', 'err': argv[0] + ': command not found', 'to': False}\n"
    "    except subprocess.TimeoutExpired as e:\n"
    "        r = {'rc': None, 'out': (e.stdout or b'').decode('utf-8', 'replace') if isinstance(e.stdout, bytes)"
    " else (e.stdout or ''), 'err': '', 'to': True}\n"
    "    r.update(node=node, argv=argv, s=__import__('time').monotonic() - t0)\n"
    "    print(json.dumps(r), flush=True)\n"
)


class SlurmBackend(Backend):
    name = "slurm"
    rereads_facts = False  # one srun step collects every outcome

    def __init__(self, topo, faults=None, seed: int = 0, progress=None, **options) -> None:  # type: ignore[no-untyped-def]
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
        self._addr: dict[str, str] | None = None
        self.last_stderr = ""  # srun's error output of the last step, for messages and tests

    def plan_defaults(self, layer: str) -> dict:
        # gloo (CPU ranks): the local backend's sizes; a CPU cannot move GPU-sized messages.
        if self.dist_backend == "gloo":
            from sncheck.backends.local import CPU_P2P_BYTES, CPU_STRESS
            return {"connectivity": {"bw_bytes": CPU_P2P_BYTES}, "stress": dict(CPU_STRESS)}.get(layer, {})
        return {}

    def default_rules(self) -> str:
        return "local-cpu" if self.dist_backend == "gloo" else "default"

    # ------------------------------------------------------------------ facts

    def host_facts(self, hosts: tuple[str, ...], emit: Emit) -> None:
        """One srun step per set of fact commands, judged with the judgement every backend
        shares (:class:`sncheck.vendors.hostjudge.FactJudge`)."""
        self.fact_judge.read(hosts, self._read_hosts, emit)

    def _read_hosts(self, todo: tuple[str, ...], reached, lost) -> None:
        inv = self.topo.inventory
        by_cmds: dict[tuple[str, ...], list[str]] = {}
        for h in todo:
            cmds = registry.vendor_of(inv.platform_of(h)).commands_for(inv.platform_of(h))
            by_cmds.setdefault(tuple(c.name for c in cmds), []).append(h)
        for _names, group in by_cmds.items():
            self._facts_step(group, reached, lost)

    def _facts_step(self, hosts: list[str], reached, lost) -> None:
        """The Slurm way of reading hosts: every fact command of each node in one srun
        step, its outcomes as JSON lines; a command an outcome is missing for did not run."""
        judge = self.fact_judge
        cmds = judge.commands(hosts[0]) + list(hostjudge.HOST_WIDE)
        work = Path(tempfile.mkdtemp(prefix="sncheck-facts-", dir=self.shared_dir))
        try:
            # %t (task), not %N: under multiple-slurmd %N is the machine's host name; each
            # line names its node (SLURMD_NODENAME) anyway.
            argv = [*self._srun_head(hosts, 1), "-o", str(work / "facts-%t.jsonl"),
                    self.python, "-c", FACTS_PROGRAM, json.dumps([list(c.argv) for c in cmds]),
                    str(self.fact_timeout_s)]
            self.progress(f"host facts on {len(hosts)} nodes through srun")
            rc, stderr, timed_out = self._run_step(argv, self.fact_timeout_s * len(cmds) + 30)
            failed = _failed_nodes(stderr)
            by_node: dict[str, list[dict]] = {}
            for path in work.glob("facts-*.jsonl"):
                for ln in path.read_text(errors="replace").splitlines():
                    try:
                        o = json.loads(ln)
                    except ValueError:
                        continue  # a stray line (a tool writing to the terminal) is not an outcome
                    if isinstance(o, dict) and "argv" in o:
                        by_node.setdefault(str(o.get("node")), []).append(o)
            for h in hosts:
                outcomes = by_node.get(h, [])
                if not outcomes:
                    why = failed.get(h) or ("the step timed out" if timed_out else f"srun exited {rc}: "
                                            + (stderr.strip().splitlines() or ["no output"])[-1])
                    lost(h, host_fact_row(h, "reachable", False, True, False, status="unreachable", tool="srun",
                                          message=f"{h}: no facts through srun: {why}"))
                    continue
                reached(h, "srun", "srun step ran", self._reader(h, outcomes))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _reader(self, host: str, outcomes: list[dict]):
        """``run(cmd)`` over the outcomes the step wrote for ``host`` (read once: a command
        is never read again here, so a "not ready yet" output is judged as it is)."""
        seen = {tuple(o["argv"]): o for o in outcomes}

        def run(cmd: hostfacts.FactCommand) -> ToolOutput:
            o = seen.get(tuple(cmd.argv))
            if o is None:
                raise hostfacts.NotRun("no outcome from the srun step")
            self.keep_output(host, cmd.tool, cmd.display, o["out"], o["err"], o["rc"])
            return ToolOutput(o["rc"], o["out"], o["err"], bool(o["to"]), o.get("s"))

        return run

    # ------------------------------------------------------------------ layers

    def calibrate(self, emit: Emit) -> dict[str, TierDesign]:
        raise HarnessError("the slurm backend needs design values in the inventory (design:)")

    def p2p(self, plan: ConnectivityPlan, emit: Emit) -> None:
        used = {host_of(c) for rnd in plan.rounds for pair in rnd.pairs for c in pair} | set(plan.hosts)
        hosts = [h for h in self.topo.hosts if h in used]
        self._torch_job("p2p", hosts, plan, emit)

    def collectives(self, plan: StressPlan, emit: Emit) -> None:
        used = {host_of(m) for g in plan.groups for m in g.members}
        hosts = [h for h in self.topo.hosts if h in used]
        tests_dir = self.options.get("nccl_tests_dir") or self.topo.inventory.launcher.nccl_tests_dir
        tool = registry.collective_tool(self.topo.inventory, hosts)
        if tests_dir and tool:
            self._collective_tests(plan, tool, str(tests_dir), emit)
            return
        self._torch_job("collectives", hosts, plan, emit)

    # ------------------------------------------------------------------ the vendor's collective tool

    def _collective_tests(self, plan: StressPlan, tool: CollectiveTool, tests_dir: str, emit: Emit) -> None:
        """The vendor's collective tool (nccl-tests, rccl-tests; ``launcher.nccl_tests_dir``),
        one srun step per group and collective, a task per member (the vendor's
        ``CUDA_VISIBLE_DEVICES`` per part where the members' GPU indices differ)."""
        from sncheck.launch import commands as launch
        from sncheck.model import rail_of
        from sncheck.errors import ParseError

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
                argv = launch.launcher_argv("srun", parts, [*self.extra_args, "--kill-on-bad-exit=1"], cmd,
                                            env=env)
                for rep in range(max(1, plan.repeats)):
                    rc, err, timed_out, out = self._run_step(argv, self.job_timeout_s, capture=True)
                    shown = " ".join(argv)
                    if timed_out:
                        emit(not_run_row(layer, group.id, "group", "timeout",
                                         f"{group.id}: `{shown}` ran past {self.job_timeout_s:g}s and was cancelled"))
                        continue
                    try:
                        parsed = tool.parse(out + "\n" + err, collective=collective)
                    except ParseError as e:
                        failed = _failed_nodes(err)
                        where = "; ".join(f"{h}: {c}" for h, c in failed.items()) or (err.strip().splitlines()
                                                                                        or ["no output"])[-1]
                        emit(not_run_row(layer, group.id, "group", "error" if rc else "parse_failed",
                                         f"{group.id}: no {tool.name} results (srun exit {rc}): {e.message}; {where}"))
                        continue
                    for row in tool.rows(parsed, group, collective, rep):
                        emit(row)
                    problems = list(parsed["errors"]) + [f"{h}: {c}" for h, c in _failed_nodes(err).items()]
                    if rc != 0 and not problems:
                        problems.append(f"srun exit {rc}")
                    if problems:
                        emit(not_run_row(layer, group.id, "group", "error", f"{group.id}: {'; '.join(problems[:3])}"))

    def golden(self, plan: GoldenPlan, emit: Emit) -> None:
        used = {host_of(m) for g in plan.groups for m in g.members}
        self._torch_job("golden", [h for h in self.topo.hosts if h in used], plan, emit)

    # ------------------------------------------------------------------ torch jobs

    def _torch_job(self, job_layer: str, hosts: list[str], plan: Any, emit: Emit) -> None:
        layer = JOB_LAYER[job_layer]
        if not hosts:
            return
        cards = {h: self.topo.inventory.hosts[h].cards for h in hosts}
        if len(set(cards.values())) != 1:
            raise HarnessError(f"the slurm backend runs one task per card with --ntasks-per-node: the hosts of "
                               f"the {layer} job must have the same number of cards, got {cards}")
        work = Path(tempfile.mkdtemp(prefix=f"sncheck-{job_layer}-", dir=self.shared_dir))
        try:
            job, out = work / "job.json", work / "rows.jsonl"
            job.write_text(build_job(self, job_layer, cards_of_hosts(self.topo, hosts), plan).to_json(), encoding="utf-8")
            out.touch()
            addr = self._node_addr(hosts[0])
            env = {"SNCHECK_MASTER_ADDR": addr, "SNCHECK_MASTER_PORT": str(_port_for(addr))}
            argv = [*self._srun_head(hosts, next(iter(cards.values()))), "--kill-on-bad-exit=1",
                    self.python, "-m", "sncheck.worker.slurm_rank", "--job", str(job), "--out", str(out)]
            self.progress(f"{layer}: srun over {len(hosts)} nodes, {sum(cards.values())} tasks")
            rc, stderr, timed_out = self._run_step(argv, self.job_timeout_s, env)
            self.pass_worker_rows(JsonLines().feed(out.read_bytes() + b"\n"), layer, hosts[0], emit)
            if rc == 0 and not timed_out:
                return
            failed = _failed_nodes(stderr)
            last = (stderr.strip().splitlines() or ["no error output"])[-1]
            for h in hosts:
                if timed_out:
                    emit(not_run_row(layer, h, "host", "timeout",
                                     f"{h}: the {layer} step ran past {self.job_timeout_s:g}s and was cancelled"))
                elif h in failed:
                    emit(not_run_row(layer, h, "host", "error", f"{h}: the {layer} step failed there: {failed[h]}"))
                else:
                    why = (f"stopped when it failed on {', '.join(sorted(failed))}" if failed
                           else f"srun exited {rc}: {last}")
                    emit(not_run_row(layer, h, "host", "not_run", f"{h}: the {layer} step did not finish: {why}"))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    # ------------------------------------------------------------------ srun

    def _srun_head(self, hosts: Sequence[str], per_node: int) -> list[str]:
        return ["srun", "-N", str(len(hosts)), "--ntasks-per-node", str(per_node), "-w", ",".join(hosts),
                "--job-name", "sncheck", *self.extra_args]

    def _run_step(self, argv: list[str], timeout: float, env: dict[str, str] | None = None,
                  capture: bool = False):  # type: ignore[no-untyped-def]
        """Run one srun; on ``timeout`` interrupt it twice (srun then cancels the step) and kill it.

        (exit code, stderr tail, timed out) and, with ``capture``, the stdout too."""
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err, \
                tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as out:
            proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
                                    stdout=out if capture else subprocess.DEVNULL, stderr=err,
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
            if capture:
                out.seek(0)
                return proc.returncode, self.last_stderr, timed_out, out.read(4 << 20)
            return proc.returncode, self.last_stderr, timed_out

    def _node_addr(self, node: str) -> str:
        if self._addr is None:
            res = subprocess.run(["scontrol", "show", "nodes", "-o"], capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)
            from sncheck.slurm.cluster import parse_scontrol_records

            self._addr = {r["NodeName"]: r.get("NodeAddr") or r["NodeName"]
                          for r in parse_scontrol_records(res.stdout) if r.get("NodeName")} if res.returncode == 0 else {}
        return self._addr.get(node, node)


def _failed_nodes(stderr: str) -> dict[str, str]:
    """``{node: cause}`` from srun's ``srun: error: node3: task 2: Exited with exit code 1`` lines.

    Tasks srun itself stopped after another failed (``--kill-on-bad-exit``: "Terminated")
    are collateral, not causes; they count only when no node failed otherwise.
    """
    causes: dict[str, str] = {m.group(1): "node failure: Slurm lost the node during the step"
                              for m in _NODE_FAILURE.finditer(stderr)}
    collateral: dict[str, str] = {}
    for m in _SRUN_ERROR.finditer(stderr):
        cause = m.group(3).strip()
        (collateral if cause == "Terminated" else causes).setdefault(m.group(1), f"task {m.group(2)}: {cause}")
    return causes or {}


def _port_for(addr: str) -> int:
    """A rendezvous port: a free one when rank 0's node is this machine, else a random high port."""
    try:
        with socket.socket() as s:
            s.bind((addr, 0))
            return int(s.getsockname()[1])
    except OSError:
        return random.randint(20000, 40000)

