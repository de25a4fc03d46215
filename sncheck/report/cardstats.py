"""The per-card statistics of a run's p2p rows (sncheck.prom's card series; issue 31):
per card and tier, the min and the median of its pairs' bandwidth (each pair: the mean of
its two directions, the median over its rounds), the median and the max of its pairs' p99
latency (each pair's: the median over its rounds), and its failed pairs. :class:`TierRows`
takes the rows a piece at a time (in the reports' one pass over them,
:mod:`sncheck.report.p2pstats`), keeping 29 bytes a row, and reduces them to the table when
the pass ends, so what the pass hands on is one row per card and tier."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sncheck.report.codes import Codes, bucket_positions, merge_repeated
from sncheck.report.p2pread import Piece, pieces_of

GB = 1e9
US = 1e-6


class TierRows:
    """The p2p rows as what the card series need of each, added a piece at a time, by
    tier (its name; "nan": missing), in row order: ``a`` and ``b`` (src and dst codes in
    ``cards``; a missing end is the card "nan"), ``bw`` (the mean of the two directions in
    bytes/s) and ``p99`` (s), NaN where the probe failed, ``failed``, and ``row`` (its
    place among every p2p row): 29 bytes a row. ``by_tier`` is empty where no row names a
    src, or none a dst."""

    columns = ("src", "dst", "tier", "status", "bw_GBps", "bw_rev_GBps", "lat_p99_us")   # what the card series read
    decoder = staticmethod(pieces_of)   # (a piece's codes made once, for the drawn rows too)
    finish_first = True   # (its finish reduces the 29 bytes a row it holds to a row a card and tier)

    def __init__(self) -> None:
        self.cards = Codes()
        self.by_tier: dict[str, list[dict[str, np.ndarray]]] = {}
        self._named = [False, False]
        self._offset = 0

    def add(self, piece: Piece) -> None:
        """A piece of the rows (:class:`~sncheck.report.p2pread.Piece`), in row order."""
        self._named = [self._named[0] or piece.named[0], self._named[1] or piece.named[1]]
        ok_all = piece.ok
        fwd_all, rev_all, p99_all = (piece.values[c] for c in ("bw_GBps", "bw_rev_GBps", "lat_p99_us"))
        offset = self._offset
        wide = offset + piece.n >= 2**31   # (a place past int32: every row's as int64)
        code = self.cards.of(piece.cards)   # (this piece's card codes -> the run's)
        for name, at in piece.rows_of_tier("by_tier"):   # (every tier it names is held by a row)
            ok = ok_all[at]
            bw = pair_mean(fwd_all[at], rev_all[at])
            bw *= GB
            bw[~ok] = np.nan
            p99 = p99_all[at]
            p99 *= US
            p99[~ok] = np.nan
            self.by_tier.setdefault(name, []).append(
                {"a": code[piece.src[at]], "b": code[piece.dst[at]], "bw": bw, "p99": p99, "failed": ~ok,
                 "row": (at.astype(np.int64) if wide else at) + offset})
        self._offset += piece.n

    def finish(self) -> pd.DataFrame:
        """The per-card statistics of the rows added (:func:`card_stats`); the rows let go."""
        by_tier, self.by_tier = self.by_tier, {}
        return card_stats(self.cards, by_tier if all(self._named) else {})


def pair_mean(fwd: np.ndarray, rev: np.ndarray) -> np.ndarray:
    """The mean of each pair's two directions (one may be missing; NaN when both are),
    in place over ``fwd`` and ``rev`` (copies: a tier's rows)."""
    count = (~np.isnan(fwd)).astype(float)
    count += ~np.isnan(rev)
    count[count == 0] = np.nan
    both = np.nan_to_num(fwd, copy=False)
    both += np.nan_to_num(rev, copy=False)
    with np.errstate(invalid="ignore", divide="ignore"):
        both /= count
    return both


def card_stats(cards: Codes, by_tier: dict[str, list[dict[str, np.ndarray]]]) -> pd.DataFrame:
    """Per card and tier (columns card, bw_min, bw_median, lat_p99, lat_p99_max, failed, tier; a
    missing tier ""): each tier's rows (:class:`TierRows`) merged to one entry per pair
    (the median over its rounds, :func:`_tier_pairs`), then grouped by both ends of each
    pair a slice of the cards at a time (:func:`_ends_by_card`); each tier's rows let go
    as it is done. Cards in order of first appearance in each tier."""
    if not by_tier:
        return pd.DataFrame()
    n = len(cards.values)
    names = np.asarray(cards.values, dtype=object)
    parts = []
    for tier in list(by_tier):
        # One value per pair (the median over its rounds), then both ends of it.
        pair = _tier_pairs(_joined(by_tier.pop(tier)), n)
        part = _ends_by_card(pair, n)
        del pair
        part.insert(0, "card", names[part.index.to_numpy()])
        part["tier"] = "" if tier == "nan" else tier   # a missing tier
        parts.append(part.reset_index(drop=True))
    return pd.concat(parts, ignore_index=True)


def _joined(chunks: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """A tier's pieces as one array per column, each piece's column let go as it is
    joined (one column's copy at a time)."""
    out = {}
    for k in list(chunks[0]) if chunks else ():
        out[k] = np.concatenate([c.pop(k) for c in chunks])
    return out


PAIRS_PER_PASS = 1 << 20   # a tier's rows merged to pairs at once (card_p2p's memory: a few arrays of this many)


def _tier_pairs(rows: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """One entry per pair of a tier's ``rows`` (:class:`~sncheck.report.p2pstats.TierRows`): its ``bw`` and ``p99``
    each the median over its rounds, whether every round failed. The rows are merged a
    range of ``a`` codes at a time (a pair's rounds share it; no key array of every row
    of the tier: at 131,072 cards the scale-out tier is 33 M rows). In one pass the pairs
    come in the order of their first rows; in several, in the order of the passes, each
    with its first ``row``: :func:`_ends_by_card` orders the cards by it (putting 33 M
    pairs back in row order took an int64 argsort and a column's copy beside them,
    about 0.5 GB)."""
    total = len(rows["a"])
    passes = max(1, -(-total // PAIRS_PER_PASS))
    if passes == 1:
        pair = _merged(rows, n)   # (in the order of their first rows)
        del pair["row"]
        return pair
    at, starts = bucket_positions(rows["a"], _slice_of(n, passes), passes)   # each row's pass, by its src card
    out: dict[str, np.ndarray] = {}
    filled = 0
    for s in range(passes):
        mine = at[starts[s]:starts[s + 1]]
        pair = _merged({k: v[mine] for k, v in rows.items()}, n)
        got = len(pair["a"])
        for k, v in pair.items():
            if k not in out:
                out[k] = np.empty(total, dtype=v.dtype)
            out[k][filled:filled + got] = v
        filled += got
        del pair, mine
    del at, rows
    for k in list(out):   # (rounds merged: shorter than the rows; one column's copy at a time)
        out[k] = out[k][:filled] if filled == total else out[k][:filled].copy()
    return out


def _slice_of(n: int, slices: int) -> np.ndarray:
    """Each card code's slice of ``slices`` ranges of the codes (``np.linspace(0, n,
    slices + 1)``'s, as integers; a range may be empty)."""
    bounds = np.linspace(0, n, slices + 1).astype(np.int64)[1:-1]
    return np.searchsorted(bounds, np.arange(n), side="right").astype(np.int16 if slices < 2**15 else np.int32)


def _merged(rows: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """:func:`_tier_pairs` over ``rows`` at once (``row``: each pair's first row)."""
    return merge_repeated(rows["a"].astype(np.int64) * n + rows["b"],   # (int32 codes: the key alone is wide)
                          rows, {"bw": "median", "p99": "median", "failed": "all"})


ENDS_PER_PASS = 1 << 20   # pair ends grouped at once (card_p2p's memory: a few arrays of this many)


def _ends_by_card(pair: dict[str, np.ndarray], n: int) -> pd.DataFrame:
    """Per card (index: its code, in order of first appearance among the ends ``a`` then
    ``b`` of the pairs, in the order of their first ``row`` where given): min and median of ``bw``,
    median and max of ``p99`` and how many ``failed``, over both ends of each pair (a missing
    value left out, as pandas' grouped min, median, max leave it). The min, the max and the
    count are one pass over the ends into an entry per card code (``np.fmin.at``: no frame, no
    hash of the codes); the medians are grouped a slice of the cards at a time, each slice's
    ends by their code in the slice (at 131,072 cards, 66 M scale-out ends: the frames and
    grouped min, max and sum per slice were about a quarter of the table's 17 s CPU)."""
    a, b = pair["a"], pair["b"]
    row = pair.get("row")   # (given: the pairs are not in the order of their first rows)
    order = np.arange(len(a), dtype=np.int64) if row is None else row
    after = int(order.max()) + 1 if len(order) else 0   # (b's ends after every a's)
    first = np.full(n, 2 * after, dtype=np.int64)
    bw_min, p99_max = np.full(n, np.nan), np.full(n, np.nan)
    failed = np.zeros(n, dtype=np.int64)
    for ends, offset in ((a, 0), (b, after)):
        for lo in range(0, len(ends), ENDS_PER_PASS):
            at = ends[lo:lo + ENDS_PER_PASS]
            np.minimum.at(first, at, order[lo:lo + ENDS_PER_PASS].astype(np.int64) + offset)
            np.fmin.at(bw_min, at, pair["bw"][lo:lo + ENDS_PER_PASS])
            np.fmax.at(p99_max, at, pair["p99"][lo:lo + ENDS_PER_PASS])
            failed += np.bincount(at, weights=pair["failed"][lo:lo + ENDS_PER_PASS], minlength=n).astype(np.int64)
    bw_median, p99_median = _medians(pair, n)
    cards = np.flatnonzero(first < 2 * after)   # (every card some end names)
    cards = cards[np.argsort(first[cards], kind="stable")]
    return pd.DataFrame({"bw_min": bw_min[cards], "bw_median": bw_median[cards], "lat_p99": p99_median[cards],
                         "lat_p99_max": p99_max[cards], "failed": failed[cards]}, index=cards)


def _medians(pair: dict[str, np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """The median of ``bw`` and of ``p99`` over each card's ends (an entry per card code),
    a slice of the cards' codes at a time (about :data:`ENDS_PER_PASS` ends a slice), each
    slice's ends grouped by their code in it (a categorical: no hash of the codes)."""
    a, b = pair["a"], pair["b"]
    slices = max(1, -(-2 * len(a) // ENDS_PER_PASS))
    bounds = np.linspace(0, n, slices + 1).astype(np.int64)
    if slices > 1:   # each slice's ends found once (not a scan of every pair per slice)
        slice_of = _slice_of(n, slices)
        (in_a, from_a), (in_b, from_b) = (bucket_positions(ends, slice_of, slices) for ends in (a, b))
        del slice_of
    out = np.full(n, np.nan), np.full(n, np.nan)
    for s in range(slices):
        at_a, at_b = ((slice(None),) * 2 if slices == 1 else
                      (in_a[from_a[s]:from_a[s + 1]], in_b[from_b[s]:from_b[s + 1]]))
        lo, width = int(bounds[s]), int(bounds[s + 1] - bounds[s])
        code = np.concatenate([a[at_a], b[at_b]]).astype(np.int64) - lo
        if not len(code):
            continue
        ends = pd.DataFrame({k: np.concatenate([pair[k][at_a], pair[k][at_b]]) for k in ("bw", "p99")})
        key = pd.Categorical.from_codes(code, categories=pd.RangeIndex(width), validate=False)
        med = ends.groupby(key, observed=True, sort=True).median()
        held = med.index.to_numpy(dtype=np.int64) + lo
        out[0][held], out[1][held] = med["bw"].to_numpy(), med["p99"].to_numpy()
        del ends, key, med
    return out
