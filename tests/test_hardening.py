"""Issue 9: every bad input a one-line error, bounded work, one run per directory,
exit codes as documented. Each case of the issue's list has a test here (signals are
in test_signals.py, generated inputs in test_fuzz.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ConfigError
from sncheck.run.inputs import load_inventory_text
from sncheck.store.rundir import RunStore, read_frames, read_rows
from sncheck.vendors.parsers import strip_source_header

ROOT = Path(__file__).resolve().parent.parent

INV = """\
name: tiny
design:
  scale_up:  {bandwidth: "450 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "15 us"}
supernodes:
  - {name: sn0, hosts: "n[1-2]", cards_per_host: 2}
  - {name: sn1, hosts: "n[3-4]", cards_per_host: 2}
backend: mock
"""


def one_line_error(result, code: int = 2) -> str:
    """The result is exit ``code`` with a single line on stderr/stdout and no traceback."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def inv(tmp_path) -> Path:
    p = tmp_path / "inv.yaml"
    p.write_text(INV)
    return p


def mock_run(inv: Path, tmp_path: Path, playbook_text: str, *extra: str):
    pb = tmp_path / "pb.yaml"
    pb.write_text(playbook_text)
    return cli("run", str(pb), "-i", str(inv), "--backend", "mock", "-q", *extra)


# -- 1. tracebacks on bad input --------------------------------------------------------

@pytest.mark.parametrize("stress, needle", [
    ("{collectives: [[all_reduce]]}", "layers[0].stress.collectives[0]: must be one of all_reduce, all_to_all, got a list"),
    ("{collectives: []}", "layers[0].stress.collectives: must be a non-empty list of all_reduce, all_to_all, got an empty list"),
    ("{collectives: [all_reduce, all_reduce]}", "twice"),
    ("{min_bytes: 1M, max_bytes: 1K}", "min_bytes (1048576) is above max_bytes"),
    ("{step_factor: 1}", "step_factor: must be an integer from 2"),
    ("{duration: .nan}", "duration: must be a finite number of seconds"),
    ("{duration: .inf}", "duration: must be a finite number of seconds"),
    ("{duration: -5}", "duration: must be a number of seconds above 0 up to 604800, got -5"),
    ("{max_bytes: 1e400}", "finite"),
    ("{iters: [1]}", "iters: must be an integer"),
])
def test_bad_playbook_is_one_line_exit_2(tmp_path, inv, stress, needle):
    line = one_line_error(mock_run(inv, tmp_path, f"layers:\n  - stress: {stress}\n", "--out", str(tmp_path / "r")))
    assert needle in line and "pb.yaml:2" in line
    assert not (tmp_path / "r").exists()  # refused before a run directory exists


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e9"])
def test_bad_duration_option(tmp_path, inv, value):
    line = one_line_error(mock_run(inv, tmp_path, "layers: [stress]\n", "--duration", value))
    assert "--duration" in line


@pytest.mark.parametrize("golden", [
    '"a string"', "[1, 2, 3]", "{}", '{"schema": "sncheck.golden/1", "loss": "abc"}',
    '{"schema": "sncheck.golden/1", "loss": [1.0, NaN]}', '{"schema": "sncheck.golden/1", "loss": [1.0, 0]}',
    '{"schema": "sncheck.golden/1", "loss": [1.0], "band": {"step_rel": "x"}}', "\x00\x01binary",
])
def test_bad_golden_reference(tmp_path, inv, golden):
    ref = tmp_path / "ref.json"
    ref.write_text(golden)
    line = one_line_error(mock_run(inv, tmp_path, f"layers:\n  - golden: {{reference: {ref}}}\n"))
    assert str(ref) in line


@pytest.mark.parametrize("reference", ["[]", "[a, 3]", "[a, a]", "{x: 1}", "3"])
def test_golden_reference_field_must_be_a_name(tmp_path, inv, reference):
    # a name, or a non-empty list of names (one per replica size, ops4): "[a, b]" is such a list now
    line = one_line_error(mock_run(inv, tmp_path, f"layers:\n  - golden: {{reference: {reference}}}\n"))
    assert "pb.yaml:2" in line and "reference" in line


@pytest.mark.parametrize("baseline", [
    "[1]", '"x"', "not json", '{"schema": "sncheck.baseline/1"}',
    '{"schema": "sncheck.baseline/1", "metrics": {"p2p_bandwidth": {"tier": {"scale_up": "x"}}}}',
    '{"schema": "sncheck.baseline/1", "metrics": {"p2p_bandwidth": {"tier": {"scale_up": NaN}}}}',
    '{"schema": "sncheck.baseline/1", "metrics": {"p2p_bandwidth": {"card": {"scale_up": {"n1/gpu0": 0}}}}}',
])
def test_malformed_baseline(tmp_path, inv, baseline):
    path = tmp_path / "base.json"
    path.write_text(baseline)
    line = one_line_error(mock_run(inv, tmp_path, "layers: [connectivity]\n", "--baseline", str(path),
                                   "--out", str(tmp_path / "r")))
    assert str(path) in line
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("fault, needle", [
    ("{type: [slow_card], target: n1/gpu0}", "unknown fault type a list"),
    ("{type: slow_card, target: [n1/gpu0]}", "faults[0].target: must be a non-empty string"),
    ("{type: slow_card, target: n1/gpu0, factor: .nan}", "factor: must be a finite number"),
    ("{type: jittery_card, target: n1/gpu0, factor: .inf}", "factor: must be a finite number"),
    ("{type: jittery_card, target: n1/gpu0, probability: .nan}", "probability: must be a finite number"),
])
def test_bad_fault(tmp_path, inv, fault, needle):
    plan = tmp_path / "faults.yaml"
    plan.write_text(f"faults:\n  - {fault}\n")
    line = one_line_error(mock_run(inv, tmp_path, "layers: [connectivity]\n", "--faults", str(plan)))
    assert needle in line and "faults.yaml:2" in line


@pytest.mark.parametrize("rule, needle", [
    ("{name: r, op: [threshold], metric: p2p_bandwidth, severity: warning, below: 1}", "unknown op a list"),
    ("{name: r, op: threshold, metric: [p2p_bandwidth], severity: warning, below: 1}", "unknown metric a list"),
    ("{name: r, op: threshold, metric: p2p_bandwidth, severity: [warning], below: 1}", "rules.r.severity: must be one of info, warning, critical, got a list"),
    ("{name: r, op: threshold, metric: p2p_bandwidth, severity: warning, below: .nan}", "finite"),
    ("{name: [r], op: threshold, metric: p2p_bandwidth, severity: warning, below: 1}", "rules[0].name: must be a non-empty string, got a list"),
])
def test_bad_rule(tmp_path, rule, needle):
    path = tmp_path / "rules.yaml"
    path.write_text(f"rules:\n  - {rule}\n")
    line = one_line_error(cli("rules", "check", str(path)))
    assert needle in line and "rules.yaml:2" in line


@pytest.mark.parametrize("ssh, needle", [
    ('{connect_timeout: "ten"}', "ssh.connect_timeout: must be a number of seconds above 0"),
    ("{connect_timeout: .nan}", "finite"),
    ("{command_timeout: -1}", "command_timeout"),
    ("{forks: 0}", "ssh.forks"),
    ("{port: 70000}", "ssh.port: must be an integer from 1 to 65535"),
])
def test_bad_ssh_settings(tmp_path, ssh, needle):
    path = tmp_path / "inv.yaml"
    path.write_text(INV + f"ssh: {ssh}\n")
    line = one_line_error(cli("inventory", "check", str(path)))
    assert needle in line and "inv.yaml:9" in line


def test_parse_csv_field_over_128k(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("index, name\n0, " + "x" * (200 << 10) + "\n")
    # a view that raises on its input did not read it: that output's parse error, exit 1 (review18 #5,
    # sncheck/vendors/crash.py), as any output the view cannot read; named, in one line
    line = one_line_error(cli("parse", "nvidia-smi-query-gpu", str(path)), code=1)
    assert str(path) in line and "field larger than field limit" in line


def test_parse_dev_zero_is_refused_fast():
    """A device is not a log (issue 30: inputs are regular files only, read within a limit)."""
    started = time.monotonic()
    line = one_line_error(cli("parse", "nccl-tests", "/dev/zero"))
    assert "/dev/zero" in line and "character device" in line and time.monotonic() - started < 2


def test_parse_100mb_log_is_refused_fast(tmp_path):
    path = tmp_path / "all_reduce_perf.log"
    with open(path, "wb") as fh:  # a sparse 100 MB file: its size, not its bytes, matters
        fh.truncate(100 << 20)
    started = time.monotonic()
    line = one_line_error(cli("parse", "nccl-tests", str(path)))
    assert "larger than 4 MiB" in line and time.monotonic() - started < 2


def test_baseline_make_on_binary_files(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    line = one_line_error(cli("baseline", "make", str(run), "--out", str(tmp_path / "b.json")))
    assert str(run) in line  # no rows/ at all
    (run / "rows" / "p2p").mkdir(parents=True)
    (run / "rows" / "p2p" / "part-000001.parquet").write_bytes(os.urandom(4096))
    line = one_line_error(cli("baseline", "make", str(run), "--out", str(tmp_path / "b.json")))
    assert "part-000001.parquet" in line
    (run / "results.json").write_bytes(b"\x00\xff" * 100)
    line = one_line_error(cli("baseline", "make", str(run), "--out", str(tmp_path / "b.json")))
    assert "results.json" in line


def test_a_special_file_as_a_runs_results_json_is_refused_not_taken_for_a_killed_run(tmp_path, inv):
    """baseline make took a results.json that is not a regular file for one a killed run never
    wrote, so the run's rows entered the baseline whatever its verdict (exit 0). Every
    special file kind of the adversary's there is refused: exit 2 naming it, left as it was."""
    from adversary import mode_of, planted, special_files

    run = tmp_path / "run"
    assert mock_run(inv, tmp_path, "layers: [connectivity]\n", "--out", str(run)).exit_code == 0
    (run / "results.json").unlink()
    for label, special in special_files(tmp_path / "specials"):
        with planted(special, run / "results.json") as mode:
            line = one_line_error(cli("baseline", "make", str(run), "--out", str(tmp_path / "b.json")))
            assert "results.json" in line and "not a regular file" in line, (label, line)
            assert mode_of(run / "results.json") == mode and not (tmp_path / "b.json").exists(), label
    made = cli("baseline", "make", str(run), "--out", str(tmp_path / "b.json"))  # absent: a killed run
    assert made.exit_code == 0, made.output


@pytest.mark.parametrize("command", [
    ("diff", "{run}", "{run}"),
    ("plan", "--params", "7B", "--layout", "tp=1,pp=1,dp=1", "--measured", "{run}"),
    ("watch", "{dumps}", "--once", "--out", "{out}", "--baseline", "{run}"),
])
def test_a_special_file_as_results_json_is_named_not_said_missing(tmp_path, command):
    """diff, plan --measured and watch --baseline asked is_file() whether a run directory had
    its results.json: a FIFO, a socket, a device or a link to one there was "no results.json"
    (exit 2 naming the directory: the wrong fix suggested), or, for watch, the directory was
    read as a job's dumps. Each goes through the one reader now: exit 2 naming the special
    file, left as it was."""
    from adversary import mode_of, planted, special_files

    run, dumps = tmp_path / "run", tmp_path / "dumps"
    run.mkdir()
    dumps.mkdir()
    ras = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "nccl-ras" / "02_ok_256ranks_2.26.2_issue1730.txt"
    (dumps / "ras.txt").write_text(strip_source_header(ras.read_text()))  # a job's dump to judge
    for label, special in special_files(tmp_path / "specials"):
        with planted(special, run / "results.json") as mode:
            args = [a.format(run=run, dumps=dumps, out=tmp_path / "out") for a in command]
            line = one_line_error(cli(*args))
            assert "results.json" in line and "not a regular file" in line, (label, line)
            assert "no results.json" not in line, (label, line)
            assert mode_of(run / "results.json") == mode, label
        if command[0] == "watch":
            break  # the FIFO: a watch judges the dumps first (1.6 s a call; CI time)


def test_baseline_from_nonfinite_rows_does_not_break_the_next_run(tmp_path, inv):
    first = tmp_path / "first"
    result = mock_run(inv, tmp_path, "layers: [connectivity]\n", "--out", str(first))
    assert result.exit_code == 0, result.output
    parts = sorted((first / "rows" / "p2p").glob("part-*.parquet"))
    p2p = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    for p in parts:
        p.unlink()
    # every measurement non-finite, as a broken probe could write them
    p2p["bw_GBps"] = np.where(p2p["src"].astype(str).str.startswith("n1"), np.nan, np.inf)
    p2p["lat_us"] = -np.inf
    p2p.to_parquet(parts[0])
    base = tmp_path / "base.json"
    # (hostile round 8, H8-01) an infinite or negative measurement is refused, never left out:
    # left out, a tier of them vanished from the baseline without a word
    line = one_line_error(cli("baseline", "make", str(first), "--out", str(base)))
    assert str(first) in line and "no measurement gives (first: inf" in line and not base.exists(), line
    p2p["bw_GBps"] = np.where(p2p["src"].astype(str).str.startswith("n1"), np.nan, 450.0)
    p2p["lat_us"] = np.nan  # not measured: no value, left out as before
    p2p.to_parquet(parts[0])
    made = cli("baseline", "make", str(first), "--out", str(base))
    assert made.exit_code == 0, made.output
    data = json.loads(base.read_text())  # strict JSON: no NaN, and only finite values kept
    for spec in data["metrics"].values():
        assert all(v > 0 for v in spec["tier"].values())
    second = mock_run(inv, tmp_path, "layers: [connectivity]\n", "--baseline", str(base),
                      "--out", str(tmp_path / "second"))
    assert second.exit_code in (0, 1), second.output
    assert json.loads((tmp_path / "second" / "results.json").read_text())["verdict"] in ("pass", "fail")


def test_cards_is_bounded():
    line = one_line_error_usage(cli("run", "pre-upgrade-gate", "--cards", "100000"))
    assert "--cards" in line


def one_line_error_usage(result) -> str:
    """Click's usage errors: exit 2, its 'Error:' line, no traceback."""
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    return next(ln for ln in result.output.splitlines() if ln.startswith("Error:"))


# -- 2. unbounded work from small inputs -----------------------------------------------

def _alias_bomb() -> str:
    lines = ["name: bomb", 'x0: &a0 ["n[1-9]","n[1-9]","n[1-9]","n[1-9]","n[1-9]","n[1-9]","n[1-9]","n[1-9]","n[1-9]"]']
    lines += [f"x{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    lines.append("supernodes:\n  - {name: sn0, hosts: *a8, cards_per_host: 4}")
    return "\n".join(lines) + "\n"


def _bounded(fn) -> tuple[float, int, Exception]:
    tracemalloc.start()
    started = time.monotonic()
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error is what we measure
        err = e
    else:
        err = None
    elapsed = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, peak, err


@pytest.mark.parametrize("text, needle", [
    (_alias_bomb(), "aliases"),
    ("supernodes:\n  - {name: sn0, hosts: 'node[1-10000000]', cards_per_host: 4}\n", "more than 100000 hosts"),
    ("supernodes:\n  - {name: sn0, hosts: 'r[1-1000]n[1-1000]', cards_per_host: 4}\n", "more than 100000 hosts"),
    ("supernodes:\n  - {name: sn0, hosts: 'n[1-99999]', cards_per_host: 1024}\n", "1000000 cards"),
    ("a: &a [*a]\nsupernodes: *a\n", "recursive alias"),
    ("supernodes: " + "[" * 20000 + "]" * 20000 + "\n", "nested more than 64 levels"),
], ids=["alias-bomb", "node[1-10000000]", "r[1-1000]n[1-1000]", "10^8-cards", "recursive-alias", "deep-nesting"])
def test_small_input_large_work_is_refused_fast(text, needle):
    assert len(text) < 2000 or "[" * 100 in text
    elapsed, peak, err = _bounded(lambda: load_inventory_text(text, "inv.yaml"))
    assert isinstance(err, ConfigError) and needle in str(err), err
    assert elapsed < 2.0, f"{elapsed:.2f} s"
    assert peak < 200 << 20, f"{peak / 2**20:.0f} MB"


@pytest.mark.parametrize("text", [_alias_bomb(), "supernodes:\n  - {name: sn0, hosts: 'node[1-10000000]', cards_per_host: 4}\n"],
                         ids=["alias-bomb", "node[1-10000000]"])
def test_alias_bomb_and_huge_hostlist_through_the_cli(tmp_path, text):
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    started = time.monotonic()
    # A small helper starts sncheck and reports that child's own rusage: a child forked
    # straight from this (large) pytest process would count pytest's pages in its peak.
    helper = ("import json, os, subprocess, sys\n"
              "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
              "err = p.stderr.read()\n"
              "_, status, u = os.wait4(p.pid, 0)\n"
              "print(json.dumps({'code': os.waitstatus_to_exitcode(status), 'stderr': err.decode(),\n"
              "                  'rss': u.ru_maxrss * 1024, 'cpu': u.ru_utime + u.ru_stime}))\n")
    out = subprocess.run([sys.executable, "-c", helper, sys.executable, "-m", "sncheck", "inventory", "check",
                          str(path)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         timeout=300, check=True)
    elapsed = time.monotonic() - started
    child = json.loads(out.stdout)
    stderr, rss, cpu = child["stderr"], child["rss"], child["cpu"]
    assert child["code"] == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert "Traceback" not in stderr
    # The whole process, imports included: the bound, 2 s and 200 MB (about
    # 0.6 s and 35 MB since the CLI loads pandas and paramiko only for the commands that
    # use them). CPU time, not wall time: the test machine is shared.
    assert rss < 200 << 20, f"{rss / 2**20:.0f} MB"
    assert cpu < 2, f"{cpu:.1f} s of CPU"
    assert elapsed < 120, f"{elapsed:.1f} s"


# -- 4. the run directory --------------------------------------------------------------

def test_second_run_on_a_locked_out_is_refused(tmp_path, inv):
    out = tmp_path / "r"
    holder = RunStore(out, "holder-run")  # a run in progress holds the lock
    holder.emit({"kind": "probe", "layer": "connectivity"})
    holder.flush()
    line = one_line_error(mock_run(inv, tmp_path, "layers: [connectivity]\n", "--out", str(out), "--force"))
    assert "another sncheck run is using this run directory" in line
    rows = read_rows(out)
    assert [r["run_id"] for r in rows] == ["holder-run"]  # nothing of the refused run mixed in
    holder.close()
    holder.release()


def test_two_concurrent_cli_runs_cannot_mix_rows(tmp_path, inv):
    out = tmp_path / "r"
    pb = tmp_path / "pb.yaml"
    pb.write_text("layers: [connectivity, stress]\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "sncheck", "run", str(pb), "-i", str(inv), "--backend", "mock", "-q",
            "--out", str(out), "--force"]
    procs = [subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    results = [(p.wait(120), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    # overlapping, the second is refused (exit 2); where one process started only after the other had
    # ended (a busy machine schedules them apart: stop 43's suite), --force replaces a finished run, both 0
    assert codes in ([0, 2], [0, 0]), results
    rows = read_rows(out)
    run_id = json.loads((out / "results.json").read_text())["run_id"]
    assert {r["run_id"] for r in rows} == {run_id}


def test_reused_out_is_refused_unless_force(tmp_path, inv):
    out = tmp_path / "r"
    first = mock_run(inv, tmp_path, "layers: [connectivity]\n", "--out", str(out))
    assert first.exit_code == 0, first.output
    first_id = json.loads((out / "results.json").read_text())["run_id"]
    line = one_line_error(mock_run(inv, tmp_path, "layers: [connectivity]\n", "--out", str(out)))
    assert "already holds a run" in line and "--force" in line
    assert json.loads((out / "results.json").read_text())["run_id"] == first_id  # untouched
    forced = mock_run(inv, tmp_path, "layers: [connectivity]\n", "--out", str(out), "--force")
    assert forced.exit_code == 0, forced.output
    second_id = json.loads((out / "results.json").read_text())["run_id"]
    rows = read_rows(out)
    assert second_id != first_id and rows and {r["run_id"] for r in rows} == {second_id}


def test_out_below_a_file_is_exit_2(tmp_path, inv):
    (tmp_path / "afile").write_text("")
    line = one_line_error(mock_run(inv, tmp_path, "layers: [connectivity]\n", "--out", str(tmp_path / "afile" / "sub")))
    assert "Not a directory" in line


def _mount(args: list[str]) -> bool:
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@pytest.fixture
def small_tmpfs(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if not _mount(["-t", "tmpfs", "-o", "size=192k", "tmpfs", str(mnt)]):
        pytest.skip("cannot mount a tmpfs here (needs root and mount rights)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_read_only_out_is_exit_2(tmp_path, inv):
    ro = tmp_path / "ro"
    ro.mkdir()
    if not _mount(["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)]):
        pytest.skip("cannot mount a read-only tmpfs here (needs root and mount rights)")
    try:
        line = one_line_error(mock_run(inv, tmp_path, "layers: [connectivity]\n", "--out", str(ro / "run")))
        assert "Read-only file system" in line
    finally:
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)


def test_full_disk_mid_run_is_exit_3_with_whole_rows(tmp_path, small_tmpfs):
    big = tmp_path / "big.yaml"  # 16 hosts x 8 cards: far more rows than 192 KiB hold
    big.write_text(INV.replace('"n[1-2]", cards_per_host: 2', '"n[1-8]", cards_per_host: 8')
                   .replace('"n[3-4]", cards_per_host: 2', '"n[9-16]", cards_per_host: 8'))
    out = small_tmpfs / "run"
    result = mock_run(big, tmp_path, "layers: [connectivity, stress]\n", "--out", str(out))
    line = one_line_error(result, 3)
    assert "No space left on device" in line
    read_frames(out)  # every part that is there is whole (a cut write is a dot-file)
    # space set aside when the run started lets results.json say why
    results = json.loads((out / "results.json").read_text())
    assert results["verdict"] == "error" and "No space left on device" in results["error"]


# -- 5. exit codes ---------------------------------------------------------------------

def test_unforeseen_exception_is_exit_3_with_a_crash_file(monkeypatch, inv):
    import sncheck.cli.main

    def boom(path):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(sncheck.cli.main, "load_inventory", boom)
    line = one_line_error(cli("inventory", "check", str(inv)), 3)
    assert "internal error in 'sncheck inventory check'" in line and "ZeroDivisionError: a bug" in line
    crash = Path(line.split("traceback in ")[1].split(" (please")[0])
    assert crash.name.startswith("sncheck-crash-")  # no run directory: a temp file
    assert "Traceback" in crash.read_text() and "ZeroDivisionError" in crash.read_text()
    crash.unlink()
    verbose = CliRunner().invoke(main, ["-v", "inventory", "check", str(inv)])
    assert isinstance(verbose.exception, ZeroDivisionError)  # -v: the traceback, not a crash file


def test_crash_during_a_run_goes_to_out_crash_log(monkeypatch, tmp_path, inv):
    import sncheck.run.runner

    def boom(*a, **k):
        raise RuntimeError("renderer bug")

    monkeypatch.setattr(sncheck.run.runner, "write_reports", boom)
    out = tmp_path / "r"
    line = one_line_error(mock_run(inv, tmp_path, "layers: [connectivity]\n", "--out", str(out)), 3)
    assert f"traceback in {out / 'crash.log'}" in line
    assert "RuntimeError: renderer bug" in (out / "crash.log").read_text()


def test_parse_dcgmi_fail_exits_1():
    real = ROOT / "fixtures/real/dcgmi-diag/03_r2_fragment_gpu_memory_fail_gpu0_thermal_warning.txt"
    result = CliRunner().invoke(main, ["parse", "dcgmi-diag", str(real)])
    assert result.exit_code == 1 and "dcgmi diag result: Fail" in result.output
    ok = CliRunner().invoke(main, ["parse", "dcgmi-diag", str(ROOT / "fixtures/real/dcgmi-diag/01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt")])
    assert ok.exit_code == 0, ok.output


def test_parse_nonzero_wrong_under_an_ok_footer_exits_1(tmp_path):
    real = sorted((ROOT / "fixtures/real/nccl-tests/all_reduce_perf").glob("*newcols*"))[0]
    text = real.read_text()
    lines = text.splitlines(keepends=True)
    # the first data row: its out-of-place #wrong column from 0 to 5; the footer still says 0 OK
    i = next(n for n, ln in enumerate(lines) if ln.split() and ln.split()[0].isdigit() and len(ln.split()) >= 12)
    cells = lines[i].rstrip("\n").split(" ")
    idx = [n for n, c in enumerate(cells) if c][8]  # size count type redop root time algbw busbw #wrong
    assert cells[idx] == "0", lines[i]
    cells[idx] = "5"
    lines[i] = " ".join(cells) + "\n"
    path = tmp_path / "all_reduce_perf.log"
    path.write_text("".join(lines))
    assert "Out of bounds values : 0 OK" in text
    result = CliRunner().invoke(main, ["parse", "nccl-tests", str(path)])
    assert result.exit_code == 1 and "5 wrong results (#wrong)" in result.output, result.output


@pytest.mark.parametrize("hosts", ["'--all'", "'-n[1-2]'", "[ok1, '--drain']"])
def test_host_names_beginning_with_dash_are_refused(tmp_path, hosts):
    path = tmp_path / "inv.yaml"
    path.write_text(f"supernodes:\n  - {{name: sn0, hosts: {hosts}, cards_per_host: 2}}\n")
    line = one_line_error(cli("inventory", "check", str(path)))
    assert "bad host name" in line and "inv.yaml:2" in line


@pytest.mark.parametrize("command", ["isolate", "release"])
@pytest.mark.parametrize("entity", ["--all", "-n1", "n99", "n1/gpu7", "n1/gpu0<->n99/gpu0"])
def test_entities_must_be_in_the_inventory(tmp_path, inv, command, entity):
    line = one_line_error(cli(command, "--state-dir", str(tmp_path / "st"), "-i", str(inv), "--", entity))
    assert repr(entity) in line
