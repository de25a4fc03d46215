"""Small inline-SVG charts for the HTML report: a heatmap and a line chart.

Plain Python over plain data (no pandas here), returning SVG strings that the
templates include with ``|safe``. The page must open offline, so there are no
scripts, fonts or links; hover text uses SVG ``<title>``.

Every piece of text that reaches the SVG goes through :func:`_t`, because card ids,
host names and labels come from inventories and tools and may hold markup.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import numpy as np
from markupsafe import escape

MISSING_FILL = "#d9d9d9"
FAILED_FILL = "#111111"
DIAGONAL_FILL = "#ffffff"
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#7f7f7f", "#bcbd22", "#d62728")
# score -> colour stops: 1.0 is "as designed" (or "as the median"), lower is worse.
_SCALE = ((0.5, (215, 48, 39)), (0.75, (252, 141, 89)), (0.9, (254, 224, 139)),
          (1.0, (26, 152, 80)))
# Past this many cells, per-cell hover text would dominate the page size.
TOOLTIP_MAX_CELLS = 2500
LE = "\u2264"
LEGEND_W = 420  # the heatmap legend's width; small maps widen to show it whole


def _t(text: object) -> str:
    """Escape any text for use in SVG element content or a quoted attribute."""
    return str(escape(str(text)))


def _n(x: float) -> str:
    """A coordinate, short: SVG size matters for large heatmaps."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def score_color(score: float) -> str:
    """Colour for a score (measured relative to reference; higher is better)."""
    if score >= _SCALE[-1][0]:
        return _hex(_SCALE[-1][1])
    if score <= _SCALE[0][0]:
        return _hex(_SCALE[0][1])
    for (s0, c0), (s1, c1) in pairwise(_SCALE):
        if s0 <= score <= s1:
            f = (score - s0) / (s1 - s0)
            return _hex(tuple(round(a + (b - a) * f) for a, b in zip(c0, c1)))
    raise AssertionError("unreachable")  # the stops cover every score


def _hex(rgb: tuple[int, ...]) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _open(cls: str, width: float, height: float, title: str) -> str:
    """The opening of a chart: no xmlns, an inline SVG in HTML needs none (and the
    page must not mention any URL)."""
    return (f'<svg class="chart {cls}" width="{_n(width)}" height="{_n(height)}" '
            f'viewBox="0 0 {_n(width)} {_n(height)}" role="img" font-family="sans-serif">\n'
            f"<title>{_t(title)}</title>\n"
            f'<text x="4" y="14" font-size="13" font-weight="bold">{_t(title)}</text>')


@dataclass(frozen=True)
class Cell:
    """One heatmap cell. ``score`` is None when nothing was measured."""

    value: float | None
    score: float | None
    failed: bool = False    # every probe of this cell failed
    partial: bool = False   # some probes failed (or, aggregated, some pairs did)


def heatmap(labels: Sequence[str], cells: Mapping[tuple[int, int], Cell], *, title: str,
            unit: str, blank_diagonal: bool = True, max_px: int = 640,
            tooltips: bool | None = None) -> str:
    """A square matrix of ``labels`` x ``labels`` (rows: source, columns: destination).

    Cells absent from ``cells`` are drawn as missing, failed cells black, cells with
    some failures get a black outline. ``blank_diagonal`` leaves (i, i) empty when a
    label is not paired with itself (cards); aggregated host cells keep it.
    """
    n = len(labels)
    if n == 0:
        return ""
    cs = max(3.0, min(22.0, max_px / n))
    font = max(6.0, min(11.0, cs - 1))
    every = max(1, math.ceil(font / cs))           # label every k-th row when cells are tiny
    margin = 8 + font * 0.6 * max(len(str(s)) for s in labels)
    top = 24 + margin
    grid = cs * n
    legend_h = 40
    width, height = max(margin + grid + 10, LEGEND_W), top + grid + legend_h
    if tooltips is None:
        tooltips = n * n <= TOOLTIP_MAX_CELLS
    out = [_open("heatmap", width, height, title)]
    out += _axis_labels(labels, every, margin, top, cs, font)
    for i in range(n):
        for j in range(n):
            cell = cells.get((i, j))
            if cell is None and i == j and blank_diagonal:
                fill, stroke = DIAGONAL_FILL, ""
            else:
                fill, stroke = _cell_style(cell)
            tip = (f"<title>{_t(labels[i])} \u2192 {_t(labels[j])}: {_t(_cell_text(cell, unit))}"
                   f"</title>" if tooltips else "")
            rect = (f'<rect x="{_n(margin + cs * j)}" y="{_n(top + cs * i)}" width="{_n(cs)}" '
                    f'height="{_n(cs)}" fill="{fill}"{stroke}')
            out.append(f"{rect}>{tip}</rect>" if tip else f"{rect}/>")
    out.append(_heatmap_legend(4, top + grid + 12))
    out.append("</svg>")
    return "\n".join(out)


def _cell_style(cell: Cell | None) -> tuple[str, str]:
    if cell is not None and cell.failed:
        return FAILED_FILL, ""
    if cell is None or cell.score is None:
        return MISSING_FILL, ""
    stroke = ' stroke="#000" stroke-width="1.5"' if cell.partial else ""
    return score_color(cell.score), stroke


def _cell_text(cell: Cell | None, unit: str) -> str:
    if cell is not None and cell.failed:
        return "failed"
    if cell is None or cell.score is None or cell.value is None:
        return "not measured"
    text = f"{cell.value:.4g} {unit} ({cell.score:.0%})"
    return text + ", some probes failed" if cell.partial else text


def _heatmap_legend(x: float, y: float) -> str:
    parts = []
    for k, s in enumerate((0.5, 0.6, 0.7, 0.8, 0.9, 1.0)):
        parts.append(f'<rect x="{_n(x + 34 * k)}" y="{_n(y)}" width="34" height="10" '
                     f'fill="{score_color(s)}"/>'
                     f'<text x="{_n(x + 34 * k + 2)}" y="{_n(y + 22)}" font-size="9">'
                     f'{LE if s == 0.5 else ""}{s:.0%}</text>')
    x2 = x + 34 * 6 + 14
    for k, (fill, label) in enumerate(((MISSING_FILL, "not measured"), (FAILED_FILL, "failed"))):
        parts.append(f'<rect x="{_n(x2 + 90 * k)}" y="{_n(y)}" width="12" height="10" '
                     f'fill="{fill}"/><text x="{_n(x2 + 90 * k + 16)}" y="{_n(y + 9)}" '
                     f'font-size="9">{label}</text>')
    return "".join(parts)


@dataclass(frozen=True)
class Series:
    label: str
    xs: Sequence[float]
    ys: Sequence[float]
    color: str | None = None
    dashed: bool = False


@dataclass(frozen=True)
class HLine:
    label: str
    y: float
    color: str = "#444"


@dataclass(frozen=True)
class Band:
    """A shaded area between ``lo`` and ``hi`` over ``xs`` (a tolerance band)."""

    label: str
    xs: Sequence[float]
    lo: Sequence[float]
    hi: Sequence[float]
    color: str = "#9ecae1"


@dataclass
class _Frame:
    x0: float
    x1: float
    y0: float
    y1: float
    left: float
    top: float
    w: float
    h: float
    logx: bool = False

    def px(self, x: float) -> float:
        if self.logx:
            x, a, b = math.log2(x), math.log2(self.x0), math.log2(self.x1)
        else:
            a, b = self.x0, self.x1
        return self.left + (x - a) / ((b - a) or 1.0) * self.w

    def py(self, y: float) -> float:
        return self.top + self.h - (y - self.y0) / ((self.y1 - self.y0) or 1.0) * self.h


def nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """Round tick values (1, 2, 5 x 10^k steps) covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / target
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks, v = [], start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 12))
        v += step
    return ticks


def human_bytes(n: float) -> str:
    """Byte sizes as nccl-tests users read them: 8, 1K, 64M, 1G."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.3g}{unit}"
    return f"{n:.0f}"


def line_chart(series: Sequence[Series], *, title: str, xlabel: str, ylabel: str,
               logx: bool = False, hlines: Sequence[HLine] = (), bands: Sequence[Band] = (),
               xfmt: Callable[[float], str] | None = None, width: int = 640,
               height: int = 300, y_from_zero: bool = True) -> str:
    """Lines over a shared x axis; ``logx`` draws a log2 x axis with power-of-two ticks.

    Horizontal reference lines (design values) and shaded bands (tolerances) go
    under the lines. Non-finite and (on a log axis) non-positive points are dropped.
    """
    series = [_clean_series(s, logx) for s in series]
    series = [s for s in series if s.xs]
    bands = [b for b in bands if b.xs]
    xs = [x for s in series for x in s.xs] + [x for b in bands for x in b.xs]
    ys = ([y for s in series for y in s.ys] + [h.y for h in hlines]
          + [v for b in bands for v in (*b.lo, *b.hi)])
    ys = [y for y in ys if math.isfinite(y)]
    if not xs or not ys:
        return ""
    legend_rows = math.ceil((len(series) + len(hlines) + len(bands)) / 3)
    fr = _frame(xs, ys, logx, y_from_zero, width, height)
    legend_h = 16 * legend_rows + 6
    total_h = height + legend_h
    out = [_open("line", width, total_h, title)]
    out += _axes(fr, xlabel, ylabel, xfmt or (human_bytes if logx else _num))
    for b in bands:
        out.append(_band(fr, b))
    for h in hlines:
        y = fr.py(h.y)
        out.append(f'<line x1="{_n(fr.left)}" x2="{_n(fr.left + fr.w)}" y1="{_n(y)}" '
                   f'y2="{_n(y)}" stroke="{h.color}" stroke-width="1.5" '
                   f'stroke-dasharray="6 3"><title>{_t(h.label)}</title></line>')
    for k, s in enumerate(series):
        color = s.color or PALETTE[k % len(PALETTE)]
        pts = " ".join(f"{_n(fr.px(x))},{_n(fr.py(y))}" for x, y in zip(s.xs, s.ys))
        dash = ' stroke-dasharray="4 3"' if s.dashed else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"'
                   f'{dash}><title>{_t(s.label)}</title></polyline>')
    out.append(_legend(series, hlines, bands, 4, height + 4, width))
    out.append("</svg>")
    return "\n".join(out)


def _clean_series(s: Series, logx: bool) -> Series:
    pts = [(float(x), float(y)) for x, y in zip(s.xs, s.ys)
           if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
           and (x > 0 or not logx)]
    pts.sort()
    return Series(s.label, [p[0] for p in pts], [p[1] for p in pts], s.color, s.dashed)


def _frame(xs: list[float], ys: list[float], logx: bool, y_from_zero: bool, width: int,
           height: int) -> _Frame:
    x0, x1 = min(xs), max(xs)
    if logx:
        x0, x1 = 2 ** math.floor(math.log2(x0)), 2 ** math.ceil(math.log2(x1))
    y0, y1 = (min(0.0, min(ys)) if y_from_zero else min(ys)), max(ys)
    pad = (y1 - y0) * 0.08 or abs(y1) * 0.1 or 1.0
    y1 += pad
    if not y_from_zero:
        y0 -= pad
    return _Frame(x0, x1 if x1 > x0 else x0 + 1, y0, y1, left=58, top=24, w=width - 72,
                  h=height - 70, logx=logx)


def _num(v: float) -> str:
    return f"{v:.4g}"


def _axes(fr: _Frame, xlabel: str, ylabel: str, xfmt: Callable[[float], str]) -> list[str]:
    out = [(f'<rect x="{_n(fr.left)}" y="{_n(fr.top)}" width="{_n(fr.w)}" '
            f'height="{_n(fr.h)}" fill="#fff" stroke="#999"/>')]
    base = fr.top + fr.h
    for v in nice_ticks(fr.y0, fr.y1):
        if fr.y0 <= v <= fr.y1:
            y = fr.py(v)
            out.append(f'<line x1="{_n(fr.left)}" x2="{_n(fr.left + fr.w)}" y1="{_n(y)}" '
                       f'y2="{_n(y)}" stroke="#eee"/><text x="{_n(fr.left - 4)}" '
                       f'y="{_n(y + 3)}" font-size="10" text-anchor="end">{_t(_num(v))}</text>')
    for v in _x_ticks(fr):
        x = fr.px(v)
        out.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{_n(base)}" y2="{_n(base + 4)}" '
                   f'stroke="#999"/><text x="{_n(x)}" y="{_n(base + 15)}" font-size="10" '
                   f'text-anchor="middle">{_t(xfmt(v))}</text>')
    out.append(f'<text x="{_n(fr.left + fr.w / 2)}" y="{_n(base + 32)}" font-size="11" '
               f'text-anchor="middle">{_t(xlabel)}</text>')
    out.append(f'<text transform="translate(12,{_n(fr.top + fr.h / 2)}) rotate(-90)" '
               f'font-size="11" text-anchor="middle">{_t(ylabel)}</text>')
    return out


def _x_ticks(fr: _Frame) -> list[float]:
    if not fr.logx:
        return [v for v in nice_ticks(fr.x0, fr.x1, 8) if fr.x0 <= v <= fr.x1]
    a, b = round(math.log2(fr.x0)), round(math.log2(fr.x1))
    step = max(1, math.ceil((b - a) / 10))     # at most ~10 labels on a 2^a..2^b axis
    first = math.ceil(a / step) * step         # round exponents read better: 1K, 4K, 16K
    return [2.0 ** e for e in range(first, b + 1, step)]


def _band(fr: _Frame, b: Band) -> str:
    upper = [f"{_n(fr.px(x))},{_n(fr.py(y))}" for x, y in zip(b.xs, b.hi)]
    lower = [f"{_n(fr.px(x))},{_n(fr.py(y))}" for x, y in zip(b.xs, b.lo)]
    pts = " ".join(upper + lower[::-1])
    return (f'<polygon points="{pts}" fill="{b.color}" fill-opacity="0.45" stroke="none">'
            f"<title>{_t(b.label)}</title></polygon>")


def _legend(series: Sequence[Series], hlines: Sequence[HLine], bands: Sequence[Band],
            x: float, y: float, width: int) -> str:
    items = ([(s.color or PALETTE[k % len(PALETTE)], s.label, "dash" if s.dashed else "line")
              for k, s in enumerate(series)]
             + [(h.color, h.label, "dash") for h in hlines]
             + [(b.color, b.label, "box") for b in bands])
    col_w = (width - 8) / 3
    parts = []
    for k, (color, label, shape) in enumerate(items):
        lx, ly = x + col_w * (k % 3), y + 16 * (k // 3) + 8
        if shape == "box":
            mark = (f'<rect x="{_n(lx)}" y="{_n(ly - 5)}" width="18" height="10" '
                    f'fill="{color}" fill-opacity="0.45"/>')
        else:
            dash = ' stroke-dasharray="6 3"' if shape == "dash" else ""
            mark = (f'<line x1="{_n(lx)}" x2="{_n(lx + 18)}" y1="{_n(ly)}" y2="{_n(ly)}" '
                    f'stroke="{color}" stroke-width="2"{dash}/>')
        parts.append(f'{mark}<text x="{_n(lx + 22)}" y="{_n(ly + 4)}" font-size="10">'
                     f"{_t(label)}</text>")
    return "".join(parts)


# ---- fleet size: compact heatmaps and the supernode overview ----------------------------

QUANTUM = 0.025  # compact maps bin scores to 2.5 % steps, so runs of like cells merge


def block_heatmap(labels: Sequence[str], score: Sequence[Sequence[float]] | np.ndarray, *, title: str,
                  failed: Sequence[Sequence[bool]] | np.ndarray | None = None,
                  partial: Sequence[Sequence[bool]] | np.ndarray | None = None, max_px: int = 640) -> str:
    """A heatmap for aggregated (host x host) cells, sized for a fleet: one ``<path>`` per
    colour, each row's runs of like cells merged into one rectangle, no per-cell hover
    text. ``score`` holds NaN (or None) where nothing was measured. Failed cells are black
    with a white ✕; partly failed cells get a black outline. Colours are binned to QUANTUM.
    The cells are arrays: a colour per distinct bin, then a string per run of like cells
    (a fleet's map is 64 supernodes of 32 x 32 hosts), never a call per cell.
    """
    n = len(labels)
    if n == 0:
        return ""
    cs = max(3, min(22, int(max_px / n)))
    font = max(6.0, min(11.0, cs - 1))
    every = max(1, math.ceil(font / cs))
    margin = int(8 + font * 0.6 * max(len(str(s)) for s in labels))
    top = 24 + margin
    grid = cs * n
    width, height = max(margin + grid + 10, LEGEND_W), top + grid + 40
    out = [_open("heatmap block", width, height, title)]
    out += _axis_labels(labels, every, margin, top, cs, font)
    bad = _cells(failed, n)
    fill_of, fills = _block_fills(np.array(score, dtype=float).reshape(n, n), bad)
    change = np.ones((n, n), dtype=bool)
    change[:, 1:] = fill_of[:, 1:] != fill_of[:, :-1]
    rows, starts = np.nonzero(change)   # row-major: each row's runs in order
    ends = np.append(starts[1:], n)
    ends[np.append(rows[1:] != rows[:-1], True)] = n   # a row's last run ends at its edge
    runs: dict[str, list[str]] = {}
    for i, j, k, f in zip(rows.tolist(), starts.tolist(), ends.tolist(), fill_of[rows, starts].tolist()):
        runs.setdefault(fills[f], []).append(f"M{margin + cs * j} {top + cs * i}h{cs * (k - j)}v{cs}h{-cs * (k - j)}z")
    crosses = [f"M{margin + cs * j + 1} {top + cs * i + 1}l{cs - 2} {cs - 2}m0 {2 - cs}l{2 - cs} {cs - 2}"
               for i, j in zip(*(a.tolist() for a in np.nonzero(bad)))]
    outlines = [f"M{margin + cs * j} {top + cs * i}h{cs}v{cs}h{-cs}z"
                for i, j in zip(*(a.tolist() for a in np.nonzero(_cells(partial, n) & ~bad)))]
    for fill, parts in runs.items():
        out.append(f'<path fill="{fill}" d="{"".join(parts)}"/>')
    if outlines:
        out.append(f'<path fill="none" stroke="#000" stroke-width="1.5" d="{"".join(outlines)}">'
                   "<title>some probes failed</title></path>")
    if crosses:
        out.append(f'<path fill="none" stroke="#fff" stroke-width="1.2" d="{"".join(crosses)}">'
                   "<title>\u2715 failed</title></path>")
    out.append(_heatmap_legend(4, top + grid + 12))
    out.append("</svg>")
    return "\n".join(out)


def _cells(flags: Sequence[Sequence[bool]] | np.ndarray | None, n: int) -> np.ndarray:
    """An n x n boolean array of cell flags (all False when there are none)."""
    if flags is None:
        return np.zeros((n, n), dtype=bool)
    return np.array(flags, dtype=bool).reshape(n, n)


def _block_fills(score: np.ndarray, failed: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Each cell's fill as an index into the distinct fills (as :func:`_block_fill` colours
    a cell: failed, missing, or its score's bin), the fills in order of their index."""
    with np.errstate(invalid="ignore"):
        q = np.floor(score / QUANTUM)
    code = np.where(failed, np.inf, np.where(np.isnan(q), -np.inf, q))   # (no bin is infinite)
    distinct, at = np.unique(code, return_inverse=True)
    names = [FAILED_FILL if c == math.inf else MISSING_FILL if c == -math.inf else _binned_color(int(c))
             for c in distinct.tolist()]
    fills = list(dict.fromkeys(names))   # two bins may share a colour (clamped): one fill
    index = np.array([fills.index(name) for name in names], dtype=np.int64)
    return index[at.reshape(score.shape)], fills


def _block_fill(score: float, failed: bool) -> str:
    if failed:
        return FAILED_FILL
    if score is None or math.isnan(score):
        return MISSING_FILL
    return _binned_color(math.floor(score / QUANTUM))


@lru_cache(maxsize=None)
def _binned_color(q: int) -> str:
    """The colour of a score bin (a few dozen bins: each computed once per process)."""
    return score_color(min(1.0, max(0.5, q * QUANTUM)))


@dataclass(frozen=True)
class Tile:
    """One supernode in the fleet overview."""

    name: str
    worst: float | None   # worst margin (measured / reference), None: nothing measured
    bad: int              # findings at or above the gate that touch it
    failed: int           # pair directions that carried nothing
    detail: str           # hover text


def fleet_tiles(tiles: Sequence[Tile], *, title: str, per_row: int = 8) -> str:
    """The fleet at a glance: one tile per supernode coloured by its worst margin, with
    the margin as text and a ✕ (not colour alone) where it has findings or failed pairs."""
    if not tiles:
        return ""
    tw, th, gap = 112, 58, 6
    cols = min(per_row, len(tiles))
    rows = math.ceil(len(tiles) / cols)
    width = max(cols * (tw + gap) + 10, LEGEND_W)
    height = 26 + rows * (th + gap) + 44
    out = [_open("fleet", width, height, title)]
    for k, tile in enumerate(tiles):
        x, y = 4 + (k % cols) * (tw + gap), 26 + (k // cols) * (th + gap)
        flagged = tile.bad > 0 or tile.failed > 0
        fill = MISSING_FILL if tile.worst is None else score_color(tile.worst)
        stroke = ' stroke="#000" stroke-width="3"' if flagged else ' stroke="#666" stroke-width="1"'
        margin = "not measured" if tile.worst is None else f"worst {tile.worst:.0%}"
        mark = f"\u2715 {tile.bad} finding{'s' if tile.bad != 1 else ''}" if tile.bad else (
            f"\u2715 {tile.failed} failed" if tile.failed else "\u2713 ok")
        bold = ' font-weight="bold"' if flagged else ""
        text_fill = "#fff" if tile.worst is not None and tile.worst < 0.7 else "#000"
        body = (f'<rect x="{x}" y="{y}" width="{tw}" height="{th}" rx="4" fill="{fill}"{stroke}/>'
                f'<text x="{x + 6}" y="{y + 16}" font-size="12" font-weight="bold" fill="{text_fill}">'
                f'{_t(_clip(tile.name, 15))}</text>'
                f'<text x="{x + 6}" y="{y + 32}" font-size="11" fill="{text_fill}">{_t(margin)}</text>'
                f'<text x="{x + 6}" y="{y + 48}" font-size="11" fill="{text_fill}"{bold}>'
                f'{_t(mark)}</text>')
        # (No <a> inside the SVG: its href is not a plain link to scripts and checkers;
        # the page links each supernode to its heatmap in HTML below the tiles.)
        out.append(f"<g><title>{_t(tile.name)}: {_t(tile.detail)}</title>{body}</g>")
    out.append(_heatmap_legend(4, 26 + rows * (th + gap) + 8))
    out.append("</svg>")
    return "\n".join(out)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _axis_labels(labels: Sequence, every: int, margin: float, top: float, cs: float, font: float) -> list[str]:
    """Row labels on the left and column labels rotated on top, every ``every``-th one."""
    out = []
    for i in range(0, len(labels), every):
        y = top + cs * i + cs / 2 + font / 3
        x = margin + cs * i + cs / 2 + font / 3
        out.append(f'<text x="{_n(margin - 4)}" y="{_n(y)}" font-size="{_n(font)}" '
                   f'text-anchor="end">{_t(labels[i])}</text>')
        out.append(f'<text transform="translate({_n(x)},{_n(top - 4)}) rotate(-90)" '
                   f'font-size="{_n(font)}">{_t(labels[i])}</text>')
    return out
