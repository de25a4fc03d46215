"""sncheck watch against what a real directory of dumps can hold: hosts' clocks apart,
point-to-point ops, other runs beside the job, hostile rank maps and dump contents, a
huge dump, a group whose ids start again, a rank that joined late, a rank slow in one
group only. Every case starts from the dumps of one real gloo job (tests/watch_harness.py,
shared with tests/test_watch.py) and changes what the case is about."""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from watch_harness import gating, watch


def every(res: dict) -> list[dict]:
    return res["findings"] + [r for f in res["findings"] for r in f["evidence"].get("related", [])]


def dumps_of(d: Path) -> dict[int, Path]:
    """The helper's dumps by rank, a pickle (torch's format) turned into the same JSON first."""
    out = {}
    for p in d.glob("fr-*-rank*.*"):
        if p.suffix == ".pkl":
            data = pickle.loads(p.read_bytes())  # the real job's own dump: trusted here
            p.unlink()
            p = p.with_suffix(".json")
            p.write_text(json.dumps(data))
        out[int(p.name.rsplit("rank", 1)[1].split(".")[0])] = p
    return out


def copy(src: Path, dst: Path, hosts: list[str] | None = None, skew_ms: dict[str, float] | None = None) -> Path:
    """The job's dumps, each rank placed on ``hosts[rank]`` (one card per host when the
    names are all different), the clock of each host in ``skew_ms`` moved by that much."""
    shutil.copytree(src, dst)
    if hosts:
        per: dict[str, int] = {}
        ranks = json.loads((dst / "ranks.json").read_text())
        for r in ranks:
            r["host"], r["local_rank"] = hosts[r["rank"]], per.get(hosts[r["rank"]], 0)
            per[r["host"]] = r["local_rank"] + 1
        (dst / "ranks.json").write_text(json.dumps(ranks))
    for rank, p in dumps_of(dst).items():
        shift = int((skew_ms or {}).get(hosts[rank] if hosts else "", 0) * 1e6)
        if shift:
            data = json.loads(p.read_text())
            for e in data["entries"]:
                e["time_created_ns"] += shift
            p.write_text(json.dumps(data))
    return dst


# ------------------------------------------------------------------ clocks
PAIRS, SINGLES = ["hA", "hA", "hB", "hB"], ["h0", "h1", "h2", "h3"]


@pytest.mark.parametrize("hosts,skew,job,named", [
    (PAIRS, {"hB": 500}, "clean", set()),             # the straggler's host, ahead: its ranks look late
    (SINGLES, {"h1": -300, "h3": 200}, "clean", set()),
    (PAIRS, {"hB": 500}, "straggler", {"hB/gpu0"}),
    (PAIRS, {"hB": -500}, "straggler", {"hB/gpu0"}),  # behind: the straggler looks early
    (SINGLES, {"h2": -500}, "straggler", {"h2/gpu0"}),
    (SINGLES, {"h0": 500, "h3": -80}, "straggler", {"h2/gpu0"}),
])
def test_hosts_clocks_apart(watch_jobs, tmp_path, hosts, skew, job, named):
    """A constant offset of a host's clock is judged out: the straggler is named (and only
    it) whichever way its host's clock is off, and a clean job with hosts' clocks apart
    names nobody. Without the offsets judged out each of these names the wrong card."""
    d = copy(watch_jobs[job], tmp_path / "d", hosts, skew)
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == (1 if named else 0), out
    assert {f["entity"] for f in gating(res)} == named, out
    offsets = sorted(skew.get(h, 0) for h in set(hosts))
    centre = (offsets[(len(offsets) - 1) // 2] + offsets[len(offsets) // 2]) / 2  # offsets are against the median host
    for f in gating(res):
        assert f["rule"] == "watch-straggler" and f["evidence"]["rank"] == 2
        # its host's offset is in the evidence: what was judged out is shown
        assert abs(f["evidence"]["clock_offset_ms"] - (skew.get(hosts[2], 0) - centre)) < 10, f["evidence"]


# ------------------------------------------------------------------ point-to-point
def test_gloo_p2p_ops_between_collectives(watch_jobs, tmp_path):
    """The p2p phase: a ring of sends and recvs among ranks 0, 2 and 3 after each step's
    collectives (gloo records no p2p entry, but counts them in its op ids and pg_status),
    rank 2 the straggler. Named: rank 2 only; rank 1, which made no p2p op, is not 'behind'."""
    d = watch_jobs["p2p"]
    status = {r: json.loads(p.read_text())["pg_status"] for r, p in dumps_of(d).items()}
    group = max(status[0], key=int)
    assert len({s[group]["last_enqueued_collective"] for s in status.values()}) > 1  # what misled the judge
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 1, out
    assert [(f["entity"], f["rule"]) for f in gating(res)] == [(f"{_host(d)}/gpu2", "watch-straggler")], out
    assert res["layers"][0]["summary"]["p2p_ops"] == 0


def _host(d: Path) -> str:
    return json.loads((d / "ranks.json").read_text())[0]["host"]


def _nccl_p2p(d: Path, drop_last_recv_of: int | None = None, first_record: int = 0, pg_config: bool = True) -> str:
    """Add NCCL's point-to-point entries (torch's Flight Recorder as ProcessGroupNCCL
    writes it: 'nccl:send a->b' / 'nccl:recv b<-a' in group ranks, is_p2p, p2p_seq_id,
    the collective count they follow) to the real p2p phase's dumps: after each step's
    broadcast, the ring 0 -> 2 -> 3 -> 0 the job ran. Returns the group."""
    ring = {0: 2, 2: 3, 3: 0}
    paths = dumps_of(d)
    group = max(json.loads(paths[0].read_text())["pg_status"], key=int)
    for rank, p in paths.items():
        data = json.loads(p.read_text())
        out, p2p_seq = [], 0
        casts = [e for e in data["entries"] if e["process_group"][0] == group and "broadcast" in e["profiling_name"]]
        last = casts[-1]["record_id"]
        for e in data["entries"]:
            out.append(e)
            if e["process_group"][0] != group or "broadcast" not in e["profiling_name"] or rank == 1:
                continue
            src = next(r for r, n in ring.items() if n == rank)
            for kind, name in (("send", f"nccl:send {rank}->{ring[rank]}"), ("recv", f"nccl:recv {rank}<-{src}")):
                if kind == "recv" and rank == drop_last_recv_of and e["record_id"] == last:
                    continue  # never posted
                p2p_seq += 1
                pending = rank == src_of(ring, drop_last_recv_of) and kind == "send" and e["record_id"] == last
                out.append({**e, "is_p2p": True, "profiling_name": name, "p2p_seq_id": p2p_seq,
                            "time_created_ns": e["time_created_ns"] + 200_000,
                            "state": "started" if pending else "completed"})
        for i, e in enumerate(out):
            e["record_id"] = first_record + i
        data["entries"] = out
        if pg_config:
            data["pg_config"] = {group: {"name": group, "desc": "undefined", "ranks": "[0, 1, 2, 3]"}}
        p.write_text(json.dumps(data))
    return group


def src_of(ring: dict, rank: int | None) -> int | None:
    return next((r for r, n in ring.items() if n == rank), None)


def test_nccl_p2p_entries(watch_jobs, tmp_path):
    """NCCL p2p entries: never counted as collectives (each carries the collective count
    it follows, so it would be a 'desync' or a 'hung' collective), all matched: nothing
    more than the straggler; rank 2 never posting its last recv from rank 0: rank 2, critical,
    and no other card; a buffer that wrapped: not judged (said, never a pass); a group
    whose ranks the dump does not give: not judged, said."""
    host = _host(watch_jobs["p2p"])
    d = tmp_path / "matched"
    shutil.copytree(watch_jobs["p2p"], d)
    _nccl_p2p(d)
    code, res, out = watch(str(d), "--out", str(tmp_path / "o1"))
    assert res["layers"][0]["summary"]["p2p_ops"] > 0
    assert [(f["entity"], f["rule"]) for f in gating(res)] == [(f"{host}/gpu2", "watch-straggler")], out

    d = tmp_path / "hung"
    shutil.copytree(watch_jobs["p2p"], d)
    group = _nccl_p2p(d, drop_last_recv_of=2)
    code, res, out = watch(str(d), "--out", str(tmp_path / "o2"))
    crit = [f for f in res["findings"] if f["severity"] == "critical"]
    assert [(f["entity"], f["rule"]) for f in crit] == [(f"{host}/gpu2", "watch-p2p-hung")], out
    ev = crit[0]["evidence"]
    assert (ev["peer_rank"], ev["group"], ev["measured"]) == (0, group, "1 recvs fewer"), ev

    d = tmp_path / "wrapped"
    shutil.copytree(watch_jobs["p2p"], d)
    _nccl_p2p(d, drop_last_recv_of=2, first_record=40)
    code, res, out = watch(str(d), "--out", str(tmp_path / "o3"))
    assert not [f for f in res["findings"] if f["severity"] == "critical"], out
    nj = [f for f in every(res) if f["rule"] == "watch-p2p-hung-not-judged"]
    assert [(f["entity"], f["severity"], f.get("about")) for f in nj] == [(f"{host}/gpu2", "warning", "check")], out

    d = tmp_path / "no-config"
    shutil.copytree(watch_jobs["p2p"], d)
    _nccl_p2p(d, drop_last_recv_of=2, pg_config=False)
    code, res, out = watch(str(d), "--out", str(tmp_path / "o4"))
    assert not [f for f in res["findings"] if f["severity"] == "critical"], out
    assert any(f["rule"] == "watch-p2p-hung-not-judged" for f in every(res)), out


# ------------------------------------------------------------------ other runs, one rank twice
def test_other_runs_beside_the_job(watch_jobs, tmp_path):
    """Beside the straggler's dumps: torch-named dumps of an older run (no job id in their
    names: ranks 0 to 3, and a rank 5 this job does not have), and the clean phase's
    pickle of rank 1 again under torch's name (the same job: two dumps of one rank). The
    other run is left out, said; of rank 1 the dump that reaches further is judged; the
    straggler is still named, and only it."""
    d = tmp_path / "d"
    shutil.copytree(watch_jobs["straggler"], d)
    two_hours = 2 * 3600 * 10**9
    for rank, p in list(dumps_of(d).items()) + [(5, dumps_of(d)[0])]:
        data = json.loads(p.read_text())
        for e in data["entries"]:
            e["time_created_ns"] -= two_hours
        (d / f"nccl_trace_rank_{rank}.json").write_text(json.dumps(data))
    clean_rank1 = next(watch_jobs["clean"].glob("fr-*-rank1.pkl"))
    (d / "nccl_trace_rank_1").write_bytes(clean_rank1.read_bytes())
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 1, out
    assert [(f["entity"], f["rule"]) for f in gating(res)] == [(f"{_host(d)}/gpu2", "watch-straggler")], out
    left = {f["evidence"]["dump"]: f["rule"] for f in every(res) if f["rule"].startswith("watch-dump-")}
    assert left == {**{f"nccl_trace_rank_{r}.json": "watch-dump-other-job" for r in (0, 1, 2, 3, 5)},
                    "nccl_trace_rank_1": "watch-dump-duplicate-rank"}, left
    assert res["layers"][0]["summary"]["ranks"] == 4


def test_newer_lone_dump_of_other_groups(watch_jobs, tmp_path):
    """A newer dump of another job's rank 1 (torch's name, its own groups: nothing in
    common with this job's) beside the straggler's dumps: it is not the one the rest is
    held against, and this job's rank 1 is judged, not it."""
    d = tmp_path / "d"
    shutil.copytree(watch_jobs["straggler"], d)
    data = json.loads(dumps_of(d)[1].read_text())
    for e in data["entries"]:
        e["process_group"] = ["7" + e["process_group"][0], "other"]
        e["time_created_ns"] += 3600 * 10**9
    (d / "nccl_trace_rank_1.json").write_text(json.dumps(data))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert [(f["entity"], f["rule"]) for f in gating(res)] == [(f"{_host(d)}/gpu2", "watch-straggler")], out
    left = {f["evidence"]["dump"]: f["rule"] for f in every(res) if f["rule"].startswith("watch-dump-")}
    assert left == {"nccl_trace_rank_1.json": "watch-dump-duplicate-rank"}, left


# ------------------------------------------------------------------ rank maps
@pytest.mark.parametrize("host", ["a;rm -rf /", "$(reboot)", "-oProxyCommand=x", "a b", "<script>x</script>",
                                  "n\u00f6de", "x" * 300, "node/gpu0", "", 7])
def test_hostile_host_in_rank_map(watch_jobs, tmp_path, host):
    d = tmp_path / "d"
    shutil.copytree(watch_jobs["straggler"], d)
    ranks = json.loads((d / "ranks.json").read_text())
    ranks[2]["host"] = host
    (d / "ranks.json").write_text(json.dumps(ranks))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 2 and "Traceback" not in out and "host" in out, out
    assert len(out.strip().splitlines()) == 1


def test_rank_map_duplicate_and_missing_ranks(watch_jobs, tmp_path):
    d = tmp_path / "d"
    shutil.copytree(watch_jobs["straggler"], d)
    ranks = json.loads((d / "ranks.json").read_text())
    (d / "ranks.json").write_text(json.dumps(ranks + [{**ranks[1], "host": "elsewhere"}]))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 2 and "rank 1 appears twice" in out and "Traceback" not in out, out
    # ranks 1 and 2 missing: named as ranks, never quarantined; the others still judged
    (d / "ranks.json").write_text(json.dumps([r for r in ranks if r["rank"] not in (1, 2)]))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o2"))
    assert code == 1, out
    straggler = [f for f in gating(res) if f["rule"] == "watch-straggler"]
    assert [f["entity"] for f in straggler] == ["rank2"] and "not mapped" in straggler[0]["message"]
    assert res["isolation"] == []


def test_hostile_node_in_a_ras_report(tmp_path):
    """A RAS report whose node names a command: the rank is not named as a card, no
    confirmation command carries the text, and the state is still reported."""
    real = Path(__file__).resolve().parents[1] / "fixtures/real/nccl-ras/03_incomplete_mismatch_nocomm_2.27.3_issue1762.txt"
    d = tmp_path / "d"
    d.mkdir()
    (d / "ras.txt").write_text(real.read_text().replace("10.4.109.13", "$(reboot)"))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 1 and "Traceback" not in out, out
    text = json.dumps(res["findings"]) + json.dumps(res["confirm"])
    assert "$(reboot)/" not in text and res["confirm"] == []
    assert any(f["rule"].startswith("watch-ras-") for f in every(res))


# ------------------------------------------------------------------ dump contents
def test_huge_dump_refused_the_rest_judged(watch_jobs, tmp_path, monkeypatch):
    from sncheck.watch import dumps

    d = tmp_path / "d"
    shutil.copytree(watch_jobs["straggler"], d)
    p = dumps_of(d)[0]
    data = json.loads(p.read_text())
    data["entries"] = data["entries"] * 40  # the same records again: a dump past the cap
    p.write_text(json.dumps(data))
    monkeypatch.setattr(dumps, "MAX_DUMP_BYTES", p.stat().st_size - 1)
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 1 and "Traceback" not in out, out
    bad = [f for f in every(res) if f["rule"] == "watch-dump-unreadable"]
    assert [f["evidence"]["dump"] for f in bad] == [p.name] and "MB a dump may be" in bad[0]["message"]
    assert f"{_host(d)}/gpu2" in {f["entity"] for f in gating(res) if f["rule"] == "watch-straggler"}


def test_group_ids_start_again(watch_jobs, tmp_path):
    """Every rank's dump holds group G twice: its first life (the clean phase), then the
    group made anew under the same name, its ids from 1 again, in which rank 3 stops after
    collective 10. Judged on the last life only: rank 3, critical, at collective 11 (its
    first life went to 48 with its peers, which hid it)."""
    d = tmp_path / "d"
    shutil.copytree(watch_jobs["straggler"], d)
    for rank, p in dumps_of(d).items():
        data = json.loads(p.read_text())
        group = min({e["process_group"][0] for e in data["entries"]} - {"0"}, key=int)
        life = [e for e in data["entries"] if e["process_group"][0] == group]
        later = data["entries"][-1]["time_created_ns"] + 10**9 - life[0]["time_created_ns"]
        again = [{**e, "time_created_ns": e["time_created_ns"] + later} for e in life
                 if rank != 3 or e["collective_seq_id"] <= 10]
        data["entries"] += again
        p.write_text(json.dumps(data))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    crit = [f for f in res["findings"] if f["severity"] == "critical"]
    assert [(f["entity"], f["evidence"]["seq"], f["evidence"]["group"]) for f in crit] == \
        [(f"{_host(d)}/gpu3", 11, group)], out
    assert any(f["rule"] == "watch-dump-restarted" for f in every(res))


def test_late_joiner_and_one_slow_group(watch_jobs, tmp_path):
    """Rank 1's records of the straggler's group start at collective 20 (it joined late,
    or its buffer dropped them): not named. Rank 2 is slow in the straggler's group only,
    not in the clean phase's group its dumps also hold: the finding names that group."""
    d = tmp_path / "d"
    shutil.copytree(watch_jobs["straggler"], d)
    p = dumps_of(d)[1]
    data = json.loads(p.read_text())
    slow = max({e["process_group"][0] for e in data["entries"]}, key=int)
    data["entries"] = [e for e in data["entries"] if e["process_group"][0] != slow or e["collective_seq_id"] >= 20]
    p.write_text(json.dumps(data))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 1, out
    assert [(f["entity"], f["evidence"]["group"]) for f in gating(res)] == [(f"{_host(d)}/gpu2", slow)], out
    assert not [f for f in every(res) if f["rule"] == "watch-straggler" and f["evidence"]["group"] != slow]


def test_pickle_from_another_tool_is_refused(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "nccl_trace_rank_0").write_bytes(pickle.dumps({"version": "2.10", "entries": [], "x": Path("/")}))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 1 and "Traceback" not in out, out
    assert [f["rule"] for f in res["findings"]] == ["watch-dump-unreadable"]


# ------------------------------------------------------------------ numbers, depth, references (issue 30, class 4)
def _with_rank0(watch_jobs, tmp_path: Path, name: str, raw: bytes) -> tuple[Path, str]:
    """The straggler job's dumps with rank 0's replaced by ``raw`` (under ``name``)."""
    d = tmp_path / "d"
    shutil.copytree(watch_jobs["straggler"], d)
    p = dumps_of(d)[0]
    p.unlink()
    (d / name).write_bytes(raw)
    return d, name


def _judged_beside(res: dict, d: Path, name: str) -> dict:
    """One 'dump unreadable' finding, on rank 0's card, for ``name``; rank 2 still named."""
    bad = [f for f in every(res) if f["rule"] == "watch-dump-unreadable"]
    assert [f["evidence"]["dump"] for f in bad] == [name], bad
    assert bad[0]["entity"] == f"{_host(d)}/gpu0" and bad[0]["not_measured"] is True
    assert f"{_host(d)}/gpu2" in {f["entity"] for f in gating(res) if f["rule"] == "watch-straggler"}
    return bad[0]


def _fr_json(watch_jobs, tmp_path: Path, field: str, value_text: str) -> bytes:
    """Rank 0's real Flight Recorder JSON with ``field`` of its 3rd entry set to ``value_text`` (raw JSON)."""
    p = dumps_of(Path(shutil.copytree(watch_jobs["straggler"], tmp_path / "src")))[0]
    data = json.loads(p.read_text())
    data["entries"][2][field] = "@@V@@"
    return json.dumps(data).replace('"@@V@@"', value_text).encode()


def _non_finite() -> list[tuple[str, str]]:
    from adversary import non_finite_numbers

    return non_finite_numbers(("time_created_ns", "collective_seq_id", "record_id"), every=5)


NON_FINITE = _non_finite()


@pytest.mark.parametrize("field, value", NON_FINITE, ids=[f"{f}={v[:12]}" for f, v in NON_FINITE])
def test_a_number_no_clock_can_hold_is_an_unreadable_dump(watch_jobs, tmp_path, field, value):
    """The issue's example: time_created_ns of Infinity, NaN or 2**70 made `watch` exit 3
    with nothing judged."""
    d, name = _with_rank0(watch_jobs, tmp_path, "fr-job-rank0.json", _fr_json(watch_jobs, tmp_path, field, value))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 1 and res is not None and "Traceback" not in out, out
    _judged_beside(res, d, name)


def _pickles() -> list[tuple[str, Callable[[], bytes], str]]:
    from adversary import big_int_pickle, deep_pickle, self_referencing_pickle, shared_reference_pickle

    return [
        ("100k deep (the issue's)", lambda: deep_pickle(100_000), "deep"),
        ("just past the mark bound", lambda: deep_pickle(300), "deep"),
        ("2M references to one entry (the issue's)", lambda: shared_reference_pickle(2_000_000), "references"),
        ("600k references to a 10-long entry", lambda: shared_reference_pickle(600_000, 10), "values"),
        ("contains itself", self_referencing_pickle, "contains itself"),
        ("a 100 KB integer", lambda: big_int_pickle(100_000), "out of range"),
        ("a class", lambda: pickle.dumps({"version": "2.4", "entries": [], "x": Path("/")}), "refused"),
        ("cut short", lambda: pickle.dumps({"version": "2.4", "entries": list(range(100))})[:-40], "pickle"),
        ("4M+1 Nones", lambda: b"\x80\x02(" + b"N" * 4_000_001 + b"l.", "operations"),
    ]


@pytest.mark.parametrize("label, make, needle", _pickles(), ids=[p[0] for p in _pickles()])
def test_a_hostile_pickle_costs_little_and_is_one_unreadable_dump(watch_jobs, tmp_path, label, make, needle):
    """Depth, object count and memory are bounded by the unpickler itself: a 100,000-deep
    pickle raised RecursionError (exit 3); 2 million references to one entry took 31 s and
    3.3 GB."""
    import resource
    import time

    d, name = _with_rank0(watch_jobs, tmp_path, "fr-job-rank0.pkl", make())
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.process_time()
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    took = time.process_time() - t0
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    assert code == 1 and res is not None and "Traceback" not in out, out
    bad = _judged_beside(res, d, name)
    assert needle in bad["message"], bad["message"]
    assert took < 30 and grew_mb < 1500, (took, grew_mb)


def test_follow_mode_survives_a_hostile_dump(watch_jobs, tmp_path):
    """In follow mode the watcher died about 3 s after an Infinity appeared; now each pass
    judges what it can, and a pass that fails is reported and the next change judged."""
    from sncheck.health.rules import load_rules
    from sncheck.watch.judge import WatchOptions, follow

    d = tmp_path / "d"
    shutil.copytree(watch_jobs["straggler"], d)
    notes: list[str] = []
    outcomes = []
    state = {"n": 0}

    def on_pass(o) -> None:
        outcomes.append(o)
        state["n"] += 1
        if state["n"] == 1:  # after the first pass a dump turns hostile
            p = dumps_of(d)[1]
            data = json.loads(p.read_text())
            data["entries"][3]["time_created_ns"] = float("inf")
            p.write_text(json.dumps(data))  # Infinity, as json.dumps writes it

    opts = WatchOptions(d, rules=load_rules("default"), out=tmp_path / "o", progress=notes.append)
    last = follow(opts, 0.1, on_pass, max_passes=2)
    assert last is not None and len(outcomes) == 2, notes
    bad = [f for f in outcomes[1].results["findings"] if f["rule"] == "watch-dump-unreadable"]
    assert len(bad) == 1 and "Infinity" in bad[0]["message"], notes


@pytest.mark.parametrize("kind", ["fifo", "dangling link", "device link"])
def test_a_special_file_among_the_dumps_is_one_unreadable_dump(watch_jobs, tmp_path, kind):
    """A FIFO (or a link to nothing, or to a device) where a rank's dump should be was
    skipped as if absent: its rank went unjudged and nothing said so. It is an unreadable
    dump for that rank, read without opening it (a FIFO would block), and the rest judged."""
    import os

    d = tmp_path / "d"
    shutil.copytree(watch_jobs["straggler"], d)
    p = dumps_of(d)[0]
    p.unlink()
    if kind == "fifo":
        os.mkfifo(p)
    else:
        p.symlink_to(tmp_path / "nothing" if kind == "dangling link" else Path("/dev/zero"))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 1 and "Traceback" not in out, out
    bad = [f for f in every(res) if f["rule"] == "watch-dump-unreadable"]
    assert [f["evidence"]["dump"] for f in bad] == [p.name], out
    assert f"{_host(d)}/gpu2" in {f["entity"] for f in gating(res) if f["rule"] == "watch-straggler"}


@pytest.mark.parametrize("kind", ["fifo", "dangling link"])
def test_a_special_rank_map_in_the_directory_is_refused_not_skipped(watch_jobs, tmp_path, kind):
    """ranks.json as a FIFO was skipped (every card unnamed); it is refused: exit 2 naming it."""
    import os

    d = tmp_path / "d"
    shutil.copytree(watch_jobs["straggler"], d)
    (d / "ranks.json").unlink()
    if kind == "fifo":
        os.mkfifo(d / "ranks.json")
    else:
        (d / "ranks.json").symlink_to(tmp_path / "nothing")
    code, _res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 2 and "ranks.json" in out and "Traceback" not in out, out
