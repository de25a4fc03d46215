"""sncheck watch on real gloo jobs (4 ranks under torchrun), real NCCL RAS captures, bad
input, and the policy (quarantine, then a scoped run isolates or releases)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ConfigError
from watch_harness import gating, watch
from sncheck.vendors.parsers import strip_source_header
from sncheck.vendors import nccl_ras as ras

ROOT = Path(__file__).resolve().parents[1]
RAS_DIR = ROOT / "fixtures" / "real" / "nccl-ras"
HOST = socket.gethostname()


@pytest.fixture(scope="module")
def jobs(watch_jobs) -> dict[str, Path]:
    """One real job's phases (tests/watch_harness.py): clean (torch's pickles), straggler
    (rank 2), p2p (rank 2 again, with sends and recvs), hung (rank 3 after 8 steps)."""
    return watch_jobs


def test_straggler_named(jobs, tmp_path):
    d = jobs["straggler"]
    code, res, out = watch(str(d), "--rank-map", str(d / "ranks.json"), "--out", str(tmp_path / "o"))
    assert code == 1, out
    assert {f["entity"] for f in gating(res)} == {f"{HOST}/gpu2"}
    f = gating(res)[0]
    assert f["rule"] == "watch-straggler" and f["evidence"]["rank"] == 2
    assert f["evidence"]["confirm_with"] == f"sncheck run nightly-stress --targets {HOST}/gpu2"
    assert res["confirm"] == [{"entity": f"{HOST}/gpu2", "command": f["evidence"]["confirm_with"]}]
    assert (tmp_path / "o" / "report.html").is_file()


def test_hung_rank_named_with_its_collective(jobs, tmp_path):
    code, res, out = watch(str(jobs["hung"]), "--out", str(tmp_path / "o"))
    assert code == 1, out
    crit = [f for f in res["findings"] if f["severity"] == "critical"]
    assert [f["entity"] for f in crit] == [f"{HOST}/gpu3"], out
    assert crit[0]["rule"] == "watch-hung-rank"
    ev = crit[0]["evidence"]
    # the phase's group: steps 0..7 ran two collectives each (seq 1..16); step 8's
    # all-reduce is collective 17, which rank 3 never entered
    assert ev["seq"] == 17 and ev["collective"] == "gloo:all_reduce", ev
    assert ev["peers_entered"] == 3


def test_clean_job_passes(jobs, tmp_path):
    assert len(list(jobs["clean"].glob("fr-*-rank*.pkl"))) == 4  # torch's pickles, read as plain data
    code, res, out = watch(str(jobs["clean"]), "--out", str(tmp_path / "o"), "--format", "html,prometheus")
    assert code == 0, out
    assert res["layers"][0]["summary"]["ranks"] == 4 and res["layers"][0]["summary"]["collectives"] > 0
    assert gating(res) == []
    assert (tmp_path / "o" / "sncheck.prom").is_file()


def test_bad_inputs_beside_good_dumps(jobs, tmp_path):
    d = tmp_path / "dumps"
    shutil.copytree(jobs["straggler"], d)
    first = sorted(d.glob("fr-*-rank0.json"))[0]
    other = d / "fr-otherjob-rank5.json"
    other.write_bytes(first.read_bytes())
    text = first.read_bytes()
    (d / "fr-cut-rank1.json").write_bytes(text[: len(text) // 2])  # a truncated dump
    (d / "notes.txt").write_text("this is not a dump\n")
    (d / "nccl_trace_rank_7").write_bytes(b"\x80\x04\x95garbage")
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 1 and "Traceback" not in out, out
    assert f"{HOST}/gpu1" in {f["entity"] for f in res["findings"] if f["rule"] == "watch-dump-unreadable"}
    every = res["findings"] + [r for f in res["findings"] for r in f["evidence"].get("related", [])]
    unreadable = {f["evidence"]["dump"] for f in every if f["rule"] == "watch-dump-unreadable"}
    assert unreadable == {"fr-cut-rank1.json", "notes.txt", "nccl_trace_rank_7"}
    assert any(f["rule"] == "watch-dump-other-job" for f in every)
    # the good dumps are still judged: the straggler is still named, and only it
    hardware = [f for f in gating(res) if f.get("about") != "check"]
    assert {f["entity"] for f in hardware} == {f"{HOST}/gpu2"}


def test_empty_directory_and_bad_rank_map(tmp_path):
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(main, ["watch", str(tmp_path / "empty"), "--once"])
    assert r.exit_code == 2 and "no dumps" in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1
    (tmp_path / "map.json").write_text('[{"rank": 0, "host": "a"}]')
    r = CliRunner().invoke(main, ["watch", str(tmp_path / "empty"), "--once", "--rank-map", str(tmp_path / "map.json")])
    assert r.exit_code == 2 and "local_rank" in r.output


# Hand-read from the captures (tests/test_conformance.py checks the same files through
# 'sncheck parse nccl-ras'); here every record, and which way a MISMATCH points.
RAS_RECORDS = {
    "01_mismatch_allgather_2.26.2_issue1911.txt": [
        ("MISMATCH", "fa93daea854b060b", 12, 4, "10.137.190.124", 323032, True),
        ("MISMATCH", "fa93daea854b060b", 13, 5, "10.137.190.124", 323033, True)],
    "02_ok_256ranks_2.26.2_issue1730.txt": [],
    "03_incomplete_mismatch_nocomm_2.27.3_issue1762.txt": [
        ("INCOMPLETE", None, None, 0, "10.4.109.13", 60004, False),
        ("INCOMPLETE", "b3398875b8b2a063", 1, 0, "10.4.109.13", 60004, False),
        ("INCOMPLETE", "93d7000200000001", None, None, None, None, False)],
}


@pytest.mark.parametrize("name", sorted(RAS_RECORDS))
def test_real_ras_captures(name):
    got = ras.parse_text(strip_source_header((RAS_DIR / name).read_text()))
    assert [(r.state, r.comm, r.rank, r.gpu, r.node, r.pid, r.ahead) for r in got["records"]] == RAS_RECORDS[name]
    assert got["errors"] == []


def test_ras_cut_before_its_table_is_unreadable(tmp_path):
    text = (RAS_DIR / "01_mismatch_allgather_2.26.2_issue1911.txt").read_text()
    cut = tmp_path / "ras.txt"
    cut.write_text(text[: text.index("Group     Comms")])
    from sncheck.watch.dumps import Unreadable, read_dump

    assert isinstance(read_dump(cut), Unreadable)


def test_ras_cut_inside_the_warnings_rule_is_cut_short():
    """RAS underlines 'Warnings' with eight '=': the report cut inside that rule (its last
    line) lost its end marker, so it is not whole (the all-variants sweep found it read as whole)."""
    text = strip_source_header((RAS_DIR / "02_ok_256ranks_2.26.2_issue1730.txt").read_text())
    at = text.index("Warnings\n========") + len("Warnings\n")
    assert not any("cut short" in e for e in ras.parse(text)["errors"])
    for k in range(1, 8):
        assert any("cut short" in e for e in ras.parse(text[: at + k])["errors"]), k


def test_ras_findings_on_cards(tmp_path):
    d = tmp_path / "ras"
    d.mkdir()
    for p in RAS_DIR.glob("*.txt"):
        shutil.copy(p, d / p.name)
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump({
        "name": "ras", "supernodes": [{"name": "sn0", "hosts": "node[01-02]", "cards_per_host": 8}],
        "hosts": {"node01": {"address": "10.4.109.13"}, "node02": {"address": "10.137.190.124"}}}))
    code, res, out = watch(str(d), "-i", str(inv), "--out", str(tmp_path / "o"))
    assert code == 1, out
    by = {(f["entity"], f["severity"]) for f in res["findings"]}
    assert ("node01/gpu0", "critical") in by           # INCOMPLETE: rank 1, GPU 0, node 10.4.109.13
    # the MISMATCH ranks of issue 1911 are ahead of the others: named, never a culprit
    node02 = [f for f in res["findings"] if f["entity"].startswith("node02/")]
    assert {f["entity"] for f in node02} == {"node02/gpu4", "node02/gpu5"}
    assert all(f["severity"] == "info" for f in node02)
    assert not any(e["entity"].startswith("node02/") for e in res["isolation"])


def test_ras_json_states():
    data = {"nccl_version": "2.28.3", "communicators": [{
        "hash": "0xabc", "size": 3, "ranks": [
            {"rank": 0, "host": "10.0.0.1", "pid": 1, "cuda_dev": 0, "status": {"init_state": 0, "async_error": 0},
             "collective_counts": {"AllReduce": 10}},
            {"rank": 1, "host": "10.0.0.1", "pid": 2, "cuda_dev": 1, "status": {"init_state": 0, "async_error": 0},
             "collective_counts": {"AllReduce": 10}},
            {"rank": 2, "host": "10.0.0.2", "pid": 3, "cuda_dev": 0, "status": {"init_state": 0, "async_error": 0},
             "collective_counts": {"AllReduce": 9}}],
        "missing_ranks": [{"rank": 3, "host": "10.0.0.2", "pid": 4, "cuda_dev": 1,
                           "status": {"unresponsive": True, "considered_dead": True}}]}]}
    recs = ras.parse_json(data)["records"]
    assert [(r.state, r.rank, r.gpu, r.node, r.ahead) for r in recs] == \
        [("MISMATCH", 2, 0, "10.0.0.2", False), ("DEAD", 3, 1, "10.0.0.2", False)]


def test_straggler_quarantined_then_scoped_run_decides(jobs, tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump({
        "name": "watch-test", "design": {"scale_up": {"bandwidth": "450 GB/s", "latency": "3 us"},
                                         "scale_out": {"bandwidth": "400 Gb/s", "latency": "15 us"}},
        "supernodes": [{"name": "sn0", "hosts": "node[001-002]", "cards_per_host": 4}],
        "hosts": {"node001": {"address": HOST}}, "backend": {"type": "mock"}}))
    faults = tmp_path / "slow.yaml"
    faults.write_text(yaml.safe_dump({"faults": [{"type": "slow_card", "target": "node001/gpu2", "factor": 0.6}]}))
    runner = CliRunner()
    for case, extra, last in (("fault", ["--faults", str(faults)], "isolate"), ("clean", [], "release")):
        state = tmp_path / f"state-{case}"
        code, res, out = watch(str(jobs["straggler"]), "-i", str(inv), "--state-dir", str(state),
                               "--out", str(tmp_path / f"w-{case}"))
        assert code == 1, out
        assert [(e["entity"], e["action"]) for e in res["isolation"]] == [("node001/gpu2", "quarantine")]
        st = runner.invoke(main, ["status", "--state-dir", str(state), "--json"])
        assert [(e["entity"], e["action"]) for e in json.loads(st.output)["status"]] == [("node001/gpu2", "quarantine")]
        r = runner.invoke(main, ["run", "nightly-stress", "-i", str(inv), "--backend", "mock", "--targets",
                                 "node001/gpu2", "--state-dir", str(state), "--out", str(tmp_path / f"r-{case}"),
                                 "-q", *extra])
        assert r.exit_code in (0, 1), r.output
        h = json.loads(runner.invoke(main, ["history", "node001/gpu2", "--state-dir", str(state), "--json"]).output)
        actions = [a["action"] for a in h["isolation"]]
        assert actions[0] == "quarantine" and actions[-1] == last, actions


def test_desync_named(jobs, tmp_path):
    """One rank's record of one collective changed to another op and size (the rest is
    the real job's dumps): that rank, critical, and no other."""
    d = tmp_path / "dumps"
    shutil.copytree(jobs["straggler"], d)
    path = sorted(d.glob("fr-*-rank1.json"))[0]
    data = json.loads(path.read_text())
    groups = {e["process_group"][0] for e in data["entries"]}
    last_group = max(groups, key=int)
    e = next(e for e in data["entries"] if e["process_group"][0] == last_group and e["collective_seq_id"] == 5)
    e["profiling_name"], e["input_sizes"] = "gloo:broadcast", [[1]]
    path.write_text(json.dumps(data))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 1, out
    crit = [f for f in res["findings"] if f["severity"] == "critical"]
    assert [(f["entity"], f["rule"]) for f in crit] == [(f"{HOST}/gpu1", "watch-desync")], out
    assert "collective 5" in crit[0]["message"]


def test_unmapped_rank_says_so(jobs, tmp_path):
    d = tmp_path / "dumps"
    shutil.copytree(jobs["straggler"], d)
    ranks = json.loads((d / "ranks.json").read_text())
    (d / "ranks.json").write_text(json.dumps([r for r in ranks if r["rank"] != 2]))
    code, res, out = watch(str(d), "--out", str(tmp_path / "o"))
    assert code == 1, out
    f = next(f for f in res["findings"] if f["rule"] == "watch-straggler")
    assert f["entity"] == "rank2" and "not mapped" in f["message"] and f["evidence"]["mapped"] is False
    assert res["isolation"] == []  # nothing to quarantine: the card is unknown
    # the record reads back (diff, report, baseline): watch's own unmapped rank is no edit (reviewr:
    # d782f5e refused it in every reader); the same finding claimed mapped is one
    from sncheck.store.results import read_record
    results = tmp_path / "o" / "results.json"
    assert read_record(results).findings[0].entity
    r = CliRunner().invoke(main, ["diff", str(tmp_path / "o"), str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    data = json.loads(results.read_text())
    for g in data["findings"]:
        g["evidence"]["mapped"] = True
    results.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="rank2"):
        read_record(results)


def test_follow_stops_cleanly_on_sigterm(jobs, tmp_path):
    """Without --once: judges the directory as it changes, ends on SIGTERM with the last
    pass's exit code and no traceback."""
    import signal
    import time

    d, out = tmp_path / "live", tmp_path / "o"
    shutil.copytree(jobs["clean"], d)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "sncheck", "watch", str(d), "--interval", "0.2", "--out", str(out)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        results = out / "results.json"

        def wait_for(check, what):
            end = time.monotonic() + 180
            while time.monotonic() < end:
                try:
                    if results.is_file() and check(json.loads(results.read_text())):
                        return
                except json.JSONDecodeError:
                    pass
                assert p.poll() is None, p.communicate()
                time.sleep(0.3)
            raise AssertionError(f"no pass saw {what}")

        wait_for(lambda r: r["verdict"] == "pass", "the clean job")
        for f in d.glob("fr-*"):
            f.unlink()
        for f in jobs["straggler"].glob("fr-*"):
            shutil.copy(f, d / f.name)  # the job's next dumps appear
        wait_for(lambda r: any(f["rule"] == "watch-straggler" for f in r["findings"]), "the straggler")
        p.send_signal(signal.SIGTERM)
        stdout, stderr = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1, stderr
    assert "Traceback" not in stderr


def test_slow_communicator_from_inspector_and_nccl_tests(tmp_path):
    """Inspector records (the layout of NCCL's ext-profiler/inspector/README.md) and an
    nccl-tests -J file (the keys of nccl-tests src/util.cu): busbw against the tier's design."""
    d = tmp_path / "dumps"
    d.mkdir()
    records = []
    for rank in range(8):  # one communicator of the 8 cards of node01: 300 of 450 GB/s design
        for sn, (size, bw) in enumerate(((1 << 20, 40.0), (1 << 30, 300.0))):
            records.append({"header": {"id": "0x7f8c496ae9f661", "rank": rank, "n_ranks": 8, "nnodes": 1},
                            "metadata": {"inspector_output_format_version": "v4.0", "hostname": "node01", "pid": 1},
                            "coll_perf": {"coll": "AllReduce", "coll_sn": sn, "coll_msg_size_bytes": size,
                                          "coll_exec_time_us": 100, "coll_algobw_gbs": bw, "coll_busbw_gbs": bw}})
    (d / "inspector-node01.log").write_text("\n".join(json.dumps(r, indent=2) for r in records) + "\n")
    (d / "nccl-tests.json").write_text(json.dumps({
        "version": 2, "args": ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "1G"], "config": {
            "ngpus": 1, "devices": [{"rank": i, "hostname": "node02", "device": i} for i in range(8)]},
        "results": [{"size": 1 << 30, "count": 1 << 28, "type": "float", "redop": "sum", "root": "-1",
                     "out_of_place": {"time": 1.0, "alg_bw": 230.0, "bus_bw": 440.0, "nwrong": 0},
                     "in_place": {"time": 1.0, "alg_bw": 231.0, "bus_bw": 441.0, "nwrong": 0}}],
        "out_of_bounds": {"count": 0, "okay": "true"}, "average_bus_bandwidth": {"bandwidth": 440.0}}))
    (d / "ranks.json").write_text(json.dumps([{"rank": i, "host": "node01", "local_rank": i} for i in range(8)]))
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump({"name": "bw", "design": {"scale_up": {"bandwidth": "450 GB/s", "latency": "3 us"}},
                                   "supernodes": [{"name": "sn0", "hosts": "node[01-02]", "cards_per_host": 8}]}))
    code, res, out = watch(str(d), "-i", str(inv), "--out", str(tmp_path / "o"))
    assert code == 1, out
    slow = [f for f in res["findings"] if f["rule"] == "watch-communicator-slow"]
    assert [(f["entity"], f["entity_kind"]) for f in slow] == [("node01", "host")], out  # node02's 441 of 450 is fine
    assert (slow[0]["evidence"]["measured"], slow[0]["evidence"]["expected"], slow[0]["evidence"]["unit"]) == (300.0, 450.0, "GB/s")


def _inspector(d: Path, host: str, busbw: float) -> Path:
    """One communicator of the 8 cards of ``host`` in NCCL Inspector's layout, and its rank map."""
    d.mkdir(parents=True)
    records = [{"header": {"id": "0x7f8c496ae9f661", "rank": rank, "n_ranks": 8, "nnodes": 1},
                "metadata": {"inspector_output_format_version": "v4.0", "hostname": host, "pid": 1},
                "coll_perf": {"coll": "AllReduce", "coll_sn": 0, "coll_msg_size_bytes": 1 << 30,
                              "coll_exec_time_us": 100, "coll_algobw_gbs": busbw, "coll_busbw_gbs": busbw}}
               for rank in range(8)]
    (d / "inspector.log").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    (d / "ranks.json").write_text(json.dumps([{"rank": i, "host": host, "local_rank": i} for i in range(8)]))
    return d


def test_slow_communicator_against_a_baseline(tmp_path):
    """--baseline: a known-good job's dumps, or its watch run. Against it, not the design:
    300 GB/s where good jobs reach 300 is no finding (design 450 would flag it); 400 where
    good jobs reach 600 is one. A baseline that is no good run, or holds no bandwidth, is
    refused (exit 2)."""
    sn = {"supernodes": [{"name": "sn0", "hosts": "node[01-02]", "cards_per_host": 8}]}
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump({"name": "bw", "design": {"scale_up": {"bandwidth": "450 GB/s",
                                                                           "latency": "3 us"}}, **sn}))
    bare = tmp_path / "bare.yaml"
    bare.write_text(yaml.safe_dump({"name": "bw", **sn}))  # no design: the good job's own run judges no bandwidth
    good, job = _inspector(tmp_path / "good", "node01", 300.0), _inspector(tmp_path / "job", "node01", 300.0)
    assert watch(str(job), "-i", str(inv), "--out", str(tmp_path / "o0"))[0] == 1  # against design: 67%
    code, res, out = watch(str(job), "-i", str(inv), "--baseline", str(good), "--out", str(tmp_path / "o1"))
    assert code == 0 and gating(res) == [], out
    assert res["inputs"]["baseline"]["name"] == str(good)
    code, res, out = watch(str(good), "-i", str(bare), "--out", str(tmp_path / "good-run"))
    assert code == 0, out
    code, res, out = watch(str(job), "-i", str(inv), "--baseline", str(tmp_path / "good-run" / "results.json"),
                           "--out", str(tmp_path / "o2"))
    assert code == 0 and gating(res) == [], out
    assert res["inputs"]["baseline"]["sha256"]
    fast = _inspector(tmp_path / "fast", "node01", 600.0)
    code, res, out = watch(str(_inspector(tmp_path / "job400", "node01", 400.0)), "-i", str(inv),
                           "--baseline", str(fast), "--out", str(tmp_path / "o3"))
    slow = [f for f in res["findings"] if f["rule"] == "watch-communicator-slow"]
    assert code == 1 and [(f["entity"], f["evidence"]["expected"]) for f in slow] == [("node01", 600.0)], out
    assert "(the baseline)" in slow[0]["message"]
    code, res, out = watch(str(job), "-i", str(inv), "--baseline", str(tmp_path / "o0"), "--out", str(tmp_path / "o4"))
    assert code == 2 and "known-good" in out, out  # a failed run is no baseline
    (tmp_path / "empty").mkdir()
    code, res, out = watch(str(job), "-i", str(inv), "--baseline", str(tmp_path / "empty"), "--out", str(tmp_path / "o5"))
    assert code == 2 and "no bus bandwidth" in out and "Traceback" not in out, out


def test_big_inspector_log_read_from_its_tail(tmp_path, monkeypatch):
    from sncheck.watch import dumps

    monkeypatch.setattr(dumps, "INSPECTOR_TAIL_BYTES", 4096)
    rec = {"header": {"id": "0x1", "rank": 0, "n_ranks": 2, "nnodes": 1}, "metadata": {"hostname": "h"},
           "coll_perf": {"coll": "AllReduce", "coll_sn": 0, "coll_msg_size_bytes": 8, "coll_busbw_gbs": 1.0}}
    log = tmp_path / "inspector.log"
    log.write_text("\n".join(json.dumps({**rec, "coll_perf": {**rec["coll_perf"], "coll_sn": i}}) for i in range(2000)))
    d = dumps.read_dump(log)
    assert d.format == "nccl_inspector" and not d.notes
    assert 0 < len(d.data) < 100 and d.data[-1]["coll_perf"]["coll_sn"] == 1999


def test_an_inspector_record_giving_a_key_twice_is_refused_as_that_not_cut_short(tmp_path):
    """A record giving coll_busbw_gbs twice (two records spliced, or an edited one): the watcher kept
    the last value silently (its decoder had no once-per-object hook), so rank 7's 300 GB/s read 450.
    Now the records before it are read and the refusal is said as what it is, as `sncheck parse` says it."""
    from sncheck.watch import dumps

    sn = {"supernodes": [{"name": "sn0", "hosts": "node01", "cards_per_host": 8}]}
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump({"name": "bw", "design": {"scale_up": {"bandwidth": "450 GB/s", "latency": "3 us"}}, **sn}))
    d = _inspector(tmp_path / "job", "node01", 450.0)
    log = d / "inspector.log"
    lines = log.read_text().splitlines()
    lines[7] = lines[7].replace('"coll_busbw_gbs": 450.0}', '"coll_busbw_gbs": 300.0, "coll_busbw_gbs": 450.0}')
    assert lines[7].count("coll_busbw_gbs") == 2
    log.write_text("\n".join(lines) + "\n")
    dump = dumps.read_dump(log)
    assert len(dump.data) == 7, dump.data
    assert dump.notes == ["line 8: not one JSON record: the key 'coll_busbw_gbs' is given twice in one object: "
                          "two outputs spliced, or an edited one (after 7 records)"]
    code, res, out = watch(str(d), "-i", str(inv), "--out", str(tmp_path / "o"))
    said = [f["message"] for f in res["findings"] if "given twice" in f["message"]]
    assert code == 1 and len(said) == 1 and "cut short" not in said[0], out


def test_rank_map_from_the_slurm_environment():
    from sncheck.watch.rankmap import from_slurm

    m = from_slurm({"SLURM_JOB_NODELIST": "node[01-03]", "SLURM_TASKS_PER_NODE": "2(x2),1", "SLURM_JOB_ID": "42"})
    assert [(p.rank, p.host, p.local_rank) for p in m.placements.values()] == \
        [(0, "node01", 0), (1, "node01", 1), (2, "node02", 0), (3, "node02", 1), (4, "node03", 0)]
    assert m.jobs == {"42"}
    # an arbitrary placement, a plane without its size, or counts that do not match the nodes:
    # no map rather than a wrong one (cyclic under --overcommit is dealt from the counts: tests/test_ops4.py)
    for dist in ({"SLURM_DISTRIBUTION": "arbitrary"}, {"SLURM_DISTRIBUTION": "plane"},
                 {"SLURM_DISTRIBUTION": "plane=0"}):
        assert from_slurm({"SLURM_JOB_NODELIST": "node[01-02]", "SLURM_TASKS_PER_NODE": "2(x2)", **dist}) is None
    assert from_slurm({"SLURM_JOB_NODELIST": "node[01-02]", "SLURM_TASKS_PER_NODE": "2(x3)"}) is None
    assert from_slurm({}) is None


def test_rank_map_dealt_cyclic_and_by_plane_as_srun_deals_them():
    """srun's cyclic deals one rank a node a round, a plane of N deals N, a node leaving the
    round once it holds its count (srun(1); slurm_step_layout.c's example: plane 2, six tasks
    counted 4,1,1 over three nodes: 0 1 | 2 | 3, then 4 5 on the first). main gave no map for
    cyclic, srun's own default where tasks are no more than nodes."""
    from sncheck.watch.rankmap import from_slurm

    def placed(dist: dict) -> list[tuple[str, int]]:
        m = from_slurm({"SLURM_JOB_NODELIST": "n[1-3]", "SLURM_TASKS_PER_NODE": "4,1,1", **dist})
        assert m is not None, dist
        return [(p.host, p.local_rank) for p in m.placements.values()]

    assert placed({"SLURM_DISTRIBUTION": "plane=2"}) == \
        [("n1", 0), ("n1", 1), ("n2", 0), ("n3", 0), ("n1", 2), ("n1", 3)]
    assert placed({"SLURM_DISTRIBUTION": "plane", "SLURM_DIST_PLANESIZE": "2"}) == placed({"SLURM_DISTRIBUTION": "plane=2"})
    assert placed({"SLURM_DISTRIBUTION": "cyclic:block"}) == \
        [("n1", 0), ("n2", 0), ("n3", 0), ("n1", 1), ("n1", 2), ("n1", 3)]
    assert placed({"SLURM_DISTRIBUTION": "block:cyclic"}) == placed({}) == \
        [("n1", 0), ("n1", 1), ("n1", 2), ("n1", 3), ("n2", 0), ("n3", 0)]


def test_follow_rewrites_one_run(jobs, tmp_path):
    """Each pass of the follow loop starts the run directory empty: its rows are the last
    pass's, never every pass's (memory and disk stay bounded by one pass), and a finding
    reaches the state store once however many passes see it."""
    from sncheck.health.rules import load_rules
    from sncheck.store.rundir import read_frames
    from sncheck.store.state import StateStore
    from sncheck.watch.judge import WatchOptions, follow

    d, out, state = tmp_path / "live", tmp_path / "o", tmp_path / "state"
    shutil.copytree(jobs["straggler"], d)
    passes = []

    def on_pass(outcome):
        fr = read_frames(out).kind("fr")
        passes.append((len(fr), outcome.results["layers"][0]["summary"]["collectives"]))
        for p in d.glob("fr-*"):  # the job's next dumps: touched, so the next pass judges again
            os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10**9))

    follow(WatchOptions(d, rules=load_rules("default"), out=out, state_dir=str(state), report_formats=()),
           0.1, on_pass, max_passes=3)
    assert len(passes) == 3 and all(rows == n > 0 for rows, n in passes), passes
    with StateStore(str(state)) as st:
        actions = [(e["entity"], e["action"]) for e in st.history()]
        runs = st.runs()
    assert actions == [(f"{HOST}/gpu2", "quarantine")] and len(runs) == 1, (actions, runs)


def test_outputs_carry_the_run_schema(jobs, tmp_path):
    """results.json's findings have the keys a run's have; the report, JUnit and
    Prometheus say the same findings and quarantine."""
    import re
    import xml.etree.ElementTree as ET

    out = tmp_path / "o"
    code, res, _ = watch(str(jobs["straggler"]), "--out", str(out), "--state-dir", str(tmp_path / "state"),
                         "--format", "html,junit,prometheus")
    assert code == 1
    plan = tmp_path / "plan.yaml"
    plan.write_text("faults:\n  - {type: slow_card, target: node002/gpu1, factor: 0.5}\n")
    run_out = tmp_path / "run"
    r = CliRunner().invoke(main, ["connectivity", "-i", str(ROOT / "fixtures/inventories/demo-2sn.yaml"), "--backend",
                                  "mock", "--faults", str(plan), "--seed", "3", "--out", str(run_out), "-q"])
    assert r.exit_code == 1, r.output
    run_res = json.loads((run_out / "results.json").read_text())
    assert {k for f in res["findings"] for k in f} <= {k for f in run_res["findings"] for k in f} | {"about"}
    assert set(res) >= set(run_res), set(run_res) - set(res)
    assert res["tools"]["versions"]["flight_recorder"]
    prom = (out / "sncheck.prom").read_text()
    for sev in ("critical", "warning", "info"):
        n = sum(f["severity"] == sev for f in res["findings"])
        assert f'sncheck_findings{{severity="{sev}"}} {n}' in prom
    assert re.search(rf'^sncheck_isolation_applied\{{entity="{re.escape(HOST)}/gpu2",[^}}]*action="quarantine"', prom, re.M)
    assert 'sncheck_run_verdict{verdict="fail"} 1' in prom
    junit = ET.parse(out / "junit.xml").getroot()
    assert int(junit.get("failures")) >= 1 and "watch-straggler" in ET.tostring(junit, encoding="unicode")
    html = (out / "report.html").read_text()
    assert f"{HOST}/gpu2" in html and "watch-straggler" in html
