"""The rows a worker appends, read back in chunks (sncheck.rows.JsonLines): the one reader
under the local, SSH and Slurm backends. A line split anywhere, even inside a UTF-8
character, comes back whole; a line that is not a JSON row is reported, never dropped
and never a crash."""

import json

from sncheck.backends.processes import RowTail
from sncheck.backends.mock import MockBackend
from sncheck.run.inputs import load_inventory
from sncheck.rows import JsonLines
from sncheck.topology import Topology

ROWS = [{"kind": "p2p", "src": "n/gpu0", "dst": "n/gpu1", "note": "héllo ✓"},
        {"_progress": "round 1"}, {"kind": "p2p", "src": "n/gpu1", "dst": "n/gpu0", "note": ""}]
TEXT = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS).encode()


def test_every_split_point_gives_the_same_rows() -> None:
    for cut in range(len(TEXT) + 1):
        lines = JsonLines()
        got = lines.feed(TEXT[:cut]) + lines.feed(TEXT[cut:])
        assert got == ROWS, cut
        assert lines.partial == b""


def test_a_last_line_without_its_newline_waits() -> None:
    lines = JsonLines()
    assert lines.feed(TEXT[:-1]) == ROWS[:2]
    assert lines.feed(b"\n") == ROWS[2:]


def test_a_line_that_is_not_a_json_row_comes_back_as_text() -> None:
    got = JsonLines().feed(b'{"kind": "p2p"}\n{"kind": "p2\n[1, 2]\n42\n\n')
    assert got == [{"kind": "p2p"}, '{"kind": "p2', "[1, 2]", "42"]


def test_the_file_tail_reads_what_was_appended_since(tmp_path) -> None:
    path = tmp_path / "rows.jsonl"
    tail = RowTail(path)
    assert tail.lines() == []  # not written yet
    with open(path, "wb") as f:
        f.write(TEXT[:10])
        f.flush()
        assert tail.lines() == []
        f.write(TEXT[10:])
        f.flush()
        assert tail.lines() == ROWS
        assert tail.lines() == []


def test_a_garbled_worker_line_is_a_parse_failed_row(tmp_path) -> None:
    inv = load_inventory("fixtures/inventories/demo-2sn.yaml")
    backend = MockBackend(Topology(inv))
    said, emitted = [], []
    backend.progress = said.append
    n = backend.pass_worker_rows(JsonLines().feed(TEXT + b"oops\n"), "connectivity", "sn0n0", emitted.append)
    assert n == 2 and said == ["round 1"]
    assert emitted[:2] == [ROWS[0], ROWS[2]]
    assert emitted[2]["status"] == "parse_failed" and emitted[2]["entity"] == "sn0n0"
    assert "'oops'" in emitted[2]["message"]
