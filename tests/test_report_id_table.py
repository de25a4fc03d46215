"""The card series take card and tier codes a tier's rows at a time (issue 31: at 131,072
cards every row's int32 src/dst and int16 tier codes were 550 MB of the report phase's
peak): ``IdTable`` gives, for any rows, the codes ``id_codes`` gives for every row, for
categorical columns (their own codes through a table, with or without shared categories)
and plain ones, with missing ends ("nan") and categories no row holds; and the card series
are the same whether the rows' ids are categoricals (the store's) or plain strings."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

import sncheck.report.cardstats as stats
import sncheck.report.codes as codes
import sncheck.report.prometheus as prom
from sncheck.report.codes import IdTable, id_codes
from sncheck.rows import p2p_row
from sncheck.topology import link_id


def _columns(kind: str) -> list[pd.Series]:
    src = ["h1/gpu0", None, "h2/gpu1", "h1/gpu0", "h3/gpu2", None, "h2/gpu1"]
    dst = ["h2/gpu1", "h1/gpu1", None, "h4/gpu0", "h1/gpu0", "h1/gpu1", "h3/gpu2"]
    if kind == "shared":     # one category set for both, with one no row holds
        dtype = pd.CategoricalDtype(sorted({v for v in src + dst if v}) + ["h9/gpu9"])
        return [pd.Series(src, dtype=dtype), pd.Series(dst, dtype=dtype)]
    if kind == "own":        # each column its own categories, in another order
        return [pd.Series(src, dtype="category"),
                pd.Series(dst, dtype=pd.CategoricalDtype(["nan", "h4/gpu0", "h3/gpu2", "h2/gpu1", "h1/gpu1", "h1/gpu0"]))]
    return [pd.Series(src, dtype=kind), pd.Series(dst, dtype=kind)]


def _as_str(v: object) -> str:
    return "nan" if pd.isna(v) else str(v)


def _reference(cols: list[pd.Series]) -> tuple[list[list[int]], list[str]]:
    """Codes row by row: the values in the order of the categories (a categorical's, then
    "nan") or of the rows (plain columns), those no row holds left out."""
    if all(isinstance(c.dtype, pd.CategoricalDtype) for c in cols):
        order = [v for c in cols for v in [*c.cat.categories.astype(str), "nan"]]
    else:
        order = [_as_str(v) for c in cols for v in c]
    held = {_as_str(v) for c in cols for v in c}
    values = [v for v in dict.fromkeys(order) if v in held]
    return [[values.index(_as_str(v)) for v in c] for c in cols], values


@pytest.mark.parametrize("kind", ["shared", "own", "object", "str", "string"])
@pytest.mark.parametrize("take_rows", [1, 3, 64])
def test_id_table_takes_the_codes_of_every_row(monkeypatch, kind, take_rows) -> None:
    monkeypatch.setattr(codes, "TAKE_ROWS", take_rows)
    cols = _columns(kind)
    want, want_values = _reference(cols)
    whole, values = id_codes(*cols, dtype=np.int32)
    assert values.tolist() == want_values and [c.tolist() for c in whole] == want
    assert all(c.dtype == np.int32 for c in whole)
    table = IdTable(*cols, dtype=np.int32)
    assert table.values.tolist() == values.tolist() and "nan" in values and "h9/gpu9" not in values
    rnd = np.random.default_rng(5)
    through = rnd.integers(0, 100, len(values)).astype(np.int16)
    for i, col in enumerate(whole):
        for at in (np.arange(len(col)), np.array([6, 1, 1, 0]), np.zeros(0, dtype=np.int64)):
            got = table.take(i, at)
            assert got.dtype == np.int32 and got.tolist() == col[at].tolist()
            assert table.take(i, at, through=through).tolist() == through[col[at]].tolist()
        for code in range(len(values)):
            assert table.rows_of(i, code).tolist() == np.flatnonzero(col == code).tolist()


def test_id_table_missing_and_nan_category_are_one_value() -> None:
    """A missing value and a category "nan" are both "nan" (as astype(str) writes them):
    the rows of either are the rows of that one code."""
    col = pd.Series(["nan", None, "a", "nan"], dtype="category")
    (whole,), values = id_codes(col)
    table = IdTable(col)
    nan = values.get_loc("nan")
    assert table.rows_of(0, nan).tolist() == np.flatnonzero(whole == nan).tolist() == [0, 1, 3]


def _rows(seed: int) -> pd.DataFrame:
    rnd = random.Random(seed)
    cards = [f"{h}/gpu{g}" for h in ("h01", "h1", "h2", "node10") for g in range(4)]
    rows = []
    for rnd_i in range(3):
        for _ in range(50):
            a, b = rnd.sample(cards, 2)
            tier = "intra_host" if a.split("/")[0] == b.split("/")[0] else rnd.choice(["scale_up", "scale_out"])
            row = p2p_row(rnd_i, a, b, link_id(a, b), tier, 1 << 20, bw=rnd.uniform(10, 400), lat=rnd.uniform(1, 20))
            row["lat_p99_us"] = rnd.uniform(2, 40)
            if rnd.random() < 0.1:
                row["status"] = "timeout"
            rows.append(row)
    df = pd.DataFrame(rows)
    df.loc[[3, 40], "src"] = None     # missing ends: the "nan" card
    df.loc[[7], "dst"] = None
    df.loc[[11], "tier"] = None       # a missing tier: ""
    return df


@pytest.mark.parametrize("seed", [1, 2])
def test_card_series_the_same_from_categoricals_and_plain_columns(monkeypatch, seed) -> None:
    """The store's categorical ids (codes through their tables, a tier's rows at a time)
    give the card series the plain columns give (coded whole, as before), with missing
    ends, a tier category no row holds and a card category no row holds, at any slicing."""
    plain = _rows(seed)
    cat = plain.copy()
    for c in ("src", "dst"):
        cat[c] = cat[c].astype(pd.CategoricalDtype(sorted(set(plain[c].dropna())) + ["h9/gpu0"]))
    cat["tier"] = cat["tier"].astype(pd.CategoricalDtype(["scale_out", "spine", "scale_up", "intra_host"]))
    supernode = {"h01": "sn0", "h1": "sn0"}
    want = prom.card_p2p(plain, supernode)
    assert "nan" in want["card"].tolist() and "" in want["tier"].tolist() and "spine" not in want["tier"].tolist()
    for take_rows, per_pass in ((1 << 20, 1 << 20), (1, 1), (7, 7), (64, 64)):
        monkeypatch.setattr(codes, "TAKE_ROWS", take_rows)
        monkeypatch.setattr(stats, "PAIRS_PER_PASS", per_pass)
        pd.testing.assert_frame_equal(prom.card_p2p(cat, supernode), want)
