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


# One AER report in each form aer.c has printed: 6.x (dev_fmt's 'AER: ', 'Correctable ... message received
# from'), 4.x-5.x ('error received: BDF', the header without 'AER: '), 3.x ('id=00e0', 'id=00e0(AGENT)')
_AER_REPORTS = {
    "6.x": ["[   12.000001] pcieport 0000:00:1c.5: AER: Correctable error message received from 0000:3b:00.0",
            "[   12.000002] nvidia 0000:3b:00.0: AER: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)",
            "[   12.000003] nvidia 0000:3b:00.0: AER:   device [10de:2330] error status/mask=00000001/0000e000",
            "[   12.000004] nvidia 0000:3b:00.0: AER:    [ 0] RxErr                  (First)"],
    "4.x": ["[    5.100000] pcieport 0000:00:03.0: AER: Corrected error received: 0000:05:00.0",
            "[    5.200000] pcieport 0000:05:00.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)",
            "[    5.300000] pcieport 0000:05:00.0:   device [10de:1af1] error status/mask=00001000/00002000",
            "[    5.400000] pcieport 0000:05:00.0:    [12] Timeout               "],
    "3.x": ["[    7.100000] pcieport 0000:00:1c.0: AER: Corrected error received: id=00e0",
            "[    7.200000] pcieport 0000:00:1c.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, id=00e0(Receiver ID)",
            "[    7.300000] pcieport 0000:00:1c.0:   device [8086:a110] error status/mask=00000001/00002000",
            "[    7.400000] pcieport 0000:00:1c.0:    [ 0] Receiver Error         (First)"],
}
# aer.c's pci_print_aer (a firmware-first report) before them: its last line ends in 'ID', as a header
# cut before its ')' does, so the generic mid-line test (a last word that ends another line is whole) passed it
_FIRMWARE_FIRST = ["[    8.000001] pcieport 0000:00:1c.5: AER: aer_status: 0x00000001, aer_mask: 0x00002000",
                   "[    8.000002] pcieport 0000:00:1c.5: AER:    [ 0] RxErr                 ",
                   "[    8.000003] pcieport 0000:00:1c.5: AER: aer_layer=Physical Layer, aer_agent=Receiver ID"]


def test_an_aer_header_cut_at_any_character_is_a_cut() -> None:
    """kernel_aer.cut_short took a header line as whole once it had a type ('...type=Phys' passed):
    now each header line (received, 'PCIe Bus Error', 'device [...] error status/mask') cut at any
    character is a cut, by aer.c's format (the view's own error, whatever the log's other lines end
    in); from its device prefix on where the line before left the report open, from 'AER' on the
    received line (nothing before it says a report begins). The same lines whole are not cut."""
    from sncheck.vendors.kernel_log import parse_kernel_log
    from sncheck.vendors.parsers import failures, parse_text

    for form, report in _AER_REPORTS.items():
        for i in range(3):
            first = report[i].index("AER") + 1 if i == 0 else 1
            for k in range(first, len(report[i])):
                text = "\n".join([*report, *report[:i], report[i][:k]])
                assert any("mid-line" in e for e in parse_kernel_log(text)["errors"]), (form, report[i][:k])
            assert not parse_kernel_log("\n".join([*report, *report[: i + 1]]))["errors"], (form, i)
        cut = report[1][: report[1].rindex(")")]  # '... (Receiver ID': through `sncheck parse`, exit 1
        got = parse_text("kernel-log", "\n".join([*_FIRMWARE_FIRST, *report, report[0], cut]))
        assert any("cut short" in f for f in failures(got)), (form, failures(got))


def _dcgm4_json(*warnings: dict[str, object]) -> str:
    """A DCGM 4.x ``dcgmi diag -j`` document as Diag.cpp's HelperJsonBuildOutput writes it: the
    Software test's GPU 0 entry and test_summary at "Fail" (HelperDisplayDiagResult without
    DDR_DISPLAY_WARN writes a Warn so) with ``warnings``, GPU 1 and the memory test at Pass."""
    import json

    gpu = {"entity_group": "GPU", "entity_group_id": 1}
    return json.dumps({"DCGM Diagnostic": {"test_categories": [
        {"category": "Deployment", "tests": [{"name": "software", "results": [
            {**gpu, "entity_id": 0, "status": "Fail", "warnings": list(warnings)}, {**gpu, "entity_id": 1, "status": "Pass"}],
            "test_summary": {"status": "Fail", "warnings": list(warnings)}}]},
        {"category": "Hardware", "tests": [{"name": "memory", "results": [
            {**gpu, "entity_id": g, "status": "Pass"} for g in (0, 1)], "test_summary": {"status": "Pass"}}]}]},
        "metadata": {"version": "4.2.3"}}, indent=4) + "\n"


def test_dcgmi_json_of_4x_reads_the_software_test_s_warn_as_the_table_does() -> None:
    """DCGM 4.x's -j writes a Warn as 'Fail' (Diag.cpp HelperJsonAddResult, 4.0.0 to 4.6.0), so a
    Software test warned for persistence mode read as a hardware Fail where the table of the same run
    reads 'software at Warn', a warning. Its messages' error_ids say the Warn (Software.cpp sets Warn,
    never Fail, for them): the same finding as the table's. NVML's library missing (error 22 for
    libnvidia-ml) or a Fail's message beside a Warn's stays a Fail."""
    from sncheck.vendors.parsers import failures, parse_text

    msg = 'Persistence mode for GPU 0 is disabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.'
    persistence = {"warning": msg, "error_id": 29, "error_category": 5, "error_severity": 1}
    border = "+---------------------------+------------------------------------------------+"
    table = "\n".join(["Successfully ran diagnostic for group.", border, f"| {'Diagnostic':<25} | {'Result':<46} |",
                       "+===========================+" + "=" * 48 + "+",
                       "|-----  Deployment  --------+------------------------------------------------|",
                       f"| {'software':<25} | {'Warn':<46} |",
                       *[f"| {'Warning' if i == 0 else '':<25} | {msg[i:i + 45]:<46} |" for i in range(0, len(msg), 45)],
                       f"| {'':<25} | {'GPU0: Fail':<46} |", f"| {'':<25} | {'GPU1: Pass':<46} |",
                       "+-----  Hardware  ----------+------------------------------------------------+",
                       f"| {'memory':<25} | {'Pass':<46} |", f"| {'':<25} | {'GPU0: Pass':<46} |",
                       f"| {'':<25} | {'GPU1: Pass':<46} |", border]) + "\n"
    as_table, as_json = parse_text("dcgmi-diag", table), parse_text("dcgmi-diag", _dcgm4_json(persistence))
    assert as_json["result"] == as_table["result"] == "Warn"
    assert as_json["tests"][0]["result"] == "Warn" and as_json["gpus"] == as_table["gpus"]
    assert failures(as_json) == failures(as_table) == [f"dcgmi diag: Warn: software at Warn ({msg})"]
    nvml = {"warning": "Cannot open library libnvidia-ml.so.1: 'not found'", "error_id": 22}
    cuda = {"warning": "Cannot open library libcudart.so.12: 'not found'", "error_id": 22}
    pending = {"warning": "GPU 0 has pending page retirements", "error_id": 34}
    assert parse_text("dcgmi-diag", _dcgm4_json(cuda))["result"] == "Warn"
    for said in ((nvml,), (persistence, pending), ({"warning": msg},)):
        assert parse_text("dcgmi-diag", _dcgm4_json(*said))["result"] == "Fail", said


def _monitor_watch(rounds: int, gpus: int = 2, processes: bool = False, last_gpus: int | None = None) -> str:
    """``amd-smi monitor -ptu [-q] -w 1`` on stdout as amdsmi_cli prints it (rocm-6.2.0: handle_watch's
    Ctrl-C line, each round's header with TIMESTAMP first, the rows right-justified by
    _convert_json_to_tabular, -q's PROCESS INFO table with a GPU's N/A row where it runs no process,
    print("\\n")); ``last_gpus`` rows in the last round."""
    head = "TIMESTAMP".rjust(10) + "  " + "GPU" + "POWER".rjust(7) + "GPU_TEMP".rjust(10) + "MEM_TEMP".rjust(10) + \
        "GFX_UTIL".rjust(10) + "GFX_CLOCK".rjust(11)
    proc = "TIMESTAMP".rjust(10) + "  " + "GPU".rjust(3) + "NAME".rjust(22) + "PID".rjust(9) + "GTT_MEM".rjust(10) + \
        "CPU_MEM".rjust(10) + "VRAM_MEM".rjust(10) + "MEM_USAGE".rjust(11) + "GFX".rjust(8) + "ENC".rjust(8)
    out = ["$ amd-smi monitor -ptu" + (" -q" if processes else "") + " -w 1", "'CTRL' + 'C' to stop watching output:"]
    for r in range(rounds):
        ts = str(1733468400 + r)
        shown = range(last_gpus if r == rounds - 1 and last_gpus is not None else gpus)
        out += [head, *(ts.rjust(10) + "  " + str(g).rjust(3) + f"{170 + r} W".rjust(7) + "32 °C".rjust(10) +
                        "33 °C".rjust(10) + f"{r} %".rjust(10) + "114 MHz".rjust(11) for g in shown)]
        if processes:
            out += ["", "PROCESS INFO:", proc,
                    *(ts.rjust(10) + "  " + str(g).rjust(3) + "  " + "N/A".rjust(20) + "N/A".rjust(9) +
                      "".join("N/A".rjust(w) for w in (10, 10, 10, 11, 8, 8)) for g in shown)]  # no process
        out += ["", "", ""]
    return "\n".join(out) + "\n"


def test_amd_smi_monitor_watch_reads_every_round_and_keeps_the_last() -> None:
    """amd-smi monitor -w N prints a round every N seconds, each with its TIMESTAMP header (handle_watch):
    the view appended every round's rows (two GPUs over three rounds read as six), and under -q read the
    second round's header as a line of the process table (not read, exit 1). Each round is read; the
    last one's values are the view's, ``rounds`` counts them; a last round cut short (a GPU's row or
    the process table the first round has missing) is cut."""
    from sncheck.vendors.parsers import failures, parse_text

    for processes in (False, True):
        got = parse_text("amd-smi-monitor", _monitor_watch(3, processes=processes))
        assert not failures(got), (processes, failures(got))
        assert got["rounds"] == 3 and [(g["gpu"], g["TIMESTAMP"], g["POWER"]) for g in got["gpus"]] == \
            [(0, "1733468402", "172 W"), (1, "1733468402", "172 W")], processes
        assert len(got.get("processes") or []) == (2 if processes else 0)
        cut = parse_text("amd-smi-monitor", _monitor_watch(3, processes=processes, last_gpus=1))
        assert "round 3 has no row for GPU 1 of round 1: cut short" in failures(cut), failures(cut)
    one = parse_text("amd-smi-monitor", _monitor_watch(1))
    assert "rounds" not in one and len(one["gpus"]) == 2 and not failures(one)


def test_npu_smi_chip_memory_form_is_npu_smi_s() -> None:
    """_FORM_KEYS came from the grammar text: a chip's -t memory -c form (no NPU ID line; npucli's
    print_ddr_info then print_hbm_info, whose 'HBM Manufacturer ID' carries no unit) was refused as
    not npu-smi's output (awesome-ascend-skills issue 78's capture). Every real capture of a form reads;
    a foreign 'Key : Value' text is still refused."""
    import pytest

    from sncheck.errors import ParseError
    from sncheck.vendors.parsers import parse_text

    capture = next((REPO / "fixtures/real/ascend").glob("19_*"))
    assert parse_text("npu-smi-hbm", capture.read_text(encoding="utf-8")) == \
        {"tool": "npu-smi-hbm", "hbm_capacity_MB": 65536, "errors": []}
    for name in ("07", "08", "16", "18a", "18b"):
        got = parse_text("npu-smi-fields", next((REPO / "fixtures/real/ascend").glob(f"{name}_*")).read_text())
        assert got["fields"] and not got["errors"], name
    with pytest.raises(ParseError, match="not npu-smi's output"):
        parse_text("npu-smi-fields", "    Product Name                          : NVIDIA A100\n    Power Draw   : 69.03 W\n")


def _pasted(tmp_path: Path, view: str, body: str, *extra: str) -> tuple[Path, str, str]:
    """``body`` pasted as a reporter keeps it: two '# source:' lines, a markdown fence, then a note
    after the output's end; the file, ``sncheck parse``'s output and the note's line as the file numbers it."""
    from click.testing import CliRunner

    from sncheck.cli.main import main

    text = f"# source: a reporter's paste\n# note: fenced\n```text\n{body}\nthe note after it\nits second line\n```\n"
    p = tmp_path / f"{view}.txt"
    p.write_text(text, encoding="utf-8")
    r = CliRunner().invoke(main, ["parse", view, str(p), *extra])
    assert r.exit_code == 1, (view, r.output)
    return p, r.output, str(text.split("\n").index("the note after it") + 1)  # (the file's lines: at LF)


def test_every_view_s_text_after_its_end_names_its_line_as_the_file_numbers_it(tmp_path: Path) -> None:
    """3164c75 numbered dcgmi's 'not read' only: ibstat, the nvidia-smi table, nccl-tests and amd-smi
    monitor said 'not read: 2 lines after the end (the first: ...)' with no line. Each names the
    file's line now, past the '# source:' header and the fence (after_end.numbered counts, in_file renumbers);
    a form feed, a line for str.splitlines but none for the file, numbers nothing twice."""
    real = REPO / "fixtures/real"
    views = {"ibstat": (real / "ib/04_ibstat_h100_roce_12CA_all_active_eth.txt", ()),
             "nvidia-smi": (real / "harvest/nvidia-smi/02_nvidia-smi_550.90.07_8xh100_idle_no_processes_gpud.txt", ()),
             "nccl-tests": (real / "nccl-tests/all_reduce_perf/01_h100_16ranks_2nodes_float_newcols.txt",
                            ("--collective", "all_reduce")),
             "amd-smi-monitor": (real / "harvest14/amd-smi-monitor/04_amd_smi_monitor_ptumv_rocm_6.1.0_8_gpus_171_to_178w_"
                                 "gfx_clock_113_mhz_vram_283_of_196300_mb_whole_amdsmi-changelog.txt", ())}
    for view, (path, extra) in views.items():
        from sncheck.vendors.parsers import strip_source_header

        body = strip_source_header(path.read_text(encoding="utf-8")).rstrip("\n")
        for shown in (body, body + "\n\x0c"):  # (a form feed alone: blank, and one line of the file)
            p, out, at = _pasted(tmp_path, view, shown, *extra)
            assert f"sncheck: {p}: not read: 2 lines after the end (the first: 'the note after it', line {at}): " \
                in out, (view, out)


def test_amd_smi_monitor_watch_names_a_round_s_unread_line_as_the_file_numbers_it(tmp_path: Path) -> None:
    """-w N: each round is read alone (amd_smi_watch), so a round's 'not read' counted its lines from
    the round's header: the line named was not the file's. A note in the first round and one in the
    last each name their own line."""
    from click.testing import CliRunner

    from sncheck.cli.main import main

    lines = _monitor_watch(3).splitlines()
    second = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("TIMESTAMP")][1]
    lines.insert(second - 1, "a note in round one")
    text = "# source: x\n```\n" + "\n".join(lines) + "\nthe last round's note\n```\n"
    p = tmp_path / "watch.txt"
    p.write_text(text, encoding="utf-8")
    r = CliRunner().invoke(main, ["parse", "amd-smi-monitor", str(p)])
    assert r.exit_code == 1, r.output
    numbers = text.splitlines()
    one, last = numbers.index("a note in round one") + 1, numbers.index("the last round's note") + 1
    assert f"round 1: not read: 1 line after the end (the first: 'a note in round one', line {one}): " in r.output, \
        r.output
    assert f"{p}: not read: 1 line after the end (the first: \"the last round's note\", line {last}): " in r.output, \
        r.output
