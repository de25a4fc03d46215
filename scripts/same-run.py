"""Whether two run directories hold the same run, run ids and start/finish times aside
(README "Fleet scale", round 9): every text file's bytes after those are masked (an
evidence bundle's rows.jsonl as sorted lines: their order varies between runs of one
tree), every Parquet part's rows (run_id aside; a kind whose parts a timed flush cut elsewhere:
its rows whole, part after part).

    python3 scripts/same-run.py RUN_A RUN_B [TREE_A TREE_B]

(TREE_A, TREE_B: the checkouts that made them, masked too: results.json names its playbook and rules by path.)
"""

import json
import pathlib
import re
import sys

import pyarrow as pa
import pyarrow.parquet as pq

STAMP = re.compile(rb"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def masked(run: pathlib.Path, rel: pathlib.Path, run_id: str, tree: str | None) -> bytes:
    text = (run / rel).read_bytes().replace(run_id.encode(), b"RUNID")
    return STAMP.sub(b"TS", text.replace(tree.rstrip("/").encode(), b"TREE") if tree else text)


def kind_rows(run: pathlib.Path, folder: pathlib.Path) -> pa.Table:
    """A kind's rows, its parts in order, as one table (run_id aside)."""
    parts = sorted((run / folder).glob("*.parquet"))
    return pa.concat_tables([pq.read_table(p).drop_columns(["run_id"]) for p in parts], promote_options="default")


def same_kind(a: pathlib.Path, b: pathlib.Path, folder: pathlib.Path) -> bool:
    ta, tb = kind_rows(a, folder), kind_rows(b, folder)
    if ta.equals(tb):
        return True
    return ta.column_names == tb.column_names and (
        ta.to_pandas().astype(str).values.tolist() == tb.to_pandas().astype(str).values.tolist())


def main() -> int:
    a, b = map(pathlib.Path, sys.argv[1:3])
    trees = sys.argv[3:5] if len(sys.argv) >= 5 else [None, None]
    ids = [json.loads((run / "results.json").read_text())["run_id"] for run in (a, b)]
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and not p.name.startswith("."))
    fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and not p.name.startswith("."))
    bad = 0
    # Each kind's rows compared whole, part after part: a timed flush may cut them into parts
    # elsewhere (the mock's host facts under load), which is no other run (round 15).
    kinds = sorted({rel.parent for rel in [*fa, *fb] if rel.suffix == ".parquet"})
    for folder in kinds:
        same = same_kind(a, b, folder)
        cut = [r for r in fa if r.parent == folder] != [r for r in fb if r.parent == folder]
        if cut or not same:
            print(f"{folder}: rows {'equal' if same else 'DIFFERENT'}{', parts cut elsewhere' if cut else ''}")
        bad += not same
    differ = [rel for rel in sorted(set(fa) ^ set(fb)) if rel.suffix != ".parquet"]
    if differ:
        print("file lists differ", differ)
        bad += 1
    for rel in sorted(set(fa) & set(fb)):
        if rel.suffix == ".parquet":
            continue
        xa, xb = masked(a, rel, ids[0], trees[0]), masked(b, rel, ids[1], trees[1])
        same = sorted(xa.splitlines()) == sorted(xb.splitlines()) if rel.suffix == ".jsonl" else xa == xb
        if not same:
            print("differ", rel)
            bad += 1
    print(f"{len(fa)} files compared, {bad} different")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
