"""The SQLite state store: schema, records, current status, and concurrent writers."""

from __future__ import annotations

import multiprocessing
import os
import stat
import sqlite3
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from sncheck.errors import ConfigError
from sncheck.model import Finding, IsolationStep
from sncheck.store.state import SCHEMA_VERSION, StateStore, default_state_dir, format_ts, parse_ts

T0 = datetime(2026, 11, 29, 10, 30, tzinfo=timezone.utc)


def results(run_id: str, verdict: str = "fail") -> dict:
    return {"schema": "sncheck.run/1", "run_id": run_id, "playbook": "pre-upgrade-gate", "backend": "mock",
            "inventory": "demo-2sn", "started": "2026-11-29T10:30:00Z", "finished": "2026-11-29T10:31:00Z",
            "verdict": verdict, "layers": [], "findings": [], "isolation": []}


def test_default_state_dir_honours_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_state_dir() == tmp_path / "xdg" / "sncheck"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    assert default_state_dir() == Path("~/.local/state/sncheck").expanduser()
    monkeypatch.delenv("XDG_STATE_HOME")
    assert default_state_dir() == Path("~/.local/state/sncheck").expanduser()


def test_schema_is_versioned_and_wal(tmp_path: Path) -> None:
    with StateStore(tmp_path / "s") as store:
        assert store.schema_version == SCHEMA_VERSION
    db = sqlite3.connect(tmp_path / "s" / "state.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"meta", "runs", "findings", "isolation", "baselines"} <= tables
    db.close()
    with StateStore(tmp_path / "s") as store:  # reopening migrates nothing and keeps the version
        assert store.schema_version == SCHEMA_VERSION


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    StateStore(tmp_path).close()
    db = sqlite3.connect(tmp_path / "state.db")
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    with pytest.raises(ConfigError, match="newer than this sncheck"):
        StateStore(tmp_path)


def test_a_corrupt_database_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "state.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError, match="cannot open the state database"):
        StateStore(tmp_path)


def test_record_run_upserts(tmp_path: Path) -> None:
    with StateStore(tmp_path) as store:
        store.record_run({**results("r1"), "verdict": "error", "finished": None}, results_path="runs/r1/results.json")
        store.record_run(results("r1"))
        runs = store.runs()
    assert len(runs) == 1
    assert runs[0]["verdict"] == "fail" and runs[0]["finished"] == "2026-11-29T10:31:00Z"
    assert runs[0]["results_path"] == "runs/r1/results.json"  # kept when not given again


def test_findings_and_actions_round_trip(tmp_path: Path) -> None:
    with StateStore(tmp_path) as store:
        n = store.record_findings("r1", [
            Finding("node003/gpu2", "card", "connectivity", "p2p-bandwidth-below-design", "critical", "slow",
                    {"measured": 270.1}),
            Finding("node007", "host", "connectivity", "host-unreachable", "critical", "no answer"),
        ])
        assert n == 2
        store.record_action("r1", IsolationStep("node003/gpu2", "card", "quarantine", "slow", rule="p2p"),
                            {"measured": 270.1}, ts=T0)
        store.record_action("r1", {"entity": "node003/gpu2", "entity_kind": "card", "action": "isolate",
                                   "reason": "confirmed", "applied": True, "rule": "p2p"}, ts=T0 + timedelta(minutes=5))
        found = store.findings_for("node003/gpu2")
        hist = store.history("node003/gpu2")
        status = store.current_status()
    assert found[0]["evidence"] == {"measured": 270.1} and found[0]["rule"] == "p2p-bandwidth-below-design"
    assert [h["action"] for h in hist] == ["quarantine", "isolate"]
    assert hist[0]["evidence"] == {"measured": 270.1} and hist[1]["applied"] is True
    assert status == [{**hist[1], "since": format_ts(T0 + timedelta(minutes=5))}]
    with StateStore(tmp_path) as store, pytest.raises(ValueError, match="quarantine, isolate, release"):
        store.record_action("r1", {"entity": "x", "entity_kind": "host", "action": "drain", "reason": ""})


def test_current_status_is_the_latest_decision_per_entity(tmp_path: Path) -> None:
    with StateStore(tmp_path) as store:
        def act(run: str, entity: str, kind: str, action: str, minutes: int) -> None:
            store.record_action(run, {"entity": entity, "entity_kind": kind, "action": action,
                                      "reason": f"{action} in {run}", "rule": "r"}, ts=T0 + timedelta(minutes=minutes))

        act("r1", "node003/gpu2", "card", "quarantine", 0)
        act("r1", "node003/gpu2", "card", "release", 1)   # not confirmed
        act("r1", "node007", "host", "quarantine", 2)
        act("r2", "node007", "host", "isolate", 3)
        act("r2", "node005/gpu1", "card", "quarantine", 4)
        status = store.current_status()
        assert [(s["entity"], s["action"], s["run_id"]) for s in status] == [
            ("node005/gpu1", "quarantine", "r2"), ("node007", "isolate", "r2")]
        assert store.last_release("node003/gpu2") == T0 + timedelta(minutes=1)
        assert store.last_release("node007") is None
        assert len(store.history()) == 5


def test_baselines(tmp_path: Path) -> None:
    with StateStore(tmp_path) as store:
        assert store.load_baseline("nccl-allreduce") is None
        store.save_baseline("nccl-allreduce", {"busbw_GBps": {"1MiB": 80.5}})
        store.save_baseline("nccl-allreduce", {"busbw_GBps": {"1MiB": 81.0}})
        assert store.load_baseline("nccl-allreduce") == {"busbw_GBps": {"1MiB": 81.0}}
        assert store.count("baselines") == 1


def test_timestamps_round_trip() -> None:
    assert parse_ts(format_ts(T0)) == T0
    assert parse_ts("2026-11-29T10:30:00Z") == T0
    with pytest.raises(ValueError):
        format_ts(datetime(2026, 1, 1))


def test_a_failed_write_rolls_back(tmp_path: Path) -> None:
    with StateStore(tmp_path) as store:
        with pytest.raises(AttributeError):  # the second is not a finding: neither is kept
            store.record_findings("r1", [Finding("a", "card", "connectivity", "r", "info", "m"), {"no": "entity"}])
        assert store.count("findings") == 0


# -- concurrency -------------------------------------------------------------------------

WRITERS, WRITES = 4, 50


def _writer(state_dir: str, worker: int, barrier) -> None:
    barrier.wait()  # every process opens the (new) database at once
    with StateStore(state_dir) as store:
        store.record_run(results(f"run-{worker}"))
        for i in range(WRITES):
            store.record_action(f"run-{worker}", {"entity": f"node{worker:03d}/gpu{i % 4}", "entity_kind": "card",
                                                   "action": ("quarantine", "isolate", "release")[i % 3],
                                                   "reason": f"w{worker} #{i}", "rule": "r"})
            store.record_findings(f"run-{worker}", [Finding(f"node{worker:03d}", "host", "connectivity", "r", "info",
                                                            f"#{i}", {"i": i})])


def test_concurrent_processes_lose_nothing(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, barrier)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    with StateStore(tmp_path) as store:
        assert store.count("isolation") == WRITERS * WRITES
        assert store.count("findings") == WRITERS * WRITES
        assert store.count("runs") == WRITERS
        for w in range(WRITERS):
            reasons = [h["reason"] for h in store.history() if h["run_id"] == f"run-{w}"]
            assert reasons == [f"w{w} #{i}" for i in range(WRITES)]  # each writer's order kept
    db = sqlite3.connect(tmp_path / "state.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_opening_waits_for_a_writer_that_holds_a_new_database(tmp_path: Path) -> None:
    # Switching to WAL fails at once ("database is locked"), without the busy handler,
    # while another process holds a write lock on a database not yet in WAL mode: the
    # store must wait for it like any other lock.
    other = sqlite3.connect(tmp_path / "state.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE scratch (x)")
    timer = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    timer.start()
    try:
        with StateStore(tmp_path) as store:
            assert store.schema_version == SCHEMA_VERSION
    finally:
        timer.join()
        other.close()


def test_concurrent_threads_sharing_one_store_and_with_their_own(tmp_path: Path) -> None:
    shared = StateStore(tmp_path)
    errors: list[BaseException] = []

    def work(n: int, own: bool) -> None:
        try:
            store = StateStore(tmp_path) if own else shared
            for i in range(WRITES):
                store.record_action(f"t{n}", {"entity": f"h{n}", "entity_kind": "host", "action": "quarantine",
                                              "reason": str(i)})
                store.current_status()
            if own:
                store.close()
        except (sqlite3.Error, ConfigError, ValueError) as e:  # checked in the main thread below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n, n % 2 == 0)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert shared.count("isolation") == 6 * WRITES
    assert len(shared.current_status()) == 6
    shared.close()


# -- a state store that degrades, not dies (issue 30, class 5) ---------------------------

INV_TEXT = """\
name: tiny
design:
  scale_up:  {bandwidth: "450 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "15 us"}
supernodes:
  - {name: sn0, hosts: "n[1-4]", cards_per_host: 2}
  - {name: sn1, hosts: "n[5-8]", cards_per_host: 2}
backend: mock
"""

# (label, SQL that breaks one row, table and key `status --check` names, the row left out whole)
CORRUPTIONS = [
    ("evidence not JSON", "UPDATE isolation SET evidence = '{not json' WHERE id = 2", "isolation", "id 2", False),
    ("evidence a list", "UPDATE isolation SET evidence = '[1, 2]' WHERE id = 2", "isolation", "id 2", False),
    ("evidence bytes", "UPDATE isolation SET evidence = X'FF00FE' WHERE id = 2", "isolation", "id 2", False),
    ("evidence deep", "UPDATE isolation SET evidence = '" + "[" * 100_000 + "' WHERE id = 2", "isolation", "id 2", False),
    ("bad timestamp", "UPDATE isolation SET ts = 'yesterday' WHERE id = 2", "isolation", "id 2", False),
    ("timestamp a number", "UPDATE isolation SET ts = 1e999 WHERE id = 2", "isolation", "id 2", False),
    ("release bad ts", "UPDATE isolation SET ts = '2026-13-45' WHERE id = 3", "isolation", "id 3", False),
    ("unknown kind", "UPDATE isolation SET entity_kind = 'gizmo' WHERE id = 2", "isolation", "id 2", True),
    ("empty entity", "UPDATE isolation SET entity = '' WHERE id = 1", "isolation", "id 1", True),
    ("applied 7", "UPDATE isolation SET applied = 7 WHERE id = 2", "isolation", "id 2", True),
    ("finding evidence", "UPDATE findings SET evidence = 'nan' WHERE id = 1", "findings", "id 1", False),
    ("finding kind", "UPDATE findings SET entity_kind = 42 WHERE id = 1", "findings", "id 1", True),
    ("schema version", "UPDATE meta SET value = 'two' WHERE key = 'schema_version'", "meta", "key schema_version",
     False),
    ("baseline", "UPDATE baselines SET data = '{' WHERE name = 'b'", "baselines", "name b", True),
    ("summary columns", "UPDATE summaries SET value = X'00'", "summaries", "run_id r1", True),
    ("summary keys", "UPDATE summary_keys SET keys = 'zz'", "summary_keys", "id 1", True),
]


def _populated(path: Path) -> Path:
    """A state store with a run (findings, summaries), isolation decisions and a baseline:
    n2 isolated and applied (id 2), n3/gpu1 quarantined then released (ids 3-4 ...)."""
    from sncheck.health.summaries import Summary

    with StateStore(path) as store:
        store.record_run(results("r1"))
        store.record_findings("r1", [Finding("n2", "host", "connectivity", "host-unreachable", "critical", "down")])
        store.record_action("r1", {"entity": "n2", "entity_kind": "host", "action": "quarantine", "reason": "q"}, ts=T0)
        store.record_action("r1", {"entity": "n2", "entity_kind": "host", "action": "isolate", "reason": "down",
                                   "applied": True, "rule": "host-unreachable"}, {"measured": 0}, ts=T0)
        store.record_action("r1", {"entity": "n3/gpu1", "entity_kind": "card", "action": "release", "reason": "ok"},
                            ts=T0)
        store.record_summaries("r1", [Summary("card", "n1/gpu0", "p2p_bw", 400.0, 1.0, 3)])
        store.save_baseline("b", {"metrics": {}})
    return path


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _populated(tmp_path_factory.mktemp("populated") / "state")


def _corrupt(src: Path, dst: Path, sql: str) -> Path:
    import shutil

    shutil.copytree(src, dst)
    db = sqlite3.connect(dst / "state.db")
    db.execute("PRAGMA ignore_check_constraints = ON")
    db.execute(sql)
    db.commit()
    db.close()
    return dst


@pytest.mark.parametrize("label, sql, table, key, whole", CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS])
def test_a_row_that_does_not_decode_is_set_aside(populated: Path, tmp_path: Path, label: str, sql: str,
                                                 table: str, key: str, whole: bool) -> None:
    from click.testing import CliRunner

    from sncheck.cli.main import main

    state = _corrupt(populated, tmp_path / "state", sql)
    inv = tmp_path / "inv.yaml"
    inv.write_text(INV_TEXT)
    runner = CliRunner()
    for args in (["status"], ["status", "--history"], ["history", "--runs"], ["history", "n1/gpu0"],
                 ["capacity", "-i", str(inv)], ["isolate", "n5", "-i", str(inv)], ["baseline", "make", "--from-state",
                 str(state)]):
        r = runner.invoke(main, [*args, "--state-dir", str(state)] if args[0] != "baseline" else args)
        assert r.exit_code in (0, 1, 2), (args, r.output)
        assert "internal error" not in r.output and "Traceback" not in r.output, (args, r.output)
    r = runner.invoke(main, ["status", "--check", "--state-dir", str(state)])
    assert r.exit_code == 1, r.output
    assert f"{table}  {key}  " in r.output, r.output
    assert ("left out" if whole else "kept, value replaced") in r.output
    with StateStore(state) as store:
        assert [(b.table, b.key) for b in store.check()] == [(table, key)]
        status = {s["entity"]: s for s in store.current_status()}
        if table == "isolation" and key == "id 2" and not whole:
            # the decision still counts: n2 stays isolated (out of the hostfile, inside the cap)
            assert status["n2"]["action"] == "isolate" and status["n2"]["applied"]
        if (table, key) == ("isolation", "id 2") and whole:
            assert status["n2"]["action"] == "quarantine"  # the latest decision that decodes
    db = sqlite3.connect(state / "state.db")  # the row is kept as it was, for whoever repairs it
    assert db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] >= 1
    db.close()


def test_the_issue_example_run_and_status_go_on(populated: Path, tmp_path: Path) -> None:
    """One isolation.evidence set to '{not json' (and every other class at once): status and
    a run with --state-dir exited 3 before measuring anything."""
    from click.testing import CliRunner

    from sncheck.cli.main import main

    state = _corrupt(populated, tmp_path / "state", CORRUPTIONS[0][1])
    db = sqlite3.connect(state / "state.db")
    db.execute("PRAGMA ignore_check_constraints = ON")
    for _, sql, *_ in CORRUPTIONS[4:]:
        if "id = 2" not in sql:
            db.execute(sql)
    db.commit()
    db.close()
    inv = tmp_path / "inv.yaml"
    inv.write_text(INV_TEXT)
    r = CliRunner().invoke(main, ["connectivity", "-i", str(inv), "--backend", "mock", "--seed", "1", "-q",
                                  "--out", str(tmp_path / "run"), "--state-dir", str(state)])
    assert r.exit_code == 0, r.output
    warned = [ln for ln in r.output.splitlines() if "isolation, id 2" in ln]
    assert len(warned) == 1 and "evidence is not JSON" in warned[0]  # once, by table and key
    r = CliRunner().invoke(main, ["status", "--state-dir", str(state)])
    assert r.exit_code == 0 and "n2" in r.output, r.output
    with StateStore(state) as store:
        assert len(store.runs()) == 2  # the run was recorded beside the rows set aside


# ------------------------------------------------------------------ special files where the store keeps its own (issue 30)
def test_a_special_file_at_any_of_the_stores_names_is_refused_and_left(tmp_path: Path) -> None:
    """SQLite removes and recreates its -wal and -shm itself: a FIFO planted as state.db-wal
    was replaced by `sncheck status`, and `isolate --apply` exited 3 ("disk I/O error") with
    the lock taken. Each special file kind of the adversary's, at the database's name and
    each side file's, is refused before SQLite opens anything (exit 2 naming it) and left."""
    from adversary import mode_of, planted, special_files

    from sncheck.store.statedir import SQLITE_FILES

    with StateStore(tmp_path / "good") as st:  # a store with a row, copied for each case
        st.record_run(results("20261129T103000Z-aaaa"))
    kinds = list(special_files(tmp_path / "specials"))
    assert len(kinds) >= 4
    for suffix in SQLITE_FILES:
        for label, special in kinds:
            d = tmp_path / f"s{suffix}-{label.replace(' ', '_')}"
            d.mkdir()
            (d / "state.db").write_bytes((tmp_path / "good" / "state.db").read_bytes())
            target = d / f"state.db{suffix}"
            target.unlink(missing_ok=True)
            with planted(special, target) as mode:
                with pytest.raises(ConfigError) as e:
                    StateStore(d)
                assert str(target) in str(e.value) and "not a regular file" in str(e.value), (label, suffix, e.value)
                assert mode_of(target) == mode, (label, suffix)
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    (dangling / "state.db-wal").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="dangling"):
        StateStore(dangling)
    assert not (tmp_path / "nowhere").exists()


def test_status_with_a_fifo_as_the_wal_is_one_line_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sncheck.cli.main import main

    with StateStore(tmp_path / "s") as st:
        st.record_run(results("20261129T103000Z-aaaa"))
    os.mkfifo(tmp_path / "s" / "state.db-wal")
    r = CliRunner().invoke(main, ["status", "--state-dir", str(tmp_path / "s")])
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and "state.db-wal" in r.output and "FIFO" in r.output, r.output
    assert stat.S_ISFIFO(os.lstat(tmp_path / "s" / "state.db-wal").st_mode)
