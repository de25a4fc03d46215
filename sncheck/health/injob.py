"""Metrics and ops over a job's own signals (``sncheck watch``; layer ``watch``).

Rows (written by :mod:`sncheck.watch.judge`, each rank already named as its card):

* ``fr``: one collective one rank recorded in its Flight Recorder: pg, rank, card,
  mapped, seq (``collective_seq_id``), op (``profiling_name``), sizes, created_ns;
* ``fr_pg``: one process group of one rank's dump: pg, rank, card, last_seq (the last
  collective it entered), dump_ns (when the dump was taken);
* ``ras``: one state NCCL RAS reports: state, comm, rank, gpu, node, card, mapped, ahead;
* ``comm_bw``: one Inspector or nccl-tests measurement of a communicator: comm,
  collective, size_bytes, busbw_GBps, tier, entity, entity_kind.

Every judgement is against the rank's peers in the same process group (or the tier's
design value / baseline for bandwidth), never a fixed time:

* a **straggler** enters collectives last far more often than its share (1/n), and the
  group spends a real part of its time waiting for it (its lag behind the group's median
  arrival, summed, over the time the group took): a rank the ring order makes last by
  microseconds waits nobody's time;
* a **hung** rank never entered collective N of a group its peers entered, although its
  dump was taken after they had;
* a **desync**: ranks record different collectives or sizes for one sequence id;
* a **slow communicator**: bus bandwidth at its largest message below the tier's design;
* **RAS states** mapped to ranks and cards.

The ops are listed in :data:`sncheck.health.ops.OPS` and the metrics in
:data:`sncheck.health.metrics.METRICS`, explicitly; nothing registers itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sncheck.model import About, Basis, EntityKind, Finding, Severity
from sncheck.store.frames import kind_rows

if TYPE_CHECKING:
    from sncheck.health.metrics import DetectContext
    from sncheck.health.rules import Rule

ENTITY_COLUMNS = ["entity", "kind", "value", "message"]


def _empty(*extra: str) -> pd.DataFrame:
    return pd.DataFrame(columns=ENTITY_COLUMNS + list(extra))


def _who(r) -> str:
    """A rank as the finding names it: its card, and the rank when the map did not say."""
    return f"{r.card} (rank {r.rank})" if bool(r.mapped) else f"rank {r.rank} ({r.card}: not mapped to a card)"


def _groups(fr: pd.DataFrame):
    """Per process group: its members (the ranks whose dumps have it) and their rows."""
    for pg, g in fr.groupby("pg", sort=True, observed=True):
        yield str(pg), g


# ------------------------------------------------------------------ straggler
# Clocks: ``time_created_ns`` is each host's own clock. Ranks of one host share it; hosts
# may be offset by milliseconds or more, constant over a dump. A constant offset shows at
# every collective, lateness does not: a rank leaves a blocking collective with its peers,
# so at a collective that follows one without work between, even a straggler arrives on
# time. Each host's offset is its earliest rank's lag behind the hosts' median arrival at
# the collectives where that lag is least (a low quantile), judged out before lags are
# compared. What this cannot tell apart: a host of one rank that is late at every
# collective of the group (one collective per step) looks like a clock offset; its
# offset is reported in the evidence, so a reader sees what was judged out.
CLOCK_QUANTILE = 0.1


def clock_offsets(arr: np.ndarray, hosts: list[str]) -> np.ndarray:
    """Per column of ``arr`` (collectives x ranks, ns): its host's clock offset (ns),
    relative to the median host; zero when all ranks share one host."""
    uniq = sorted(set(hosts))
    if len(uniq) < 2:
        return np.zeros(len(hosts))
    cols = [[j for j, h in enumerate(hosts) if h == u] for u in uniq]
    earliest = np.stack([arr[:, c].min(axis=1) for c in cols], axis=1)
    off = np.zeros(len(uniq))
    for _ in range(3):  # again on corrected times: a far-off host no longer moves the median it is judged by
        t = earliest - off
        lag = t - np.median(t, axis=1, keepdims=True)
        off = off + np.quantile(lag, CLOCK_QUANTILE, axis=0)
        off -= np.median(off)
    by = dict(zip(uniq, off))
    return np.array([by[h] for h in hosts])


def fr_arrival(rows, ctx: "DetectContext") -> pd.DataFrame:  # noqa: ARG001 -- the metric interface (rows, ctx)
    """Per rank and group: how often it entered a collective last, against its share,
    and the share of the group's time spent waiting for it (hosts' clock offsets judged
    out first)."""
    fr = kind_rows(rows, "fr")
    cols = ("last_share", "blame", "lag_ms", "lag_last_ms", "n", "pg", "size", "rank", "card", "mapped",
            "clock_offset_ms")
    if fr.empty:
        return _empty(*cols)
    out = []
    for pg, g in _groups(fr):
        members = sorted(g["rank"].unique())
        n = len(members)
        if n < 3:
            continue  # two ranks: no median to be late against
        t = g.pivot_table(index="seq", columns="rank", values="created_ns", aggfunc="min")
        t = t.dropna()  # collectives every member recorded
        if len(t) < 2:
            continue
        cards = g.drop_duplicates("rank").set_index("rank")
        hosts = [str(cards.loc[r, "host"]) if "host" in cards and pd.notna(cards.loc[r, "host"]) else "?"
                 for r in t.columns]
        arr = t.to_numpy(dtype=float)
        offsets = clock_offsets(arr, hosts)
        arr = arr - offsets
        med = np.median(arr, axis=1, keepdims=True)
        lag = arr - med
        last = np.argmax(arr, axis=1)
        span = float(np.median(arr[-1]) - np.median(arr[0]))
        if span <= 0:
            continue
        for j, rank in enumerate(t.columns):
            mine = last == j
            c = cards.loc[rank]
            out.append({"entity": c["card"], "kind": "card", "rank": int(rank), "card": c["card"],
                        "mapped": bool(c["mapped"]), "pg": pg, "size": n, "n": len(t),
                        "last_share": float(mine.mean() * n), "blame": float(lag[mine, j].sum() / span),
                        "lag_ms": float(np.median(lag[:, j]) / 1e6),
                        "lag_last_ms": float(np.median(lag[mine, j]) / 1e6) if mine.any() else 0.0,
                        "clock_offset_ms": float(offsets[j] / 1e6)})
    if not out:
        return _empty(*cols)
    frame = pd.DataFrame(out)
    frame["value"] = frame["blame"]
    frame["message"] = None
    return frame


def straggler(rows, rule: "Rule", ctx: "DetectContext") -> list[Finding]:
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    p = rule.params
    bad = frame[(frame["n"] >= p["min_collectives"]) & (frame["last_share"] >= p["share_above"])
                & (frame["blame"] >= p["blame_above"])]
    out = {}
    for r in bad.sort_values("blame", ascending=False).itertuples():
        if r.entity in out:
            continue
        msg = (f"{_who(r)} entered collectives of group {r.pg} last in {r.last_share / r.size:.0%} of "
               f"{r.n} (its share: {1 / r.size:.0%}), then a median {r.lag_last_ms:.1f} ms behind the group's "
               f"median arrival; the group spent {r.blame:.0%} of its time waiting for it")
        out[r.entity] = Finding(r.entity, EntityKind.CARD, rule.layer, rule.name, rule.severity, msg,
                                {"measured": round(r.lag_last_ms, 3), "expected": 0.0, "unit": "ms behind the median",
                                 "median_lag_ms": round(r.lag_ms, 3),
                                 "last_share": round(r.last_share / r.size, 3), "fair_share": round(1 / r.size, 3),
                                 "waited_share": round(r.blame, 3), "collectives": int(r.n), "group": r.pg,
                                 "rank": int(r.rank), "mapped": bool(r.mapped),
                                 "clock_offset_ms": round(r.clock_offset_ms, 3)})
    return list(out.values())


# ------------------------------------------------------------------ hung
def fr_not_entered(rows, ctx: "DetectContext") -> pd.DataFrame:  # noqa: ARG001 -- the metric interface (rows, ctx)
    """Per rank and group: the first collective its peers entered and it did not.
    ``value`` 1: its dump was taken after they entered it (it never did); 0: its last
    dump is older, so it cannot say (``status`` stale)."""
    fr, pgs = kind_rows(rows, "fr"), kind_rows(rows, "fr_pg")
    cols = ("status", "seq", "op", "peers", "entered", "pg", "rank", "card", "mapped")
    if pgs.empty:
        return _empty(*cols)
    out = []
    for pg, g in pgs.groupby("pg", sort=True, observed=True):
        g = g.sort_values("dump_ns").drop_duplicates("rank", keep="last")
        if len(g) < 2:
            continue
        ops = fr[fr["pg"].astype(str) == str(pg)] if not fr.empty else fr
        for r in g.itertuples():
            n_seq = int(r.last_seq) + 1
            peers = g[g["rank"] != r.rank]
            entered = peers[peers["last_seq"] >= n_seq]
            if entered.empty:
                continue
            at = ops[ops["seq"] == n_seq] if not ops.empty else ops
            first_ns = int(at["created_ns"].min()) if not at.empty else None
            op = str(at["op"].mode().iloc[0]) if not at.empty else "?"
            judged = first_ns is not None and int(r.dump_ns) >= first_ns
            out.append({"entity": r.card, "kind": "card", "rank": int(r.rank), "card": r.card, "mapped": bool(r.mapped),
                        "pg": str(pg), "seq": n_seq, "op": op, "peers": len(peers), "entered": len(entered),
                        "value": 1 if judged else 0, "status": "hung" if judged else "stale", "message": None})
    return pd.DataFrame(out) if out else _empty(*cols)


def behind_peers(rows, rule: "Rule", ctx: "DetectContext") -> list[Finding]:
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    out = []
    for r in frame[frame["entered"] >= rule.params["min_peer_share"] * frame["peers"]].itertuples():
        ev = {"measured": f"last entered collective {r.seq - 1}", "expected": f"collective {r.seq} ({r.op})",
              "unit": None, "group": r.pg, "seq": int(r.seq), "collective": r.op, "rank": int(r.rank),
              "peers_entered": int(r.entered), "peers": int(r.peers), "mapped": bool(r.mapped)}
        if r.value:
            out.append(Finding(r.entity, EntityKind.CARD, rule.layer, rule.name, rule.severity,
                               f"{_who(r)} never entered collective {r.seq} ({r.op}) of group {r.pg}, which "
                               f"{r.entered} of its {r.peers} peers entered: hung, or gone", ev))
        else:
            out.append(Finding(r.entity, EntityKind.CARD, rule.layer, f"{rule.name}-not-judged", Severity.WARNING,
                               f"{_who(r)}: its last dump is older than collective {r.seq} ({r.op}) of group "
                               f"{r.pg}, which its peers entered: not judged (no dump of it since)",
                               ev, basis=Basis.NOT_JUDGED, about=About.CHECK))
    return out


# ------------------------------------------------------------------ desync
def fr_desync(rows, ctx: "DetectContext") -> pd.DataFrame:  # noqa: ARG001 -- the metric interface (rows, ctx)
    """Per rank: the sequence ids where it recorded another collective or other sizes
    than the group's majority (all of them when there is no majority)."""
    fr = kind_rows(rows, "fr")
    if fr.empty:
        return _empty("rank", "card", "mapped")
    out = []
    for pg, g in _groups(fr):
        g = g.assign(sig=g["op"].astype(str) + " " + g["sizes"].astype(str))
        # one signature per rank and id: a coalesced group records several ops under one id
        g = g.groupby(["seq", "rank"], as_index=False, observed=True).agg(
            sig=("sig", lambda x: " + ".join(sorted(x))), card=("card", "first"), mapped=("mapped", "first"))
        g = g.assign(op=g["sig"].str.split(" ", n=1).str[0], sizes=g["sig"].str.split(" ", n=1).str[1])
        per = g.groupby("seq")["sig"].nunique()
        for seq in per[per > 1].index:
            at = g[g["seq"] == seq]
            counts = at["sig"].value_counts()
            majority = counts.index[0] if len(counts) == 1 or counts.iloc[0] > counts.iloc[1] else None
            odd = at[at["sig"] != majority] if majority is not None else at
            for r in odd.itertuples():
                want = f"{majority.split(' ', 1)[0]} {majority.split(' ', 1)[1]}" if majority else "no majority"
                out.append({"entity": r.card, "kind": "card", "rank": int(r.rank), "card": r.card,
                            "mapped": bool(r.mapped), "value": 1, "seq": int(seq), "pg": pg,
                            "message": f"{_who(r)} recorded {r.op} {r.sizes} as collective {seq} of group {pg}, "
                                       f"its peers {want}"})
    if not out:
        return _empty("rank", "card", "mapped")
    frame = pd.DataFrame(out)
    first = frame.sort_values("seq").drop_duplicates("entity")  # one row per rank: its first desync
    counts = frame.groupby("entity").size()
    first = first.assign(value=first["entity"].map(counts))
    return first


# ------------------------------------------------------------------ point-to-point
def fr_p2p_unmatched(rows, ctx: "DetectContext") -> pd.DataFrame:  # noqa: ARG001 -- the metric interface (rows, ctx)
    """Per directed pair of a group (NCCL's send and recv entries; gloo records none):
    the sends one rank posted against the recvs its peer posted for them. The k-th send
    from a to b matches the k-th recv on b from a; counted only where both ranks' records
    go back to their first (``first_record`` 0: the buffer never wrapped), else the pair
    is ``not judged``. ``value`` 1: the rank named (``entity``) posted fewer than its peer,
    and its dump was taken after the peer posted the one it lacks."""
    p2p = kind_rows(rows, "fr_p2p")
    cols = ("status", "pg", "rank", "peer", "op", "missing", "card", "mapped", "peer_card")
    if p2p.empty:
        return _empty(*cols)
    out = []
    dumps = p2p.drop_duplicates("rank").set_index("rank")
    for (pg, src, dst), sends in p2p[p2p["op"] == "send"].groupby(["pg", "rank", "peer"], observed=True):
        out += _pair(p2p, dumps, str(pg), int(src), int(dst), sends, "send")
    for (pg, dst, src), recvs in p2p[p2p["op"] == "recv"].groupby(["pg", "rank", "peer"], observed=True):
        out += _pair(p2p, dumps, str(pg), int(dst), int(src), recvs, "recv")
    unknown = p2p[p2p["peer"].isna()]
    for (pg, rank), g in unknown.groupby(["pg", "rank"], observed=True):
        r = dumps.loc[rank]
        out.append({"entity": r["card"], "kind": "card", "rank": int(rank), "card": r["card"], "mapped": bool(r["mapped"]),
                    "pg": str(pg), "peer": None, "op": "", "missing": 0, "peer_card": "", "value": 0,
                    "status": "peer unknown", "message": f"{len(g)} point-to-point ops of group {pg}: the dump does "
                                                         "not say the group's ranks (no pg_config): not judged"})
    return pd.DataFrame(out) if out else _empty(*cols)


def _pair(p2p, dumps, pg: str, me: int, peer: int, mine: pd.DataFrame, op: str) -> list[dict]:
    """``me`` posted ``mine`` (its sends to, or recvs from, ``peer``): what ``peer`` lacks."""
    other = "recv" if op == "send" else "send"
    theirs = p2p[(p2p["pg"].astype(str) == pg) & (p2p["rank"] == peer) & (p2p["op"] == other) & (p2p["peer"] == me)]
    if peer not in dumps.index or len(theirs) >= len(mine):
        return []  # no dump of the peer (named elsewhere), or the peer posted all of them
    p, m = dumps.loc[peer], dumps.loc[me]
    lacking = mine.sort_values("created_ns").iloc[len(theirs)]
    whole = int(m["first_record"]) == 0 and int(p["first_record"]) == 0
    judged = whole and int(p["dump_ns"]) >= int(lacking["created_ns"])
    verb = "recv" if op == "send" else "send"
    return [{"entity": p["card"], "kind": "card", "rank": peer, "card": p["card"], "mapped": bool(p["mapped"]),
             "pg": pg, "peer": me, "op": verb, "missing": len(mine) - len(theirs), "peer_card": m["card"],
             "sizes": lacking["sizes"], "value": 1 if judged else 0,
             "status": "hung" if judged else ("wrapped" if not whole else "stale"), "message": None}]


def p2p_unmatched(rows, rule: "Rule", ctx: "DetectContext") -> list[Finding]:
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    out = []
    for r in frame.itertuples():
        if r.status == "peer unknown":
            out.append(Finding(r.entity, EntityKind.CARD, rule.layer, f"{rule.name}-not-judged", Severity.INFO,
                               f"{_who(r)}: {r.message}", {"measured": "no group ranks", "expected": "pg_config",
                                                         "unit": None, "group": r.pg, "rank": int(r.rank),
                                                         "mapped": bool(r.mapped)},
                               basis=Basis.NOT_JUDGED, about=About.CHECK))
            continue
        ev = {"measured": f"{r.missing} {r.op}s fewer", "expected": f"a {r.op} for each of rank {int(r.peer)}'s",
              "unit": None, "group": r.pg, "rank": int(r.rank), "peer_rank": int(r.peer), "peer": r.peer_card,
              "sizes": r.sizes, "mapped": bool(r.mapped)}
        what = (f"{_who(r)} never posted the {r.op} matching rank {int(r.peer)}'s "
                f"{'send' if r.op == 'recv' else 'recv'} (sizes {r.sizes}) in group {r.pg}")
        if r.value:
            out.append(Finding(r.entity, EntityKind.CARD, rule.layer, rule.name, rule.severity,
                               f"{what}, though its dump was taken after: hung, or gone", ev))
        else:
            why = ("a Flight Recorder buffer wrapped, so the two ranks' ops cannot be counted against each other"
                   if r.status == "wrapped" else "its last dump is older than that op")
            out.append(Finding(r.entity, EntityKind.CARD, rule.layer, f"{rule.name}-not-judged", Severity.WARNING,
                               f"{what} as far as the dumps show; not judged: {why}", ev,
                               basis=Basis.NOT_JUDGED, about=About.CHECK))
    return out


# ------------------------------------------------------------------ slow communicator
def comm_levels(bw: pd.DataFrame) -> list[dict]:
    """Per communicator: its median bus bandwidth at its largest message."""
    out = []
    for comm, g in bw.groupby("comm", sort=True, observed=True):
        g = g[g["busbw_GBps"].notna() & g["size_bytes"].notna()]
        if g.empty:
            continue
        big = g[g["size_bytes"] == g["size_bytes"].max()]
        r = g.iloc[0]
        out.append({"comm": str(comm), "tier": str(r["tier"]), "collective": str(r["collective"]),
                    "source": str(r["source"]), "entity": r["entity"], "entity_kind": r["entity_kind"],
                    "size_bytes": int(big["size_bytes"].iloc[0]), "busbw_GBps": float(big["busbw_GBps"].median())})
    return out


def baseline_levels(bw: pd.DataFrame) -> dict:
    """A known-good job's levels, as ``ctx.baseline`` holds them for :func:`comm_busbw`:
    the median over its communicators per tier and collective (``scale_up/AllReduce``)
    and per tier."""
    levels = pd.DataFrame(comm_levels(bw))
    if levels.empty:
        return {}
    out = {f"{t}/{c}": float(g["busbw_GBps"].median()) for (t, c), g in levels.groupby(["tier", "collective"])}
    out |= {str(t): float(g["busbw_GBps"].median()) for t, g in levels.groupby("tier")}
    return out


def comm_busbw(rows, ctx: "DetectContext") -> pd.DataFrame:
    """Per communicator: the median bus bandwidth at its largest message, over its
    baseline (a known-good job's, ``sncheck watch --baseline``: the same tier and
    collective, else the same tier) or else the design bandwidth of its tier."""
    bw = kind_rows(rows, "comm_bw")
    if bw.empty:
        return _empty("measured", "expected")
    base = ((ctx.baseline or {}).get("metrics", {}).get("comm_busbw") or {}).get("tier", {})
    out = []
    for r in comm_levels(bw):
        tier, measured = r["tier"], r["busbw_GBps"]
        d = ctx.design.get(tier) or (ctx.design.get("scale_up") if tier == "intra_host" else None)
        against = base.get(f"{tier}/{r['collective']}") or base.get(tier)
        expected, what = (against, "the baseline") if against else ((d.bandwidth_GBps, "design") if d else (None, ""))
        if not expected:
            continue  # nothing to compare with: the tier has no design value and no baseline
        out.append({"entity": r["entity"], "kind": r["entity_kind"], "value": measured / expected,
                    "measured": round(measured, 3), "expected": round(expected, 3),
                    "message": f"communicator {r['comm']} ({r['collective']}, {r['source']}, {tier}): bus bandwidth "
                               f"{measured:.1f} GB/s at {r['size_bytes']} B, {measured / expected:.0%} of "
                               f"{expected:g} GB/s ({what})"})
    return pd.DataFrame(out) if out else _empty("measured", "expected")


# ------------------------------------------------------------------ RAS
def ras_state(rows, ctx: "DetectContext") -> pd.DataFrame:  # noqa: ARG001 -- the metric interface (rows, ctx)
    ras = kind_rows(rows, "ras")
    cols = ("state", "comm", "ahead", "mapped", "rank")
    if ras.empty:
        return _empty(*cols)
    out = ras.assign(value=1, kind=ras["entity_kind"].astype(str), entity=ras["entity"].astype(str))
    return out


def ras_states(rows, rule: "Rule", ctx: "DetectContext") -> list[Finding]:
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    out = []
    for r in frame[frame["state"].isin(rule.params["states"])].itertuples():
        where = f"rank {int(r.rank)} of communicator {r.comm}" if pd.notna(r.rank) else \
            (f"communicator {r.comm}" if isinstance(r.comm, str) and r.comm else "a job process")
        gpu = f"GPU {int(r.gpu)} on node {r.node}" if pd.notna(r.gpu) and isinstance(r.node, str) else ""
        ev = {"measured": r.state, "expected": "RUNNING, OK", "unit": None, "tool": "ncclras",
              "detail": r.detail, "mapped": bool(r.mapped), "dump": r.dump}
        if isinstance(r.comm, str) and r.comm:
            ev["comm"] = r.comm
        # One name per state: watch-ras-incomplete; a rule named for its one state keeps its name.
        state = str(r.state).lower()
        name = rule.name if rule.name.endswith(f"-{state}") else f"{rule.name}-{state}"
        if not bool(r.named):
            out.append(Finding(r.entity, r.kind, rule.layer, name, rule.severity,
                               f"NCCL RAS: {where}: {r.state} ({r.detail}); RAS names no rank", ev, about=About.CHECK))
            continue
        label = r.entity if bool(r.mapped) else f"{r.entity} (node {r.node}: not in the inventory)"
        if bool(r.ahead):
            out.append(Finding(r.entity, r.kind, rule.layer, name, Severity.INFO,
                               f"NCCL RAS: {label}, {where} ({gpu}): launched more operations than the rest of its "
                               f"communicator ({r.detail}): ahead, not behind; the ranks behind it are not named",
                               {**ev, "ahead": True}))
            continue
        out.append(Finding(r.entity, r.kind, rule.layer, name, rule.severity,
                           f"NCCL RAS: {label}, {where}{f' ({gpu})' if gpu else ''}: {r.state} ({r.detail})", ev))
    return out


