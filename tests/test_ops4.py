"""ops4: watch's rank map under ``--overcommit`` cyclic (dealt from the counts, as Slurm's
``_task_layout_cyclic`` deals them)."""

from __future__ import annotations

import random

from sncheck.watch.rankmap import _dealt, from_slurm


def _task_layout_cyclic(cpus: list[int], tasks: int) -> list[list[int]]:
    """src/common/slurm_step_layout.c ``_task_layout_cyclic`` (slurm-22-05-8-1 l.723-760), line
    for line: each node's task ids."""
    n, total = len(cpus), sum(cpus)
    tids: list[list[int]] = [[] for _ in cpus]
    over, max_over = False, 0
    if total < tasks:
        over, max_over = True, (tasks - total + n - 1) // n
    taskid, j = 0, 0
    while taskid < tasks:
        space = False
        i = 0
        while i < n and taskid < tasks:
            if j < cpus[i] or (over and j < cpus[i] + max_over):
                tids[i].append(taskid)
                taskid += 1
                if j + 1 < cpus[i]:
                    space = True
            i += 1
        if not space:
            over = True
        j += 1
    return tids


def test_cyclic_is_told_by_the_counts_whatever_the_cpus() -> None:
    """Over-subscribed from the start (more tasks than CPUs: ``--overcommit``) or not, heterogeneous
    CPUs or not, Slurm's cyclic layout is the one the node counts alone give."""
    rng = random.Random(4)
    for _ in range(2000):
        cpus = [rng.randint(1, 9) for _ in range(rng.randint(1, 7))]
        tids = _task_layout_cyclic(cpus, rng.randint(1, 80))
        want = sorted((t, (node, local)) for node, ids in enumerate(tids) for local, t in enumerate(ids))
        assert _dealt([len(ids) for ids in tids], 1) == [place for _, place in want], cpus
    # the comment above _task_layout_cyclic: cpus 4 2 4 2, twelve tasks fill them ...
    assert _task_layout_cyclic([4, 2, 4, 2], 12) == [[0, 4, 8, 10], [1, 5], [2, 6, 9, 11], [3, 7]]
    # ... but sixteen over-subscribe from the start (l.731-736): every node's limit is its CPUs + 1 from
    # round 0, not "12 13 14 15" after the twelve as the comment draws it; the counts tell it either way
    assert _task_layout_cyclic([4, 2, 4, 2], 16) == [[0, 4, 8, 12, 14], [1, 5, 9], [2, 6, 10, 13, 15], [3, 7, 11]]


def test_a_cyclic_step_under_overcommit_has_a_rank_map() -> None:
    """srun -N2 -n7 --overcommit -m cyclic in a job of one CPU a node: 4 and 3 tasks, dealt in turn.
    main gave no map (ranks named as ranks)."""
    env = {"SLURM_JOB_NODELIST": "node[1-2]", "SLURM_STEP_NODELIST": "node[1-2]", "SLURM_STEP_TASKS_PER_NODE": "4,3",
           "SLURM_STEP_NUM_TASKS": "7", "SLURM_STEP_NUM_NODES": "2", "SLURM_DISTRIBUTION": "cyclic",
           "SLURM_OVERCOMMIT": "1"}
    m = from_slurm(env)
    assert m is not None and [(p.host, p.local_rank) for p in m.placements.values()] == [
        ("node1", 0), ("node2", 0), ("node1", 1), ("node2", 1), ("node1", 2), ("node2", 2), ("node1", 3)]
    assert from_slurm({**env, "SLURM_DISTRIBUTION": "arbitrary"}) is None  # a hostfile's order: not told
