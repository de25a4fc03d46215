"""Issue 28's parse leftovers of stop 42 (note-stop42 "Next" 3 and its final read's "Left"): each
test failed on main before its fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
_QUERY_GPU = REAL / ("harvest11/nvidia-smi-query-gpu/01_query_gpu_csv_555.42.02_2x_a100_pcie_vbios_92.00.25.00.08_"
                     "temp_39_37_mem_40960_free_40447_app_clocks_765_1215_8space_indent_hpe-japan-e-learning.txt")


def _parse(tmp_path: Path, view: str, text: str, *extra: str, name: str = "log.txt"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p, CliRunner().invoke(main, ["parse", view, str(p), *extra])


def test_a_pasted_nvidia_smi_command_behind_a_bracketed_or_conda_prompt_is_its_command(tmp_path: Path) -> None:
    """smi_select kept its own prompt form (``\\S*[#$>]``), not delivery.PS1 (as mlxlink did until
    2e88275): behind RHEL's ``[root@h ~]#`` or a conda ``(base) user@h:~$`` prompt the pasted
    ``nvidia-smi --query-gpu`` line read as a data row (an error, exit 1, and the header after it
    not taken as the header), and ``nvidia-smi -q -i 0`` selected nothing."""
    from sncheck.vendors.nvidia.smi_select import pasted_command, selected_gpus

    lines = _QUERY_GPU.read_text(encoding="utf-8").splitlines()[1:]
    command = lines[0].strip().removeprefix("# ")
    for prompt in ("[root@h ~]#", "(base) user@h:~$", "#", "$", "user@h:~$ sudo"):
        text = "\n".join([f"{prompt} {command}", *lines[1:]]) + "\n"
        p, r = _parse(tmp_path, "nvidia-smi-query-gpu", text)
        assert r.exit_code == 0, (prompt, r.output)
        assert [g["temperature.gpu"] for g in json.loads(r.stdout)["gpus"]] == [39, 37], prompt
        assert pasted_command(f"{prompt} nvidia-smi -q -i 0,1") and selected_gpus(f"{prompt} nvidia-smi -q -i 0,1") == 2
    assert not pasted_command("[root@h ~]# ibstat") and selected_gpus("[root@h ~]# nvidia-smi -i 0") is None


def test_a_refused_json_record_has_one_wording_and_the_reader_keeps_why_it_stopped() -> None:
    """nccl_json and nccl_inspector each wrote "not one JSON record" (two copies that had to agree),
    and nccl_inspector.unread told a refusal from a cut by finding that phrase in its own message.
    Now jsonprefix.refused words it for both, and json_stream says whether it refused (Tail.refused)."""
    from sncheck.vendors import jsonprefix
    from sncheck.vendors import nccl_inspector as inspector
    from sncheck.vendors.nccltests import nccl_json

    rec = '{"header": {"id": "0x1", "rank": 0}, "coll_perf": {"coll": "AllReduce", "coll_busbw_gbs": 1.0}}'
    twice = rec.replace('"coll_busbw_gbs": 1.0', '"coll_busbw_gbs": 1.0, "coll_busbw_gbs": 2.0')
    objects, tail = inspector.json_stream(f"{rec}\n{twice}\n")
    said = jsonprefix.refused("line 2", jsonprefix.KeyGivenTwice("coll_busbw_gbs"))
    assert len(objects) == 1 and tail == inspector.Tail(said, refused=True)
    assert inspector.unread(tail, 1) == f"{said} (after 1 records)"
    _, cut = inspector.json_stream(f"{rec}\n{rec[:30]}")
    assert not cut.refused and inspector.unread(cut, 1).startswith("cut short after 1 records (line 2: ")
    line = '{"numCycle": 0, "name": "AllReduce", "size": 8, "type": "float", "redop": "sum", "inPlace": 0, ' \
           '"time": 2.0, "algBw": 1.0, "busBw": 2.0, "busBw": 9.0, "wrong": 0}'
    lines = line.replace(', "busBw": 9.0', "") + "\n" + line.replace('"inPlace": 0', '"inPlace": 1') + "\n"
    errors = nccl_json.parse(nccl_json.load(lines), None, "rccl-tests")["errors"]
    assert jsonprefix.refused("line 2", jsonprefix.KeyGivenTwice("busBw")) in errors, errors


_DCGM4 = REAL / "r3/dcgmi-diag/01_dcgm4.4.2_r2_1gpu_580.105.08_all_pass_issue124.txt"
_DCGM3 = REAL / "dcgmi-diag/01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt"
_CUDA_MISSING = "The CUDA main library could not be found.Skipping remainder of tests."  # Software.cpp CHECK_LIBCUDA


def _warned_tables() -> dict[str, str]:
    """A software test at Warn as each layout prints it (Diag.cpp): 4.x the test's row 'Warn', its GPU's
    row 'Fail' (an entity's Warn shown without DDR_DISPLAY_WARN) and a Warning row; 3.x 'Warn - All'."""
    four = _DCGM4.read_text(encoding="utf-8").replace(
        "| software                  | Pass                                           |\n"
        "|                           | GPU0: Pass                                     |\n",
        "| software                  | Warn                                           |\n"
        "| Warning                   | The CUDA main library could not be found.Skipp |\n"
        "|                           | ing remainder of tests.                        |\n"
        "|                           | GPU0: Fail                                     |\n")
    three = re.sub(r"(\| PCIe\s+\| )Pass - All", r"\1Warn - All", _DCGM3.read_text(encoding="utf-8"))
    assert "Warn" in four and "Warn - All" in three
    return {"4.x": four, "3.x": three}


def test_a_dcgmi_test_at_warn_is_a_warning_naming_the_test_and_its_text(tmp_path: Path) -> None:
    """A test at Warn 'passed with warnings' (dcgm_structs.h DCGM_DIAG_RESULT_WARN): the dcgmi_diag fact
    passed it (ok, no finding), and 4.x's per-GPU 'Fail' row under the test's 'Warn' (Diag.cpp prints an
    entity's Warn so) made it a hardware Fail. Now a warning-level fact, never a pass, never a critical;
    `parse` exits 1 on it and names the test."""
    from sncheck.vendors.nvidia.dcgmi import parse_dcgmi_diag
    from sncheck.vendors.nvidia.gpu_checks import check_dcgmi

    for layout, text in _warned_tables().items():
        parsed = parse_dcgmi_diag(text)
        assert parsed["result"] == "Warn", (layout, parsed["result"])
        [row] = check_dcgmi("h1", parsed, None)
        assert not row["ok"] and row["status"] == "ok" and row.get("severity") == "warning", (layout, row)
        p, r = _parse(tmp_path, "dcgmi-diag", text)
        assert r.exit_code == 1, (layout, r.output)
        assert json.loads(r.stdout)["faults"] == [row["message"].removeprefix("h1: ")], r.stdout
    [row] = check_dcgmi("h1", parse_dcgmi_diag(_warned_tables()["4.x"]), None)
    assert row["message"] == f"h1: dcgmi diag: Warn: software at Warn ({_CUDA_MISSING})", row["message"]
    assert parse_dcgmi_diag(_warned_tables()["4.x"])["gpus"] == [{"gpu": 0, "result": "Warn"}]
    # a GPU row 'Fail' under a test row 'Fail' stays a Fail
    fail = _warned_tables()["4.x"].replace("| software                  | Warn", "| software                  | Fail")
    assert parse_dcgmi_diag(fail)["result"] == "Fail"


def test_a_run_judges_a_dcgmi_warn_at_warning_level_even_beside_an_allowed_skip(tmp_path: Path) -> None:
    """The run's side of the same fact: the host-fact-warning rule finds it (severity warning, on the
    host, naming the test), and no hardware rule does. A Warn beside a test dcgmi skipped: the skip's
    'not measured' row may be allowed by name (allow_skips), which must not take the Warn with it."""
    from test_kernel_counters import judge, topo

    from sncheck.health.invariants import _allowed
    from sncheck.health.rules import AllowedSkip
    from sncheck.vendors.nvidia.dcgmi import parse_dcgmi_diag
    from sncheck.vendors.nvidia.gpu_checks import check_dcgmi

    t = topo(tmp_path)
    parsed = parse_dcgmi_diag(_warned_tables()["4.x"])
    found = [(f.rule, str(f.severity), f.entity) for f in judge(check_dcgmi("n1", parsed, None), t)]
    assert found == [("host-fact-warning", "warning", "n1")], found
    parsed["tests"].append({"name": "Targeted Power", "category": "Stress", "result": "Skip", "gpus": [],
                            "warnings": [], "errors": [], "info": []})
    skip, warn = check_dcgmi("n1", parsed, None)
    allowance = AllowedSkip(tool="dcgmi", test="Targeted Power", why="no power capping on this SKU")
    assert skip["status"] == "not_measured" and _allowed(skip["tool"], skip.get("skipped"), (allowance,))
    assert warn["severity"] == "warning" and "software at Warn" in warn["message"]
    assert [f.rule for f in judge([skip, warn], t)] == ["host-fact-warning"]


def test_reports_stamped_before_a_clock_that_went_back_are_named_not_only_counted() -> None:
    """reviewops on H10-08 (b3d1ea8): the kernel_log fact said '5 reports are stamped before the last
    read's newest stamp ...' and named none of them; the operator had to reread the log to learn which.
    Now the first three are named as the view names a report, then how many more."""
    from sncheck.vendors import kernel_log

    line = "{t} NVRM: Xid (PCI:0000:3b:00): {code}, pid=2712, name=python3, Graphics Exception\n"
    codes = (13, 79, 48, 31, 94)
    text = "# now: {}\n".format(1796466600) + "".join(
        line.format(t=f"2026-12-05T10:0{i}:00,000000+00:00", code=c) for i, c in enumerate(codes))
    parsed = kernel_log.parse_kernel_log(text)
    assert parsed["now"] == 1796466600 and len(parsed["events"]) == 5, parsed
    [said] = kernel_log.since(parsed, "2026-12-08T10:00:00+00:00")["errors"]
    named = [kernel_log.describe(e) for e in parsed["events"]]
    assert said.startswith(f"5 reports ({named[0]}; {named[1]}; {named[2]}; and 2 more) are stamped before "
                           "the last read's newest stamp (2026-12-08T10:00:00+00:00)"), said
    [one] = kernel_log.since(kernel_log.parse_kernel_log(text.split("\n", 2)[0] + "\n" + text.split("\n")[1] + "\n"),
                             "2026-12-08T10:00:00+00:00")["errors"]
    assert one.startswith(f"1 report ({named[0]}) is stamped before"), one


_NCCL = REAL / "nccl-tests/all_reduce_perf/01_h100_16ranks_2nodes_float_newcols.txt"
_IBSTAT = REAL / "ib/04_ibstat_h100_roce_12CA_all_active_eth.txt"
_SMI = REAL / "harvest/nvidia-smi/02_nvidia-smi_550.90.07_8xh100_idle_no_processes_gpud.txt"


def _body(path: Path) -> str:
    from sncheck.vendors.parsers import strip_source_header

    return strip_source_header(path.read_text(encoding="utf-8")).rstrip("\n") + "\n"


def test_what_follows_an_output_s_end_is_read_as_a_second_run_or_said_not_read(tmp_path: Path) -> None:
    """Stop 42's open decision: text after an nccl-tests footer, after an ibstat listing or after an
    nvidia-smi table was dropped silently (exit 0). Now one home (sncheck.vendors.after_end): the tool
    begun again is 'two runs in one file' (only the first read), other text 'not read: N lines after
    the end', exit 1; a prompt the reporter pasted after the output, and what the job itself prints
    after nccl-tests' footer (NCCL's log lines), stay nothing."""
    stray = "stray note after the end\nand a second line\n"
    views = {"nccl-tests": (_body(_NCCL), "nThread 1 nGpus 1 minBytes 8", ("--collective", "all_reduce")),
             "ibstat": (_body(_IBSTAT), "[root@h ~]# ibstat", ()),
             "nvidia-smi": (_body(_SMI), "| NVIDIA-SMI 550.90.07", ())}
    for view, (whole, start, extra) in views.items():
        p, r = _parse(tmp_path, view, whole + "(base) user@h:~$\n", *extra)
        assert r.exit_code == 0, (view, r.output)
        count = {k: len(v) for k, v in json.loads(r.stdout).items() if k in ("rows", "cas", "gpus")}
        p, r = _parse(tmp_path, view, whole + stray, *extra)
        assert r.exit_code == 1, (view, r.output)
        at = (whole + stray).splitlines().index("stray note after the end") + 1  # (since notread2: its line)
        assert f"sncheck: {p}: not read: 2 lines after the end (the first: 'stray note after the end', line {at}): " \
            in r.output, (view, r.output)
        second = f"{start}\n" + whole.replace("mlx5_", "mlx5_9") if view == "ibstat" else whole  # another host's
        p, r = _parse(tmp_path, view, whole + second, *extra)
        assert r.exit_code == 1, (view, r.output)
        assert f"sncheck: {p}: two runs in one file: the log holds more than one run (the second begins at " \
               f"'{start}" in r.output, (view, r.output)
        assert {k: len(v) for k, v in json.loads(r.stdout).items() if k in count} == count, view  # the first only
    p, r = _parse(tmp_path, "ibstat", _body(_IBSTAT) + "Note: copied from node 7\n")  # ibstat.c: 'Link layer' ends a port
    at = len(_body(_IBSTAT).splitlines()) + 1
    assert r.exit_code == 1 and f"not read: 1 line after the end (the first: 'Note: copied from node 7', line {at})" \
        in r.output, r.output
    assert "note" not in json.loads(r.stdout)["cas"][-1]["ports"][-1], r.stdout
    nccl_job = _body(_NCCL) + "gpu-1:47507:47507 [0] NCCL INFO ENV/Plugin: Closing env plugin ncclEnvDefault\n"
    assert _parse(tmp_path, "nccl-tests", nccl_job, "--collective", "all_reduce")[1].exit_code == 0


def test_a_launched_job_s_stderr_is_no_text_after_its_end() -> None:
    """The SSH and Slurm backends parsed stdout + stderr: since text after nccl-tests' footer is 'not
    read' (exit 1), a clean run's stderr (ssh's known-hosts line, Open MPI's help aggregation) after
    the footer made the group's collectives an error. after_end.job_log reads stderr first: its failure
    lines still count, and stdout alone holds the end. UCX's log lines on stdout are the job's too."""
    from sncheck.vendors.after_end import job_log
    from sncheck.vendors.nccltests.parse import parse_nccl_tests

    out = _body(_NCCL)
    err = ("Warning: Permanently added 'node2' (ED25519) to the list of known hosts.\n"
           "[node1:01234] 3 more processes have sent help message help-mpi-btl-openib.txt / no device params found\n")
    assert parse_nccl_tests(out + "\n" + err, collective="all_reduce")["errors"], "the old order: not read"
    assert parse_nccl_tests(job_log(out, err), collective="all_reduce")["errors"] == []
    assert parse_nccl_tests(job_log(out, ""), collective="all_reduce")["errors"] == []
    crash = "srun: error: node2: task 1: Exited with exit code 1\n"
    assert any("srun: error" in e for e in parse_nccl_tests(job_log(out, crash), collective="all_reduce")["errors"])
    ucx = "[1733474410.2:0:1733] ib_iface.c:746 UCX  WARN  IB: ibv_create_cq() failed\n"
    assert parse_nccl_tests(out + ucx, collective="all_reduce")["errors"] == []


def test_a_launched_job_s_not_read_names_its_stdout_s_line() -> None:
    """A run's "not read: ..., line K" of a launched job counted the text the view was given,
    stderr's lines first (after_end.job_log): K was no line of the job's stdout file. Read through
    after_end.read_job (the SSH and Slurm backends), K is stdout's own line (parse28e)."""
    from sncheck.vendors.after_end import read_job
    from sncheck.vendors.nccltests.parse import parse_nccl_tests

    out = _body(_NCCL) + "a note someone appended\n"
    at = out.count("\n")
    err = "Warning: Permanently added 'node2' (ED25519) to the list of known hosts.\nsecond\nthird\n"
    alone = parse_nccl_tests(out, collective="all_reduce")["errors"]
    assert [e for e in alone if f", line {at})" in e], alone
    assert read_job(parse_nccl_tests, out, err, collective="all_reduce")["errors"] == alone
    assert read_job(parse_nccl_tests, out, err.rstrip("\n"), collective="all_reduce")["errors"] == alone
    assert read_job(parse_nccl_tests, out, "", collective="all_reduce")["errors"] == alone


def test_the_launcher_s_own_lines_after_the_footer_are_no_text_after_the_end(tmp_path: Path) -> None:
    """A pasted nccl-tests log (stdout and stderr together, as a reporter's terminal shows them) ends
    with what mpirun and the shell print when the job ends: Open MPI's help aggregation
    (orte/util/show_help.c; fixtures/real/harvest9's alltoall capture has them inside the table) and
    `time`'s lines. They are the launcher's, no note appended: the read stays whole, exit 0. An
    aggregated help topic that is an abort is the job's failure, exit 1."""
    chatter = ("[node1:01234] 7 more processes have sent help message help-mpi-btl-openib.txt / no device params found\n"
               "[node1:01234] Set MCA parameter \"orte_base_help_aggregate\" to 0 to see all help / error messages\n"
               "\nreal\t0m41.332s\nuser\t2m3.010s\nsys\t0m12.500s\n")
    p, r = _parse(tmp_path, "nccl-tests", _body(_NCCL) + chatter, "--collective", "all_reduce")
    assert r.exit_code == 0 and "not read" not in r.output, r.output
    abort = "[node1:01234] 1 more process has sent help message help-mpi-api.txt / mpi-abort\n"
    p, r = _parse(tmp_path, "nccl-tests", _body(_NCCL) + abort, "--collective", "all_reduce")
    assert r.exit_code == 1 and "mpi-abort" in r.output, r.output
    p, r = _parse(tmp_path, "nccl-tests", _body(_NCCL) + chatter + "a note after it\n", "--collective", "all_reduce")
    at = len((_body(_NCCL) + chatter).splitlines()) + 1
    assert r.exit_code == 1 and f"not read: 1 line after the end (the first: 'a note after it', line {at})" in r.output, \
        r.output


def test_a_prompt_alone_after_amd_smi_s_output_is_the_reporter_s() -> None:
    """amd-smi kept its own prompt test (a prompt followed by a blank: a command behind it), a twin of
    delivery's: a reporter's prompt alone after the output ('user@node7:~$', '[root@node7 ~]#', '$')
    was an 'unrecognised line' (text) or 'Extra data' (--json: a parse error). One test now,
    delivery.PROMPT_LINE: the prompt is the reporter's, as after every other view's output (parse28e)."""
    from sncheck.vendors.parsers import failures, parse_text

    for view, name in (("amd-smi", "09_amd-smi_metric_ecc_blocks_all_zero_incl_xgmi_wafl_changelog.txt"),
                       ("amd-smi-json", "03_amd-smi_static_json_jq_vram_fragment_mi300x_blog.txt")):
        text = (REAL / "amd" / name).read_text()
        plain = parse_text(view, text)
        for prompt in ("user@node7:~$", "[root@node7 ~]#", "$"):
            got = parse_text(view, text.rstrip("\n") + "\n" + prompt + "\n")
            assert (got, failures(got)) == (plain, failures(plain)), (view, prompt, failures(got))
