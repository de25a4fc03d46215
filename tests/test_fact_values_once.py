"""Host facts' JSON values at fleet size (issue 31: 16,384 cards read 20 MB of NVLink
counters, one text of zeros per host): a value several rows hold is encoded once when the
rows are written, each distinct text is decoded once by the fabric counters, and their frame
is the same, row for row and type for type, as each host's reads give it alone; the kernel
log's not-judged check decodes none but the kernel log's."""

from __future__ import annotations

import json

import pandas as pd

from sncheck.config.inventory import Host, Inventory, Supernode
from sncheck.health.fabric import fabric_counters
from sncheck.health.invariants import kernel_not_judged
from sncheck.health.metrics import DetectContext
from sncheck.store.frames import frames_of, rows_table
from sncheck.store.rundir import RunStore, read_frames
from sncheck.topology import Topology

HOSTS = [f"h{i}" for i in (1, 2, 10, 3)]   # (not in name order: rows keep the reads' order)
NAMES = ("entity", "kind", "fact", "device", "counter")


def _nvlink(read: int, crc: int, card: int | None = 0) -> dict:
    return {"read": read, "gpus": [{"index": 1, "card": 1, "links": {"10": {"crc_errors": crc, "replay_errors": 0},
                                                                    "2": {"crc_errors": 0, "recovery": "n/a"}}},
                                   {"index": 0, "card": card, "links": {"0": {"replay_errors": 4}}}]}


def _ib(read: int, symbol: int) -> dict:
    return {"read": read, "error_counters": ["symbol_error"],
            "ports": [{"device": "mlx5_1", "port": 1, "rail": 1, "counters": {"symbol_error": symbol, "rx": 9}},
                      {"device": "mlx5_3", "port": 1, "rail": 3, "counters": {"symbol_error": 1}}]}


def _rows() -> list[dict]:
    """Two reads per host: the same texts on most hosts, others on one (a counter that grew,
    one that went down, a GPU with no card, an NVLink read missing from the second read)."""
    rows = []
    for host in HOSTS:
        odd = host == "h10"
        reads = [("nvlink_errors", _nvlink(0, 5)), ("ib_counters", _ib(0, 2)),
                 ("nvlink_errors", _nvlink(1, 9 if odd else 5, card=None if odd else 0)),
                 ("ib_counters", _ib(1, 1 if odd else 2))]
        if host == "h3":
            reads = reads[:3] + [("ib_counters", {**_ib(1, 2), "ports": _ib(1, 2)["ports"][:1]})]
        rows += [{"kind": "host_fact", "layer": "connectivity", "host": host, "fact": fact, "status": "ok",
                  "ok": True, "value": value} for fact, value in reads]
    return rows


def _text(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype({c: str for c in NAMES})


def _context() -> DetectContext:
    inv = Inventory("t", (Supernode("sn0", tuple(HOSTS)),), {h: Host(h, "sn0", 2) for h in HOSTS})
    return DetectContext(Topology(inv), {})


def test_each_distinct_read_is_decoded_once_and_the_frame_is_each_hosts_own(tmp_path, monkeypatch):
    rows, ctx = _rows(), _context()
    store = RunStore(tmp_path, run_id="r-1")
    store.emit_rows(rows)
    store.close()
    texts = {json.dumps(r["value"]) for r in rows}
    decoded = []
    loads = json.loads
    monkeypatch.setattr(json, "loads", lambda s, *a, **k: decoded.append(s) or loads(s, *a, **k))
    frame = fabric_counters(read_frames(tmp_path), ctx)
    monkeypatch.undo()
    assert len(decoded) <= len(texts) < len(rows)

    # the same frame as each host's reads give it alone, in the reads' order (the names as text:
    # each frame's categories are its own names)
    alone = [_text(fabric_counters(frames_of([r for r in rows if r["host"] == h]), ctx)) for h in HOSTS]
    pd.testing.assert_frame_equal(_text(frame), pd.concat(alone, ignore_index=True))
    pd.testing.assert_frame_equal(frame, fabric_counters(frames_of(rows), ctx))
    by = frame.set_index(["entity", "device", "counter"])
    assert by.loc[("h10/gpu1", "GPU 1 link 10", "crc_errors"), "growth"] == 4
    assert by.loc[("h2/gpu1", "GPU 1 link 10", "crc_errors"), "growth"] == 0
    # h10's GPU 0 lost its card in the second read: the host's counter, then the card's, each read once
    assert pd.isna(by.loc[("h10", "GPU 0 link 0", "replay_errors"), "before"])
    assert pd.isna(by.loc[("h10/gpu0", "GPU 0 link 0", "replay_errors"), "after"])
    assert pd.isna(by.loc[("h10/nic1", "mlx5_1 port 1", "symbol_error"), "growth"])  # went down: not judged
    assert by.loc[("h1", "mlx5_3 port 1", "symbol_error"), "growth"] == 0  # rail 3 of 2 cards: the host's
    assert pd.isna(by.loc[("h3", "mlx5_3 port 1", "symbol_error"), "after"])  # not in h3's last read
    assert list(dict.fromkeys(e.split("/")[0] for e in frame["entity"])) == HOSTS


def test_a_value_several_rows_hold_is_encoded_once_and_each_row_holds_its_text(monkeypatch):
    shared = _nvlink(0, 5)   # (as the mock's hosts in one state hold one rendering's values)
    rows = [{"kind": "host_fact", "host": h, "fact": "nvlink_errors", "status": "ok", "value": shared}
            for h in HOSTS] + [{"kind": "host_fact", "host": "h9", "fact": "nvlink_errors", "status": "ok",
                                "value": _nvlink(0, 5)}, {"kind": "host_fact", "host": "h8", "value": None}]
    encoded = []
    dumps = json.dumps
    monkeypatch.setattr(json, "dumps", lambda v, *a, **k: encoded.append(v) or dumps(v, *a, **k))
    table = rows_table("host_fact", rows)
    monkeypatch.undo()
    assert len(encoded) == 2   # the shared value once, the equal one of its own once, None not at all
    assert table.column("value").to_pylist() == [dumps(shared)] * (len(HOSTS) + 1) + [None]


def test_the_kernel_logs_check_decodes_no_other_facts_value(tmp_path, monkeypatch):
    kernel = {"events": [{"source": "xid", "code": 79, "card": 1, "text": "NVRM: Xid (PCI:0000:2a:00): 79, ..."}],
              "earlier": [], "boot": None, "driver_version": None}
    rows = _rows() + [{"kind": "host_fact", "layer": "connectivity", "host": "h1", "fact": "kernel_log",
                       "status": "ok", "ok": True, "value": kernel}]
    store = RunStore(tmp_path, run_id="r-1")
    store.emit_rows(rows)
    store.close()
    decoded = []
    loads = json.loads
    monkeypatch.setattr(json, "loads", lambda s, *a, **k: decoded.append(s) or loads(s, *a, **k))
    found = kernel_not_judged("connectivity", read_frames(tmp_path), _context(), frozenset(), "warning")
    monkeypatch.undo()
    assert [(f.entity, f.evidence["source"]) for f in found] == [("h1", "xid")]
    assert decoded == [json.dumps(kernel)]   # the kernel log's value alone, not the fleet's counters


def test_the_counters_names_are_held_as_codes_over_sorted_names(tmp_path):
    """The run keeps its counters (7 M at 131,072 cards) until evidence lets them go: their five
    name columns as text were 643 MB (issue 31); as categoricals each is a few bytes a counter.
    Their categories are sorted, so the findings grouped by entity come in name order as before,
    whatever order the hosts were read in."""
    rows, ctx = _rows(), _context()
    store = RunStore(tmp_path, run_id="r-1")
    store.emit_rows(rows)
    store.close()
    frame = fabric_counters(read_frames(tmp_path), ctx)
    for c in NAMES:
        assert isinstance(frame[c].dtype, pd.CategoricalDtype), c
        names = list(frame[c].cat.categories)
        assert names == sorted(names) and set(names) == set(frame[c].astype(str)), c
        assert frame[c].cat.codes.dtype.itemsize <= 2, c
    hosts = list(dict.fromkeys(e.split("/")[0] for e in frame["entity"]))
    assert hosts == HOSTS   # the rows in the reads' order, h10's after h2's
    entities = [e for e, _ in frame.groupby(["entity", "kind"], sort=True, observed=True).groups]
    assert entities == sorted(set(frame["entity"].astype(str))) and entities.index("h10") < entities.index("h2")
