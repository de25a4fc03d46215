"""TransferBench's a2a summary of a multi-rank run (NUM_RESULTS > 0): the rows and cells the
preset prints for several ranks, read from the bordered table (see ``transferbench``'s grammar).

From ``src/client/Presets/AllToAll.hpp`` (AllToAllPreset, releases after v1.62; code corpus file id
60787445114): NUM_RESULTS defaults to 1 where there is more than one rank. The header names each
device column ' GPU %02d ' followed by a centred '(Rnk)' column, then ' NIC ' (NIC_QUEUE_PAIRS > 0),
' STotal ' and ' Actual ', each with its '(Rnk)'; a column border before every device column and
after each group. Every GPU (and RTotal) has NUM_RESULTS MAX rows (the label ' GPU %02d MAX ' on
the first only), one ' GPU %02d AVG ' row, NUM_RESULTS MIN rows (the label on the last only), then a
row border. A MAX/MIN cell is ' %.2f ' and its rank '%d ' (the n-th highest/lowest over the ranks);
an AVG cell ' %.2f ' alone (the mean over the ranks); a pair no rank ran (the diagonal without
A2A_LOCAL) has ' N/A ' in its AVG row and nothing in its MAX/MIN rows. STotal is each rank's row
sum, Actual each rank's transfers x its slowest; RTotal's cells the per-rank column totals. The
'CPU Timed:' cell and the three bandwidth lines follow as in a single rank's run.

Kept: ``rows`` / ``row_totals`` / ``column_totals`` / ``totals`` hold the AVG rows (what a single
rank's run prints there); ``extrema[name][MAX|MIN]`` a list (one a result, highest first for MAX,
lowest last for MIN as printed) of ``{column: {GBps, rank}}`` (null where the pair was not run);
``results``: NUM_RESULTS, counted from the first GPU's MAX rows. SHOW_BORDERS=0 prints the same
cells without the bars: empty MAX/MIN cells then cannot be placed, so only the bordered table is read.
"""

from __future__ import annotations

import re
from typing import Any

_NUM = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_RANKED = re.compile(r"^((?:GPU|NIC) \d+|NIC|STotal|Actual) \(Rnk\)$")
_LABEL = re.compile(r"^(GPU \d+|RTotal) (MAX|AVG|MIN)$")
_VALUE = re.compile(rf"{_NUM}|N/A")
_EXTREME = re.compile(rf"({_NUM}) (\d+)")


def header(groups: list[str]) -> dict[str, Any] | None:
    """The multi-rank table's header (its '\u2502'-separated groups), as a matrix to fill; None for any other line."""
    if not groups or groups[0] != "SRC\\DST" or not any(g.endswith("(Rnk)") for g in groups[1:]):
        return None
    names = [m.group(1) if (m := _RANKED.match(" ".join(g.split()))) else None for g in groups[1:]]
    if None in names or names[-2:] != ["STotal", "Actual"]:
        return {"title": "a2a", "columns": [], "extra": [], "rows": {}, "ranked": True, "bad_header": True}
    cols = [n for n in names if n is not None and n.startswith("GPU")]
    return {"title": "a2a", "columns": cols, "extra": [n for n in names if n is not None and not n.startswith("GPU")],
            "rows": {}, "row_totals": {}, "extrema": {}, "ranked": True, "results": None}


def row(cur: dict[str, Any], groups: list[str], at: list[Any], errors: list[str]) -> bool:
    """Read one bordered row of ``cur`` (a :func:`header` matrix) into it; False where the line is
    none of its rows (the 'CPU Timed:' cell). ``at``: the (name, kind) of the last row read."""
    label = groups[0]
    m = _LABEL.match(label)
    if label and m is None:
        return False
    if m is not None:
        name, kind = m.group(1), m.group(2)
    elif at and at[0] is not None:  # a MAX row after the first, a MIN row before the last: no label
        name, kind = at[0][0], "MAX" if at[0][1] == "MAX" else "MIN"
    else:
        return False
    at[:] = [(name, kind)]
    keys = cur["columns"] + cur["extra"]
    cells = groups[1:]
    where = f"a2a {name} {kind}"
    if len(cells) != len(keys):
        errors.append(f"{where}: {len(cells)} cells for {len(keys)} columns (cut short)")
        return True
    if kind == "AVG":
        if not all(_VALUE.fullmatch(c) for c in cells):
            errors.append(f"{where}: a cell that is no ' %.2f ' or N/A (cut short)")
            return True
        vals = [None if c == "N/A" else float(c) for c in cells]
        n = len(cur["columns"])
        if name == "RTotal":
            cur["column_totals"] = dict(zip(keys[:-2], vals[:-2]))
            cur["totals"] = {"RTotal": vals[-2], "actual": vals[-1]}
        else:
            cur["rows"][name] = dict(zip(cur["columns"], vals[:n]))
            cur["row_totals"][name] = dict(zip(cur["extra"], vals[n:]))
        return True
    ext: list[dict[str, Any] | None] = []
    for c in cells:
        if not c:
            ext.append(None)  # a pair no rank ran: its AVG cell says N/A
        elif e := _EXTREME.fullmatch(" ".join(c.split())):
            ext.append({"GBps": float(e.group(1)), "rank": int(e.group(2))})
        else:
            errors.append(f"{where}: a cell that is no ' %.2f ' and its rank (cut short)")
            return True
    cur["extrema"].setdefault(name, {"MAX": [], "MIN": []})[kind].append(dict(zip(keys, ext)))
    if cur["results"] is None and kind == "MIN":
        cur["results"] = len(cur["extrema"][name]["MAX"])
    return True


def not_whole(cur: dict[str, Any]) -> list[str]:
    """What a read multi-rank table lacks: a GPU or RTotal block without NUM_RESULTS MAX and MIN rows."""
    if cur.get("bad_header"):
        return ["a2a: a '(Rnk)' header the grammar does not hold (cut short)"]
    want = cur["results"]
    blocks = [*cur["columns"], "RTotal"]
    return [f"a2a {name}: {len(got['MAX'])} MAX and {len(got['MIN'])} MIN rows for NUM_RESULTS {want} (cut short)"
            for name in blocks if (got := cur["extrema"].get(name, {"MAX": [], "MIN": []}))
            and (len(got["MAX"]) != want or len(got["MIN"]) != want)]
