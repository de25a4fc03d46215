"""Hostile inputs, round 13: new instances of the outside probe's classes
(``../shared/adversarial-r3``), weighted to those the held-out probe missed most: parsers fed
another tool's output, captures in other encodings or compressed, inventories and isolation
names spelt twice or as another vendor's card, plan numbers of nothing, an --out that is a file
or a disk that refuses the reports, rules that name themselves oddly or extend themselves,
watch dumps cut, compressed or in UTF-16, a Slurm environment that lies about the job's
shape, a baseline of a newer schema. Each test names its case id; the README's round 13
table lists them."""

from __future__ import annotations

import gzip
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_hardening import one_line_error

from sncheck.cli.main import main
from sncheck.vendors.parsers import parse_text
from sncheck.watch.rankmap import from_slurm

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "fixtures" / "real"
SMI_Q = REAL / "nvidia-smi-q" / "01_q_d_page_retirement_8gpu_a100_clean.txt"
DCGMI = REAL / "dcgmi-diag" / "01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt"
AMD_STATIC = REAL / "amd" / "02_amd-smi_static_text_mi300x_blog_truncated.txt"
DMESG = REAL / "kernel-log" / "01_dmesg_ctime_xid13_x3_xid109_gpud_readme.txt"
NPU_COMMON = REAL / "ascend" / "08_npu-smi_info_t_common_910B_arthurchiao.txt"
IBSTAT = REAL / "ib" / "04_ibstat_h100_roce_12CA_all_active_eth.txt"
NCCL = REAL / "nccl-tests" / "all_reduce_perf" / "01_h100_16ranks_2nodes_float_newcols.txt"
RAS = REAL / "nccl-ras" / "01_mismatch_allgather_2.26.2_issue1911.txt"
PERFQUERY = REAL / "ib-counters" / "01_perfquery_x_lid1719_2ports_all_zero_infiniband_exporter.txt"
SMALL = ("name: small\ndesign:\n  scale_up: {bandwidth: '450 GB/s', latency: '3 us'}\n"
         "supernodes:\n  - {name: sn0, hosts: 'h[1-3]', cards_per_host: 2}\n")


def _cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def small(tmp_path: Path) -> Path:
    p = tmp_path / "small.yaml"
    p.write_text(SMALL)
    return p


def _parse(view: str, path: Path):
    return _cli("parse", view, path, "--json")


# -- parsers fed another tool's output ------------------------------------------------------------

def test_h13_01_hccn_optical_fed_nvidia_smi_q_is_no_module(tmp_path: Path) -> None:
    """H13-01: `parse hccn-optical` of an `nvidia-smi -q` listing (or ibstat, amd-smi static,
    perfquery, ib_write_bw): every 'key : value' line was taken as a module reading
    ('Attached GPUs': 8.0), no `present` line asked for: exit 0, a module with no fault."""
    for other in (SMI_Q, IBSTAT, AMD_STATIC, PERFQUERY):
        line = one_line_error(_parse("hccn-optical", other), 1)
        assert f"{other}: hccn-optical: no optical module fields" in line, line


def test_h13_02_hccn_route_fed_a_dcgmi_table_is_no_route(tmp_path: Path) -> None:
    """H13-02: `parse hccn-route` of dcgmi's diag table (or nccl-tests' log, NCCL RAS): any
    line of eight cells was a route ('| GPU Device IDs Detected | ...'): exit 0. Rows count
    only under route(8)'s header."""
    for other in (DCGMI, NCCL, RAS):
        line = one_line_error(_parse("hccn-route", other), 1)
        assert "hccn-route: no routing table rows under route's" in line, line


def test_h13_03_hccn_hw_stats_never_reads_across_a_line(tmp_path: Path) -> None:
    """H13-03: `parse hccn-hw-stats` of amd-smi's static listing: a ']' at one line's end and
    'SUBVENDOR_ID: 0x1002' on the next read as the counter SUBVENDOR_ID = 0, exit 0."""
    line = one_line_error(_parse("hccn-hw-stats", AMD_STATIC), 1)
    assert "no '[devid n] name: count' lines" in line, line
    # a '[devid N]' line of the tool's own still reads, each on its own line
    ok = tmp_path / "hw.txt"
    ok.write_text("[devid 3] pd_alloc: 1\n[devid 3] qp_active: 0\n")
    assert json.loads(_parse("hccn-hw-stats", ok).output)["counters"] == {"pd_alloc": 1, "qp_active": 0}


@pytest.mark.parametrize("other", [DMESG, NPU_COMMON], ids=["dmesg", "npu-smi"])
def test_h13_04_amd_smi_fed_dmesg_or_npu_smi_is_no_gpu(other: Path) -> None:
    """H13-04: `parse amd-smi` of a dmesg or of `npu-smi info -t common`: a GPU with no id
    holding 'NVRM: Xid ...' as a field, exit 0. amd-smi prints every key upper case
    (amdsmi_cli/amdsmi_logger.py, _capitalize_keys, since rocm-5.5): text of no device line
    holding another key is another tool's, exit 1, one line naming the file (parse28e)."""
    line = one_line_error(_parse("amd-smi", other), 1)
    assert str(other) in line and "is no line amd-smi prints" in line, line


def test_h13_04_a_key_not_upper_case_in_an_amd_smi_listing_is_not_read_as_a_value() -> None:
    """Under a 'GPU: n' line too: a 'key: value' line no amd-smi prints (another tool's, spliced in)
    is said, never kept as the GPU's field."""
    text = AMD_STATIC.read_text().replace("    ASIC:\n", "    ASIC:\n        Chip Count : 1\n", 1)
    assert "Chip Count" in text
    data = parse_text("amd-smi", text)
    assert "unrecognised line: Chip Count : 1" in data["errors"], data["errors"]
    assert not any("Chip Count" in g.get("ASIC", {}) for g in data["gpus"])


@pytest.mark.parametrize("view,other", [("ibstat", SMI_Q), ("nvidia-smi-q", IBSTAT), ("nccl-tests", DCGMI),
                                        ("perfquery", IBSTAT), ("dcgmi-diag", NCCL), ("rocm-smi", SMI_Q),
                                        ("npu-smi", AMD_STATIC), ("ib-write-bw", NCCL)])
def test_h13_05_the_main_views_fed_another_tool_s_capture(view: str, other: Path) -> None:
    """H13-05: the views a run reads, each fed another tool's capture: exit 1, one line
    naming the file (held)."""
    line = one_line_error(_parse(view, other), 1)
    assert str(other) in line, line


# -- captures in another encoding --------------------------------------------------------------

@pytest.mark.parametrize("encode", ["utf-16", "gzip"])
@pytest.mark.parametrize("view,capture", [("ibstat", IBSTAT), ("nccl-tests", NCCL), ("nvidia-smi-q", SMI_Q)])
def test_h13_06_a_capture_in_utf16_or_gzip_is_not_read(tmp_path: Path, view: str, capture: Path,
                                                       encode: str) -> None:
    """H13-06: a capture saved as UTF-16 (PowerShell's `>`, its byte order mark first) reads as
    the capture itself (delivery28: sncheck.vendors.delivery.decode); gzip'd (a log shipper's):
    exit 1, one line naming the file, never an empty pass (held)."""
    text = capture.read_text()
    path = tmp_path / f"cap.{encode}"
    path.write_bytes(text.encode("utf-16") if encode == "utf-16" else gzip.compress(text.encode()))
    if encode == "utf-16":
        plain = tmp_path / "plain.txt"
        plain.write_bytes(capture.read_bytes())
        want, got = _parse(view, plain), _parse(view, path)
        assert (got.exit_code, json.loads(got.output)) == (want.exit_code, json.loads(want.output))
        return
    line = one_line_error(_parse(view, path), 1)
    assert str(path) in line, line


@pytest.mark.parametrize("view,capture", [("ibstat", IBSTAT), ("nccl-tests", NCCL), ("nvidia-smi-q", SMI_Q)])
def test_h13_07_a_bom_or_crlf_capture_reads_as_the_capture(tmp_path: Path, view: str, capture: Path) -> None:
    """H13-07: the same capture after a UTF-8 byte-order mark, and with CRLF line ends (saved
    on Windows): read as the capture itself (held)."""
    plain = tmp_path / "plain.txt"  # beside the others: nccl-tests reads the collective from a path's binary name
    plain.write_bytes(capture.read_bytes())
    want = json.loads(_parse(view, plain).output)
    for name, data in (("bom", b"\xef\xbb\xbf" + capture.read_bytes()),
                       ("crlf", capture.read_bytes().replace(b"\n", b"\r\n"))):
        path = tmp_path / f"{name}.txt"
        path.write_bytes(data)
        r = _parse(view, path)
        assert r.exit_code == 0, (name, r.output[-300:])
        got = json.loads(r.output)
        assert got == want, name


# -- inventories and names -----------------------------------------------------------------------

@pytest.mark.parametrize("host,shown", [("..", "'..'"), ("h\\x002", "'h\\x002'"), ("h\\u202e2", "'h\\u202e2'"),
                                        ("-oProxyCommand=x", "-oProxyCommand=x")],
                         ids=["dotdot", "nul", "rtl", "option"])
def test_h13_08_a_host_named_dotdot_nul_rtl_or_an_option(tmp_path: Path, host: str, shown: str) -> None:
    """H13-08: an inventory host named `..` (a path out of the evidence folder), holding a NUL
    or a right-to-left override, or an ssh option: refused at its line, shown escaped (held)."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(SMALL.replace("'h[1-3]'", f"['h1', \"{host}\"]"))
    line = one_line_error(_cli("inventory", "check", inv))
    assert f"{inv}:5:" in line and shown in line and "\u202e" not in line and "\x00" not in line, line


@pytest.mark.parametrize("twice", [["h1", "H1"], ["h1", "h1."], ["h1", "10.0.0.1"], ["h1/gpu0", "h1/GPU0"]])
def test_h13_09_a_host_given_twice_under_two_spellings_to_isolate(tmp_path: Path, small: Path,
                                                                   twice: list[str]) -> None:
    """H13-09: `isolate` of one host under two spellings (case, a trailing dot, its address):
    refused, exit 2, naming the spelling, nothing written (held)."""
    small.write_text(SMALL + "hosts:\n  h1: {address: 10.0.0.1}\n")
    state = tmp_path / "state"
    line = one_line_error(_cli("isolate", *twice, "-i", small, "--state-dir", state, "--via",
                               "cuda_visible_devices", "--apply"))
    assert f"'{twice[1]}' is not a card, host or switch" in line, line
    assert not (state / "cuda_visible_devices.json").exists()


@pytest.mark.parametrize("card", ["h1/npu0", "h1/card0", "h1/davinci0", "h1/gpu0x"])
def test_h13_10_a_card_in_another_vendor_s_form(tmp_path: Path, small: Path, card: str) -> None:
    """H13-10: a card named as Ascend (`npu0`, `davinci0`) or ROCm (`card0`) names it, on an
    inventory of GPUs: refused, exit 2 (held)."""
    line = one_line_error(_cli("isolate", card, "-i", small, "--state-dir", tmp_path / "state"))
    assert f"'{card}' is not a card" in line, line


@pytest.mark.parametrize("args,says", [
    (("--layout", "tp=0,pp=4,dp=2"), "tp must be a positive integer"),
    (("--layout", "tp=-8,pp=4,dp=2"), "tp must be a positive integer"),
    (("--params", "0B"), "parameter count must be positive"),
    (("--card-memory", "0GB"), "memory must be positive"),
    (("--card-memory", "-80GB"), "not a memory size")])
def test_h13_11_plan_of_zero_or_negative_cards_params_or_memory(args: tuple[str, str], says: str) -> None:
    """H13-11: `plan` with 0 or negative TP, 0 parameters, 0 or negative memory: exit 2 (held)."""
    base = {"--params": "70B", "--layout": "tp=8,pp=4,dp=2", "--card-memory": "80GB"}
    base[args[0]] = args[1]
    line = one_line_error(_cli("plan", *[x for kv in base.items() for x in kv], "--hidden", "8192", "--layers", "80"))
    assert says in line, line


# -- the run directory and the disk ---------------------------------------------------------------

def test_h13_12_out_an_existing_regular_file(tmp_path: Path, small: Path) -> None:
    """H13-12: `--out` naming a file that holds someone's data: exit 2, the file as it was (held)."""
    victim = tmp_path / "notes.txt"
    victim.write_text("keep\n")
    r = _cli("connectivity", "-i", small, "--backend", "mock", "--seed", "1", "-q", "--out", victim)
    assert r.exit_code == 2 and "is a file, not a directory" in r.output, r.output
    assert victim.read_text() == "keep\n"


def test_h13_13_a_disk_that_refuses_the_reports_never_leaves_a_passing_record(tmp_path: Path, small: Path) -> None:
    """H13-13: every file capped at 20 KB (RLIMIT_FSIZE, a quota or a nearly full disk): the rows
    and results.json fit, the HTML report does not. It exited 3, but results.json said `verdict:
    pass`, finished, no error, and `baseline make` took the run as known-good. Now results.json
    is written after the reports and says the error; `baseline make` refuses it."""
    out = tmp_path / "run"

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    p = subprocess.run([sys.executable, "-m", "sncheck", "connectivity", "-i", str(small), "--backend", "mock",
                        "--seed", "1", "-q", "--out", str(out)], preexec_fn=cap, capture_output=True, text=True,
                       timeout=120, check=False, cwd=ROOT)
    assert p.returncode == 3 and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    record = json.loads((out / "results.json").read_text())
    assert record["verdict"] == "error" and "cannot write the reports" in record["error"], record.get("error")
    line = one_line_error(_cli("baseline", "make", out, "--out", tmp_path / "b.json"))
    assert "run verdict is 'error'" in line, line
    assert not (tmp_path / "b.json").exists()


# -- rules ------------------------------------------------------------------------------------------

def test_h13_14_a_rule_named_with_a_bidi_override_is_shown_escaped(tmp_path: Path) -> None:
    """H13-14: a rule name holding U+202E (the terminal would print it right to left) and a
    second rule of the same name: the first shown `\\u202e`, the second refused at its line (held)."""
    rules = tmp_path / "rules.yaml"
    rule = '  - {name: "a\\u202eb", op: ratio_to_design, metric: p2p_bandwidth, below: 0.8, severity: critical}\n'
    rules.write_text("rules:\n" + rule)
    r = _cli("rules", "check", rules)
    assert r.exit_code == 0 and "a\\u202eb" in r.output and "\u202e" not in r.output, r.output
    rules.write_text("rules:\n" + rule + rule)
    assert f"{rules}:3: duplicate rule name" in one_line_error(_cli("rules", "check", rules))


@pytest.mark.parametrize("target,says", [("SELF", "extends this file again (a cycle)"),
                                         ("/dev/zero", "is a character device, not a regular file")])
def test_h13_15_rules_that_extend_themselves_or_a_device(tmp_path: Path, target: str, says: str) -> None:
    """H13-15: a rules file whose `extends` names itself, or /dev/zero: exit 2, at once (held)."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(f"extends: {rules if target == 'SELF' else target}\nrules: []\n")
    assert says in one_line_error(_cli("rules", "check", rules))


# -- watch -----------------------------------------------------------------------------------------

def _watch(tmp_path: Path, name: str, data: bytes, *extra: object):
    d = tmp_path / "dumps"
    d.mkdir(exist_ok=True)
    (d / name).write_bytes(data)
    return _cli("watch", d, "--once", "--out", tmp_path / "out", *extra)


@pytest.mark.parametrize("name,encode", [("ras.txt.gz", "gzip"), ("ras.txt", "half")])
def test_h13_16_a_ras_dump_gzip_or_cut_in_half(tmp_path: Path, name: str, encode: str) -> None:
    """H13-16: NCCL RAS's status gzip'd, or cut in half as it was written: 'dump unreadable',
    exit 1, never a pass of ranks nobody read (held). (Saved as UTF-16 it was unreadable too;
    `watch` reads a dump as `parse` reads a file now, delivery.decode: H13-17.)"""
    raw = RAS.read_bytes()
    data = {"gzip": gzip.compress(raw), "half": raw[:len(raw) // 2]}[encode]
    r = _watch(tmp_path, name, data)
    assert r.exit_code == 1 and "dump unreadable" in r.output, r.output


@pytest.mark.parametrize("encode", ["bom", "utf-16"])
def test_h13_17_a_ras_dump_after_a_bom_or_in_utf16_reads_as_the_dump(tmp_path: Path, encode: str) -> None:
    """H13-17: the same RAS dump after a UTF-8 byte-order mark, or saved as UTF-16 (PowerShell's
    `>`): the same two findings (held for the BOM; UTF-16 was 'dump unreadable', parse28e)."""
    raw = b"\xef\xbb\xbf" + RAS.read_bytes() if encode == "bom" else RAS.read_text().encode("utf-16")
    r = _watch(tmp_path, "ras.txt", raw)
    assert r.exit_code == 0, r.output
    rules = [f["rule"] for f in json.loads((tmp_path / "out" / "results.json").read_text())["findings"]]
    assert rules == ["watch-ras-mismatch"] * 2, rules


def test_h13_18_watch_baseline_of_a_newer_schema(tmp_path: Path) -> None:
    """H13-18: `watch --baseline` naming a watch run whose results.json is `sncheck.run/2`:
    refused, exit 2, naming it (held)."""
    first = _watch(tmp_path, "ras.txt", RAS.read_bytes())
    assert first.exit_code == 0, first.output
    record = tmp_path / "out" / "results.json"
    data = json.loads(record.read_text())
    data["schema"] = "sncheck.run/2"
    base = tmp_path / "base"
    base.mkdir()
    (base / "results.json").write_text(json.dumps(data))
    line = one_line_error(_cli("watch", tmp_path / "dumps", "--once", "--out", tmp_path / "o2", "-q",
                               "--baseline", base / "results.json"))
    assert f"{base / 'results.json'}: results.json of schema 'sncheck.run/2'" in line, line


@pytest.mark.parametrize("env", [
    {"SLURM_JOB_NODELIST": "n1", "SLURM_TASKS_PER_NODE": "1(x999999999999)"},
    {"SLURM_JOB_NODELIST": "n1", "SLURM_TASKS_PER_NODE": "100000"},
    {"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_NTASKS": "2"},
    {"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_NNODES": "3"},
    {"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_NODELIST": "m[1-2]", "SLURM_TASKS_PER_NODE": "4(x2)"}],
    ids=["repeat-1e12", "100000-on-a-node", "ntasks-2", "nnodes-3", "two-nodelists"])
def test_h13_19_a_slurm_environment_that_lies_makes_no_rank_map(env: dict[str, str]) -> None:
    """H13-19: `watch` without a rank map reads the job's shape from Slurm's environment.
    `1(x999999999999)` built a list of that many counts (MemoryError: exit 3, 'out of memory');
    100,000 tasks on one node made cards up to gpu99999 (a rank map refuses a local rank past
    4095; 50,000,000 hung); SLURM_NTASKS, SLURM_NNODES or SLURM_NODELIST against the rest was
    not read. Each is no map (ranks named as ranks) rather than a wrong one."""
    assert from_slurm(env) is None
    good = {"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "4(x2)",
            "SLURM_NTASKS": "8", "SLURM_NNODES": "2"}
    m = from_slurm(good)
    assert m is not None and [(p.host, p.local_rank) for p in m.placements.values()][3:5] == [("n1", 3), ("n2", 0)]


def test_h13_20_watch_under_a_lying_slurm_environment_exits_in_its_codes(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """H13-20: the CLI under H13-19's first environment: it said 'out of memory', exit 3; now
    the RAS dump is judged as without Slurm (exit 0, its two findings)."""
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n1")
    monkeypatch.setenv("SLURM_TASKS_PER_NODE", "1(x999999999999)")
    r = _watch(tmp_path, "ras.txt", RAS.read_bytes())
    assert r.exit_code == 0 and "out of memory" not in r.output, r.output


# -- history and baselines, names given to the node and the job ------------------------------------

def test_h13_21_a_baseline_of_one_run_given_twice(tmp_path: Path, small: Path) -> None:
    """H13-21: `baseline make RUN RUN/` (or RUN and a copy of it): 'baseline from 2 runs', the
    run counted twice in every median (one good run among three, given twice, outweighs the
    others). Refused, exit 2, naming the run id; one run alone still makes a baseline."""
    run = tmp_path / "run"
    assert _cli("connectivity", "-i", small, "--backend", "mock", "--seed", "1", "-q", "--out", run).exit_code == 0
    copy = tmp_path / "copy"
    copy.mkdir()
    for p in run.rglob("*"):
        if p.is_file() and p.name != ".sncheck.lock":
            (copy / p.relative_to(run)).parent.mkdir(parents=True, exist_ok=True)
            (copy / p.relative_to(run)).write_bytes(p.read_bytes())
    for second in (f"{run}/", copy):
        line = one_line_error(_cli("baseline", "make", run, second, "--out", tmp_path / "b.json"))
        assert "a baseline counts each run once" in line and "is run " in line, line
    assert not (tmp_path / "b.json").exists()
    r = _cli("baseline", "make", run, "--out", tmp_path / "b.json")
    assert r.exit_code == 0 and "baseline from 1 runs" in r.output, r.output


@pytest.mark.parametrize("node", ["..", "n01\u202e", "NodeName=n01", "n01 State=RESUME", ""])
def test_h13_22_node_check_of_a_node_name_slurm_would_misread(node: str) -> None:
    """H13-22: `node-check --node` of `..`, a bidi override, `NodeName=...`, a space, nothing:
    refused before any tool runs, exit 2, shown escaped (held)."""
    line = one_line_error(_cli("node-check", "--node", node, "--no-collectives", "--no-drain", "--budget", "1s",
                               "--cards", "1"))
    assert "bad node name" in line and "\u202e" not in line, line


@pytest.mark.parametrize("entry,says", [({"rank": 0, "host": "..", "local_rank": 0}, "host must be a host name"),
                                        ({"rank": 0, "host": "n1\u202e", "local_rank": 0}, "host must be a host name"),
                                        ({"rank": 0, "host": "n1", "local_rank": 5000}, "local_rank must be"),
                                        ({"rank": -1, "host": "n1", "local_rank": 0}, "rank must be")])
def test_h13_23_a_rank_map_naming_what_no_card_id_may_hold(tmp_path: Path, entry: dict, says: str) -> None:
    """H13-23: `watch --rank-map` whose entry names `..`, a bidi override, a local rank of 5000
    or a rank of -1: refused, exit 2, naming the map (held)."""
    rank_map = tmp_path / "ranks.json"
    rank_map.write_text(json.dumps([entry]))
    d = tmp_path / "dumps"
    d.mkdir()
    (d / "ras.txt").write_bytes(RAS.read_bytes())
    line = one_line_error(_cli("watch", d, "--once", "--out", tmp_path / "out", "--rank-map", rank_map))
    assert f"{rank_map}: entry 0: {says}" in line and "\u202e" not in line, line


@pytest.mark.parametrize("target", ["h1/npu0", "h1/davinci0", "h1/card0"])
def test_h13_24_a_scope_naming_a_card_in_another_vendor_s_form(tmp_path: Path, small: Path, target: str) -> None:
    """H13-24: `--targets` naming the card as Ascend or ROCm would: refused, exit 2, nothing
    measured (held)."""
    out = tmp_path / "run"
    line = one_line_error(_cli("connectivity", "-i", small, "--backend", "mock", "-q", "--out", out, "--targets", target))
    assert f"'{target}' is not a card, host or supernode" in line, line
    assert not (out / "results.json").exists()


def test_h13_25_parse_expecting_no_card_of_a_listing_of_eight(tmp_path: Path) -> None:
    """H13-25: `parse nvidia-smi-q --expect 0` of an 8-GPU listing: 'not judged', exit 1, never
    'as expected' (held)."""
    r = _cli("parse", "nvidia-smi-q", SMI_Q, "--expect", "0")
    assert r.exit_code == 1 and "not judged: listing has 8 GPU records, expected 0" in r.output, r.output[-300:]


def test_h13_26_the_hccn_views_still_read_their_own_captures() -> None:
    """H13-26: the three views H13-01..03 narrowed, on the real captures they were written from:
    read as before (the fix refuses other tools' text, not the tool's)."""
    asc = REAL / "ascend"
    optical = asc / "11_hccn_tool_net_health_link_optical_tls_fec_ip_stat_link_stat_mindcluster_doc.txt"
    from sncheck.vendors.ascend import hccn_tool

    text = optical.read_text()
    block = text[text.index("optical info:"):text.index("-tls -g")]
    parsed = hccn_tool.parse_optical(block)
    assert parsed["present"] == "not present" and parsed["flags"]["Rx LoL Flag"] == 0xFF
    assert hccn_tool.parse_optical("Rx Power0 : 0.9 mW\n")["values"] == {"Rx Power0": 0.9}  # a grep of one lane
    routes = hccn_tool.parse_route((asc / "02d_hccn_tool_ip_route_910B_arthurchiao.txt").read_text())["routes"]
    assert [r["destination"] for r in routes] == ["default", "29.1.0.0", "127.0.0.1", "192.168.1.0", "192.168.2.0"]
    stats = hccn_tool.parse_hw_stats((asc / "02b_hccn_tool_hw_stats_910B_arthurchiao.txt").read_text())["counters"]
    assert len(stats) == 14 and stats["qp_active"] == 1


def test_h13_27_the_device_map_replaced_by_a_directory_between_isolations(tmp_path: Path, small: Path) -> None:
    """H13-27: after one `isolate --via cuda_visible_devices --apply`, its
    `cuda_visible_devices.json` is replaced by a directory; the next isolation: exit 2 naming
    it, and nothing of it recorded (the first isolation still on record) (held)."""
    state = tmp_path / "state"
    first = _cli("isolate", "h1/gpu0", "-i", small, "--state-dir", state, "--via", "cuda_visible_devices", "--apply")
    assert first.exit_code == 0, first.output
    (state / "cuda_visible_devices.json").unlink()
    (state / "cuda_visible_devices.json").mkdir()
    line = one_line_error(_cli("isolate", "h2/gpu0", "-i", small, "--state-dir", state, "--via",
                               "cuda_visible_devices", "--apply", "--cap", "0.5"))
    assert "cuda_visible_devices.json: is a directory" in line, line
    status = _cli("status", "--state-dir", state)
    assert "h1/gpu0" in status.output and "h2/gpu0" not in status.output, status.output
