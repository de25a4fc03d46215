"""Issue 30, class 2 and 3: every path the command line takes goes through the one reader
and the one writer (sncheck.config.fileio), so no option accepts a FIFO or a device and no
command replaces a non-regular file.

The first test walks every command's parameters (Click introspection, lazy commands
included) and fails on a path parameter typed with anything but sncheck.cli.paths' types.
The second gives each of them every special file kind (tests/adversary.py) and expects a
one-line exit 2 naming it, at once, with the file left as it was. The rest attack the
reader and writer themselves (a FIFO planted after the option was checked).
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from adversary import mode_of, special_files
from sncheck.cli.main import main
from sncheck.cli.numbers import FiniteFloat, WholeNumber
from sncheck.cli.paths import PATH_TYPES, Directory, InputFile, OutputFile
from sncheck.config import fileio
from sncheck.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures" / "inventories" / "demo-2sn.yaml")

# Parameters that are not paths, and why (a new one must be added here or typed as a path).
NOT_PATHS = {
    "entities", "entity", "tool", "reason", "rule", "control_host", "formats", "targets", "name", "backend",
    "partition", "scale_up", "scale_out", "budget", "node", "params", "expert_params", "layout", "card_memory",
    "reserve", "collective", "kind", "via", "gate", "dist_backend", "precision", "optimizer", "recompute",
    "force_cap",  # a reason for the audit
    "compare", "design",  # plan: layouts to rank, TIER=BW@LAT figures
    "platform_name",  # parse --platform: a platform's name, looked up among the shipped ones
}


def commands() -> Iterator[tuple[list[str], click.Command]]:
    ctx = click.Context(main)

    def walk(cmd: click.Command, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
        yield path, cmd
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None, name
                yield from walk(sub, [*path, name])

    yield from walk(main, [])


def path_params() -> list[tuple[list[str], click.Command, click.Parameter]]:
    out = []
    for path, cmd in commands():
        for p in cmd.params:
            if isinstance(p.type, PATH_TYPES):
                out.append((path, cmd, p))
    return out


def test_every_path_parameter_goes_through_the_one_reader_or_writer() -> None:
    bypass = []
    for path, cmd, in commands():
        for p in cmd.params:
            if isinstance(p.type, PATH_TYPES) or getattr(p, "is_flag", False) or p.name in NOT_PATHS:
                continue
            # any text parameter: a new one is a path until NOT_PATHS says why it is not
            if isinstance(p.type, (click.Path, click.File, click.types.StringParamType)):
                bypass.append(f"sncheck {' '.join(path)} {p.name} ({p.type!r})")
    assert not bypass, "path parameters that bypass sncheck.cli.paths: " + ", ".join(bypass)
    kinds = {type(p.type) for _, _, p in path_params()}
    assert {InputFile, OutputFile, Directory} <= kinds
    assert len(path_params()) >= 60  # every run option of 4 run commands, ops, history, watch...


def float_params() -> list[tuple[list[str], click.Command, click.Parameter]]:
    return [(path, cmd, p) for path, cmd in commands() for p in cmd.params
            if isinstance(p.type, click.types.FloatParamType)]


def _non_finite() -> list[str]:
    import math

    from adversary import NON_FINITE_JSON

    out = []
    for text in NON_FINITE_JSON:
        try:
            if not math.isfinite(float(text)):
                out.append(text)
        except ValueError:
            pass
    return out


def test_no_float_option_accepts_a_non_finite_number(tmp_path: Path) -> None:
    """`isolate --cap nan` passed click.FloatRange (no bound refuses NaN) and reached the fleet
    cap's check as an internal error; `watch --interval nan` asked for a sleep of NaN. Every
    float option of every command is typed FiniteFloat, and each refuses every non-finite
    text of the adversary's (NaN, +-Infinity, 1e999, 10**5000) with one line naming it."""
    params = float_params()
    assert len(params) >= 8  # --duration of 4 run commands, --cap, --interval, --mfu, --peak-tflops
    loose = [f"sncheck {' '.join(path)} {p.name} ({p.type!r})" for path, _, p in params
             if not isinstance(p.type, FiniteFloat)]
    assert not loose, "float options that admit NaN: " + ", ".join(loose)
    values = _non_finite()
    assert {"NaN", "Infinity", "-Infinity", "1e999"} <= set(values)
    failures = []
    for path, cmd, param in params:
        for value in values:
            argv = _argv(path, cmd, param, value, tmp_path)
            r = CliRunner().invoke(main, argv)
            lines = [ln for ln in r.output.splitlines() if ln.strip()]
            if r.exit_code != 2 or len(lines) != 1 or f"'{param.opts[-1]}'" not in r.output:
                failures.append(f"sncheck {' '.join(argv)[:120]}: exit {r.exit_code}: {r.output.strip()[:160]!r}")
    assert not failures, "\n".join(failures)


def test_every_number_option_takes_ascii_digits_only(tmp_path: Path) -> None:
    """`--seed ١` (Arabic-Indic) and `--seed 1_0` passed click's INT as 1 and 10, `plan --mfu ٠.٤` its
    FLOAT (hostile round 20, H20-01): every integer option is typed WholeNumber and every float option
    FiniteFloat, and each refuses a value in another script's digits with one line naming it."""
    ints = [(path, cmd, p) for path, cmd in commands() for p in cmd.params
            if isinstance(p.type, click.types.IntParamType) and not getattr(p, "count", False)]
    assert len(ints) >= 20  # --seed, --cards, --forks of 4 run commands, plan's sizes, --last, --tp...
    loose = [f"sncheck {' '.join(path)} {p.name} ({p.type!r})" for path, _, p in ints if not isinstance(p.type, WholeNumber)]
    assert not loose, "integer options that read other scripts' digits: " + ", ".join(loose)
    failures = []
    for path, cmd, param in [*ints, *float_params()]:
        argv = _argv(path, cmd, param, "\u0661", tmp_path)
        r = CliRunner().invoke(main, argv)
        if r.exit_code != 2 or "ASCII digits" not in r.output:
            failures.append(f"sncheck {' '.join(argv)[:120]}: exit {r.exit_code}: {r.output.strip()[:160]!r}")
    assert not failures, "\n".join(failures)


@pytest.fixture(scope="module")
def specials(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path, int]]:
    root = tmp_path_factory.mktemp("specials")
    return [(label, p, mode_of(p)) for label, p in special_files(root)]


def _fill(param: click.Parameter, tmp: Path) -> list[str]:
    """A valid value for a required parameter that is not under test."""
    values = {"entities": "node001", "tool": "nccl-tests", "params": "70B", "layout": "tp=8",
              "playbook": "pre-upgrade-gate", "run_a": str(tmp), "run_b": str(tmp), "directory": str(tmp),
              "out_path": str(tmp / "out.json"), "state_dir": str(tmp / "state"), "file": str(tmp / "log.txt"),
              "inventory_path": DEMO}
    assert param.name in values, f"no value for the required parameter {param.name}: add one here"
    return [values[param.name]]


def _argv(path: list[str], cmd: click.Command, target: click.Parameter, value: str, tmp: Path) -> list[str]:
    """Options first (Click takes them anywhere), then the arguments in their order."""
    argv = list(path)
    for p in cmd.params:
        if isinstance(p, click.Option) and (p is target or p.required):
            argv += [p.opts[0], value if p is target else _fill(p, tmp)[0]]
    for p in cmd.params:
        if isinstance(p, click.Argument) and (p is target or p.required):
            argv += [value] if p is target else _fill(p, tmp)
    return argv


class Unblocker:
    """If a command opens or reads a FIFO anyway, open it for writing after ``after``
    seconds and close it, so the test fails (too slow, wrong exit) instead of hanging."""

    def __init__(self, fifos: list[Path], after: float = 5.0) -> None:
        self.fifos, self.after, self.fired = fifos, after, False
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        if self._stop.wait(self.after):
            return
        self.fired = True
        while not self._stop.is_set():
            for f in self.fifos:
                try:
                    os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
            time.sleep(0.05)

    def __enter__(self) -> Unblocker:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()


def test_no_path_option_accepts_a_special_file(specials, tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text("# nccl-tests\n")
    fifos = [p for label, p, _ in specials if "FIFO" in label]
    failures = []
    runner = CliRunner()
    for path, cmd, param in path_params():
        for label, special, _ in specials:
            argv = _argv(path, cmd, param, str(special), tmp_path)
            # one watchdog per command: the whole loop may take long on a busy machine, one
            # command waiting 5 s on a FIFO may not
            with Unblocker(fifos) as unblock:
                t0 = time.monotonic()
                r = runner.invoke(main, argv)
                took = time.monotonic() - t0
            lines = [ln for ln in r.output.splitlines() if ln.strip()]
            if unblock.fired:
                failures.append(f"sncheck {' '.join(argv)} [{label}]: opened a FIFO and waited on it")
            elif r.exit_code != 2 or str(special) not in r.output or len(lines) != 1:
                failures.append(f"sncheck {' '.join(argv)} [{label}]: exit {r.exit_code} in {took:.1f}s: "
                                f"{r.output.strip()[:200]!r}")
    assert not failures, "\n".join(failures)
    for label, special, mode in specials:  # nothing replaced or removed
        assert mode_of(special) == mode, label


def test_the_reader_refuses_what_is_not_a_regular_file(specials) -> None:
    for label, special, _ in specials:
        with pytest.raises(ConfigError, match="not a regular file"):
            fileio.read_input(special, "yaml")
    with pytest.raises(ConfigError, match="character device"):
        fileio.read_input("/dev/zero", "rank map")
    with pytest.raises(ConfigError, match="directory"):
        fileio.read_input(ROOT, "yaml")


def test_the_reader_stops_at_the_kinds_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b"0," * 600 + b"0]")
    monkeypatch.setitem(fileio.LIMITS, "rank map", 1000)
    with pytest.raises(ConfigError, match="larger than"):
        fileio.read_input(big, "rank map")
    assert fileio.read_input(big, "json") == big.read_bytes()
    # /proc files say size 0 and are read to their end, within the limit
    assert fileio.read_input("/proc/self/status", "log").startswith(b"Name:")


def test_the_writer_replaces_only_regular_files_and_links(specials, tmp_path: Path) -> None:
    for label, special, mode in specials:
        with pytest.raises(ConfigError, match=re.escape(str(special))):
            fileio.write_atomic(special, "{}")
        with pytest.raises(ConfigError):
            fileio.append_text(special, "line\n")
        assert mode_of(special) == mode, label
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    fileio.write_atomic(link, "{}\n")  # the link is replaced, never written through
    assert victim.read_text() == "keep\n" and stat.S_ISREG(mode_of(link)) and link.read_text() == "{}\n"
    with pytest.raises(ConfigError, match="symlink"):
        fileio.append_text(tmp_path / "link2", "x") if (tmp_path / "link2").symlink_to(victim) is None else None
    assert victim.read_text() == "keep\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_fifo_planted_after_the_check_is_not_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "golden.json"
    real = fileio.check_output
    calls = []

    def plant_then_check(path: object) -> None:
        calls.append(path)
        if len(calls) == 2:  # between the temporary file and the rename
            os.mkfifo(out)
        real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(fileio, "check_output", plant_then_check)
    with pytest.raises(ConfigError, match="FIFO"):
        fileio.write_atomic(out, "{}")
    assert stat.S_ISFIFO(mode_of(out))
    assert [p.name for p in tmp_path.iterdir()] == ["golden.json"]


@pytest.mark.parametrize("command", [["golden", "record", "--steps", "2", "--repeats", "1", "--backend", "mock",
                                      "-i", DEMO, "-q"], ["baseline", "make", str(ROOT / "fixtures")]])
def test_outputs_refuse_dev_full_style_targets(command: list[str], tmp_path: Path) -> None:
    """The issue's example: `--out` a FIFO, a device, a symlink to one (run as root, /dev/full
    was replaced by a JSON file). The device is a copy of /dev/full's node made in tmp_path,
    so a regression replaces that copy, never the machine's /dev/full."""
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    targets = [fifo]
    try:
        os.mknod(tmp_path / "full", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        targets.append(tmp_path / "full")
    except PermissionError:
        pass
    link = tmp_path / "link"
    link.symlink_to(targets[-1])
    for target in [*targets, link]:
        before = os.lstat(target).st_mode
        r = CliRunner().invoke(main, [*command, "--out", str(target)])
        assert r.exit_code == 2, r.output
        assert str(target) in r.output and "Traceback" not in r.output
        assert os.lstat(target).st_mode == before
