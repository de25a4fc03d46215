"""Hostile inputs, round 4: the round-3 cases still open on main (INJ04, ISO02, ISO17) and the
new cases of the adversary's categories on today's features. Each test names its case id."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from sncheck.cli.errors import shown
from sncheck.cli.main import main
from sncheck.store.state import StateStore
from test_hardening import INV  # the same tiny two-supernode inventory


# Every character class a terminal acts on rather than shows: C0 (NUL, ESC, CR, LF, BS), DEL,
# C1 (CSI), and the bidi override and isolate that reorder the rest of a line.
TERMINAL_ACTIVE = "\x00\x1b\r\n\x08\x7f\x9b\u202e\u2066"


def _cli(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def test_shown_escapes_every_terminal_active_character() -> None:
    out = shown(f"a{TERMINAL_ACTIVE}b é 😀")
    assert not any(c in out for c in TERMINAL_ACTIVE)
    assert out.startswith("a\\u0000\\u001b\\u000d\\u000a") and out.endswith("b é 😀")


def test_inj04_inventory_check_prints_a_hostile_name_on_one_line(tmp_path: Path) -> None:
    """INJ04: an inventory's name and description with a newline, NUL, ESC and an RTL override
    were printed raw by 'inventory check' (a forged 'sncheck: verdict pass' line was possible)."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(INV.replace("name: tiny", 'name: "x\\nsncheck: verdict pass\\0\\e[2J\\u202e"')
                   + 'description: "d\\e]0;title\\a\\u2066"\n')
    r = _cli("inventory", "check", str(inv))
    assert r.exit_code == 0, r.output
    first, second = r.output.splitlines()[:2]
    assert "sncheck: verdict pass" in first and "\\u000a" in first
    assert not any(c in r.output for c in "\x00\x1b\u202e\u2066\x07")
    assert second.startswith("  d\\u001b]0;title\\u0007")


def test_iso17_status_and_capacity_create_no_state_store(tmp_path: Path) -> None:
    """ISO17: 'sncheck status' (a read-only query) made ~/.local/state/sncheck/state.db."""
    home = tmp_path / "home"
    home.mkdir()
    inv = tmp_path / "inv.yaml"
    inv.write_text(INV)
    env = {"HOME": str(home), "XDG_STATE_HOME": ""}
    for args in (["status"], ["status", "--check"], ["status", "--json"], ["capacity", "-i", str(inv)]):
        r = _cli(*args, env=env)
        assert r.exit_code == 0, (args, r.output)
        assert list(home.iterdir()) == [], args
    r = _cli("status", "--state-dir", str(tmp_path / "none"))
    # (9b9b5cc) a state directory that does not exist is said, not read as all clear
    assert r.exit_code == 0 and f"no state directory at {tmp_path / 'none'}: nothing recorded" in r.output, r.output
    assert not (tmp_path / "none").exists()
    (tmp_path / "afile").write_text("x")  # CLI12: a file where the state directory must be
    r = _cli("status", env={"XDG_STATE_HOME": str(tmp_path / "afile")})
    assert r.exit_code == 2 and "afile is not a directory" in r.output, r.output


def test_iso02_isolating_again_keeps_the_first_time(tmp_path: Path) -> None:
    """ISO02: isolating an isolated host again showed the second call's time as SINCE."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(INV)
    sdir = tmp_path / "st"
    for _ in range(2):
        r = _cli("isolate", "n1", "-i", str(inv), "--via", "hostfile", "--apply", "--state-dir", str(sdir))
        assert r.exit_code == 0, r.output
    with StateStore(sdir) as st:
        hist = [h for h in st.history("n1") if h["action"] == "isolate"]
        assert len(hist) == 2
        (now,) = st.current_status()
    assert now["since"] == hist[0]["ts"] != hist[1]["ts"]
    assert now["run_id"] == hist[1]["run_id"]  # the latest decision is still the one shown
    r = _cli("release", "n1", "-i", str(inv), "--via", "hostfile", "--apply", "--state-dir", str(sdir))
    assert r.exit_code == 0, r.output
    r = _cli("isolate", "n1", "-i", str(inv), "--via", "hostfile", "--apply", "--state-dir", str(sdir))
    with StateStore(sdir) as st:
        (now,) = st.current_status()
        last = st.history("n1")[-1]
    assert now["since"] == last["ts"]  # a release ends the state: isolated again is a new time


# -- JSON files sncheck is given: one reader (config/jsonio.read_json) -------------------------

HOSTILE_JSON = {
    "nested": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "nested-object": ('{"a":' * 50_000 + "1" + "}" * 50_000, "nested too deeply"),
    "huge-integer": ('{"run_id": ' + "9" * 5000 + "}", "integer of more than"),
    "nan": ('{"run_id": NaN}', "NaN is not a finite number"),
}


def _readers() -> dict[str, object]:
    from sncheck.cli.fabric import _load_counters
    from sncheck.store.results import read_record
    from sncheck.watch.judge import load_baseline
    from sncheck.watch.rankmap import load_rank_map

    return {"results.json (diff, history, baseline)": read_record, "rank map (watch --rank-map)": load_rank_map,
            "fabric counters (fabric check --since)": _load_counters,
            "watch --baseline run": lambda p: load_baseline(str(p), None, None, None)}  # type: ignore[arg-type]


@pytest.mark.parametrize("case", sorted(HOSTILE_JSON))
def test_h01_h02_every_json_reader_refuses_hostile_json_in_one_line(tmp_path: Path, case: str) -> None:
    """H01/H02: a results.json nested 100,000 deep or holding a 5000-digit integer made 'sncheck
    diff' an internal error (RecursionError, ValueError: exit 3, crash file): results.json, the
    rank map, the fabric counters and the watch baseline each called json.loads themselves."""
    from sncheck.errors import ConfigError

    text, words = HOSTILE_JSON[case]
    f = tmp_path / "results.json"
    f.write_text(text)
    for what, read in _readers().items():
        with pytest.raises(ConfigError) as e:
            read(f)  # type: ignore[operator]
        assert words in str(e.value) and str(f) in str(e.value), (what, str(e.value))


def test_h01_diff_of_a_hostile_results_json_exits_2(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    (run / "results.json").write_text("[" * 100_000 + "]" * 100_000)
    r = _cli("diff", str(run), str(run))
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and "nested too deeply" in r.output


def test_no_reader_parses_an_input_file_by_itself() -> None:
    """The class, not the four files: JSON read from a file sncheck is given goes through
    read_json (size cap, special files, depth, digits, NaN); json.loads over read_input's
    bytes is the pattern every one of H01's readers had."""
    import re

    root = Path(__file__).resolve().parent.parent / "sncheck"
    own = [f"{p.relative_to(root)}:{n}" for p in root.rglob("*.py")
           for n, line in enumerate(p.read_text().splitlines(), 1)
           if re.search(r"json\.loads?\(\s*read_input\(", line)]
    assert own == []


# -- numbers on the command line -----------------------------------------------------------------

def _int_options() -> list[tuple[str, click.Parameter]]:
    out: list[tuple[str, click.Parameter]] = []

    def walk(cmd: click.Command, path: str) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), f"{path} {name}")  # type: ignore[arg-type]
            return
        out.extend((path, p) for p in cmd.params if isinstance(p.type, click.types.IntParamType))

    walk(main, "sncheck")
    return out


def test_h08_h09_every_integer_option_is_bounded_both_ways() -> None:
    """H08/H09: 'history --last 99999999999999999999' reached SQLite (OverflowError, exit 3),
    'golden record --steps -1' numpy (ValueError, exit 3), '--steps 1e20' ran for ever, and
    'history --last -1' / 'baseline make --last 0' read every run (ISO15, open since round 3).
    Every integer option is an IntRange with both ends, as every float option is FiniteFloat."""
    opts = _int_options()
    assert len(opts) > 10
    loose = [f"{path} {p.opts[0]}" for path, p in opts
             if not isinstance(p.type, click.IntRange) or p.type.min is None or p.type.max is None]
    assert loose == []


@pytest.mark.parametrize("args", [
    ["history", "--runs", "--state-dir", ".", "--last", "99999999999999999999"],
    ["history", "--runs", "--state-dir", ".", "--last", "-1"],
    ["baseline", "make", "--from-state", ".", "--last", "0", "--out", "b.json"],
    ["golden", "record", "--steps", "-1", "--out", "x.json", "--backend", "mock"],
    ["capacity", "--tp", "99999999999999999999"],
])
def test_h08_out_of_range_integers_exit_2_in_one_line(args: list[str]) -> None:
    r = _cli(*args)
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and "is not in the range" in r.output


@pytest.mark.parametrize("layout, words", [
    ("tp=8,tp=4,dp=1", "names tp twice"),                  # H03: TP=4 was planned silently
    ("tp=²,dp=1", "must be a positive integer"),           # H05: isdigit() then int(): exit 3
    ("tp=8,dp=99999999999999999999999", "at most 1000000"),
])
def test_h03_h05_plan_layouts_refused_in_one_line(layout: str, words: str) -> None:
    r = _cli("plan", "--params", "70B", "--layout", layout, "--hidden", "8192", "--layers", "80",
             "--card-memory", "80GB")
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and words in r.output


def test_h05_no_digit_test_lets_int_fail() -> None:
    """The class of H05: str.isdigit() is true for '²' and '①', which int() refuses; a guard
    before int() must be isdecimal() (what int() takes)."""
    import re

    root = Path(__file__).resolve().parent.parent / "sncheck"
    own = [f"{p.relative_to(root)}:{n}" for p in root.rglob("*.py")
           for n, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"\.isdigit\(\)", line)]
    assert own == []
