"""A job's communication share and per-collective bus bandwidth from its Flight Recorder
timings (sncheck/watch/frtime.py): dumps written to torch's grammar and worked by hand, and
the real 4-rank gloo job of the watch tests."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from sncheck.watch.frtime import op_name
from watch_harness import gating, watch

HOST = socket.gethostname()
MS = 1_000_000  # ns


def entry(seq: int, created_ns: int, *, op: str = "nccl:all_reduce", numel: int = 1 << 20, dtype: str = "Float",
          duration_ms: float | None = None, pg: str = "0") -> dict:
    """One Flight Recorder entry as torch's dump writes it (FlightRecorderDetail.hpp, version 2.10)."""
    e = {"record_id": seq, "pg_id": 0, "process_group": [pg, "default_pg"], "collective_seq_id": seq,
         "p2p_seq_id": 0, "op_id": seq, "profiling_name": op, "time_created_ns": created_ns,
         "input_sizes": [[numel]], "input_dtypes": [dtype], "output_sizes": [[numel]], "output_dtypes": [dtype],
         "state": "completed" if duration_ms is not None else "scheduled", "is_p2p": False, "retired": True,
         "timeout_ms": 600000,
         "time_discovered_started_ns": created_ns + 1000 if duration_ms is not None else 0,
         "time_discovered_completed_ns": created_ns + int((duration_ms or 0) * MS) if duration_ms is not None else 0}
    if duration_ms is not None:
        e["duration_ms"] = duration_ms
    return e


def write_job(d: Path, per_rank: dict[int, list[dict]]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for rank, entries in per_rank.items():
        (d / f"fr-j1-rank{rank}.json").write_text(json.dumps({"version": "2.10", "entries": entries,
                                                               "pg_config": {}, "pg_status": {}}))
    (d / "ranks.json").write_text(json.dumps([{"rank": r, "host": "node001", "local_rank": r, "job": "j1"}
                                              for r in per_rank]))
    return d


def test_timed_dumps_share_and_busbw_by_hand(tmp_path) -> None:
    # 4 ranks, a collective every 10 ms (arrivals 0.1 ms apart), each lasting 2 ms on ranks
    # 0-2 and 6 ms on rank 3: over the window from the first to the last arrival (40 ms,
    # 4 collectives inside it) rank 3 spends 24 ms in collectives: 60%; the others 20%.
    per_rank = {r: [entry(s, 1_000 * MS + s * 10 * MS + r * 100_000, duration_ms=6.0 if r == 3 else 2.0)
                    for s in range(1, 6)] for r in range(4)}
    code, res, out = watch(str(write_job(tmp_path / "d", per_rank)), "--out", str(tmp_path / "o"))
    share = res["layers"][0]["summary"]["comm_share"]
    assert share["basis"] == "duration" and share["lower_bound"] is False
    by = {r["rank"]: r for r in share["ranks"]}
    assert by[3]["share"] == pytest.approx(24 / 40) and by[0]["share"] == pytest.approx(8 / 40)
    assert share["job"] == pytest.approx((3 * 0.2 + 0.6) / 4)
    # busbw: 4 MiB all-reduce over 4 ranks, median duration 2 ms: algbw 2.097 GB/s, busbw x 2 x 3/4
    (bw,) = share["busbw"]
    assert bw["collective"] == "all_reduce" and bw["size_bytes"] == 4 << 20 and bw["ranks"] == 4
    assert bw["algbw_GBps"] == pytest.approx((4 << 20) / 2e-3 / 1e9)
    assert bw["busbw_GBps"] == pytest.approx(bw["algbw_GBps"] * 1.5)


def test_untimed_dumps_give_the_wait_as_a_lower_bound(tmp_path) -> None:
    # gloo's grammar: no duration, no discovered times. Rank 2 arrives 4 ms after the
    # others at every collective (10 ms apart): each other rank waits 4 ms of 10, rank 2 none.
    per_rank = {r: [entry(s, 1_000 * MS + s * 10 * MS + (4 * MS if r == 2 else 0), op="gloo:all_reduce")
                    for s in range(1, 7)] for r in range(4)}
    code, res, out = watch(str(write_job(tmp_path / "d", per_rank)), "--out", str(tmp_path / "o"))
    share = res["layers"][0]["summary"]["comm_share"]
    assert share["basis"] == "arrival" and share["lower_bound"] is True and share["busbw"] == []
    by = {r["rank"]: r["share"] for r in share["ranks"]}
    assert by[2] == pytest.approx(0.0) and by[0] == pytest.approx(0.4) and by[1] == pytest.approx(0.4)
    assert share["job"] == pytest.approx(0.3)


def test_partly_timed_groups_fall_back_to_arrivals(tmp_path) -> None:
    # one rank's entries without durations (an old dump, timing off there): the group is
    # judged on arrivals, never on the ranks that happened to be timed
    per_rank = {r: [entry(s, 1_000 * MS + s * 10 * MS, duration_ms=None if r == 1 else 2.0) for s in range(1, 5)]
                for r in range(3)}
    _, res, _ = watch(str(write_job(tmp_path / "d", per_rank)), "--out", str(tmp_path / "o"))
    assert res["layers"][0]["summary"]["comm_share"]["basis"] == "arrival"


def test_op_names_and_sizes() -> None:
    assert [op_name(n) for n in ("nccl:all_reduce", "gloo:all_reduce", "nccl:_allgather_base",
                                 "nccl:reduce_scatter_tensor_coalesced", "nccl:all_to_all", "nccl:broadcast",
                                 "nccl:reduce", "nccl:barrier")] == [
        "all_reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", None]


def test_real_gloo_job_share_and_straggler(watch_jobs, tmp_path) -> None:
    """The real 4-rank job: the straggler phase names rank 2 as before, and the job's share
    shows the others waiting for it (rank 2 waits least)."""
    d = watch_jobs["straggler"]
    code, res, out = watch(str(d), "--rank-map", str(d / "ranks.json"), "--out", str(tmp_path / "o"))
    assert code == 1 and {f["entity"] for f in gating(res)} == {f"{HOST}/gpu2"}, out
    share = res["layers"][0]["summary"]["comm_share"]
    by = {r["card"]: r["share"] for r in share["ranks"]}
    assert share["lower_bound"] and len(by) == 4
    assert min(by, key=by.get) == f"{HOST}/gpu2"
    others = [v for c, v in by.items() if c != f"{HOST}/gpu2"]
    assert min(others) > 3 * by[f"{HOST}/gpu2"] and min(others) > 0.2   # 40 ms of waiting a step
    _, clean, _ = watch(str(watch_jobs["clean"]), "--out", str(tmp_path / "c"))
    assert clean["layers"][0]["summary"]["comm_share"]["job"] < share["job"]
