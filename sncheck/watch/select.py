"""Which dumps in a directory are this job's, one per rank.

A directory can hold more than one run: a dump of another job beside these, an older run
of this one, torch's own watchdog dump beside the helper's. Three tests, in order:

* **the job id**: a dump whose name gives a job (``fr-<job>-rank<R>``) that the rank map
  does not is another job's;
* **the clock**: one job's ranks record the same collective (group and sequence id) at
  the same moment, give or take the hosts' clock offsets (milliseconds) and a straggler's
  lag; held against the newest of the dumps whose collectives most dumps share, a dump
  whose shared collectives were recorded more than :data:`MAX_APART_NS` away is another
  run's, whatever its name (torch's own dumps carry no job);
* **one per rank**: two dumps of one rank left after that (a watchdog pickle beside the
  helper's JSON): one shown to share the run's collectives before one sharing none, then
  the one that reaches furthest.

Every dump left out is said, with why; none is dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sncheck.watch.dumps import Dump

MAX_APART_NS = 60 * 10**9   # a minute: far beyond any clock offset or lag within one run


@dataclass
class LeftOut:
    dump: Dump
    rule: str        # watch-dump-other-job | watch-dump-duplicate-rank
    reason: str


def select(dumps: list[Dump], jobs: set[str]) -> tuple[list[Dump], list[LeftOut]]:
    kept, out = [], []
    for d in dumps:
        if d.job and jobs and d.job not in jobs:
            out.append(LeftOut(d, "watch-dump-other-job", f"a dump of job {d.job}, not of this job "
                                                          f"({', '.join(sorted(jobs))})"))
        else:
            kept.append(d)
    fr = [d for d in kept if d.format == "flight_recorder"]
    other = [d for d in kept if d.format != "flight_recorder"]
    same, undecided, apart = _one_run(fr)
    out += apart
    judged, dupes = _one_per_rank(same, undecided)
    return other + judged, out + dupes


def _times(d: Dump) -> dict[tuple[str, int], int]:
    return {(r["pg"], r["seq"]): r["created_ns"] for r in d.fr()[0] if r["created_ns"] > 0}


def _newest(d: Dump) -> int:
    t = [r["created_ns"] for r in d.fr()[0]]
    return max(t) if t else 0


def _one_run(fr: list[Dump]) -> tuple[list[Dump], list[Dump], list[LeftOut]]:
    """The dumps of the run the newest dump belongs to, those that share no collective
    with it (they cannot be told apart and stay), and those left out."""
    if len(fr) < 2:
        return fr, [], []
    times = {id(d): _times(d) for d in fr}
    count: dict[tuple[str, int], int] = {}
    for t in times.values():
        for k in t:
            count[k] = count.get(k, 0) + 1
    # The first: a dump whose collectives most dumps recorded too (a lone dump of another
    # run's own groups is never the one the rest is held against), the newest of those.
    order = sorted(fr, key=lambda d: (max((count[k] for k in times[id(d)]), default=0), _newest(d)), reverse=True)
    profile = dict(times[id(order[0])])  # each collective's time on the first dump that recorded it
    same, out, pending = [order[0]], [], order[1:]
    for _ in range(2):  # a dump sharing nothing with the first ones may share with later ones
        undecided = []
        for d in pending:
            mine = times[id(d)]
            common = [k for k in mine if k in profile]
            if not common:
                undecided.append(d)
                continue
            apart = float(np.median([abs(mine[k] - profile[k]) for k in common]))
            if apart > MAX_APART_NS:
                out.append(LeftOut(d, "watch-dump-other-job",
                                   f"its collectives were recorded {apart / 1e9:.0f} s away from the same collectives "
                                   f"of the newest run's dumps ({order[0].name}): another run's"))
                continue
            same.append(d)
            for k, created in mine.items():
                profile.setdefault(k, created)
        pending = undecided
    return same, pending, out


def _one_per_rank(same: list[Dump], undecided: list[Dump]) -> tuple[list[Dump], list[LeftOut]]:
    """One dump per rank: one shown to be of the run before one that could not be told
    apart, then the one reaching furthest."""
    by: dict[int | None, list[Dump]] = {}  # None: a dump that names no rank
    for d in same + undecided:
        by.setdefault(d.rank, []).append(d)
    shown = {id(d) for d in same}
    kept, out = [], []
    for rank, ds in by.items():
        ds = sorted(ds, key=lambda d: (id(d) in shown, _newest(d), d.mtime_ns, d.name), reverse=True)
        kept.append(ds[0])
        out += [LeftOut(d, "watch-dump-duplicate-rank", f"another dump of rank {rank}, {ds[0].name}, reaches "
                                                         "further: that one is judged") for d in ds[1:]]
    return kept, out
