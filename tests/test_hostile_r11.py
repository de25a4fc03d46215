"""Hostile inputs, round 11: new instances of the outside probe's FS, INJ, EV, CLI and PAR
classes (adversarial-r3), none of its own cases again. Run directories that are FIFOs,
sockets, /dev/stdout, not writable, named with a newline, replaced by a link while the run
goes, or holding a linked rows/; evidence names at the file-name limit; names that carry
HTML comment ends, CDATA ends, line separators, Jinja tags, bidi and zero-width marks and OSC
hyperlinks through every output; playbooks and inventories given as '-' or a directory, YAML
tags, merge loops, a million aliases, a 10 MB scalar, a BOM, UTF-16, numbers YAML reads
otherwise; and parse views fed reordered, doubled, unchecked, appended and empty captures.
Each test names its case id; the README's round 11 table lists them."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_hardening import one_line_error

from sncheck.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
NCCL = ROOT / "fixtures" / "real" / "nccl-tests" / "all_reduce_perf" / "01_h100_16ranks_2nodes_float_newcols.txt"
DCGMI = ROOT / "fixtures" / "real" / "dcgmi-diag" / "01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt"
SMALL = ("name: small\ndesign:\n  scale_up:  {bandwidth: '450 GB/s', latency: '3 us'}\n"
         "  scale_out: {bandwidth: '400 Gb/s', latency: '15 us'}\n"
         "supernodes:\n  - {name: sn0, hosts: 'n[1-4]', cards_per_host: 2}\n")


def _cli(*args: object, input: str | None = None):  # noqa: A002 -- CliRunner's own name
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    p = tmp_path / "small.yaml"
    p.write_text(SMALL)
    return p


def _conn(inv: Path, out: object, *extra: object):
    return _cli("connectivity", "-i", inv, "--backend", "mock", "--seed", "1", "-q", "--out", out, *extra)


# -- filesystem --------------------------------------------------------------------------------

def test_h11_01_out_on_a_fifo_is_refused_and_never_opened(tmp_path: Path, small: Path) -> None:
    """H11-01: --out naming a FIFO: exit 2 naming it, before any work (an open would block)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    line = one_line_error(_conn(small, fifo))
    assert f"{fifo}: is a FIFO, not a directory" in line, line


def test_h11_02_out_on_a_socket_is_refused(tmp_path: Path, small: Path) -> None:
    """H11-02: --out naming a listening Unix socket: exit 2 naming it."""
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        line = one_line_error(_conn(small, path))
    assert f"{path}: is a socket, not a directory" in line, line


def test_h11_03_out_on_dev_stdout_is_refused(small: Path) -> None:
    """H11-03: --out /dev/stdout (a pipe, a terminal or a file, whatever stdout is): never a
    run directory, exit 2 naming it."""
    line = one_line_error(_conn(small, "/dev/stdout"))
    assert "/dev/stdout: is " in line and "not a directory" in line, line


def test_h11_04_out_in_a_directory_no_one_may_write(tmp_path: Path, small: Path) -> None:
    """H11-04: --out inside (and on) a directory nobody may write into (immutable as root,
    0555 otherwise): exit 2 naming it, nothing created."""
    locked = tmp_path / "locked"
    locked.mkdir()
    root = os.geteuid() == 0
    made = subprocess.run(["chattr", "+i", str(locked)] if root else ["chmod", "0555", str(locked)],
                          capture_output=True, text=True)
    if made.returncode != 0:  # overlayfs and tmpfs take no immutable flag, and root writes past 0555
        pytest.skip(f"no way to make {locked} unwritable for root here: {made.stderr.strip()}")
    try:
        for out in (locked / "run", locked):
            line = one_line_error(_conn(small, out))
            assert f"{out}: cannot use it as the run directory" in line, line
        assert list(locked.iterdir()) == []
    finally:
        subprocess.run(["chattr", "-i", str(locked)] if root else ["chmod", "0755", str(locked)], check=True)


def test_h11_05_out_with_a_newline_in_its_name_is_refused(tmp_path: Path, small: Path) -> None:
    """H11-05: --out 'a<newline>sncheck: verdict pass' ran, and the summary printed 'results in
    .../a' and a forged line 'sncheck: verdict pass/results.json'. A path option with a
    control or bidi character is refused (exit 2), the name shown escaped on one line."""
    out = tmp_path / "a\nsncheck: verdict pass"
    r = _cli("connectivity", "-i", small, "--backend", "mock", "--seed", "1", "--out", out)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert [ln for ln in r.output.splitlines() if ln.startswith("Error:")] == [
        f"Error: Invalid value for '--out': {tmp_path}/a\\u000asncheck: verdict pass: has a control or bidi "
        "character in its name; name a path without one (see 'main connectivity --help')"], r.output
    assert not out.exists()
    line = one_line_error(_cli("inventory", "check", tmp_path / "x\u202ey.yaml"))
    assert "x\\u202ey.yaml" in line, line


def _swapped_run(small: Path, out: Path, victim: Path, swapped: threading.Event) -> None:
    """A gate into ``out`` whose run directory is swapped for a link to ``victim`` mid-run: exit 3,
    one line naming the run directory, nothing written through the link."""
    r = _cli("run", "pre-upgrade-gate", "-i", small, "--backend", "mock", "--seed", "1", "-q", "--out", out)
    assert swapped.is_set()
    line = one_line_error(r, code=3)
    assert str(out) in line and ("is no longer the directory the run opened" in line or
                                 "a part of this run's rows is gone or changed under the run" in line), line
    assert list(victim.iterdir()) == []


def test_h11_06_run_directory_swapped_for_a_link_while_the_run_goes(tmp_path: Path, small: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """H11-06 (TOCTOU): once the first part is written, the run directory is moved away and a
    link to another directory put in its place. Nothing is written through the link;
    the run ended exit 2 ('not a readable part of a run's rows', the user's input blamed): it is
    the harness that could not go on, exit 3, one line naming the run directory. And where the
    swap came between two parts, the next part's rows/<kind> was made through the link, in the
    other directory (the run directory itself was never checked, only what lies below it).
    The swap is made right after the first part's write returns (it was a thread polling for
    the part: on a busy machine it could come after the run had ended, and the test failed)."""
    from sncheck.store.rundir import RunStore

    out, moved, victim = tmp_path / "run", tmp_path / "moved", tmp_path / "victim"
    victim.mkdir()
    swapped = threading.Event()
    write_part = RunStore._write_part

    def write_then_swap(self: RunStore, kind: str, table: object) -> None:
        write_part(self, kind, table)
        if not swapped.is_set():
            os.rename(out, moved)
            os.symlink(victim, out)
            swapped.set()

    monkeypatch.setattr(RunStore, "_write_part", write_then_swap)
    _swapped_run(small, out, victim, swapped)


def test_h11_07_a_rows_link_is_refused_then_replaced_never_followed(tmp_path: Path, small: Path) -> None:
    """H11-07: rows/ a link to another directory: refused as a run already there (exit 2);
    with --force the link goes, the target keeps what it held and gets nothing."""
    out, target = tmp_path / "run", tmp_path / "target"
    out.mkdir()
    target.mkdir()
    (target / "keep.txt").write_text("keep\n")
    (out / ".sncheck.lock").write_text("")  # an earlier run's directory (review18 #4: without, no run's at all)
    (out / "rows").symlink_to(target)
    line = one_line_error(_conn(small, out))
    assert f"{out}: already holds a run (rows)" in line, line
    r = _conn(small, out, "--force")
    assert r.exit_code == 0, r.output
    assert not (out / "rows").is_symlink() and any((out / "rows").rglob("part-*.parquet"))
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]


def test_h11_08_a_249_character_host_name_gets_a_bounded_distinct_evidence_folder(tmp_path: Path) -> None:
    """H11-08: a host named with 249 characters (four DNS labels) and a finding on it and on
    a short host: each has its own evidence folder, every name under the 255-byte limit."""
    long = "h" + "a" * 61 + "." + "b" * 62 + "." + "c" * 62 + "." + "d" * 60
    inv = tmp_path / "inv.yaml"
    inv.write_text(SMALL.replace("'n[1-4]'", f"'n1,n2,n3,{long}'"))
    faults = tmp_path / "f.yaml"
    faults.write_text(f"faults:\n  - {{type: slow_card, target: {long}/gpu1, factor: 0.3}}\n"
                      "  - {type: down_host, target: n2}\n")
    out = tmp_path / "run"
    r = _cli("connectivity", "-i", inv, "--faults", faults, "--backend", "mock", "--seed", "1", "-q", "--out", out)
    assert r.exit_code == 1, r.output
    names = [p.name for p in (out / "evidence").iterdir()]
    assert all(len(n.encode()) <= 255 for n in names), names
    doc = json.loads((out / "results.json").read_text())
    bundles = {f["entity"]: f["evidence"]["files"][0].split("/")[1] for f in doc["findings"] if f.get("evidence")}
    assert f"{long}/gpu1" in bundles and "n2" in bundles, bundles
    assert len(set(bundles.values())) == len(bundles), bundles


def test_h11_09_out_inside_and_around_the_state_directory(tmp_path: Path, small: Path) -> None:
    """H11-09: --out the state directory's parent with --state-dir inside it, again with
    --force: the state store is no run file, it survives and holds both runs."""
    out = tmp_path / "run"
    state = out / "state"
    for extra in ((), ("--force",)):
        r = _conn(small, out, "--state-dir", state, *extra)
        assert r.exit_code == 0, r.output
    import sqlite3

    with sqlite3.connect(state / "state.db") as db:
        assert db.execute("select count(*) from runs").fetchone()[0] == 2


# -- output injection ---------------------------------------------------------------------------

EVIL = ("x-->y]]>z\u2028l\u2029{% raw %}{{7*7}}{% endraw %}\u202e\u2066bidi\u200dzwj"
        "\x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\ q\"uo\\te\nnext")


@pytest.fixture(scope="module")
def evil_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mock run whose inventory and playbook names are EVIL, with every output format."""
    d = tmp_path_factory.mktemp("inj")
    inv = json.loads(json.dumps({"name": EVIL, "supernodes": [{"name": "sn0", "hosts": "n[1-4]", "cards_per_host": 2}],
                                 "design": {"scale_up": {"bandwidth": "450 GB/s", "latency": "3 us"}}}))
    (d / "inv.yaml").write_text(json.dumps(inv))
    (d / "pb.yaml").write_text(json.dumps({"name": "pb-" + EVIL, "layers": ["connectivity"], "gate": "warning"}))
    (d / "f.yaml").write_text("faults:\n  - {type: slow_card, target: n3/gpu1, factor: 0.5}\n")
    r = _cli("run", d / "pb.yaml", "-i", d / "inv.yaml", "--faults", d / "f.yaml", "--backend", "mock", "--seed", "1",
             "--out", d / "run", "--format", "html,junit,prometheus")
    assert r.exit_code == 1, r.output
    return d / "run"


def test_h11_10_names_with_comment_cdata_and_jinja_ends_in_the_html_report(evil_run: Path) -> None:
    """H11-10: '-->', ']]>', U+2028, '{% raw %}', bidi, ZWJ and an OSC 8 link in the inventory
    name: the report parses in the real headless Chromium to no script, no comment, no link
    to the OSC target; the name's text is there as written ({{7*7}} not evaluated)."""
    from browser import Browser, chromium_path, serve

    if chromium_path() is None:
        pytest.skip("chromium is not installed (scripts/setup.sh installs it)")
    with Browser() as b, serve(evil_run) as base:
        page = b.open(f"{base}/report.html")
        assert page.eval("document.scripts.length") == 0
        assert page.eval("document.evaluate('count(//comment())', document, null, 1, null).numberValue") == 0
        assert page.eval("Array.from(document.links).filter(a => a.href.includes('evil')).length") == 0
        text = page.eval("document.body.textContent")
    assert "x-->y]]>z\u2028l\u2029{% raw %}{{7*7}}{% endraw %}" in text
    assert "49" not in re.findall(r"\d+", text.split("x-->y", 1)[1][:40])
    assert page.errors == []


def test_h11_11_junit_with_a_cdata_end_and_osc_link_parses(evil_run: Path) -> None:
    """H11-11: the same names in junit.xml: it parses; no ESC (XML 1.0 cannot carry it) and the
    ']]>' and '-->' are in the text as written."""
    raw = (evil_run / "junit.xml").read_text()
    assert "\x1b" not in raw
    root = ET.parse(evil_run / "junit.xml").getroot()
    texts = [v for e in root.iter() for v in (*e.attrib.values(), e.text or "")]
    assert any("x-->y]]>z" in t for t in texts), texts[:5]


def _labels(line: str) -> dict[str, str]:
    """The label set of one exposition line, by the text format's own escapes (\\\\, \\", \\n)."""
    body = line[line.index("{") + 1:line.rindex("}")]
    out = {}
    for m in re.finditer(r'(\w+)="((?:[^"\\]|\\.)*)"', body):
        out[m.group(1)] = re.sub(r"\\(.)", lambda e: {"n": "\n"}.get(e.group(1), e.group(1)), m.group(2))
    return out


def test_h11_12_prometheus_labels_with_quotes_backslashes_and_newlines(evil_run: Path) -> None:
    """H11-12: a label value with '"', '\\' and a newline: promtool's parser takes the file
    clean, every sample is one line, and the label reads back as the name was written."""
    import shutil

    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (scripts/setup.sh installs prometheus)")
    text = (evil_run / "sncheck.prom").read_text()
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    info = [ln for ln in text.split("\n") if ln.startswith("sncheck_run_info{")]  # the format's one line end
    assert len(info) == 1
    labels = _labels(info[0])
    assert labels["inventory"] == EVIL and labels["playbook"] == "pb-" + EVIL


def test_h11_13_terminal_lines_escape_line_separators_bidi_and_osc(tmp_path: Path) -> None:
    """H11-13: `inventory check` printed U+2028 and U+2029 raw: one line to a terminal, two
    to every reader that follows Unicode (Python, JavaScript, log shippers). They are escaped
    as the control and bidi characters are; no ESC, no override reaches the terminal."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(json.dumps({"name": EVIL, "supernodes": [{"name": "sn0", "hosts": "n[1-2]", "cards_per_host": 2}],
                               "design": {"scale_up": {"bandwidth": "450 GB/s", "latency": "3 us"}}}))
    r = _cli("inventory", "check", inv)
    assert r.exit_code == 0, r.output
    first = r.output.splitlines()[0]  # Unicode's line ends: \n, \r, U+2028, U+2029, ...
    assert not re.search("[\x1b\u202e\u2066]", r.output), r.output
    assert first.startswith(f"{inv}: ok: x-->y]]>z\\u2028l\\u2029{{% raw %}}{{{{7*7}}}}{{% endraw %}}\\u202e"), first
    assert first.endswith("\\u000anext: 1 supernodes, 2 hosts, 4 cards"), first


# -- CLI inputs ------------------------------------------------------------------------------------

def test_h11_14_a_playbook_given_as_dash_or_an_inventory_as_a_directory(tmp_path: Path, small: Path) -> None:
    """H11-14: PLAYBOOK '-' (stdin) is not a playbook: exit 2 naming '-' and the shipped names;
    -i a directory: exit 2, 'is a directory', nothing read."""
    line = one_line_error(_cli("run", "-", "-i", small, "--backend", "mock", "--out", tmp_path / "r",
                               input="name: x\nlayers: [connectivity]\n"))
    assert line.startswith("sncheck: error: -: no such playbook file or shipped playbook name (shipped: "), line
    r = _cli("run", "post-delivery", "-i", tmp_path, "--backend", "mock", "--out", tmp_path / "r")
    assert r.exit_code == 2 and f"{tmp_path}: is a directory, not a regular file" in r.output, r.output
    assert not (tmp_path / "r").exists()


def test_h11_15_a_python_tag_runs_nothing(tmp_path: Path) -> None:
    """H11-15: name: !!python/object/apply:os.system [touch FILE]: exit 2 at its line, no file."""
    pwned = tmp_path / "pwned"
    inv = tmp_path / "inv.yaml"
    inv.write_text(SMALL.replace("name: small", f"name: !!python/object/apply:os.system ['touch {pwned}']"))
    line = one_line_error(_cli("inventory", "check", inv))
    assert f"{inv}:1: malformed YAML" in line and "python/object/apply" in line, line
    assert not pwned.exists()


def test_h11_16_a_merge_key_that_merges_itself(tmp_path: Path) -> None:
    """H11-16: 'a: &a {<<: *a}' (a merge loop) and a two-anchor merge cycle: exit 2, never a hang."""
    for head in ("a: &a\n  <<: *a\n", "a: &a\n  b: &b\n    <<: *a\n"):
        inv = tmp_path / "inv.yaml"
        inv.write_text(head + SMALL)
        line = one_line_error(_cli("inventory", "check", inv))
        assert f"{inv}:" in line and "recursive alias" in line, line


def test_h11_17_a_million_aliases_of_one_scalar(tmp_path: Path) -> None:
    """H11-17: one anchor and 10^6 aliases of it in a flat list (no nesting: the alias-bomb cap
    counts nodes, not depth): refused at its line, exit 2, in bounded time."""
    inv = tmp_path / "inv.yaml"
    inv.write_text("x: &a n1\nlots: [" + ", ".join(["*a"] * 1_000_000) + "]\n" + SMALL)
    start = time.monotonic()
    line = one_line_error(_cli("inventory", "check", inv))
    assert time.monotonic() - start < 50
    assert str(inv) in line, line


def test_h11_18_a_ten_megabyte_scalar(tmp_path: Path) -> None:
    """H11-18: a 10 MB inventory name: exit 2 naming the line and the cap."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(SMALL.replace("name: small", "name: '" + "x" * 10_000_000 + "'"))
    line = one_line_error(_cli("inventory", "check", inv))
    assert f"{inv}:1: name: is 10000000 characters long (the cap is 4096)" in line, line


def test_h11_19_a_bom_is_read_utf16_refused(tmp_path: Path) -> None:
    """H11-19: a UTF-8 BOM before the inventory reads as the same inventory; UTF-16 (with its
    BOM) is refused, exit 2 naming the file."""
    bom = tmp_path / "bom.yaml"
    bom.write_bytes(b"\xef\xbb\xbf" + SMALL.encode())
    r = _cli("inventory", "check", bom)
    assert r.exit_code == 0 and "small: 1 supernodes, 4 hosts, 8 cards" in r.output, r.output
    u16 = tmp_path / "u16.yaml"
    u16.write_bytes(SMALL.encode("utf-16"))
    line = one_line_error(_cli("inventory", "check", u16))
    assert f"{u16}: file is binary" in line, line


@pytest.mark.parametrize("written,says", [
    ("0x10", "0x10 is read by YAML as the number 16 (hexadecimal)"),
    (".inf", "must be an integer from 1 to 1024, got inf"),
    ("1e400", "must be an integer from 1 to 1024, got '1e400'"),
    ("1_000", None),
], ids=["hex", "inf", "1e400", "underscores"])
def test_h11_20_numbers_yaml_reads_otherwise(tmp_path: Path, written: str, says: str | None) -> None:
    """H11-20: cards_per_host 0x10, .inf, 1e400: exit 2 at the line; 1_000 reads 1000 (its
    digits, yamlio's documented rule); the same words as a bandwidth are no bandwidth."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(SMALL.replace("cards_per_host: 2", f"cards_per_host: {written}"))
    r = _cli("inventory", "check", inv)
    if says is None:
        assert r.exit_code == 0 and "4 hosts, 4000 cards" in r.output, r.output
    else:
        assert f"{inv}:6: " in one_line_error(r) and says in r.output, r.output
    inv.write_text(SMALL.replace("'450 GB/s'", f"'{written} GB/s'"))
    line = one_line_error(_cli("inventory", "check", inv))
    assert f"{inv}:3: design.scale_up.bandwidth: " in line, line


def test_h11_21_a_seed_of_two_to_the_64(tmp_path: Path, small: Path) -> None:
    """H11-21: --seed 2^64 and 2^64-1: exit 2 with the range, no run directory."""
    for seed in (2**64, 2**64 - 1):
        r = _cli("connectivity", "-i", small, "--backend", "mock", "--seed", seed, "--out", tmp_path / "r")
        assert r.exit_code == 2 and "0<=x<=4294967295" in r.output and "Traceback" not in r.output, r.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("scope", ["n*", "n?/gpu0", "n[1-4]/gpu*"])
def test_h11_22_a_scope_written_as_a_glob(tmp_path: Path, small: Path, scope: str) -> None:
    """H11-22: --targets as a shell glob ('n*'): exit 2 naming it, never read as every host."""
    line = one_line_error(_conn(small, tmp_path / "r", "--targets", scope))
    assert line.startswith("sncheck: error: --targets: ") and re.search(r"'n[\d/gpu]*[*?]", line), line
    assert not (tmp_path / "r").exists()


# -- parse honesty ---------------------------------------------------------------------------------

def _nccl_parts() -> tuple[list[str], list[str], list[str]]:
    lines = NCCL.read_text().splitlines()
    rows = [ln for ln in lines if ln.strip()[:1].isdigit()]
    foot = [ln for ln in lines if ln.startswith(("# Out of bounds", "# Avg bus"))]
    head = [ln for ln in lines if ln not in rows and ln not in foot]
    return head, rows, foot


def _parse(tmp_path: Path, view: str, text: str | bytes, name: str = "log.txt"):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p, _cli("parse", view, p, "--collective", "all_reduce") if view == "nccl-tests" else _cli("parse", view, p)


def test_h11_23_nccl_rows_reversed_or_shuffled(tmp_path: Path) -> None:
    """H11-23: the 31 rows of a whole sweep printed largest first, or shuffled: no run prints
    them so (common.cu's loop climbs); exit 1, never a clean sweep."""
    head, rows, foot = _nccl_parts()
    import random

    shuffled = rows[:]
    random.Random(11).shuffle(shuffled)
    for order in (rows[::-1], shuffled):
        _, r = _parse(tmp_path, "nccl-tests", "\n".join(head + order + foot) + "\n")
        assert r.exit_code == 1 and "rows are missing" in r.output, r.output


def test_h11_24_two_tasks_tables_interleaved_under_srun_labels(tmp_path: Path) -> None:
    """H11-24: two srun tasks both printing the table ('0: ' and '1: ' on alternate rows; task 1
    without a header): the delivery regroups task by task, and task 1's 31 rows after task 0's
    footer were read as 31 more rows of the run: 62 rows, exit 0. They are not this run's."""
    head, rows, foot = _nccl_parts()
    lines = [f"0: {ln}" for ln in head]
    for ln in rows:
        lines += [f"0: {ln}", f"1: {ln.replace('  135.8 ', '  999.9 ')}"]
    lines += [f"0: {ln}" for ln in foot]
    p, r = _parse(tmp_path, "nccl-tests", "\n".join(lines) + "\n")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert len(doc["rows"]) == 31
    assert f"sncheck: {p}: 31 result row(s) after the run's footer, with no header of their own" in r.output


def test_h11_25_a_wrong_column_of_na_under_validation_1(tmp_path: Path) -> None:
    """H11-25: every #wrong 'N/A' while the banner says 'validation: 1': common.cu prints N/A
    only where it did not check, so the data was never validated; exit 0 passed it."""
    head, rows, foot = _nccl_parts()
    na = [re.sub(r"\s+0(\s+\S+\s+\S+\s+\S+\s+)0\s*$", r"    N/A\1N/A", ln) for ln in rows]
    assert all(ln.count("N/A") == 2 for ln in na), na[0]
    p, r = _parse(tmp_path, "nccl-tests", "\n".join(head + na + foot) + "\n")
    assert r.exit_code == 1, r.output
    assert f"sncheck: {p}: 31 row(s) (first: 8 bytes) show N/A for the out-of-place check while the banner " \
        "says 'validation: 1'" in r.output
    # under validation: 0 the same rows are a run that checked nothing by request: parsed, exit 0
    _, r = _parse(tmp_path, "nccl-tests", "\n".join(head + na + foot).replace("validation: 1", "validation: 0") + "\n")
    assert r.exit_code == 0, r.output


def test_h11_26_a_dcgmi_test_at_warn_is_named(tmp_path: Path) -> None:
    """H11-26: dcgmi's PCIe test at 'Warn - All' with no Warning row: the view keeps result
    Warn and the test; the host fact said 'dcgmi diag: Warn' and not which test warned."""
    from sncheck.vendors.nvidia.dcgmi import parse_dcgmi_diag
    from sncheck.vendors.nvidia.gpu_checks import check_dcgmi

    text = re.sub(r"(\| PCIe\s+\| )Pass - All", r"\1Warn - All", DCGMI.read_text())
    assert "Warn - All" in text
    _, r = _parse(tmp_path, "dcgmi-diag", text)
    doc = json.loads(r.stdout)
    assert doc["result"] == "Warn" and {"name": "PCIe", "result": "Warn"}.items() <= \
        next(t for t in doc["tests"] if t["name"] == "PCIe").items()
    row = check_dcgmi("h1", parse_dcgmi_diag(text), None)[0]
    assert row["message"] == "h1: dcgmi diag: Warn: PCIe at Warn", row


def test_h11_27_a_second_tools_output_appended_to_a_whole_capture(tmp_path: Path) -> None:
    """H11-27: a whole dcgmi diag table, then nccl-tests' log appended to the same file: dcgmi
    prints nothing after its footer border, yet the view passed it (exit 0) on the table alone."""
    p, r = _parse(tmp_path, "dcgmi-diag", DCGMI.read_text() + NCCL.read_text())
    assert r.exit_code == 1, r.output
    # (the one home of what follows an output's end, sncheck.vendors.after_end, words it since leftparse)
    assert f"sncheck: {p}: not read: " in r.output and "lines after the end (the first: '# source: " in r.output, \
        r.output
    # the table alone still passes
    _, r = _parse(tmp_path, "dcgmi-diag", DCGMI.read_text(), name="alone.txt")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("text", [b"", b"  \n\t\n\n", b"# source: github x/y file z (commit 1)\n"],
                         ids=["0-bytes", "whitespace", "source-line-only"])
@pytest.mark.parametrize("view", ["nccl-tests", "dcgmi-diag", "nvidia-smi-q", "ibstat", "ib-write-bw"])
def test_h11_28_an_empty_capture_is_parse_failed_naming_the_file(tmp_path: Path, view: str, text: bytes) -> None:
    """H11-28: a 0-byte file, whitespace only, a '# source:' line only: exit 1, one line that
    names the file (it said 'nccl-tests: no ... table' and not which of many files)."""
    p, r = _parse(tmp_path, view, text)
    line = one_line_error(r, code=1)
    assert line.startswith(f"sncheck: error: {p}: {view}: no "), line


def test_h11_29_parse_on_a_directory_or_a_fifo_never_hangs(tmp_path: Path) -> None:
    """H11-29: `parse nccl-tests DIR` and `parse dcgmi-diag FIFO` (no writer: an open blocks
    for ever): exit 2 naming it, at once."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for view, path, what in (("nccl-tests", tmp_path, "a directory"), ("dcgmi-diag", fifo, "a FIFO")):
        r = _cli("parse", view, path)
        assert r.exit_code == 2 and f"{path}: is {what}, not a regular file" in r.output, r.output


def test_h11_06b_run_directory_swapped_between_the_check_and_the_write(tmp_path: Path, small: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """H11-06 in the window the check cannot close: the run directory is swapped for a link after
    a part's check passed and before its file is opened (codes31 saw the thread form land there
    once: 'No such file or directory' on a host_fact part, not H11-06's line). The write's own
    error is then read again against the directory the run opened: exit 3, the same one line,
    nothing written through the link."""
    import sncheck.store.rundir as rundir

    out, moved, victim = tmp_path / "run", tmp_path / "moved", tmp_path / "victim"
    victim.mkdir()
    swapped = threading.Event()
    real_open_new = rundir.open_new
    calls = {"parts": 0}

    def swap_then_open(path: Path) -> int:
        if path.name.startswith(".part-"):
            calls["parts"] += 1
            if calls["parts"] == 2 and not swapped.is_set():
                os.rename(out, moved)
                os.symlink(victim, out)
                swapped.set()
        return real_open_new(path)

    monkeypatch.setattr(rundir, "open_new", swap_then_open)
    _swapped_run(small, out, victim, swapped)
