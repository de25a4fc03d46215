"""nccl-tests / rccl-tests parser, checked against real captured logs in fixtures/real/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from parser_checks import only_parse_error_or_json
from hypothesis import given, settings
from hypothesis import strategies as st

from sncheck.errors import ConfigError, ParseError
from sncheck.vendors.nccltests.parse import normalize_collective, parse_nccl_tests, parse_rccl_tests
from sncheck.vendors.parsers import parsers, get_parser, strip_source_header

REAL = Path(__file__).parent.parent / "fixtures" / "real"

AR_H100 = "nccl-tests/all_reduce_perf/01_h100_16ranks_2nodes_float_newcols.txt"
AR_A100_OLD = "nccl-tests/all_reduce_perf/02_a100_8gpu_1proc_oldcols_error_NA_interleaved_info.txt"
AR_SRUN = "nccl-tests/all_reduce_perf/03_p5_2nodes_srun_label_prefix_8B_16G.txt"
AR_NCCL1 = (
    "nccl-tests/all_reduce_perf/05_nccl1_p100_8gpu_very_old_cols_NCCL_failure.txt"
)
AR_TAGGED = "nccl-tests/all_reduce_perf/08_p5_2nodes_eks_tag_output_indented_elided.txt"
AG_A100 = "nccl-tests/all_gather_perf/01_a100_8gpu_oldcols_no_redop_validation0.txt"
AG_B200 = "nccl-tests/all_gather_perf/02_b200_16ranks_2nodes_gib_nccl_version_line.txt"
AG_STRIPPED = "nccl-tests/all_gather_perf/03_gcp_a3mega_c0_validation0_NA_hash_stripped_indented.txt"
A2A_A100 = "nccl-tests/alltoall_perf/01_a100_8gpu_oldcols_blank_redop_validation0.txt"
A2A_5090 = "nccl-tests/alltoall_perf/02_rtx5090_1gpu_single_size_inplace_NA.txt"
RS_A100 = "nccl-tests/reduce_scatter_perf/01_a100_8gpu_oldcols_validation0.txt"
SR_1080 = (
    "nccl-tests/sendrecv_perf/01_gtx1080_2gpu_uint8_oldcols_nonzero_error_fragment.txt"
)
RCCL_MI300X = "rccl-tests/01_all_reduce_mi300x_16ranks_2nodes_rccl_version_block.txt"
RCCL_MI210 = "rccl-tests/03_mi210_4gpu_internal_error_no_table.txt"
NVL72_RACK = "nvl72/02_nccl_allreduce_gb200_nvl72_single_rack_coreweave.txt"
NVL72_MULTI = "nvl72/03_nccl_allreduce_gb200_2rack_20rack_coreweave.txt"

HALF_KEYS = {"time_us", "algbw_GBps", "busbw_GBps", "wrong", "max_error"}
ROW_KEYS = {"size_bytes", "count", "type", "redop", "root", "out_of_place", "in_place"}

# file -> (row count, ranks, avg busbw, out of bounds, has errors)
SUMMARY = {
    AR_H100: (31, 16, 70.742, 0, False),
    AR_A100_OLD: (34, 8, 68.4048, 0, False),
    AR_SRUN: (32, None, None, None, True),
    AR_NCCL1: (0, 8, None, None, True),
    AR_TAGGED: (7, None, 52.9753, 0, False),
    AG_A100: (34, 8, 58.2651, 0, False),
    AG_B200: (24, 16, 59.3638, 0, False),
    AG_STRIPPED: (11, None, 146.948, 0, False),
    A2A_A100: (34, 8, 58.6481, 0, False),
    A2A_5090: (1, 1, 0.0, 0, False),
    RS_A100: (34, 8, 60.168, 0, False),
    SR_1080: (1, None, None, None, True),
    RCCL_MI300X: (32, 16, 92.3318, 0, False),
    RCCL_MI210: (0, 4, None, None, True),
    NVL72_RACK: (5, 72, 745.53, 0, False),
    NVL72_MULTI: (6, 144, 688.487, 0, True),
}


def load(rel: str) -> str:
    return strip_source_header((REAL / rel).read_text())


def parse(rel: str, collective: str | None = None) -> dict:
    return parse_nccl_tests(load(rel), collective)


def half(time_us, algbw, busbw, wrong=None, max_error=None) -> dict:
    return {
        "time_us": time_us,
        "algbw_GBps": algbw,
        "busbw_GBps": busbw,
        "wrong": wrong,
        "max_error": max_error,
    }


# --------------------------------------------------------------------------- every fixture


def test_every_real_nccl_and_rccl_log_has_a_summary_here():
    on_disk = {
        str(p.relative_to(REAL))
        for d in ("nccl-tests", "rccl-tests")
        for p in (REAL / d).rglob("*.txt")
    }
    assert on_disk == {k for k in SUMMARY if not k.startswith("nvl72/")}


@pytest.mark.parametrize("rel", sorted(SUMMARY))
def test_summary_of_each_real_log(rel):
    rows, ranks, avg, oob, has_errors = SUMMARY[rel]
    result = parse(rel)
    assert len(result["rows"]) == rows
    assert result["ranks"] == ranks
    assert result["avg_busbw_GBps"] == avg
    assert result["out_of_bounds"] == oob
    assert bool(result["errors"]) is has_errors, result["errors"]


@pytest.mark.parametrize("rel", sorted(SUMMARY))
def test_each_result_has_the_contract_shape_and_is_strict_json(rel):
    result = parse(rel)
    assert set(result) == {
        "tool",
        "version",
        "nccl_version",
        "nccl_release",  # NCCL's own 'NCCL version X+cudaY' banner, null when the log has none
        "library",  # rccl-tests' RCCL/HIP/ROCm version block, null when the log has none
        "collective",
        "ranks",
        "config",
        "devices",
        "rows",
        "avg_busbw_GBps",
        "out_of_bounds",
        "errors",
    }
    assert result["tool"] == "nccl-tests"
    for row in result["rows"]:
        assert set(row) == ROW_KEYS
        assert (
            set(row["out_of_place"]) == HALF_KEYS and set(row["in_place"]) == HALF_KEYS
        )
    json.dumps(result, allow_nan=False)


@pytest.mark.parametrize("rel", sorted(SUMMARY))
def test_sizes_never_go_down_within_a_run(rel):
    sizes = [r["size_bytes"] for r in parse(rel)["rows"]]
    assert sizes == sorted(sizes)


# --------------------------------------------------------------------------- layouts


def test_newer_layout_matches_the_design_contract_example():
    result = parse(AR_H100, collective="all_reduce_perf")
    assert result["collective"] == "all_reduce"
    assert result["rows"][0] == {
        "size_bytes": 8,
        "count": 2,
        "type": "float",
        "redop": "sum",
        "root": -1,
        "out_of_place": half(135.8, 0.0, 0.0, wrong=0),
        "in_place": half(123.5, 0.0, 0.0, wrong=0),
    }
    last = result["rows"][-1]
    assert (last["size_bytes"], last["count"]) == (8589934592, 2147483648)
    assert last["out_of_place"] == half(47535.0, 180.71, 338.82, wrong=0)
    assert last["in_place"] == half(47743.0, 179.92, 337.35, wrong=0)
    assert all(
        r["out_of_place"]["wrong"] == 0 and r["in_place"]["wrong"] == 0
        for r in result["rows"]
    )


def test_old_layout_error_column_na_gives_null_wrong_and_max_error():
    result = parse(AR_A100_OLD)
    row = result["rows"][
        2
    ]  # "4  1  float  sum  34.73 ..." follows the interleaved NCCL INFO line
    assert row == {
        "size_bytes": 4,
        "count": 1,
        "type": "float",
        "redop": "sum",
        "root": None,
        "out_of_place": half(34.73, 0.0, 0.0),
        "in_place": half(35.30, 0.0, 0.0),
    }
    big = result["rows"][-1]
    assert (
        big["out_of_place"]["busbw_GBps"] == 235.26
        and big["in_place"]["busbw_GBps"] == 235.03
    )
    assert all(
        r["in_place"]["wrong"] is None and r["in_place"]["max_error"] is None
        for r in result["rows"]
    )


def test_old_error_column_values_go_into_max_error():
    result = parse(SR_1080, collective="sendrecv")
    (row,) = result["rows"]
    assert row["type"] == "uint8" and row["redop"] is None and row["root"] is None
    assert row["size_bytes"] == row["count"] == 37748744
    assert row["out_of_place"] == half(11732.0, 3.22, 3.22, wrong=None, max_error=0.0)
    assert row["in_place"] == half(11698.0, 3.23, 3.23, wrong=None, max_error=300.0)
    assert any("truncated" in e for e in result["errors"])


def test_all_gather_old_layout_without_redop_column():
    result = parse(AG_A100)
    assert [r["size_bytes"] for r in result["rows"][:6]] == [0, 0, 0, 0, 0, 32]
    row = next(r for r in result["rows"] if r["size_bytes"] == 4294967296)
    assert row["count"] == 134217728 and row["redop"] is None and row["root"] is None
    assert row["out_of_place"] == half(17016.0, 252.40, 220.85)
    assert row["in_place"] == half(16474.0, 260.71, 228.12)


def test_blank_redop_cell_is_null_not_shifted():
    result = parse(A2A_A100, collective="alltoall")
    first = result["rows"][0]
    assert first["redop"] is None and first["root"] is None
    assert first["out_of_place"] == half(1.63, 0.0, 0.0) and first["in_place"] == half(
        1.38, 0.0, 0.0
    )
    row = next(r for r in result["rows"] if r["size_bytes"] == 536870912)
    assert (
        row["out_of_place"]["time_us"] == 2236.6
        and row["in_place"]["busbw_GBps"] == 213.78
    )


def test_redop_none_and_nccl_version_line_between_devices_and_table():
    result = parse(AG_B200)
    assert result["nccl_release"] == "2.26.6"  # NCCL's banner line, kept (the view skipped it before harvest7)
    assert {r["redop"] for r in result["rows"]} == {"none"}
    assert {r["root"] for r in result["rows"]} == {-1}
    assert result["rows"][0]["size_bytes"] == 1024
    assert result["rows"][-1]["out_of_place"] == half(30970.0, 277.36, 260.03, wrong=0)


def test_hash_stripped_and_indented_doc_copy_with_wrong_na():
    result = parse(AG_STRIPPED)
    assert result["errors"] == []
    first = result["rows"][0]
    assert (
        first["size_bytes"] == 8388608
        and first["redop"] == "none"
        and first["root"] == -1
    )
    assert first["out_of_place"] == half(166.6, 50.34, 47.19, wrong=None)
    assert all(
        r["out_of_place"]["wrong"] is None and r["in_place"]["wrong"] is None
        for r in result["rows"]
    )


def test_single_size_alltoall_with_in_place_na():
    (row,) = parse(A2A_5090)["rows"]
    assert row["out_of_place"] == half(19.56, 1715.44, 0.0, wrong=0)
    assert row["in_place"] == half(0.78, 43046.10, 0.0, wrong=None)


def test_reduce_scatter_old_layout_with_redop_but_no_root():
    result = parse(RS_A100)
    assert {r["redop"] for r in result["rows"]} == {"sum"} and {
        r["root"] for r in result["rows"]
    } == {None}
    row = next(r for r in result["rows"] if r["size_bytes"] == 16777216)
    assert row["out_of_place"] == half(152.4, 110.11, 96.34) and row[
        "in_place"
    ] == half(152.8, 109.82, 96.09)


# --------------------------------------------------------------------------- launchers and edits


def test_srun_label_prefix_without_header_or_footer():
    result = parse(AR_SRUN)
    assert result["ranks"] is None
    assert [r["size_bytes"] for r in result["rows"]][:3] == [8, 16, 32]
    assert result["rows"][-1]["size_bytes"] == 17179869184
    assert result["rows"][-1]["out_of_place"] == half(66132.0, 259.78, 487.09, wrong=0)
    assert result["errors"] == [
        "truncated run: the table ends without the '# Out of bounds values' / '# Avg bus bandwidth' footer"
    ]


def test_mpirun_tag_output_prefix_with_markdown_indent_and_elided_rows():
    result = parse(AR_TAGGED)
    assert [r["size_bytes"] for r in result["rows"]] == [
        0,
        67108864,
        134217728,
        268435456,
        536870912,
        1073741824,
        2147483648,
    ]
    assert result["rows"][0]["out_of_place"] == half(15.51, 0.0, 0.0, wrong=0)
    assert result["rows"][-1]["in_place"] == half(9195.2, 233.54, 437.89, wrong=0)
    assert result["errors"] == []


def test_rank_count_uses_the_highest_rank_when_the_list_is_elided():
    assert (
        parse(NVL72_RACK)["ranks"] == 72
    )  # only "#  Rank 71 ..." survives in the README
    row = parse(NVL72_RACK)["rows"][3]
    assert (
        row["size_bytes"] == 4294967296 and row["out_of_place"]["busbw_GBps"] == 839.16
    )


def test_a_second_run_in_the_same_log_is_reported_not_merged():
    result = parse(NVL72_MULTI)
    assert (
        result["rows"][-1]["out_of_place"]["busbw_GBps"] == 810.41
    )  # 2-rack table only
    assert result["avg_busbw_GBps"] == 688.487 and result["ranks"] == 144
    [said] = result["errors"]  # the one home's wording (sncheck.vendors.after_end.two_runs)
    assert said.startswith("two runs in one file: the log holds more than one run (the second begins at ") \
        and said.endswith("only the first was read (split the file)"), said


# --------------------------------------------------------------------------- failures


def test_nccl_1_layout_that_aborts_before_any_row():
    result = parse(AR_NCCL1)
    assert result["rows"] == []
    assert result["ranks"] == 8
    assert result["errors"] == ["NCCL failure all_reduce.cu:95 'unhandled cuda error'"]


def test_rccl_failure_before_the_table_keeps_the_error_lines():
    result = parse_rccl_tests(load(RCCL_MI210))
    assert result["tool"] == "rccl-tests"
    assert result["rows"] == [] and result["avg_busbw_GBps"] is None
    assert result["ranks"] == 4
    assert result["errors"] == [
        (
            "sharbox-ultra: Test NCCL failure common.cu:1285 'internal error - please report this issue "
            "to the NCCL developers'"
        ),
        ".. sharbox-ultra pid 117738: Test failure common.cu:1161",
    ]


def test_rccl_version_block_and_asterisk_footer_are_not_rows_or_errors():
    result = parse_rccl_tests(load(RCCL_MI300X), collective="all_reduce_perf")
    assert result["tool"] == "rccl-tests" and result["collective"] == "all_reduce"
    assert result["errors"] == []
    assert result["rows"][-1]["out_of_place"] == half(90115.0, 190.64, 357.46, wrong=0)
    assert (
        result["rows"][7]["out_of_place"]["busbw_GBps"] == 0.01
    )  # 1024 B: algbw 0.00, busbw 0.01


def test_a_run_cut_mid_row_keeps_the_half_that_was_printed():
    lines = load(AR_H100).splitlines()
    footer = next(i for i, ln in enumerate(lines) if "Out of bounds" in ln)
    last_line = lines[footer - 1]
    printed = last_line[: last_line.index("338.82      0") + len("338.82      0")]
    cut = "\n".join(lines[: footer - 1] + [printed])
    result = parse_nccl_tests(cut)
    last = result["rows"][-1]
    assert last["size_bytes"] == 8589934592
    assert last["out_of_place"] == half(47535.0, 180.71, 338.82, wrong=0)
    assert last["in_place"] == half(None, None, None)
    assert len(result["rows"]) == 31 and result["avg_busbw_GBps"] is None
    assert any("truncated" in e for e in result["errors"])


def test_a_segfault_after_some_rows_is_an_error_and_the_rows_stay():
    text = (
        "\n".join(load(AR_SRUN).splitlines()[:10])
        + "\n[node1:1234] *** Process received signal ***\n"
    )
    text += "[node1:1234] Signal: Segmentation fault (11)\n"
    result = parse_nccl_tests(text)
    assert len(result["rows"]) == 8
    assert result["errors"] == ["[node1:1234] Signal: Segmentation fault (11)"]


def test_failed_out_of_bounds_footer_is_an_error():
    text = load(AR_H100).replace(
        "# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED"
    )
    result = parse_nccl_tests(text)
    assert result["out_of_bounds"] == 3
    assert result["errors"] == ["3 out-of-bounds values (wrong results) reported"]


# --------------------------------------------------------------------------- collective name


def test_collective_comes_from_the_header_of_newer_nccl_tests():
    text = "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807\n"
    text += "# Collective test starting: alltoall_perf\n" + load(A2A_5090)
    assert parse_nccl_tests(text, collective="all_reduce")["collective"] == "alltoall"


def test_the_version_line_of_a_2_20_build_with_its_git_hash_keeps_the_library_code():
    """2.20 prints the build's git hash after the version; the NCCL code after it was lost."""
    line = "# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102\n"
    result = parse_nccl_tests(line + "# Collective test starting: alltoall_perf\n" + load(A2A_5090))
    assert (result["version"], result["nccl_version"]) == ("2.20.0", 23102)
    older = parse_nccl_tests(line.replace(" (b4d5bee)", "") + load(A2A_5090))
    assert (older["version"], older["nccl_version"]) == ("2.20.0", 23102)


def test_collective_is_inferred_from_a_binary_name_in_the_log():
    text = (
        "+ mpirun -np 16 /opt/nccl-tests/build/reduce_scatter_perf -b 8 -e 8G\n"
        + load(RS_A100)
    )
    assert parse_nccl_tests(text)["collective"] == "reduce_scatter"


def test_collective_is_null_when_nothing_names_it():
    assert parse(AR_H100)["collective"] is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("all_reduce_perf", "all_reduce"),
        ("/opt/build/alltoall_perf_mpi", "alltoall"),
        ("sendrecv", "sendrecv"),
    ],
)
def test_normalize_collective(name, expected):
    assert normalize_collective(name) == expected


# --------------------------------------------------------------------------- garbage


@pytest.mark.parametrize(
    "text",
    ["", "hello world\n", "# just a comment\n#\n", "NCCL INFO Bootstrap : Using eth0"],
)
def test_text_without_table_or_error_raises_parse_error(text):
    with pytest.raises(ParseError):
        parse_nccl_tests(text)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_random_text_only_ever_raises_parse_error(text):
    only_parse_error_or_json(parse_nccl_tests, text)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(load(AR_H100).splitlines() + load(AR_A100_OLD).splitlines()),
        max_size=40,
    ),
    st.integers(min_value=0, max_value=80),
)
def test_shuffled_and_cut_real_lines_only_ever_raise_parse_error(lines, cut):
    only_parse_error_or_json(parse_nccl_tests, "\n".join(line[: cut or None] for line in lines))


# --------------------------------------------------------------------------- registry


def test_registry_names_the_contract_tools():
    assert {
        "nccl-tests",
        "rccl-tests",
        "nvidia-smi-topo",
        "nvidia-smi-q",
        "nvlink-status",
        "nvlink-errors",
        "nvidia-smi-query-gpu",
        "ibstat",
        "dcgmi-diag",
    } <= set(parsers())
    assert get_parser("nccl-tests") is parse_nccl_tests


def test_unknown_tool_is_a_config_error_listing_valid_names():
    with pytest.raises(ConfigError) as info:
        get_parser("nccl-test")
    assert "nccl-tests" in str(info.value) and "dcgmi-diag" in str(info.value)


def test_strip_source_header_removes_only_the_leading_provenance_lines():
    raw = (REAL / AR_H100).read_text()
    stripped = strip_source_header(raw)
    assert raw.startswith("# source:") and stripped.startswith("# nThread 1 nGpus 1")
    assert raw.endswith(stripped)
    assert (
        strip_source_header("# nThread 1\n# source: later\n")
        == "# nThread 1\n# source: later\n"
    )
    raw_nvl = (REAL / NVL72_RACK).read_text()
    assert strip_source_header(raw_nvl).startswith(
        "#  Rank 71 Group"
    )  # "# context:" lines go too
