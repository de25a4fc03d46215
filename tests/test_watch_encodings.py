"""`watch` reads its dumps as `sncheck parse` reads a file (issue 28, parse28e): through
:func:`sncheck.vendors.delivery.decode`, so a Flight Recorder dump, an Inspector log or a RAS
status saved with a UTF-8 byte order mark or as UTF-16 (PowerShell's `>`, Notepad's 'Unicode')
reads as the dump itself. Before, `watch` decoded UTF-8 alone: a BOM before a JSON dump made it
'not a dump sncheck knows', UTF-16 'binary data', while `parse` read the same bytes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sncheck.watch import dumps

ROOT = Path(__file__).resolve().parents[1]
INSPECTOR = ROOT / "fixtures" / "real" / "r4" / "nccl-ras" / \
    "04_nccl_inspector_v4.0_verbose_reducescatter_2GiB_busbw_366.13_readme_example.json.txt"
RAS = ROOT / "fixtures" / "real" / "nccl-ras" / "01_mismatch_allgather_2.26.2_issue1911.txt"
FR = json.dumps({"version": "2.4", "pg_config": {}, "entries": [
    {"record_id": 0, "pg_id": 0, "collective_seq_id": 1, "p2p_seq_id": 0, "op_id": 1,
     "profiling_name": "nccl:all_reduce", "time_created_ns": 1000, "state": "completed",
     "input_sizes": [[1024]], "output_sizes": [[1024]], "input_dtypes": ["Float"], "output_dtypes": ["Float"],
     "process_group": ["0", "default_pg"], "time_discovered_started_ns": 1100, "time_discovered_completed_ns": 1200,
     "retired": True, "timeout_ms": 600000, "is_p2p": False}]})


def _read(tmp_path: Path, name: str, raw: bytes) -> dumps.Dump | dumps.Unreadable:
    path = tmp_path / name
    path.write_bytes(raw)
    return dumps.read_dump(path)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le-bom"])
@pytest.mark.parametrize("name,text", [("fr-job-rank0.json", FR), ("inspector.json", INSPECTOR.read_text()),
                                       ("ras.txt", RAS.read_text())], ids=["flight-recorder", "inspector", "ras"])
def test_a_dump_with_a_bom_or_in_utf16_reads_as_the_dump(tmp_path: Path, name: str, text: str, encoding: str) -> None:
    plain = _read(tmp_path, name, text.encode())
    assert isinstance(plain, dumps.Dump), plain
    raw = ("\ufeff" + text).encode("utf-16-le") if encoding == "utf-16-le-bom" else text.encode(encoding)
    got = _read(tmp_path, name, raw)
    assert isinstance(got, dumps.Dump), got
    assert (got.format, got.data, got.rank, got.notes) == (plain.format, plain.data, plain.rank, plain.notes)


def test_bytes_that_are_no_text_stay_unreadable(tmp_path: Path) -> None:
    for name, raw in (("ras.txt.gz", gzip.compress(RAS.read_bytes())), ("core", bytes(range(256)) * 4)):
        got = _read(tmp_path, name, raw)
        assert isinstance(got, dumps.Unreadable) and "binary data" in got.reason, (name, got)
