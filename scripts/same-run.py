"""Whether two run directories hold the same run, run ids and start/finish times aside
(README "Fleet scale", round 9): every text file's bytes after those are masked (an
evidence bundle's rows.jsonl as sorted lines: their order varies between runs of one
tree), every Parquet part's rows (run_id aside).

    python3 scripts/same-run.py RUN_A RUN_B
"""

import json
import pathlib
import re
import sys

import pyarrow.parquet as pq

STAMP = re.compile(rb"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def masked(run: pathlib.Path, rel: pathlib.Path, run_id: str) -> bytes:
    return STAMP.sub(b"TS", (run / rel).read_bytes().replace(run_id.encode(), b"RUNID"))


def same_rows(a: pathlib.Path, b: pathlib.Path) -> bool:
    ta, tb = pq.read_table(a).drop_columns(["run_id"]), pq.read_table(b).drop_columns(["run_id"])
    if ta.equals(tb):
        return True
    return ta.column_names == tb.column_names and (
        ta.to_pandas().astype(str).values.tolist() == tb.to_pandas().astype(str).values.tolist())


def main() -> int:
    a, b = map(pathlib.Path, sys.argv[1:3])
    ids = [json.loads((run / "results.json").read_text())["run_id"] for run in (a, b)]
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and not p.name.startswith("."))
    fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and not p.name.startswith("."))
    bad = 0
    if fa != fb:
        print("file lists differ", sorted(set(fa) ^ set(fb)))
        bad += 1
    for rel in sorted(set(fa) & set(fb)):
        if rel.suffix == ".parquet":
            same = same_rows(a / rel, b / rel)
        else:
            xa, xb = masked(a, rel, ids[0]), masked(b, rel, ids[1])
            same = sorted(xa.splitlines()) == sorted(xb.splitlines()) if rel.suffix == ".jsonl" else xa == xb
        if not same:
            print("differ", rel)
            bad += 1
    print(f"{len(fa)} files compared, {bad} different")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
