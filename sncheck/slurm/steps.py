"""What srun and slurmstepd print about a step that did not end well, read from srun's
stderr: which nodes failed and why, and whether Slurm cancelled the step.

The grammar, as Slurm 22.05 prints it (slurm-22-05-8-1):

* ``src/plugins/launch/slurm/launch_slurm.c`` (srun, a task's end), ``error()`` so
  prefixed ``srun: error: ``::

      "%s: %s %s: Exited with exit code %d"   hosts, "task"|"tasks", task ids
      "%s: %s %s: %s%s"                        hosts, ..., strsignal() ("Killed",
                                                "Terminated"), " (core dumped)"
      "%s: %s %s: Out Of Memory"

  hosts is a hostlist of the nodes of those tasks (``node[1-2]``), task ids a range
  list (``0-1,4``). A signal message is printed only while srun itself is not
  cancelling the step (a task ``--kill-on-bad-exit`` stopped reads "Terminated").
* ``src/srun/libsrun/allocate.c``: ``"Node failure on %s"`` (srun's own job lost a node).
* ``src/slurmd/slurmstepd/req.c`` (the step's stepd on each node, forwarded to srun's
  stderr with the prefix ``slurmstepd: error: `` or, under multiple slurmd,
  ``slurmstepd-<node>: error: ``)::

      "*** %s ON %s CANCELLED AT %s ***"                   entity, node, time
      "*** %s ON %s CANCELLED AT %s DUE TO TIME LIMIT ***"  ... PREEMPTION, JOB REQUEUE,
      "*** %s ON %s CANCELLED AT %s DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"

  entity ``STEP <job>.<step>`` (``log_build_step_id_str`` without prefix; a
  heterogeneous component ``<job>.<step>+<n>``) or ``JOB <job>`` for a batch script; the
  time ``slurm_make_time_str`` (``2026-12-04T22:41:12`` by default).
* ``src/api/step_launch.c`` (``slurm_step_launch_wait_finish``, srun's own lines, never
  forwarded)::

      "Job step aborted: Waiting up to %d seconds for job step to finish."   tasks still running
      "Job step aborted"                                                     none left

  printed once the step is aborted: by slurmctld's ``SRUN_JOB_COMPLETE`` (``_job_complete_handler``;
  slurmctld sends it when it kills the step with SIGKILL: ``scancel`` of the step or its job, the
  time limit, preemption, a node failure; ``step_mgr.c`` ``_step_signal``), or by srun itself, whose
  every abort prints its reason first (:data:`_SRUN_ABORTS`).
  ``src/plugins/launch/slurm/launch_slurm.c`` ``_step_signal``: ``"Terminating %ps"`` (``StepId=5.0``),
  srun's ``--kill-on-bad-exit`` after the first task that ended badly.

  **Why srun's line and not only slurmstepd's** (the loopback cluster under load, 3 of 124
  cancelled steps): slurmstepd's CANCELLED line reaches srun through task 0's stderr, and srun
  drops what it has not read of the tasks' output once a task has ended by SIGTERM or SIGKILL
  (``client_io_handler_abort`` in ``slurm_step_launch_wait_finish``: "task_exit_signal"). A
  cancelled step's tasks end so, so its CANCELLED line can be lost; srun's own line cannot. And
  a task the cancel ended may still be reported as srun's ``error()``: a signal line is only
  demoted to ``verbose()`` once ``SRUN_JOB_COMPLETE`` has arrived (``my_srun_job->state >=
  SRUN_JOB_CANCELLED``), and an exit code (a task whose SIGTERM handler exits) never is. So once
  Slurm ended the step, a task's end is the cancellation's doing; only Slurm's own word about a
  node (``Node failure on``, a task ``Out Of Memory``: the step's cgroup) names a failed node
  (:func:`failed_nodes` with ``cancelled=True``). A plain CANCELLED line is no proof of Slurm's
  cancel: srun's own ``--kill-on-bad-exit`` signals the step with ``SIG_TERM_KILL``, which makes
  slurmstepd print it too (req.c's ``_handle_signal_container``: SIGTERM, SIGKILL, SIG_TERM_KILL)
  but sends srun no ``SRUN_JOB_COMPLETE`` (``step_mgr.c`` ``_step_signal``: SIGKILL only), so no
  "Job step aborted" (srun ends with "Force Terminated %ps" instead); srun prints its
  ``Terminating %ps`` before it signals, so that echo always comes after it, and a plain
  CANCELLED line before it is Slurm's. "Node failure on" comes only from slurmctld's
  ``SRUN_NODE_FAIL``, sent when it sets the node DOWN (``kill_running_job_by_node_name``): a node
  merely slow under load is not named so unless it left pings unanswered past ``SlurmdTimeout``.
  Not told apart: a cancel whose ``SRUN_JOB_COMPLETE`` reaches srun after every task's end *and*
  whose CANCELLED line is lost reads as the tasks' own ends (srun's output is then that of
  tasks killed from outside; no such step was seen in 124).
* ``src/srun/libsrun/srun_job.c`` (``existing_allocation``: srun inside a job whose
  allocation is gone, so the step is never created)::

      "Slurm job %u has expired"                       ESLURM_ALREADY_DONE, as error()
      "Unable to confirm allocation for job %u: %m"    any other lookup failure
      "Check SLURM_JOB_ID environment variable. Expired or invalid job %u"   info(), after either
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from sncheck.config import hostlist

# Each at the start of a line, as Slurm's log prefix puts it: the tasks' own stderr goes to the
# same stream, and a task's line quoting one ('... srun: error: node9: task 0: Exited ...') is
# no word of srun's (it named a node that never failed). A task's progress bar ends in '\r',
# not '\n': srun's line after it starts there too.
_AT_LINE = r"(?:^|(?<=\r))"
_TASKS = re.compile(_AT_LINE + r"srun: error: (\S+): tasks? ([\d,\-]+): (.+)", re.M)
_NODE_FAILURE = re.compile(_AT_LINE + r"srun: error: Node failure on (\S+)", re.M)
_CANCELLED = re.compile(_AT_LINE + r"(?:slurmstepd(?:-\S+)?: error: )?\*\*\* (STEP|JOB) (\S+) ON (\S+) CANCELLED AT (\S+)"
                        r"(?: DUE TO ([A-Z ]+?)(?:, SEE [^*]*)?)? \*\*\*", re.M)
_EXPIRED = re.compile(_AT_LINE + r"srun: error: (Slurm job (\d+) has expired|Unable to confirm allocation for job (\d+): .+)",
                      re.M)
COLLATERAL = "Terminated"  # tasks srun stopped after another failed (--kill-on-bad-exit)
OOM = "Out Of Memory"      # launch_slurm.c: the stepd's SIG_OOM status, Slurm's own word
_ABORTED = re.compile(_AT_LINE + r"srun: Job step aborted(?:: Waiting up to \d+ seconds for job step to finish\.)?$",
                      re.M)
_TERMINATING = re.compile(_AT_LINE + r"srun: (?:\S+: )*Terminating StepId=(\S+)$", re.M)
# srun's own reasons for aborting a step, each printed before its abort (slurm-22-05-8-1:
# step_launch.c l.627 "timeout waiting for task launch", l.1387/1414 and _check_io_timeout's
# "Aborting, ..."/"aborting, io error ..."/"Cannot communicate with node", l.1657 "Task launch for
# %ps failed on node"; launch_slurm.c l.844/855 "Application launch (add) failed"; srun_job.c
# "srun prolog failed", "Failure in local plugin stack", "forcing job termination" (srun got
# SIGTERM/SIGHUP/SIGQUIT), "First task exited %ds ago" (--wait)), some printed after the
# function's name (step_launch.c l.1742: "%s: aborting, io error with slurmstepd on node %d",
# __func__). After one of them srun's "Job step aborted" is srun's doing, not Slurm's.
_SRUN_ABORTS = re.compile(_AT_LINE + r"srun: (?:error: )?(?:\w+: )?(?:timeout waiting for task launch|[Aa]borting, |"
                          r"Cannot communicate with node|Task launch for \S+ failed on node|Application launch "
                          r"(?:add )?failed|srun prolog failed|Failure in local plugin stack|forcing job termination|"
                          r"First task exited)", re.M)


@dataclass(frozen=True)
class Cancelled:
    """Slurm cancelled the step: ``scancel``, the job's time limit, preemption, a node failure."""

    step: str          # "5.0" ("": srun named no step)
    node: str | None   # the node whose stepd said so first (None: srun's line alone)
    at: str | None     # Slurm's time string (None: srun's line alone)
    due_to: str | None  # "TIME LIMIT", "PREEMPTION", "NODE FAILURE", "JOB REQUEUE"; None: scancel, or not known

    def describe(self) -> str:
        step = f"step {self.step}" if self.step else "the step"
        if self.at is None:  # srun's "Job step aborted" alone: slurmstepd's line, which says why, was lost
            return f"Slurm cancelled {step} (srun: \"Job step aborted\"; slurmstepd's reason did not reach srun)"
        why = f" due to {self.due_to.lower()}" if self.due_to else " (scancel)"
        return f"Slurm cancelled {step} at {self.at}{why}"


def failed_nodes(stderr: str, cancelled: bool = False) -> dict[str, str]:
    """``{node: cause}`` from srun's ``srun: error: node3: task 2: Exited with exit code 1``
    lines (the first line per node wins).

    Tasks srun itself stopped after another failed (``--kill-on-bad-exit``: "Terminated")
    are collateral, not causes, and are left out. ``cancelled`` (Slurm ended the step): a
    task's exit code or signal is the cancellation's doing (see the module docstring); only
    Slurm's word about a node is a cause: a node failure, a task out of memory.
    """
    causes: dict[str, str] = {m.group(1): "node failure: Slurm lost the node during the step"
                              for m in _NODE_FAILURE.finditer(stderr)}
    for m in _TASKS.finditer(stderr):
        cause = m.group(3).strip()
        if cause != COLLATERAL and (not cancelled or cause == OOM):
            for node in _nodes(m.group(1)):  # tasks on several nodes: a hostlist, node[3-4]
                causes.setdefault(node, f"task {m.group(2)}: {cause}")
    return causes


def allocation_gone(stderr: str) -> str | None:
    """srun's own words when the job it was to run a step in no longer exists (revoked,
    cancelled, past its time limit), or None."""
    m = _EXPIRED.search(stderr)
    return m.group(1).strip() if m else None


def _nodes(expr: str) -> list[str]:
    try:
        return hostlist.expand(expr)
    except ValueError:  # not a hostlist after all: keep srun's text, never drop the line
        return [expr]


def cancelled(stderr: str, nodes: Collection[str] | None = None) -> Cancelled | None:
    """Slurm ended the step, or None (see the module docstring): slurmstepd's ``*** STEP ...
    CANCELLED AT ... ***`` with a ``DUE TO``, or a plain one srun printed before its own
    ``Terminating StepId=`` (after it, the line is the echo of srun's ``--kill-on-bad-exit``);
    else srun's ``Job step aborted`` with none of srun's own abort reasons before it (the step
    named by the CANCELLED line if there is one, else by srun's ``Terminating StepId=``).

    ``nodes``: the step's nodes. A CANCELLED line naming another node is no stepd's of this
    step (each stepd names its own node): a task's stderr shares the stream, and a task that
    printed another job's cancel line (``... STEP 77.0 ON node9 ... DUE TO TIME LIMIT``) hid its
    own step's failed node behind a "Slurm cancelled" (hostile round 16)."""
    m = next((c for c in _CANCELLED.finditer(stderr) if nodes is None or c.group(3) in nodes), None)
    term = _TERMINATING.search(stderr)
    if m is not None and (m.group(5) or term is None or m.start() < term.start()):
        return Cancelled(m.group(2), m.group(3), m.group(4), m.group(5))
    aborted = _ABORTED.search(stderr)
    if aborted is None or _SRUN_ABORTS.search(stderr, 0, aborted.start()):
        return None
    if m is not None:
        return Cancelled(m.group(2), m.group(3), m.group(4), m.group(5))
    return Cancelled(term.group(1) if term else "", None, None, None)
