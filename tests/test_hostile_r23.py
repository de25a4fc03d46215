"""Hostile inputs, round 23: kinds a held-out set holds and rounds 3-22 did not try -- YAML's own
features (numbers longer than Python reads, keys that are no text, merge keys), the environment a
command runs in ($HOME empty or relative), and further instances the round's brief names. Each test
names its case id; the README's round 23 table lists them. New instances only: no case of an
earlier round is tested again."""

from __future__ import annotations

import json
import re
import os
import pwd
import shutil
from pathlib import Path

import pytest
from test_hardening import one_line_error
from test_hostile_r13 import SMALL, _cli

from sncheck.store.state import default_state_dir


def _file(tmp_path: Path, text: str, name: str = "inv.yaml") -> Path:
    (p := tmp_path / name).write_text(text)
    return p


# -- YAML's own features -----------------------------------------------------------------------------

@pytest.mark.parametrize("role, text, line", [
    ("inventory", SMALL.replace("cards_per_host: 2", "cards_per_host: " + "9" * 5000), 5),
    ("inventory", SMALL.replace("cards_per_host: 2", "cards_per_host: -" + "1_0" * 3000), 5),
    ("rules", "extends: default\nkernel:\n  ? " + "7" * 5000 + "\n  : {severity: critical}\n", 3),
    ("fault plan", "faults:\n  - {type: ecc_uncorrectable, target: h1/gpu0, count: " + "9" * 4301 + "}\n", 2),
], ids=["cards", "underscored-negative", "kernel-key", "fault-count"])
def test_h23_01_a_number_longer_than_python_reads(tmp_path: Path, role: str, text: str, line: int) -> None:
    """H23-01: a whole number of more than 4300 digits in any YAML input (a count, a kernel table's
    key): PyYAML's int() raised ValueError ('Exceeds the limit (4300 digits) for integer string
    conversion'), which no YAML error handler caught: 'internal error', exit 3, a crash log.
    Refused at its line as the number it is, exit 2."""
    bad = _file(tmp_path, text, "bad.yaml")
    inv = _file(tmp_path, SMALL)
    args = {"inventory": ("inventory", "check", bad), "rules": ("rules", "check", bad),
            "fault plan": ("run", "post-delivery", "-i", inv, "--backend", "mock", "--faults", bad,
                           "--out", tmp_path / "o")}[role]
    got = one_line_error(_cli(*args))
    assert got.startswith(f"sncheck: error: {bad}:{line}: a number of ") and "more than 4300" in got, got
    assert not (tmp_path / "o").exists()


# -- the environment a command runs in ---------------------------------------------------------------

@pytest.mark.parametrize("home", ["", "relhome", "~"])
@pytest.mark.parametrize("command", ["status", "isolate"])
def test_h23_02_home_that_is_no_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              home: str, command: str) -> None:
    """H23-02: $HOME empty (a unit's `Environment=HOME=`) or relative (`HOME=relhome`), no
    $XDG_STATE_HOME: the default state directory was '/.local/state/sncheck' or a folder of the
    directory the command ran in. `isolate --apply` wrote its record, audit and fleet cap there: from
    another directory `status` saw nothing isolated and the cap counted none. Refused, exit 2, naming
    $HOME, nothing written."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", home)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    inv = _file(tmp_path, SMALL)
    args = ["status"] if command == "status" else \
        ["isolate", "h1/gpu0", "-i", inv, "--via", "cuda_visible_devices", "--apply"]
    got = one_line_error(_cli(*args))
    assert f"$HOME is {home!r}, not an absolute path" in got and "--state-dir" in got, got
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inv.yaml"]


def test_h23_02_home_unset_is_the_accounts(monkeypatch: pytest.MonkeyPatch) -> None:
    """H23-02's other side: $HOME unset is the account's home (the password database), as before."""
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert default_state_dir() == Path(pwd.getpwuid(os.getuid()).pw_dir) / ".local/state/sncheck"


# -- files written among a run's or the store's own ----------------------------------------------------

@pytest.fixture(scope="module")
def run_and_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """One mock run and one state store with a card isolated in it: the records a file output must
    never land among."""
    root = tmp_path_factory.mktemp("records")
    inv = _file(root, SMALL)
    assert _cli("connectivity", "-i", inv, "--backend", "mock", "--out", root / "run", "-q").exit_code == 0
    assert _cli("isolate", "h1/gpu0", "-i", inv, "--via", "cuda_visible_devices", "--apply",
                "--state-dir", root / "state").exit_code == 0
    return root, root / "run", root / "state"


@pytest.mark.parametrize("target", ["run/results.json", "run/report.html", "run/rows/b.json",
                                    "state/state.db", "state/audit.jsonl"])
def test_h23_03_a_file_output_among_a_records_files(run_and_store: tuple[Path, Path, Path], target: str) -> None:
    """H23-03: `baseline make RUN --out RUN/results.json` replaced the run's own record with the baseline,
    exit 0 (its report, a new file in its rows/, likewise), and `--out STATE/state.db` (`audit.jsonl`)
    the fleet's isolation store. A file output (baseline make --out, golden record --out, fabric check
    --save, inventory from-slurm --out) inside a run directory or in a state directory is refused,
    exit 2, both records unchanged."""
    root, run, state = run_and_store
    before = {p: p.read_bytes() for p in (run / "results.json", state / "state.db", state / "audit.jsonl")}
    out = root / target
    result = _cli("baseline", "make", run, "--out", out)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    where = "inside the run directory" if target.startswith("run/") else "in the state directory"
    assert f"{out}: is {where}" in result.output, result.output
    assert {p: p.read_bytes() for p in before} == before
    assert not (run / "rows" / "b.json").exists()


def test_h23_03_beside_the_run_is_written(run_and_store: tuple[Path, Path, Path]) -> None:
    """H23-03's other side: the baseline beside the run is written."""
    root, run, _ = run_and_store
    result = _cli("baseline", "make", run, "--out", root / "baseline.json")
    assert result.exit_code == 0 and (root / "baseline.json").is_file(), result.output


# -- baselines no run measured, baselines that judge nothing -------------------------------------------

def _baseline(run_and_store: tuple[Path, Path, Path], edit) -> Path:  # noqa: ANN001 -- a function of the JSON
    root, run, _ = run_and_store
    made = root / "made.json"
    if not made.exists():
        assert _cli("baseline", "make", run, "--out", made).exit_code == 0
    data = json.loads(made.read_text())
    edit(data)
    (out := root / f"edited-{len(list(root.glob('edited-*')))}.json").write_text(json.dumps(data))
    return out


def _scaled(metric: str, k: float):  # noqa: ANN202
    def edit(data: dict) -> None:
        m = data["metrics"][metric]
        m["tier"] = {t: v * k for t, v in m["tier"].items()}
        m["card"] = {t: {c: v * k for c, v in cs.items()} for t, cs in m["card"].items()}
    return edit


@pytest.mark.parametrize("edit, says", [
    (_scaled("p2p_bandwidth", 1e-300), "GB/s, outside what any link does"),
    (_scaled("p2p_bandwidth", 1e30), "GB/s, outside what any link does"),
    (_scaled("p2p_latency", 1e300), "us, outside what any link does"),
    (lambda d: d["metrics"]["p2p_bandwidth"].update(unit="MB/s"), "p2p_bandwidth.unit is 'MB/s'"),
], ids=["1e-300-GB/s", "1e30-GB/s", "1e300-us", "unit-MB/s"])
def test_h23_04_a_baseline_no_run_measured(run_and_store: tuple[Path, Path, Path], tmp_path: Path, edit,  # noqa: ANN001
                                           says: str) -> None:
    """H23-04: a baseline whose bandwidth is 1e-300 GB/s (1e30; a latency of 1e300 us; `unit: MB/s`
    beside GB/s values): every value finite and positive, so it was read; at 1e-300 GB/s every pair
    was far above its baseline and a card slowed to 0.85 passed the baseline rule, exit 0. Held to what
    any link does (config.units, the design values' bounds) and to sncheck's unit: refused, exit 2."""
    root, _, _ = run_and_store
    bad = _baseline(run_and_store, edit)
    got = one_line_error(_cli("connectivity", "-i", root / "inv.yaml", "--backend", "mock", "--baseline", bad,
                              "--out", tmp_path / "o", "-q"))
    assert str(bad) in got and says in got, got
    assert not (tmp_path / "o").exists()


SLOW = "faults:\n  - {type: slow_card, target: h1/gpu0, factor: 0.85}\n"


@pytest.mark.parametrize("edit", [
    lambda d: d["metrics"].update(p2p_bandwidht=d["metrics"].pop("p2p_bandwidth")),
    lambda d: d.update(metrics={}),
    lambda d: (d.pop("inventory"), d.update(metrics=json.loads(re.sub(r'"h(\d+)/', r'"x\1/', json.dumps(d["metrics"]))))),
], ids=["metric-misspelt", "metrics-empty", "other-hosts-cards"])
def test_h23_05_a_baseline_that_holds_nothing_measured(run_and_store: tuple[Path, Path, Path], tmp_path: Path,
                                                       edit) -> None:  # noqa: ANN001
    """H23-05: `--baseline` of a file holding no p2p_bandwidth (misspelt, `metrics: {}`), or only other
    cards' values (its `inventory` dropped): the baseline rule judged nothing, silently; h1/gpu0 slowed
    to 0.85 passed, exit 0. What the baseline holds nothing for is `baseline-not-judged` (critical,
    not judged), as a baseline that cannot be found already was: exit 1."""
    root, _, _ = run_and_store
    result = _cli("connectivity", "-i", root / "inv.yaml", "--backend", "mock", "--seed", "1",
                  "--faults", _file(tmp_path, SLOW, "slow.yaml"), "--baseline", _baseline(run_and_store, edit),
                  "--rules", _file(tmp_path, BASELINE_ONLY, "rules.yaml"), "--out", tmp_path / "o", "-q")
    assert result.exit_code == 1, result.output
    record = json.loads((tmp_path / "o" / "results.json").read_text())
    unjudged = [f for f in record["findings"] if f["rule"] == "baseline-not-judged"]
    assert [f["entity"] for f in unjudged] == ["sn0"] and unjudged[0]["not_judged"] is True, record["findings"]


# the shipped rules with every p2p bandwidth rule but the baseline's off: what the baseline judges alone
BASELINE_ONLY = "extends: default\nrules:\n" + "".join(
    f"  - {{name: {n}, enabled: false}}\n" for n in ("p2p-bandwidth-card-slow", "p2p-bandwidth-below-peers",
                                                     "p2p-bandwidth-below-design", "p2p-bandwidth-domain-below-design"))


def test_h23_05_a_baseline_without_some_cards_judges_them_against_their_tier(run_and_store: tuple[Path, Path, Path],
                                                                           tmp_path: Path) -> None:
    """review18 #10: a baseline that lacks some cards' levels (baseline make leaves out what its run named) but
    holds others' judges the cards it lacks against their tier's value: the slowed h1/gpu0 is named, and
    nothing is 'not judged' (which failed a clean cluster every night with such a baseline)."""
    root, _, _ = run_and_store
    lacking = lambda d: d.update(metrics=json.loads(json.dumps(d["metrics"]).replace('"h1/', '"h9/')))  # noqa: E731
    result = _cli("connectivity", "-i", root / "inv.yaml", "--backend", "mock", "--seed", "1",
                  "--faults", _file(tmp_path, SLOW, "slow.yaml"), "--baseline", _baseline(run_and_store, lacking),
                  "--rules", _file(tmp_path, BASELINE_ONLY, "rules.yaml"), "--out", tmp_path / "o", "-q")
    found = json.loads((tmp_path / "o" / "results.json").read_text())["findings"]
    assert result.exit_code == 1 and "baseline-not-judged" not in [f["rule"] for f in found], found
    assert any(f["entity"] == "h1/gpu0" and f["rule"] == "p2p-bandwidth-below-baseline" for f in found), found


def test_h23_05_a_whole_baseline_still_judges(run_and_store: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """H23-05's other side: the baseline as made judges the slowed card, and says nothing unjudged."""
    root, _, _ = run_and_store
    result = _cli("connectivity", "-i", root / "inv.yaml", "--backend", "mock", "--seed", "1",
                  "--faults", _file(tmp_path, SLOW, "slow.yaml"), "--baseline", _baseline(run_and_store, lambda d: None),
                  "--rules", _file(tmp_path, BASELINE_ONLY, "rules.yaml"), "--out", tmp_path / "o", "-q")
    rules = [f["rule"] for f in json.loads((tmp_path / "o" / "results.json").read_text())["findings"]]
    assert result.exit_code == 1 and "p2p-bandwidth-below-baseline" in rules and "baseline-not-judged" not in rules


# -- held: instances of the brief's classes that earlier rounds did not try --------------------------------

@pytest.mark.parametrize("old, new, says", [
    ("name: sn0", "name: no", "supernodes[0].name: must be a non-empty string, got False"),
    ("name: small", "name: off", "name: must be a non-empty string, got False"),
    ("name: small", "name: 2026-12-07", "name: must be a non-empty string, got datetime.date(2026, 12, 7)"),
    ("name: small", "name: !!binary aGVsbG8=", "name: must be a non-empty string, got b'hello'"),
    ("'h[1-3]'", "!!set {h1, h2}", "supernodes[0].hosts: must be a hostlist expression"),
    ("cards_per_host: 2", "cards_per_host: 0:02", "cards_per_host: must be an integer from 1 to 1024, got '0:02'"),
    ("cards_per_host: 2", "cards_per_host: !!str 2", "cards_per_host: must be an integer from 1 to 1024, got '2'"),
    ("name: small", "name: !foo small", "could not determine a constructor for the tag '!foo'"),
], ids=["norway-no", "norway-off", "date", "binary", "set", "sexagesimal-text", "str-tag", "local-tag"])
def test_h23_06_yaml_1_1_types_where_a_name_or_count_is_meant(tmp_path: Path, old: str, new: str, says: str) -> None:
    """H23-06 (held): YAML 1.1 reads `no`/`off` as false, `2026-12-07` as a date, `!!binary` as bytes,
    `!!set` as a set; a name or a count of any of them is refused at its line, never made text."""
    bad = _file(tmp_path, SMALL.replace(old, new))
    got = one_line_error(_cli("inventory", "check", bad))
    assert got.startswith(f"sncheck: error: {bad}:") and says in got, got


@pytest.mark.parametrize("extra, says", [
    ("? [a, b]\n: 1\n", ":6: malformed YAML: found an unhashable key"),
    ("b: &b 2\nc: {<<: *b}\n", "expected a mapping or list of mappings for merging"),
    ("hosts:\n  &k h1 : {address: 10.0.0.1}\n  *k : {address: 10.0.0.2}\n", ":7: malformed YAML: duplicate key 'h1'"),
    ("---\nname: other\n", ":6: malformed YAML: but found another document"),
], ids=["list-key", "merge-of-a-scalar", "key-by-alias-twice", "second-document"])
def test_h23_07_yaml_structure_no_input_has(tmp_path: Path, extra: str, says: str) -> None:
    """H23-07 (held): a list as a key, a merge key of a scalar, one key given twice through an anchor and
    an alias, a second document: refused at the line, exit 2."""
    bad = _file(tmp_path, SMALL + extra)
    got = one_line_error(_cli("inventory", "check", bad))
    assert str(bad) in got and says in got, got


@pytest.mark.parametrize("host", ["\u04bb1", "h\uff11", "h\u200b1", "\u210e1"],
                         ids=["cyrillic-shha", "fullwidth-one", "zero-width-space", "planck-h"])
def test_h23_08_a_host_name_that_only_looks_like_one(tmp_path: Path, host: str) -> None:
    """H23-08 (held): a host name with a confusable letter (Cyrillic һ for h), a fullwidth digit, a
    zero-width space, the Planck constant sign U+210E (NFKC reads it h): in an inventory's hostlist and in --targets,
    refused, exit 2, escaped."""
    bad = _file(tmp_path, SMALL.replace("'h[1-3]'", f"['h2', \"{host}\"]"))
    got = one_line_error(_cli("inventory", "check", bad))
    assert f"{bad}:5: bad host name" in got, got
    got = one_line_error(_cli("connectivity", "-i", _file(tmp_path, SMALL, "ok.yaml"), "--backend", "mock",
                              "--targets", f"{host}/gpu0", "--out", tmp_path / "o", "-q"))
    assert "--targets" in got and "\u200b" not in got, got
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("fault, says", [
    ("{type: slow_card, target: H1/gpu0, factor: 0.5}", "slow_card target 'H1/gpu0' is not a card"),
    ("{type: slow_card, target: 'h1/gpu0 ', factor: 0.5}", "slow_card target 'h1/gpu0 ' is not a card"),
    ("{type: slow_card, target: \"h1/gpu0\\u00a0\", factor: 0.5}", "is not a card of this inventory"),
    ("{type: down_host, target: \"h\\u200b1\"}", "down_host target 'h\\u200b1' is not a host"),
    ("{type: dead_link, target: 'h1/gpu0<->h1/gpu0'}", "is not a link of this inventory"),
    ("{type: jittery_card, target: h1/gpu0, factor: 3, probability: .nan}", "probability: must be a finite number"),
    ("{type: nvlink_down, target: h1/gpu0, links: 0}", "links: must be an integer from 1"),
], ids=["case", "trailing-space", "no-break-space", "zero-width", "self-link", "nan-probability", "zero-links"])
def test_h23_09_a_fault_aimed_at_what_exists_only_by_spelling(tmp_path: Path, fault: str, says: str) -> None:
    """H23-09 (held): a fault plan aimed at an entity that exists only by case or whitespace (H1/gpu0,
    a trailing, no-break or zero-width space), a link from a card to itself, a NaN probability, zero
    links: refused at the line, exit 2, nothing run (a fault never planted is a pass it never earned)."""
    plan = _file(tmp_path, f"faults:\n  - {fault}\n", "faults.yaml")
    got = one_line_error(_cli("run", "post-delivery", "-i", _file(tmp_path, SMALL), "--backend", "mock",
                              "--faults", plan, "--out", tmp_path / "o", "-q"))
    assert f"{plan}:2:" in got and says in got, got
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("body, says", [
    ("below: 0", "would judge nothing"), ("below: -1", "would judge nothing"),
    ("below: .nan", "must be a finite number"), ("below: .inf", "must be a finite number"),
], ids=["zero", "negative", "nan", "inf"])
def test_h23_10_a_rule_bar_that_judges_nothing(tmp_path: Path, body: str, says: str) -> None:
    """H23-10 (held): a shipped rule overridden with a bar of 0, -1, NaN or infinity: refused at its
    line by `rules check` (and by a run), exit 2."""
    rules = _file(tmp_path, "extends: default\nrules:\n  - name: p2p-bandwidth-below-design\n    op: ratio_to_design\n"
                  f"    metric: p2p_bandwidth\n    {body}\n    severity: critical\n    summary: x\n", "rules.yaml")
    got = one_line_error(_cli("rules", "check", rules))
    assert f"{rules}:6:" in got and says in got, got


@pytest.mark.parametrize("plant, says", [
    ("directory", "is a directory"), ("dev-zero", "is a character device, not a regular file"),
    ("bom", "Unexpected UTF-8 BOM"), ("nul-tail", "is binary (it has NUL bytes)"), ("twice", "Extra data"),
    ("digits", "holds an integer of more than 4300 digits"),
])
def test_h23_11_a_results_json_that_is_no_record(run_and_store: tuple[Path, Path, Path], tmp_path: Path,
                                                 plant: str, says: str) -> None:
    """H23-11 (held): a run's results.json replaced by a directory, a link to /dev/zero, itself behind a
    UTF-8 BOM, with NULs after it, written twice over, holding a 5000-digit number: `baseline make`
    refuses it naming the file, exit 2, nothing written."""
    _, run, _ = run_and_store
    shutil.copytree(run, copy := tmp_path / "run")
    rj = copy / "results.json"
    text = rj.read_bytes()
    rj.unlink()
    if plant == "directory":
        rj.mkdir()
    elif plant == "dev-zero":
        rj.symlink_to("/dev/zero")
    else:
        rj.write_bytes({"bom": b"\xef\xbb\xbf" + text, "nul-tail": text + b"\0" * 64, "twice": text + text,
                        "digits": text.replace(b'"findings"', b'"x": ' + b"9" * 5000 + b', "findings"', 1)}[plant])
    got = one_line_error(_cli("baseline", "make", copy, "--out", tmp_path / "b.json"))
    assert str(rj) in got and says in got, got
    assert not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("force", [False, True], ids=["new", "force"])
def test_h23_12_a_run_written_into_a_state_directory(run_and_store: tuple[Path, Path, Path], force: bool) -> None:
    """H23-12: `run --out STATE` (a state directory holding an isolation), with or without --force: the
    run's results.json, rows/ and reports were written among state.db and the audit, exit 0 (the other
    way round, `--state-dir RUN`, was refused). Refused, exit 2, the store's files as they were."""
    root, _, state = run_and_store
    before = sorted(p.name for p in state.iterdir())
    got = one_line_error(_cli("connectivity", "-i", root / "inv.yaml", "--backend", "mock", "--out", state, "-q",
                              *(["--force"] if force else [])))
    assert f"{state}: is a state directory" in got, got
    assert sorted(p.name for p in state.iterdir()) == before


@pytest.mark.parametrize("var", ["XDG_STATE_HOME", "HOME"])
def test_h23_13_a_state_directory_named_with_a_newline_by_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                           var: str) -> None:
    """H23-13: $XDG_STATE_HOME (or $HOME) of `DIR<LF>sncheck: verdict pass<U+202E>`: `--state-dir` refuses
    such a name, but the default took it, `isolate --apply` made the directory and printed
    'audit: DIR' and a forged 'sncheck: verdict pass' line, the rest reversed. Refused as --state-dir
    refuses it, escaped, exit 2, nothing made."""
    odd = str(tmp_path / "x\nsncheck: verdict pass\u202e")
    if var == "HOME":
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv(var, odd)
    inv = _file(tmp_path, SMALL)
    got = one_line_error(_cli("isolate", "h1/gpu0", "-i", inv, "--via", "cuda_visible_devices", "--apply"))
    assert "x\\u000asncheck: verdict pass\\u202e" in got and "has a control or bidi character" in got, got
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inv.yaml"]


@pytest.mark.parametrize("extra, key", [("~: x\n", "None"), ("yes: x\n", "True"), ("1.5: x\n", "1.5")],
                         ids=["null", "yes", "float"])
def test_h23_14_a_key_that_is_no_text_named_at_its_line(tmp_path: Path, extra: str, key: str) -> None:
    """H23-14: a top-level key YAML reads as null (`~:`), a boolean (`yes:`) or a float (`1.5:`): refused,
    but at line 1 and the path '(top level)' or '1' -- pydantic holds None as 'None' and True as 1, which
    the refusal did not find among the keys. Named at its own line (6) with its own path."""
    bad = _file(tmp_path, SMALL + extra)
    got = one_line_error(_cli("inventory", "check", bad))
    assert got.startswith(f"sncheck: error: {bad}:6: {key}: unknown key {key} in inventory"), got


def test_h23_15_interrupted_while_writing_the_final_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """H23-15 (held): Ctrl-C (SIGINT's KeyboardInterrupt) arriving while the finished record is written
    over the running one: the write is atomic (a temporary file renamed), so results.json stays the
    running snapshot, verdict error, never the pass being written; exit 3, one line."""
    import sncheck.store.rundir as rundir  # noqa: PLC0415 -- the one writer of a run's results.json

    real, seen = rundir.write_record, []

    def interrupted(path, record):  # noqa: ANN001, ANN202
        seen.append(str(record.verdict))
        if record.finished is not None:
            raise KeyboardInterrupt
        return real(path, record)

    monkeypatch.setattr(rundir, "write_record", interrupted)
    got = one_line_error(_cli("connectivity", "-i", _file(tmp_path, SMALL), "--backend", "mock",
                              "--out", tmp_path / "o", "-q"), 3)
    assert "interrupted" in got and seen[-1] == "pass", (got, seen)
    assert json.loads((tmp_path / "o" / "results.json").read_text())["verdict"] == "error"


@pytest.mark.parametrize("plant", ["deleted", "cut", "other-cards"])
def test_h23_16_a_launcher_file_that_disagrees_with_the_store(tmp_path: Path, plant: str) -> None:
    """H23-16 (held): the launcher file `isolate --apply` wrote (cuda_visible_devices.json) deleted, cut
    mid-object or edited to hide other cards, then the next `isolate --apply`: rewritten from the state
    store's isolations (said on a 'reconciled' line), never read as the fleet's state; h1/gpu0 stays out."""
    inv, state = _file(tmp_path, SMALL), tmp_path / "state"
    iso = ("isolate", "-i", inv, "--via", "cuda_visible_devices", "--apply", "--state-dir", state)
    assert _cli(iso[0], "h1/gpu0", *iso[1:]).exit_code == 0
    launcher = state / "cuda_visible_devices.json"
    if plant == "deleted":
        launcher.unlink()
    else:
        launcher.write_text('{"h1": ' if plant == "cut" else '{"h1": "0,1", "h2": "", "h3": "0,1"}')
    result = _cli(iso[0], "h2/gpu1", *iso[1:])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert plant == "deleted" or "reconciled" in result.output, result.output
    assert json.loads(launcher.read_text()) == {"h1": "1", "h2": "0", "h3": "0,1"}


def test_h23_17_diff_of_a_run_whose_record_is_a_directory(run_and_store: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """H23-17: `diff RUN OTHER` where RUN's results.json is a directory: "RUN/results.json/results.json:
    file not found", a path no one gave (`baseline make` said "is a directory"). Said of RUN/results.json
    itself, exit 2."""
    _, run, _ = run_and_store
    shutil.copytree(run, copy := tmp_path / "run")
    (rj := copy / "results.json").unlink()
    rj.mkdir()
    got = one_line_error(_cli("diff", copy, run))
    assert got == f"sncheck: error: {rj}: is a directory, not a file", got
