"""Judging without a frame of every pair's text (issue 31): the p2p metrics hold the pair
columns once per evaluation (ids as codes, no link text, no Python object per row), each
metric reads its own value columns for itself, and the run store's view keeps nothing
it read for them (sncheck/health/metrics.py ``_p2p``, sncheck/store/parts.py ``read``)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sncheck.health import tried
from sncheck.health.metrics import METRICS, DetectContext
from sncheck.health.rules import evaluate, load_rules_text
from sncheck.health.summaries import summarize
from sncheck.run.inputs import load_inventory_text
from sncheck.model import EntityKind, Finding, RunRecord, Severity
from sncheck.store import parts
from sncheck.store.frames import frames_of
from sncheck.store.rundir import RunStore, read_frames
from sncheck.topology import Topology

NAN = math.nan
# Rows in an order where a dropped row (an unreachable host) sits between kept ones, a
# pair written with its ends against natural order (b before a), and the values each
# metric reads distinct per row: a value moved to another row's pair shows.
ROWS = [
    ("a/gpu0", "a/gpu1", "intra_host", "ok", 100.0, 102.0, 2.0, 3.0, True),
    ("b/gpu0", "a/gpu0", "scale_out", "unreachable", None, None, None, None, None),
    ("b/gpu1", "a/gpu1", "scale_out", "ok", 50.0, None, 10.0, 40.0, False),
    ("a/gpu0", "b/gpu1", "scale_out", "timeout", None, None, None, None, None),
    ("a/gpu1", "b/gpu0", "scale_out", "ok", 48.0, 46.0, 11.0, 12.0, None),
    ("b/gpu0", "b/gpu1", "intra_host", "ok", 101.0, 99.0, 2.5, 2.6, True),
]
COLUMNS = ["src", "dst", "tier", "status", "bw_GBps", "bw_rev_GBps", "lat_us", "lat_p99_us", "checksum_ok"]
TOPO = Topology(load_inventory_text("name: t\nsupernodes:\n  - {name: sn0, hosts: 'a,b', cards_per_host: 2}\n"
                                    "backend: {type: mock}\n"))


def _rows() -> list[dict]:
    return [{"kind": "p2p", "layer": "connectivity", "round": i, **dict(zip(COLUMNS, r))} for i, r in enumerate(ROWS)]


def _stored(tmp_path) -> RunStore:
    store = RunStore(tmp_path, run_id="r-1")
    table = {c: [r[i] for r in ROWS] for i, c in enumerate(COLUMNS)}
    store.batch("p2p", {"round": list(range(len(ROWS))), **table}, layer="connectivity")
    return store


def _expected(metric: str) -> list[tuple]:
    """Each metric's (src, dst, value) as written out by hand from ROWS."""
    kept = [r for r in ROWS if r[3] != "unreachable"]
    ok = [r for r in kept if r[3] == "ok"]
    if metric == "p2p_bandwidth":
        def mean(x, y):
            have = [v for v in (x, y) if v is not None]
            return sum(have) / len(have) if have else NAN
        return [(r[0], r[1], mean(r[4], r[5])) for r in kept]
    if metric == "p2p_latency":
        return [(r[0], r[1], r[6]) for r in ok]
    if metric == "p2p_latency_tail":
        return [(r[0], r[1], r[7] / r[6]) for r in ok]
    return [(r[0], r[1], int(not r[8])) for r in ok if r[8] is not None]


def _frame(metric: str, rows, cache: bool) -> pd.DataFrame:
    ctx = DetectContext(TOPO, {})
    ctx.cache = {} if cache else None
    if cache:  # another metric first: the pair columns come from the evaluation's cache
        METRICS["p2p_checksum_failures" if metric != "p2p_checksum_failures" else "p2p_latency"].fn(rows, ctx)
    return METRICS[metric].fn(rows, ctx)


def test_each_p2p_metric_keeps_its_values_on_their_own_pairs(tmp_path):
    store = _stored(tmp_path)
    store.close()
    for metric in ("p2p_bandwidth", "p2p_latency", "p2p_latency_tail", "p2p_checksum_failures"):
        for rows in (frames_of(_rows()), read_frames(tmp_path).where(layer="connectivity")):
            for cache in (False, True):
                frame = _frame(metric, rows, cache)
                got = [(str(s), str(d), float(v)) for s, d, v in zip(frame["src"], frame["dst"], frame["value"])]
                want = _expected(metric)
                assert len(got) == len(want), (metric, cache, got)
                for g, w in zip(got, want):
                    assert g[:2] == w[:2] and (g[2] == w[2] or (math.isnan(g[2]) and math.isnan(w[2]))), \
                        (metric, cache, got, want)
                # no link text and no Python object per row: ids are codes, values numbers
                assert "link" not in frame
                assert not [c for c in frame.columns if frame[c].dtype == object], (metric, frame.dtypes)
                assert frame["failed"].tolist() == [r[3] != "ok" for r in ROWS if r[3] != "unreachable"] \
                    if metric == "p2p_bandwidth" else not frame["failed"].any()


def test_the_store_view_keeps_nothing_an_evaluation_read_for_its_pairs(tmp_path, monkeypatch):
    store = _stored(tmp_path)
    rows = store.frames("connectivity")
    reads: list[tuple] = []
    real = parts.Part.read
    monkeypatch.setattr(parts.Part, "read", lambda self, columns: reads.append(tuple(columns or ())) or
                        real(self, columns))
    rules = load_rules_text("rules:\n"
                            "  - {name: bw, op: ratio_to_design, metric: p2p_bandwidth, below: 0.5, severity: critical}\n"
                            "  - {name: lat, op: ratio_to_design, metric: p2p_latency, above: 3, severity: warning}\n")
    ctx = DetectContext(TOPO, {})
    evaluate(list(rules.rules), rows, ctx)
    # the pair columns once, alone (the frame of pairs made before any metric's values are
    # held), each metric's values once, and nothing kept by the view (nor the selecting
    # 'layer': the parts' values say every row is of the layer)
    assert sorted(reads) == sorted([("src", "dst", "tier", "status"), ("bw_GBps", "bw_rev_GBps"),
                                    ("lat_us",)]), reads
    assert rows._read == {}
    # a view that already holds the columns gives them without reading again
    kept = rows.kind("p2p", ["src", "lat_us"])
    reads.clear()
    again = rows.read("p2p", ["lat_us"])
    assert reads == [] and np.array_equal(again["lat_us"].to_numpy(float), kept["lat_us"].to_numpy(float),
                                          equal_nan=True)
    store.close()


def test_run_summaries_name_a_link_by_its_ends_in_natural_order(tmp_path):
    store = _stored(tmp_path)
    store.close()
    named = Finding("a/gpu1<->b/gpu1", EntityKind.LINK, "connectivity", "bw", Severity.CRITICAL, "slow")
    record = RunRecord("r", "p", "mock", "i", "t0", finished="t1", findings=(named,))
    links = {s.entity: s.value for s in summarize(record, read_frames(tmp_path))
             if s.kind == "link" and s.metric == "p2p_bandwidth"}
    # the row was written b/gpu1 -> a/gpu1: its link is named a/gpu1<->b/gpu1 all the same
    assert links["a/gpu1<->b/gpu1"] == 50.0
    assert set(links) == {"a/gpu0<->a/gpu1", "a/gpu1<->b/gpu1", "a/gpu1<->b/gpu0", "b/gpu0<->b/gpu1"}
    assert np.isfinite(list(links.values())).all()



def test_the_heap_is_given_back_before_each_layer_is_judged(monkeypatch):
    """A layer's measurement leaves its freed small blocks (its rows' writes) in the C heap;
    judging's arrays would come on top of them (at 131,072 cards the gate's peak is the
    connectivity layer's judging): the heap is trimmed before a layer is judged, and not
    where the run judges nothing."""
    from types import SimpleNamespace

    from sncheck.run import runner

    steps: list[str] = []
    monkeypatch.setattr(runner, "trim_heap", lambda: steps.append("trim") or True)
    ctx = SimpleNamespace(detect=lambda layer: steps.append(layer) or [])
    for judge in (True, False):
        assert runner.Run._detect(SimpleNamespace(opts=SimpleNamespace(judge=judge)), ctx, "stress") == []
    assert steps == ["trim", "stress"]


def test_connectivity_coverage_reads_the_cards_tried_without_copying_their_rows(monkeypatch, tmp_path):
    """A card is measured where one of its pairs ran (not unreachable, not not_run): the
    same cards from the codes of the categorical ends a step of rows at a time (a fleet's
    50 M rows never selected whole) as from the rows chosen, steps shorter than the rows
    here; plain text columns as before; from a run directory's parts, the Arrow pieces'
    dictionary indices (no frame of the rows)."""
    from sncheck.health import invariants

    monkeypatch.setattr(invariants, "_CHUNK", 2)
    rows = [("a/gpu0", "a/gpu1", "ok"), ("a/gpu0", "b/gpu0", "unreachable"), ("b/gpu1", "a/gpu1", "not_run"),
            ("a/gpu1", "b/gpu1", "unreachable"), ("b/gpu0", None, "timeout")]
    p2p = [{"kind": "p2p", "layer": "connectivity", "src": s, "dst": d, "status": st, "tier": "scale_up",
            "round": 0} for s, d, st in rows]
    frames = frames_of(p2p)
    assert isinstance(frames.kind("p2p")["src"].dtype, pd.CategoricalDtype)
    store = RunStore(tmp_path, run_id="r-1")   # a run directory's view: its Arrow pieces, two parts here
    store.emit_rows(p2p[:2])
    store.emit_rows(p2p[2:])
    store.close()
    whole = parts.PartFrames._read_kind
    monkeypatch.setattr(parts.PartFrames, "_read_kind", lambda self, kind, columns: pytest.fail("a frame of the rows")
                        if kind == "p2p" else whole(self, kind, columns))
    for view in (frames, pd.DataFrame(p2p), read_frames(tmp_path).where(layer="connectivity")):
        gaps = invariants.connectivity_coverage(view, TOPO)
        # b/gpu1 took part only in pairs that did not run; b/gpu0 in a pair that timed out (tried)
        assert [g.entity for g in gaps if g.entity_kind == "card"] == ["b/gpu1"], gaps
        assert "no peer-to-peer pair test" in gaps[-1].message


def test_the_cards_tried_come_from_judging_s_frame_of_pairs_not_read_again(monkeypatch, tmp_path):
    """The p2p rows' cards tried (connectivity's coverage) are noted when judging makes its
    frame of pairs, for those rows: the invariants read no p2p column again (at 131,072
    cards 5.9 s of judging's CPU), and name the same gaps as from the rows. Other rows
    (another view of the run) are read for themselves."""
    from sncheck.health import invariants
    from sncheck.health.metrics import _p2p

    rows = [*ROWS, ("b/gpu1", "a/gpu1", "scale_out", "not_run", None, None, None, None, None),
            ("b/gpu1", None, "scale_out", None, None, None, None, None, None)]
    p2p = [{"kind": "p2p", "layer": "connectivity", "round": i, **dict(zip(COLUMNS, r))} for i, r in enumerate(rows)]
    p2p[3]["status"] = "not_run"  # a/gpu0<->b/gpu1 never tried: b/gpu1's tried pairs are its ok one and a null status
    store = RunStore(tmp_path, run_id="r-1")
    store.emit_rows(p2p)
    store.close()
    for view in (frames_of(p2p), read_frames(tmp_path).where(layer="connectivity")):
        ctx = DetectContext(TOPO, {})
        ctx.cache = {}
        _p2p(view, ctx)
        ctx.cache = None  # (as evaluate leaves it)
        assert ctx.tried is not None and ctx.tried[1] == invariants._cards_tried(view) == \
            {"a/gpu0", "a/gpu1", "b/gpu0", "b/gpu1"}
        read = invariants.layer_findings("connectivity", view, DetectContext(TOPO, {}), rules=None)
        assert not [f for f in read if f.entity_kind == "card"]
        monkeypatch.setattr(invariants, "_cards_tried", lambda _rows: pytest.fail("the p2p rows read again"))
        assert invariants.layer_findings("connectivity", view, ctx, rules=None) == read
        monkeypatch.undo()
        other = frames_of(p2p[:1])  # another view: read for itself (b's cards in no pair tried)
        gaps = invariants.connectivity_coverage(other, TOPO, cards=tried.noted(ctx, other))
        assert [g.entity for g in gaps if "no peer-to-peer" in g.message] == ["b"]  # (both its cards: the host)


def test_checksum_ok_is_the_masked_boolean_pandas_makes_of_it():
    """checksum_ok read as objects (truths and missing: the parts' booleans with nulls) comes
    as pandas' ``astype("boolean")`` would make it, made at once from the truths and the
    missing mask; other values (0 and 1) go pandas' own way."""
    from sncheck.health.metrics import _p2p

    for values in ([True, None, False, True], [np.True_, False, None, np.False_], [1, 0, None, 1]):
        rows = pd.DataFrame([{"kind": "p2p", "src": "a/gpu0", "dst": f"b/gpu{i}", "tier": "scale_out", "status": "ok"}
                             for i in range(len(values))])
        rows["checksum_ok"] = pd.Series(values, dtype=object)  # (as read from the parts: objects)
        got = _p2p(rows, DetectContext(TOPO, {}), ["checksum_ok"])["checksum_ok"]
        pd.testing.assert_series_equal(got, pd.Series(values, dtype=object).astype("boolean"), check_names=False)
