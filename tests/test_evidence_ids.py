"""Evidence reads each kind's id columns once, a piece at a time, as codes (issue 31: at
131,072 cards the p2p rows' src and dst read as one pandas frame of the kind took 3.7 s of
evidence's 13 s and stayed held by the run store's view): :func:`sncheck.store.idcols.id_codes`
names every row as the kind's frame does, whatever dictionary each piece holds, and the
bundles hold the rows they held when the ids came from that frame."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from sncheck.model import Finding
from sncheck.store import parts
from sncheck.store.evidence import collect_evidence
from sncheck.store.frames import RowFrames
from sncheck.store.idcols import id_codes
from sncheck.store.rundir import RunStore


def _store(tmp_path, seed: int) -> RunStore:
    """p2p and rank rows in parts whose dictionaries differ (each part names other cards and
    groups), some ids missing."""
    rnd = random.Random(seed)
    cards = [f"h{h}/gpu{g}" for h in range(4) for g in range(3)]
    store = RunStore(tmp_path / "run", run_id="r-1")
    for part in range(5):
        mine = rnd.sample(cards, rnd.randint(2, len(cards)))
        rows = []
        for i in range(rnd.randint(1, 25)):
            a, b = rnd.sample(mine, 2)
            rows.append({"kind": "p2p", "round": part, "src": a, "dst": None if rnd.random() < 0.1 else b,
                         "link": f"{a}<->{b}", "tier": "scale_up", "status": "ok", "bw_GBps": float(i)})
            rows.append({"kind": "rank", "card": None if rnd.random() < 0.1 else a, "skew_us": 1.0,
                         "group": rnd.choice([f"pair:{a}<->{b}", f"host:{a.split('/')[0]}", "rail:0", None])})
        store.emit_rows(rows)
        store.flush()
    store.close()
    return store


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("piece_rows", [1, 30, 1 << 21])
def test_each_rows_ids_are_the_frames(tmp_path, monkeypatch, seed, piece_rows) -> None:
    monkeypatch.setattr(parts, "PIECE_ROWS", piece_rows)   # a part a piece, a few, or one piece of all
    view = _store(tmp_path, seed).frames()
    for kind, cols in (("p2p", ["src", "dst"]), ("rank", ["card", "group"])):
        frame = view.read(kind, cols)
        got = id_codes(view, kind, cols)
        for c in cols:
            codes, names = got[c]
            assert len(codes) == len(frame) and len(set(names.tolist())) == len(names)
            named = [None if k < 0 else names[k] for k in codes.tolist()]
            assert named == [None if v is None or v != v else v for v in frame[c].astype(object).tolist()], c
        held = id_codes(RowFrames({kind: frame}), kind, cols)   # (rows held as a frame: its categories)
        for c in cols:
            assert [None if k < 0 else held[c][1][k] for k in held[c][0].tolist()] == \
                [None if k < 0 else got[c][1][k] for k in got[c][0].tolist()]


@pytest.mark.parametrize("seed", range(3))
def test_bundles_hold_what_the_kinds_frames_give(tmp_path, monkeypatch, seed) -> None:
    """A run store's view and the same rows held as frames give every bundle the same rows."""
    monkeypatch.setattr(parts, "PIECE_ROWS", 7)
    store = _store(tmp_path, seed)
    view = store.frames()
    held = RowFrames({k: view.read(k) for k in ("p2p", "rank")})
    rnd = random.Random(seed)
    findings = lambda: [Finding("h1/gpu2", "card", "connectivity", "r", "warning", "m"),  # noqa: E731
                        Finding("h2", "host", "connectivity", "r", "warning", "m"),
                        Finding(f"h0/gpu{rnd.randint(0, 2)}<->h3/gpu1", "link", "connectivity", "r", "warning", "m")]
    out = {}
    for name, rows in (("view", view), ("held", held)):
        rnd.seed(seed)
        fs = findings()
        (tmp_path / name).mkdir()
        collect_evidence(fs, None, rows, tmp_path / name)
        out[name] = [(tmp_path / name / p).read_text() for f in fs for p in f.evidence["files"]
                     if p.endswith("rows.jsonl")]
    assert out["view"] == out["held"] and len(out["view"]) >= 2
    assert all(json.loads(line) for text in out["view"] for line in text.splitlines())
    assert np.all([len(t) for t in out["view"]])
