"""The formats people have (issue 21 item 2) and listings that cannot be true (issue 18 item 4),
through `sncheck parse`, built from real captures under fixtures/real/ with one thing changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.vendors.delivery import clean as clean_text
from sncheck.vendors.parsers import parse_text, strip_source_header

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
NCCL = REAL / "nccl-tests/all_reduce_perf/01_h100_16ranks_2nodes_float_newcols.txt"
Q8 = REAL / "nvidia-smi-q/03_535.161.08_8xH100_full_hw_slowdown_power_brake_active.txt"


def body(path: Path) -> str:
    return strip_source_header(path.read_text(encoding="utf-8"))


def parse(tmp_path: Path, tool: str, text: str, name: str = "capture.txt"):
    f = tmp_path / name
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text, encoding="utf-8")
    r = CliRunner().invoke(main, ["parse", tool, str(f), "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, (json.loads(r.stdout) if r.stdout.strip().startswith("{") else None), r.stderr


# -- one cleaning step -----------------------------------------------------------------

def test_escape_codes_and_carriage_returns_are_gone_before_any_parser() -> None:
    assert clean_text("\x1b[4m\x1b[1mGPU0\x1b[0m\tX\r\nnext\rover\x1b]0;title\x07") == "GPU0\tX\nnext\nover"
    text = body(NCCL)
    coloured = "\r\n".join("\x1b[32m" + ln + "\x1b[0m" for ln in text.splitlines()) + "\r\n"
    assert parse_text("nccl-tests", coloured) == parse_text("nccl-tests", text)


# -- nccl-tests ------------------------------------------------------------------------

def _with_row(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("cells, why", [
    ("   -1    123.5    0.00    0.00      0", "#wrong -1"),
    ("   x7    123.5    0.00    0.00      0", "#wrong x7"),
    ("    0    123.5     nan     nan      0", "nan busbw"),
    ("    0    123.5    0.00  -318.5      0", "negative busbw"),
])
def test_impossible_cells_exit_1_and_are_not_dropped(tmp_path: Path, cells: str, why: str) -> None:
    row = "           8             2     float     sum      -1    135.8    0.00    0.00      0    123.5    0.00    0.00      0"
    bad = row.replace("      0    123.5    0.00    0.00      0", cells, 1)
    assert bad != row, why
    code, doc, err = parse(tmp_path, "nccl-tests", _with_row(body(NCCL), row, bad))
    assert code == 1, (why, err)
    clean, _, _ = parse(tmp_path, "nccl-tests", body(NCCL))
    assert clean == 0


def test_collective_from_the_log_before_the_path(tmp_path: Path) -> None:
    text = body(NCCL) + "# Collective test concluded: broadcast_perf\n"
    _, doc, _ = parse(tmp_path, "nccl-tests", text, name="nccl_tests_reduce_scatter_perf.log")
    assert doc["collective"] == "broadcast"
    cmd = "$ mpirun -np 16 /opt/nccl-tests/build/alltoall_perf -b 8 -e 8G\n" + body(NCCL)
    _, doc, _ = parse(tmp_path, "nccl-tests", cmd, name="tests_broadcast_perf.log")
    assert doc["collective"] == "alltoall"
    _, doc, _ = parse(tmp_path, "nccl-tests", body(NCCL), name="logs/tests_broadcast_perf.log")
    assert doc["collective"] == "broadcast"  # the path, last, and never "tests_broadcast"


def test_a_log_cut_before_the_table_keeps_ranks_and_collective(tmp_path: Path) -> None:
    text = body(NCCL)
    head = "# Collective test starting: all_gather_perf\n" + text[: text.index("#       size")]
    code, doc, err = parse(tmp_path, "nccl-tests", head)
    assert code == 1 and doc["ranks"] == 16 and doc["collective"] == "all_gather" and doc["rows"] == []
    assert "before the results table" in err


def _nccl_json(rows: list, footer: bool = True) -> str:
    doc = {"start_time": "2026-01-01 00:00:00", "args": ["/opt/nccl-tests/build/all_reduce_perf", "-J", "r.json"],
           "env": [], "nccl_version": 22703,
           "config": {"nthreads": 1, "ngpus": 1, "devices": [{"rank": i} for i in range(8)]},
           "results": rows}
    if footer:
        doc.update({"out_of_bounds": {"count": 0, "okay": "true"},
                    "average_bus_bandwidith": {"bandwidith": 101.5, "okay": "unchecked"},
                    "errors": [], "end_time": "2026-01-01 00:00:09"})
    return json.dumps(doc, indent=1)


def _json_row(size: int, nwrong, busbw=12.5) -> dict:
    half = {"time": 10.0, "alg_bw": 6.0, "bus_bw": busbw, "nwrong": nwrong, "side_comp_bw": None,
            "estimated_time": None}
    return {"size": size, "count": size // 4, "type": "float", "redop": "sum", "root": "    -1",
            "out_of_place": half, "in_place": dict(half), "actual_iterations": 20, "experiment_name": ""}


def test_nccl_tests_json_output(tmp_path: Path) -> None:
    code, doc, _ = parse(tmp_path, "nccl-tests", _nccl_json([_json_row(8, 0.0), _json_row(1024, 0.0)]))
    assert code == 0 and doc["format"] == "json" and doc["collective"] == "all_reduce" and doc["ranks"] == 8
    assert [r["size_bytes"] for r in doc["rows"]] == [8, 1024] and doc["avg_busbw_GBps"] == 101.5
    assert parse(tmp_path, "nccl-tests", _nccl_json([_json_row(8, 3.0)]))[0] == 1          # wrong elements
    assert parse(tmp_path, "nccl-tests", _nccl_json([_json_row(8, -1.0)]))[0] == 1         # not a count
    assert parse(tmp_path, "nccl-tests", _nccl_json([_json_row(8, 0.0, "nan")]))[0] == 1    # NaN busbw
    assert parse(tmp_path, "nccl-tests", _nccl_json([_json_row(8, 0.0)], footer=False))[0] == 1
    whole = _nccl_json([_json_row(8, 0.0)])
    assert parse(tmp_path, "nccl-tests", whole[: len(whole) // 2])[0] == 1


def test_rccl_tests_json_lines(tmp_path: Path) -> None:
    lines = [{"numCycle": 0, "name": "AllReduce", "size": s, "type": "float", "redop": "sum", "inPlace": ip,
              "time": 20.0, "algBw": 1.0, "busBw": 2.0, "wrong": 0, "ranks": 16} for s in (8, 16) for ip in (0, 1)]
    text = "\n".join(json.dumps(x) for x in lines) + "\n"
    code, doc, _ = parse(tmp_path, "rccl-tests", text)
    assert code == 0 and doc["ranks"] == 16 and doc["collective"] == "all_reduce" and len(doc["rows"]) == 2
    lines[3]["wrong"] = "x7"
    assert parse(tmp_path, "rccl-tests", "\n".join(json.dumps(x) for x in lines) + "\n")[0] == 1
    assert parse(tmp_path, "rccl-tests", text[:-20])[0] == 1  # the last record cut mid-way


# -- dcgmi diag -----------------------------------------------------------------------

DCGM4 = REAL / "r3/dcgmi-diag/04_dcgm4.0.0_r3_4gpu_25b6_all_pass_user_guide.txt"


def test_dcgm4_per_gpu_failure_names_the_gpu(tmp_path: Path) -> None:
    text = body(DCGM4)
    bad = text.replace("| memory                    | Pass  ", "| memory                    | Fail  ", 1)
    lines = bad.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.startswith("| memory "))
    lines[i + 3] = lines[i + 3].replace("GPU2: Pass", "GPU2: Fail")
    lines.insert(i + 5, "| Warning: GPU2             | Thermal violations totaling 13.3 seconds       |")
    code, doc, _ = parse(tmp_path, "dcgmi-diag", "\n".join(lines) + "\n")
    memory = next(t for t in doc["tests"] if t["name"] == "memory")
    assert code == 1 and memory["result"] == "Fail"
    assert [g for g in memory["gpus"] if g["result"] == "Fail"] == [{"gpu": 2, "result": "Fail"}]
    assert {"gpu": 2, "result": "Fail"} in doc["gpus"] and {"gpu": 0, "result": "Pass"} in doc["gpus"]
    assert any("GPU 2" in w for w in memory["warnings"])


def test_dcgm_all_hardware_tests_skipped_is_not_a_pass(tmp_path: Path) -> None:
    f = REAL / "r3/dcgmi-diag/03_dcgm3.3.9_r3_2x_rtxpro6000_all_hw_tests_skip_printed_twice.txt"
    code, doc, _ = parse(tmp_path, "dcgmi-diag", body(f))
    assert doc["result"] == "Skip" and doc["result"] != "Pass" and "PCIe" in doc["not_measured"]
    assert len(doc["tests"]) == 15  # the table printed twice is one run
    assert code == 0  # nothing failed; the host-fact check says "not measured"


def test_dcgm_table_cut_before_its_border_exits_1(tmp_path: Path) -> None:
    text = body(DCGM4).rstrip("\n")
    cut = text[: text.rindex("\n")] + "\n"  # the closing border gone
    assert parse(tmp_path, "dcgmi-diag", cut)[0] == 1
    assert parse(tmp_path, "dcgmi-diag", text + "\n")[0] == 0


# -- nvidia-smi -q ------------------------------------------------------------------------

def _sections(text: str) -> tuple[str, list[str]]:
    head, *gpus = text.split("\nGPU 0000")
    return head, ["GPU 0000" + g for g in gpus]


def test_q_with_every_section_twice_exits_1(tmp_path: Path) -> None:
    head, gpus = _sections(body(Q8))
    # whole, its only failure the HW Slowdown and Power Brake it shows (a run's clock_reasons fact too)
    code, _, err = parse(tmp_path, "nvidia-smi-q", body(Q8))
    assert len(gpus) == 8 and code == 1 and "clock event reasons" in err and "listed twice" not in err
    twice = head + "\n" + "\n".join(g.rstrip("\n") for g in gpus + gpus) + "\n"
    code, doc, err = parse(tmp_path, "nvidia-smi-q", twice)
    assert code == 1 and "16 GPU sections for 8 attached" in err and "listed twice" in err


def test_q_with_far_more_sections_than_attached_exits_1(tmp_path: Path) -> None:
    head, gpus = _sections(body(Q8))
    many = head + "\n" + "\n".join(gpus[0].replace("19:00.0", f"{i % 256:02X}:{i // 256 % 32:02X}.0", 1).rstrip("\n")
                                   for i in range(300)) + "\n"
    code, _, err = parse(tmp_path, "nvidia-smi-q", many)
    assert code == 1 and "300 GPU sections for 8 attached" in err


def test_q_cut_mid_listing_is_cut_short_not_na(tmp_path: Path) -> None:
    text = body(Q8)
    head, gpus = _sections(text)
    last = gpus[-1]
    cut = text[: text.index(last) + last.index("    ECC Errors")]
    code, doc, err = parse(tmp_path, "nvidia-smi-q", cut)
    assert code == 1 and "cut short" in err


def test_q_pcie_below_max_is_flagged_and_the_width_judged_as_in_q(tmp_path: Path) -> None:
    # -q -x is judged by -q's checks (one judgement): a link narrower than its max width is a
    # fault there as in -q; the generation below max is recorded only (idle GPUs downshift)
    f = REAL / "r3/nvidia-smi-qx/02_qx_515.105.01_a10g_1gpu_remapped_rows_block.xml.txt"
    code, doc, _ = parse(tmp_path, "nvidia-smi-qx", body(f))
    assert code == 1 and "width x8 of x16" in doc["gpus"][0]["pcie"]["below_max"]
    assert doc["faults"] == ["PCIe link width: 0/1 GPUs fine; GPU 00000000:00:1E.0: PCIe x8 of x16"]
    f = REAL / "r3/nvidia-smi-q/02_590.48.01_h200_mig_enabled_idle.txt"
    _, doc, _ = parse(tmp_path, "nvidia-smi-q", body(f))
    gpu = doc["gpus"][0]
    assert gpu["mig"] == {"current": "Enabled", "pending": "Enabled", "devices": 5}
    assert gpu["temperature"]["gpu_C"] == 28 and gpu["power"]["draw_W"] == 78.28 and gpu["power"]["limit_W"] == 700.0
