"""The report's views over a fleet's pair rows hold narrow codes and take a supernode's
values as it is drawn (issue 31: the report phase's memory): int32 card codes equal to the
int64 ones, and the connectivity view's passes over every row, a chunk at a time, give
what one pass gives (tier references from design and from the tiers' medians, a missing
reverse direction, failed probes)."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

import sncheck.report.connectivity as conn
from sncheck.report.codes import id_codes
from sncheck.rows import p2p_row
from sncheck.store.results import from_json
from sncheck.topology import link_id


def test_id_codes_narrow_equal_wide() -> None:
    src = pd.Series(["a/gpu1", None, "b/gpu0", "a/gpu1", "c/gpu2"], dtype="category")
    dst = pd.Series(["b/gpu0", "a/gpu1", None, "d/gpu3", "b/gpu0"], dtype="category")
    src = src.cat.add_categories(["zz/gpu9"])   # a category no row holds (a filtered frame)
    wide, names = id_codes(src, dst)
    narrow, narrow_names = id_codes(src, dst, dtype=np.int32)
    assert [c.dtype for c in narrow] == [np.dtype(np.int32)] * 2
    assert [c.tolist() for c in narrow] == [c.tolist() for c in wide]
    assert narrow_names.tolist() == names.tolist() and "zz/gpu9" not in names
    assert [names[c].tolist() for c in narrow] == [["a/gpu1", "nan", "b/gpu0", "a/gpu1", "c/gpu2"],
                                                   ["b/gpu0", "a/gpu1", "nan", "d/gpu3", "b/gpu0"]]
    plain = (src.dropna().astype(object), dst.dropna().astype(object))   # rows held in memory: not categorical
    (a, b), names = id_codes(*plain, dtype=np.int32)
    assert a.dtype == b.dtype == np.int32
    assert [names[a].tolist(), names[b].tolist()] == [p.tolist() for p in plain]


@pytest.mark.parametrize("dtype", [object, "str", "string"])
def test_a_missing_end_of_a_plain_column_is_nan_not_the_last_card(dtype: object) -> None:
    """id_codes' docstring: a missing value is "nan". Through astype(str) pandas 3 keeps it
    missing, and factorize's -1 then indexed the last value: a pair with no src read as the
    fleet's last card."""
    src = pd.Series(["a/gpu0", None, "b/gpu1"], dtype=dtype)
    dst = pd.Series(["b/gpu1", "a/gpu0", "a/gpu0"], dtype=dtype)
    (s, d), names = id_codes(src, dst, dtype=np.int32)
    assert [names[i] for i in s] == ["a/gpu0", "nan", "b/gpu1"] and [names[i] for i in d] == ["b/gpu1", "a/gpu0", "a/gpu0"]


def _record(design: bool) -> object:
    hosts = {"sn0": ["h1", "h2"], "sn1": ["h3", "h4"]}
    return from_json({"schema": "sncheck.run/1", "run_id": "r", "playbook": "p", "backend": "mock",
                      "inventory": "i", "verdict": "pass", "gate": "critical", "seed": 0,
                      "design": ({"intra_host": {"bandwidth_GBps": 300, "latency_us": 1},
                                  "scale_up": {"bandwidth_GBps": 200, "latency_us": 2}} if design else {}),
                      "topology": {"supernodes": [{"name": k, "hosts": v} for k, v in hosts.items()]},
                      "layers": [], "findings": [], "isolation": []})


def _rows(seed: int) -> pd.DataFrame:
    rnd = random.Random(seed)
    cards = [f"h{h}/gpu{g}" for h in range(1, 5) for g in range(4)]
    rows = []
    for round_ in range(3):   # some pairs measured in several rounds
        for _ in range(50):
            a, b = sorted(rnd.sample(cards, 2))
            same_sn = (a[1] in "12") == (b[1] in "12")
            tier = ("intra_host" if a.split("/")[0] == b.split("/")[0] else "scale_up" if same_sn
                    else "scale_out")
            row = p2p_row(round_, a, b, link_id(a, b), tier, 1 << 20, bw=rnd.uniform(50, 400),
                          lat=rnd.uniform(1, 20))
            row["bw_rev_GBps"] = rnd.choice([None, rnd.uniform(50, 400)])   # one direction may be missing
            if rnd.random() < 0.1:
                row.update(status="timeout", bw_GBps=None, bw_rev_GBps=None, lat_us=None)
            rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("design", [True, False])
@pytest.mark.parametrize("seed", [1, 2])
def test_connectivity_view_the_same_in_chunks(monkeypatch, seed, design) -> None:
    record, rows = _record(design), _rows(seed)
    refs = {"intra_host": {"bandwidth_GBps": 300.0, "latency_us": 1.0},
            "scale_up": {"bandwidth_GBps": 200.0, "latency_us": 2.0}} if design else {}
    whole = conn.connectivity_view(record, rows, refs)
    assert whole["heatmaps"] and whole["worst_pairs"] and whole["fleet"]["flagged"] >= 1  # failed directions
    assert any("median" in h["reference"] for h in whole["heatmaps"]) != design
    for rows_at_once in (1, 7, 64):
        monkeypatch.setattr(conn, "CHUNK_ROWS", rows_at_once)
        assert conn.connectivity_view(record, rows, refs) == whole


def test_prometheus_lets_go_of_the_pairs_the_reports_read(tmp_path, monkeypatch) -> None:
    """The run store's view keeps the p2p rows html read for the card series, which use
    them and then let them go (issue 31: at 131,072 cards 2 GB beside the rank rows read
    next); rows a view was given, not read, stay."""
    from sncheck.report.prometheus import render_prometheus
    from sncheck.report.cardstats import TierRows
    from sncheck.store.frames import RowFrames
    from sncheck.store.parts import Part
    from sncheck.store.rundir import RunStore

    store = RunStore(tmp_path, run_id="r-1")
    store.batch("p2p", {"round": 0, "src": ["h1/gpu0", "h1/gpu1", "h3/gpu0"], "dst": ["h1/gpu1", "h2/gpu0", "h1/gpu0"],
                        "bw_GBps": [300.0, 190.0, 40.0], "bw_rev_GBps": [301.0, 180.0, 41.0],
                        "lat_us": 2.0, "lat_p99_us": 3.0, "status": "ok",
                        "tier": ["intra_host", "scale_up", "scale_out"]})
    store.close()
    reads: list[str] = []
    real = Part.read
    monkeypatch.setattr(Part, "read", lambda self, columns: reads.append(str(self.path)) or real(self, columns))
    rows = store.frames()
    REPORT_P2P = TierRows.columns   # (a frame kept with the card series' columns)
    rows.kind("p2p", REPORT_P2P)   # html's read, kept for the reports after it
    read_once = len(reads)
    text = render_prometheus(_record(True), rows)
    assert len(reads) == read_once and 'hostname="h1",gpu="0"' in text   # the kept rows, not a new read
    rows.kind("p2p", REPORT_P2P)
    assert len(reads) == 2 * read_once   # let go: read again when asked again
    given = RowFrames({"p2p": rows.kind("p2p")})
    assert render_prometheus(_record(True), given) == text and len(given.kind("p2p")) == 3


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_worst_pairs_from_the_first_k_of_each_supernode(monkeypatch, seed) -> None:
    """A supernode's candidates for the run's worst pairs are its first k in the run's order
    (issue 31: a down host's failed directions all tie at margin 0, and each became a
    candidate record: thousands at 16,384 cards): the table is the one every tied direction
    gives, natural-order ties (``h01`` and ``h1``) and listing order included."""
    rnd = random.Random(seed)
    hosts = {"sn0": ["h01", "h1", "h2"], "sn1": ["h3", "h4"]}
    record = from_json({"schema": "sncheck.run/1", "run_id": "r", "playbook": "p", "backend": "mock",
                        "inventory": "i", "verdict": "pass", "gate": "critical", "seed": 0, "design": {},
                        "topology": {"supernodes": [{"name": k, "hosts": v} for k, v in hosts.items()]},
                        "layers": [], "findings": [], "isolation": []})
    cards = [f"{h}/gpu{g}" for hs in hosts.values() for h in hs for g in range(4)]
    rows = []
    for a in cards:
        for b in cards:
            if a < b and (a[:2] in ("h0", "h1", "h2")) == (b[:2] in ("h0", "h1", "h2")):
                tier = "intra_host" if a.split("/")[0] == b.split("/")[0] else "scale_up"
                row = p2p_row(0, a, b, link_id(a, b), tier, 1 << 20, bw=rnd.choice([100.0, 200.0, 300.0]),
                              lat=rnd.choice([2.0, 4.0]))
                if "h1/" in (a[:3], b[:3]) or rnd.random() < 0.05:   # a down host: every pair of its failed
                    row.update(status="timeout", bw_GBps=None, lat_us=None)
                rows.append(row)
    rows = pd.DataFrame(rnd.sample(rows, len(rows)))   # listed in no order
    got = conn.connectivity_view(record, rows, {})
    real = conn._worst_candidates
    monkeypatch.setattr(conn, "_worst_candidates", lambda sub, m, domains: real(sub, m, domains, k=10**9))
    every = conn.connectivity_view(record, rows, {})   # every direction a candidate
    assert sum(r["failed"] for r in every["worst_pairs"]) == conn.WORST_PAIRS
    assert got["worst_pairs"] == every["worst_pairs"]


@pytest.mark.parametrize("seed", range(5))
def test_domain_members_in_natural_order(seed) -> None:
    """Each supernode's cards in natural order from one sort of every card's natural place
    (issue 31: a natural_key sort per supernode), cards whose keys tie (``h01``, ``h1``) in
    the order the rows named them, as ``sorted`` gives them; a card of no supernode in none."""
    from sncheck.model import natural_key

    rnd = random.Random(seed)
    hosts = [rnd.choice(["h", "node", "x"]) + rnd.choice(["1", "01", "001", "2", "10", "02"]) for _ in range(12)]
    cards = list(dict.fromkeys(f"{h}/gpu{rnd.randint(0, 11)}" for h in hosts for _ in range(4)))
    rnd.shuffle(cards)
    domains = conn._Domains.__new__(conn._Domains)   # (only what members() reads)
    domains.cards, domains.names = pd.Index(cards, dtype=object), ["a", "b", "c"]
    domains.dom = np.array([rnd.choice([-1, 0, 1, 2, 2]) for _ in cards], dtype=np.int32)
    want = {name: sorted(domains.cards[domains.dom == d], key=natural_key) for d, name in enumerate(domains.names)}
    assert domains.members() == {k: v for k, v in want.items() if v}
    assert any(natural_key(x) == natural_key(y) and x != y for x in cards for y in cards)
