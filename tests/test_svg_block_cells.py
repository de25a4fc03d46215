"""The block heatmap colours its cells as arrays (issue 31: a fleet's 64 maps of 32 x 32
hosts): every cell is drawn once, in the colour ``_block_fill`` gives it, whatever it holds
(None, NaN, a score below 0 or above 1, failed and partly failed cells), runs merged."""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest

from sncheck.report.svg import _block_fill, block_heatmap

RUN = re.compile(r"M(\d+) (\d+)h(\d+)v(\d+)h-\d+z")


def _drawn(out: str, n: int, margin_cs: tuple[int, int, int]) -> dict[tuple[int, int], str]:
    margin, top, cs = margin_cs
    cells: dict[tuple[int, int], str] = {}
    for fill, d in re.findall(r'<path fill="(#[0-9a-f]{6})" d="([^"]*)"/>', out):
        for x, y, w, h in RUN.findall(d):
            assert int(h) == cs
            i = (int(y) - top) // cs
            for j in range((int(x) - margin) // cs, (int(x) - margin + int(w)) // cs):
                assert (i, j) not in cells, "a cell drawn twice"
                cells[(i, j)] = fill
    return cells


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_every_cell_once_in_its_colour(seed) -> None:
    rnd = random.Random(seed)
    n = 9
    pick = [None, math.nan, -0.2, -0.04, -0.02, 0.0, 0.49, 0.5, 0.8, 0.97, 1.0, 1.3, 7.0]
    score = [[rnd.choice(pick + [rnd.uniform(0.4, 1.1)]) for _ in range(n)] for _ in range(n)]
    failed = [[rnd.random() < 0.15 for _ in range(n)] for _ in range(n)]
    partial = [[rnd.random() < 0.2 for _ in range(n)] for _ in range(n)]
    labels = [f"h{i}" for i in range(n)]
    out = block_heatmap(labels, score, title="t", failed=failed, partial=partial)
    cs = max(3, min(22, int(640 / n)))
    font = max(6.0, min(11.0, cs - 1))
    margin = int(8 + font * 0.6 * max(len(s) for s in labels))
    cells = _drawn(out, n, (margin, 24 + margin, cs))
    assert cells == {(i, j): _block_fill(score[i][j], failed[i][j]) for i in range(n) for j in range(n)}
    fills = re.findall(r'<path fill="(#[0-9a-f]{6})" d=', out)
    assert len(fills) == len(set(fills))            # one path per colour
    crosses = re.search(r'stroke="#fff"[^>]*d="([^"]*)"', out)
    assert (crosses.group(1).count("M") if crosses else 0) == sum(map(sum, failed))
    outlines = re.search(r'stroke="#000"[^>]*d="([^"]*)"', out)
    assert (outlines.group(1).count("M") if outlines else 0) == sum(
        p and not f for rp, rf in zip(partial, failed) for p, f in zip(rp, rf))
    # arrays as the connectivity view passes them draw the same map
    assert block_heatmap(labels, np.array(score, dtype=float), title="t", failed=np.array(failed),
                         partial=np.array(partial)) == out
