"""Which dumps in a directory are this job's, one per rank.

A directory can hold more than one run: a dump of another job beside these, an older run
of this one, torch's own watchdog dump beside the helper's. Three tests, in order:

* **the job id**: a dump whose name gives a job (``fr-<job>-rank<R>``) that the rank map
  does not is another job's;
* **the clock**: one job's ranks record the same collective (group and sequence id) at
  the same moment, give or take the hosts' clock offsets (milliseconds) and a straggler's
  lag; a dump whose shared collectives were recorded more than :data:`MAX_APART_NS` from
  the newest run's is another run's, whatever its name (torch's own dumps carry no job);
* **one per rank**: two dumps of one rank left after that (a watchdog pickle beside the
  helper's JSON): the one that reaches furthest is judged.

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
    same, apart = _one_run(fr)
    out += apart
    judged, dupes = _one_per_rank(same)
    return other + judged, out + dupes


def _times(d: Dump) -> dict[tuple[str, int], int]:
    return {(r["pg"], r["seq"]): r["created_ns"] for r in d.fr()[0] if r["created_ns"] > 0}


def _newest(d: Dump) -> int:
    t = [r["created_ns"] for r in d.fr()[0]]
    return max(t) if t else 0


def _one_run(fr: list[Dump]) -> tuple[list[Dump], list[LeftOut]]:
    """The dumps of the run the newest dump belongs to; a dump that shares no collective
    with it cannot be told apart and stays."""
    if len(fr) < 2:
        return fr, []
    order = sorted(fr, key=_newest, reverse=True)
    times = {id(d): _times(d) for d in order}
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
                                   f"of the newest run's dumps ({order[0].path.name}): another run's"))
                continue
            same.append(d)
            for k, t in mine.items():
                profile.setdefault(k, t)
        pending = undecided
    return same + pending, out


def _one_per_rank(fr: list[Dump]) -> tuple[list[Dump], list[LeftOut]]:
    by: dict[int, list[Dump]] = {}
    for d in fr:
        by.setdefault(d.rank, []).append(d)
    kept, out = [], []
    for rank, ds in by.items():
        ds = sorted(ds, key=lambda d: (_newest(d), d.mtime_ns, d.path.name), reverse=True)
        kept.append(ds[0])
        out += [LeftOut(d, "watch-dump-duplicate-rank", f"another dump of rank {rank}, {ds[0].path.name}, reaches "
                                                         "further: that one is judged") for d in ds[1:]]
    return kept, out
