"""Review s43p: an adversarial read of stop 43's parser changes (harvest 14, leftparse, 30cf912).
Each test failed on main before its fix, or is a strict xfail naming what is left."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.vendors.delivery import PS1

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
_MONITOR = REAL / ("harvest14/amd-smi-monitor/04_amd_smi_monitor_ptumv_rocm_6.1.0_8_gpus_171_to_178w_gfx_clock_113_mhz_"
                   "vram_283_of_196300_mb_whole_amdsmi-changelog.txt")


def _table() -> str:
    """The capture's monitor table, its '# source:' line and its command line left out."""
    return "".join(ln for ln in _MONITOR.read_text(encoding="utf-8").splitlines(keepends=True)
                   if not ln.startswith(("#", "$")))


def _parse(tmp_path: Path, view: str, text: str):
    p = tmp_path / "log.txt"
    p.write_text(text, encoding="utf-8")
    return CliRunner().invoke(main, ["parse", view, str(p), "--json"])


def test_a_prompt_lies_on_one_line() -> None:
    """delivery.PS1's '[user@host dir]#' form took any text up to a ']' on a later line, so in a
    MULTILINE search (amd-smi monitor's command search, 8242b37) every line starting with '[' read on
    to the end of the file: 100,000 such lines (200 KB) took 15 s, a 2 MB paste ~25 min. Bash prints
    its prompt on the command's own line; no part of it crosses a newline."""
    prompt = re.compile(rf"^{PS1}", re.MULTILINE)
    assert prompt.search("[ 12.3] a note\n") is None
    assert prompt.search("[note\nsee]# ls\n") is None  # two lines are no prompt
    assert prompt.match("(base)\n$ ls\n") is None  # a conda env's name and a '$' a line below
    assert prompt.search("[root@h ~]# ls\n") and prompt.search("(base) user@h:~$ ls\n")  # one line still is


def test_a_command_split_over_two_lines_is_no_monitor_command(tmp_path: Path) -> None:
    """A note starting with '[' and a later line ending in ']# amd-smi monitor -q' are no pasted
    command: the table read whole is not 'cut short' for a process table nobody asked for."""
    res = _parse(tmp_path, "amd-smi-monitor", "[ 12.3 note\nsee]# amd-smi monitor -q\n" + _table())
    assert res.exit_code == 0, res.output
    assert '"gpu": 7' in res.output


def test_text_after_an_amd_smi_monitor_table_is_not_read_as_part_of_it(tmp_path: Path) -> None:
    """amd-smi monitor's grammar (amdsmi_logger._print_tabular_output) is a command line, the header,
    a row per GPU and -q's PROCESS INFO table; any other line after the header is no part of it. A
    note or another tool's output appended after the rows was dropped with no word, exit 0."""
    res = _parse(tmp_path, "amd-smi-monitor", _table() + "GPU 3 was reset by the operator before this read\n"
                 "Fri Dec  5 10:00:01 2026 kernel: amdgpu 0000:05:00.0: ring gfx timeout\n")
    assert res.exit_code == 1, res.output
    assert "not read: 2 lines after the end" in res.output, res.output
