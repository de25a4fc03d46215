"""ops4: watch's rank map under ``--overcommit`` cyclic (dealt from the counts, as Slurm's
``_task_layout_cyclic`` deals them); a golden reference per replica size."""

from __future__ import annotations

import json
import random
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main
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


# -- a golden reference per replica size (issue 29 follow-up, scenarios r5's mixed SKUs) ------------

MIXED = Path(__file__).resolve().parent / "data" / "scenarios-r5" / "inv-mixed-sku.yaml"  # hosts of 8, 4 and 7 cards
GOLDEN_ONLY = "name: golden-only\nlayers:\n  - golden{}\ngate: critical\n"


def _golden_run(tmp_path: Path, faults: str = "faults: []\n", options: str = "") -> tuple[int, dict, str]:
    (tmp_path / "pb.yaml").write_text(GOLDEN_ONLY.format(options))
    (tmp_path / "faults.yaml").write_text(faults)
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["run", str(tmp_path / "pb.yaml"), "-i", str(MIXED), "--backend", "mock",
                                    "--faults", str(tmp_path / "faults.yaml"), "--seed", "1", "--out", str(out), "-q"])
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else {}
    return res.exit_code, results, res.output


def test_each_replica_is_judged_by_its_sizes_golden_reference(tmp_path: Path) -> None:
    """A diverging card on a 4-card host of a mixed-SKU inventory is found, judged by the 4-rank
    reference, the 8-card hosts by the 8-rank one; the one 7-card host, whose size has no
    reference, is not judged on its own. main took one reference for the cluster (the 8-rank
    one), found it did not fit the 4- and 7-card replicas and judged nothing: a not-judged
    finding on each supernode and the diverging card never named (r5: 18 of 19 extras)."""
    code, res, out = _golden_run(tmp_path, "faults:\n  - {type: diverge, target: my2/gpu1}\n")
    assert code == 1, out
    got = {(f["entity"], f["rule"]) for f in res["findings"]}
    assert ("my2/gpu1", "golden-loss-out-of-band") in got, res["findings"]
    assert {e for e, rule in got if rule == "golden-not-judged"} == {"mz2"}, res["findings"]
    mz2 = next(f for f in res["findings"] if f["rule"] == "golden-not-judged")
    assert mz2["entity_kind"] == "host" and "no golden reference for its replica of 7 ranks" in mz2["message"], mz2
    golden = next(layer for layer in res["layers"] if layer["name"] == "golden")
    assert golden["summary"]["references"] == {"4": "mock-demo", "8": "mock-8"}, golden["summary"]
    assert set(res["inputs"]["golden_reference"]["by_ranks"]) == {"4", "8"}, res["inputs"]
    html = (tmp_path / "run" / "report.html").read_text()  # the report's inputs name every curve that judged
    assert "golden_reference (4 ranks)" in html and "mock-demo" in html, html[:2000]


def test_a_list_of_golden_references_is_one_per_replica_size(tmp_path: Path) -> None:
    """The playbook may name a list: each curve says its size (config.ranks), one a size; a curve
    that does not say it, or two of one size, are refused (exit 2) naming the curve."""
    golden = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
    code, res, out = _golden_run(tmp_path, options=f": {{reference: [{golden / 'mock-8.json'}]}}")
    assert code == 1 and {f["entity"] for f in res["findings"] if f["rule"] == "golden-not-judged"} == \
        {"my1", "my2", "my3", "my4", "mz2"}, res.get("findings", out)  # the 4- and 7-card hosts, each named
    bare = json.loads((golden / "mock-demo.json").read_text())
    del bare["config"]["ranks"]
    (tmp_path / "bare.json").write_text(json.dumps(bare))
    code, _, out = _golden_run(tmp_path, options=f": {{reference: [mock-8, {tmp_path / 'bare.json'}]}}")
    assert code == 2 and "does not say its ranks per replica (config.ranks)" in out, out
    code, _, out = _golden_run(tmp_path, options=f": {{reference: [mock-8, {golden / 'mock-8.json'}]}}")
    assert code == 2 and "are both for replicas of 8 ranks" in out, out
