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
* ``src/srun/libsrun/srun_job.c`` (``existing_allocation``: srun inside a job whose
  allocation is gone, so the step is never created)::

      "Slurm job %u has expired"                       ESLURM_ALREADY_DONE, as error()
      "Unable to confirm allocation for job %u: %m"    any other lookup failure
      "Check SLURM_JOB_ID environment variable. Expired or invalid job %u"   info(), after either
"""

from __future__ import annotations

import re
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


@dataclass(frozen=True)
class Cancelled:
    """Slurm cancelled the step: ``scancel``, the job's time limit, preemption, a node failure."""

    step: str          # "5.0"
    node: str          # the node whose stepd said so first
    at: str            # Slurm's time string
    due_to: str | None  # "TIME LIMIT", "PREEMPTION", "NODE FAILURE", "JOB REQUEUE"; None: scancel

    def describe(self) -> str:
        why = f" due to {self.due_to.lower()}" if self.due_to else " (scancel)"
        return f"Slurm cancelled step {self.step} at {self.at}{why}"


def failed_nodes(stderr: str) -> dict[str, str]:
    """``{node: cause}`` from srun's ``srun: error: node3: task 2: Exited with exit code 1``
    lines (the first line per node wins).

    Tasks srun itself stopped after another failed (``--kill-on-bad-exit``: "Terminated")
    are collateral, not causes, and are left out.
    """
    causes: dict[str, str] = {m.group(1): "node failure: Slurm lost the node during the step"
                              for m in _NODE_FAILURE.finditer(stderr)}
    for m in _TASKS.finditer(stderr):
        cause = m.group(3).strip()
        if cause != COLLATERAL:
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


def cancelled(stderr: str) -> Cancelled | None:
    """The first ``*** STEP ... CANCELLED AT ... ***`` line of the step, or None."""
    m = _CANCELLED.search(stderr)
    if m is None:
        return None
    return Cancelled(m.group(2), m.group(3), m.group(4), m.group(5))
