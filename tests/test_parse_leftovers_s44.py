"""Issue 28's parse leftovers named by stop 43 (task leftparse2): each test failed on main before its fix."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_one_command_line_grammar_reads_every_prompt_and_refuses_a_repl() -> None:
    """The command line behind a prompt was spelled four ways (ibstat, smi_select, amd-smi's
    monitor and topology searches), each with its own prompts; delivery.command_line is the one."""
    from sncheck.vendors.delivery import command_line

    ibstat = command_line("ibstat")
    for prompt in ("", "$ ", "# ", "> ", "user@host:~$ ", "[user@host dir]$ ", "[root@h ~]# ", "~$ ",
                   "/opt/rocm# ", "host$ ", "(venv) $ ", "(base) user@h:~/x$ ", "PS C:\\Users\\me> ", "C:\\> "):
        for sudo in ("", "sudo ", "sudo -E "):
            m = ibstat.match(f"{prompt}{sudo}/usr/sbin/ibstat mlx5_0 1")
            assert m and m["command"] == "/usr/sbin/ibstat mlx5_0 1" and m["args"] == " mlx5_0 1", (prompt, sudo)
    for line in (">>> ibstat", "... ibstat", "see]# ibstat", "ibstat: iberror: failed", "ibstatus", "$ ibstatus", "echo ibstat"):
        assert not ibstat.match(line), line


def test_every_view_reads_its_command_line_behind_the_same_prompts() -> None:
    """smi_select took no path ('/usr/bin/nvidia-smi -q -i 0' selected nothing) nor PowerShell's prompt,
    and took Python's '>>> '; amd-smi topology's options were read only behind a prompt (a bare
    'amd-smi topology' line above a cut topology passed)."""
    from sncheck.vendors.amd.amd_smi import parse_amd_smi_topology
    from sncheck.vendors.nvidia.smi_select import selected_gpus

    for line in ("/usr/bin/nvidia-smi -q -i 0,1", "PS C:\\> nvidia-smi.exe -q -i 0,1", "$ sudo nvidia-smi -q -i 0,1"):
        assert selected_gpus(line + "\n") == 2, line
    assert selected_gpus(">>> nvidia-smi -q -i 0,1\n") is None
    f = next((REPO / "fixtures/real/harvest14/amd-smi-topology").glob("02_*"))
    body = f.read_text().splitlines()[2:45]  # through the LINK TYPE table: NUMA BW cut off
    for command in ("amd-smi topology", "/opt/rocm/bin/amd-smi topology", "PS C:\\> amd-smi topology"):
        d = parse_amd_smi_topology("\n".join([command, *body]) + "\n")
        assert any("NUMA BW" in e for e in d["errors"]), (command, d["errors"])


def test_dcgmi_text_after_the_footer_names_its_line_as_the_file_numbers_it(tmp_path: Path) -> None:
    """d4fdc24 moved dcgmi's 'line N follows the table's closing border' to after_end.not_read,
    which dropped the line. Now the finding says where the unread text begins, as the file numbers
    it: after the two '# source:' lines and a markdown fence (the body the view reads starts lower)."""
    from click.testing import CliRunner

    from sncheck.cli.main import main

    table = (REPO / "fixtures/real/dcgmi-diag/01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt").read_text()
    head, _, body = table.partition("Successfully")
    text = head + "```\nSuccessfully" + body + "\n\nall_reduce_perf: 1 GB/s\nsecond note\n```\n"
    p = tmp_path / "diag.txt"
    p.write_text(text, encoding="utf-8")
    r = CliRunner().invoke(main, ["parse", "dcgmi-diag", str(p)])
    assert r.exit_code == 1, r.output
    at = text.splitlines().index("all_reduce_perf: 1 GB/s") + 1  # the file's numbering (1 for its first line)
    assert f"sncheck: {p}: not read: 2 lines after the end (the first: 'all_reduce_perf: 1 GB/s', line {at}): " \
        in r.output, r.output

