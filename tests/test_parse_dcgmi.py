"""dcgmi diag parser (table and JSON forms), checked against real captured output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from parser_checks import only_parse_error_or_json
from hypothesis import given, settings
from hypothesis import strategies as st

from sncheck.errors import ParseError
from sncheck.vendors.nvidia.dcgmi import parse_dcgmi_diag
from sncheck.vendors.parsers import strip_source_header

REAL = Path(__file__).parent.parent / "fixtures" / "real" / "dcgmi-diag"

ALL_PASS = "01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt"
DEPLOY_ERROR = "02_r3_fragment_deployment_error_row_remap_pending.txt"
MEMORY_FAIL = "03_r2_fragment_gpu_memory_fail_gpu0_thermal_warning.txt"
JSON_R3 = "04_r3_json_1gpu_pass_eud_skip.json.txt"

DEPLOYMENT_TESTS = [
    "Denylist",
    "NVML Library",
    "CUDA Main Library",
    "Permissions and OS Blocks",
    "Persistence Mode",
    "Environment Variables",
    "Page Retirement/Row Remap",
    "Graphics Processes",
    "Inforom",
]


def load(name: str) -> str:
    return strip_source_header((REAL / name).read_text())


def test_every_real_dcgmi_file_is_named_here():
    assert {p.name for p in REAL.glob("*.txt")} == {
        ALL_PASS,
        DEPLOY_ERROR,
        MEMORY_FAIL,
        JSON_R3,
    }


def test_table_all_pass_with_metadata_section():
    result = parse_dcgmi_diag(load(ALL_PASS))
    assert (result["format"], result["result"], result["errors"]) == (
        "table",
        "Pass",
        [],
    )
    assert result["metadata"] == {
        "DCGM Version": "3.3.3",
        "Driver Version Detected": "535.104.12",
        "GPU Device IDs Detected": "20b2,20b2,20b2,20b2,20b2,20b2,20b2,20b2",
    }
    names = [(t["category"], t["name"]) for t in result["tests"]]
    assert names == [("Deployment", n) for n in DEPLOYMENT_TESTS] + [
        ("Integration", "PCIe"),
        ("Hardware", "GPU Memory"),
    ]
    assert {t["result"] for t in result["tests"]} == {"Pass"}
    pcie = result["tests"][-2]
    assert pcie["all_gpus"] is True and pcie["gpus"] == []
    assert result["tests"][0]["all_gpus"] is False  # plain "Pass" names no GPUs


def test_table_deployment_error_row_is_rejoined_and_fails_the_run():
    result = parse_dcgmi_diag(load(DEPLOY_ERROR))
    assert result["tests"] == []
    assert result["errors"] == [
        "Deployment: GPU 3 has uncorrectable memory errors and row remappings are pending",
        "the table has no closing border: output cut short",  # the author kept the first rows only
    ]
    assert result["result"] == "Fail"


def test_table_fragment_per_gpu_results_and_wrapped_warning():
    result = parse_dcgmi_diag(load(MEMORY_FAIL))
    (test,) = result["tests"]
    assert (test["name"], test["result"], test["category"]) == (
        "GPU Memory",
        "Fail",
        None,
    )
    assert test["gpus"] == [{"gpu": 0, "result": "Fail"}] + [
        {"gpu": i, "result": "Pass"} for i in range(1, 8)
    ]
    warning = (
        "GPU 0 Thermal violations totaling 13.3 seconds started at 9.7 seconds into the test for GPU 0 "
        "Verify that the cooling on this machine is functional, including external, thermal material "
        "interface, fans, and any other components."
    )
    assert test["warnings"] == [warning]
    assert result["result"] == "Fail"
    assert result["errors"] == ["the table has no closing border: output cut short"]  # a fragment


def test_json_form_with_skip_and_info():
    result = parse_dcgmi_diag(load(JSON_R3))
    assert (result["format"], result["result"], result["errors"]) == (
        "json",
        "Pass",
        [],
    )
    by_name = {t["name"]: t for t in result["tests"]}
    assert list(by_name)[:9] == DEPLOYMENT_TESTS
    assert by_name["EUD Test"]["result"] == "Skip" and by_name["EUD Test"]["gpus"] == [
        {"gpu": 0, "result": "Skip"}
    ]
    assert by_name["Targeted Power"]["info"] == ["GPU 0 GPU 0 power average:\t70 W"]
    assert by_name["Memory Bandwidth"]["category"] == "Stress"
    assert by_name["GPU Memory"]["info"] == [
        "GPU 0 Allocated 15206918958 bytes (97.3%)"
    ]
    assert by_name["PCIe"]["gpus"] == [{"gpu": 0, "result": "Pass"}]
    assert (
        len(result["tests"]) == 16
    )  # 9 deployment, 1 integration, 3 hardware, 3 stress


def test_json_form_does_not_need_the_header_stripped():
    raw = (REAL / JSON_R3).read_text()
    assert raw.startswith("# source:")
    assert parse_dcgmi_diag(raw)["tests"] == parse_dcgmi_diag(load(JSON_R3))["tests"]


def test_json_failure_with_warning_objects_in_the_dcgm4_shape():
    # DCGM 4.x names the object "DCGM Diagnostic" and reports entity_group/entity_id per result.
    doc = {
        "DCGM Diagnostic": {
            "test_categories": [
                {
                    "category": "Hardware",
                    "tests": [
                        {
                            "name": "memory",
                            "results": [
                                {
                                    "entity_group": "GPU",
                                    "entity_id": 0,
                                    "status": "Pass",
                                },
                                {
                                    "entity_group": "GPU",
                                    "entity_id": 1,
                                    "status": "Fail",
                                    "warnings": [
                                        {
                                            "warning": "GPU 1 had uncorrectable memory errors",
                                            "error_id": 95,
                                        }
                                    ],
                                },
                            ],
                            "test_summary": {"status": "Fail"},
                        }
                    ],
                }
            ]
        },
        "metadata": {"version": "4.2.3"},
    }
    result = parse_dcgmi_diag(json.dumps(doc))
    (test,) = result["tests"]
    assert test["gpus"] == [{"gpu": 0, "result": "Pass"}, {"gpu": 1, "result": "Fail"}]
    assert test["warnings"] == ["GPU 1 had uncorrectable memory errors"]
    assert (test["result"], result["result"]) == ("Fail", "Fail")
    assert result["metadata"] == {"DCGM Version": "4.2.3"}


def test_a_cut_json_keeps_the_tests_it_printed_whole_and_fails():
    """A cut ``-j`` document (a paste, a killed job) keeps every test printed whole before the
    cut, says it is cut (exit 1) and makes no test of the one the cut went through. It was a
    ParseError that lost them all (DCGM issue 139's capture, fixtures/real/harvest)."""
    whole = parse_dcgmi_diag(load(JSON_R3))
    text = load(JSON_R3)
    cut = text[: text.index('"name" : "Targeted Power"') + len('"name" : "Targeted Po')]
    result = parse_dcgmi_diag(cut)
    assert [t["name"] for t in result["tests"]] == [t["name"] for t in whole["tests"]][:14]
    assert result["tests"][:14] == whole["tests"][:14]
    assert result["result"] == "Fail" and any("cut short" in e for e in result["errors"])
    # cut before the next test's name: the half test is left out, not reported nameless
    early = text[: text.index('"name" : "Targeted Power"')]
    assert [t["name"] for t in parse_dcgmi_diag(early)["tests"]][-1] == "Targeted Stress"


def test_a_reporters_elision_in_the_json_is_read_around_and_fails():
    text = load(JSON_R3)
    first = text.index('\t\t\t{\n\t\t\t\t"category" : "Deployment"')
    second = text.index('\t\t\t{\n\t\t\t\t"category" : "Integration"')
    for mark in ('{"..."},', "{...},", "...", '"...",'):
        result = parse_dcgmi_diag(text[:first] + "\t\t\t" + mark + "\n" + text[second:])
        assert [t["category"] for t in result["tests"]][0] == "Integration", mark
        assert len(result["tests"]) == 7 and result["result"] == "Fail", mark
        assert any("elided" in e for e in result["errors"]), mark
    # the elided element was the last one: the comma before it does not break the document
    last = text.rindex('\t\t\t{\n\t\t\t\t"category"')
    end = text.index("\n\t\t]", last)
    result = parse_dcgmi_diag(text[:last].rstrip().rstrip(",") + ",\n\t\t\t...\n" + text[end + 1:])
    assert len(result["tests"]) == 13 and any("elided" in e for e in result["errors"])


def test_broken_json_is_a_parse_error():
    text = load(JSON_R3)
    with pytest.raises(ParseError):  # broken inside, not cut: no reading of it is certain
        parse_dcgmi_diag(text.replace('"status" : "Pass"', '"status" "Pass"', 1))


def test_dcgm_error_text_without_a_table_is_an_error_result():
    text = "Error: unable to establish a connection to the specified host: localhost\n"
    result = parse_dcgmi_diag(text)
    assert (
        result["tests"] == []
        and result["errors"] == [text.strip()]
        and result["result"] == "Fail"
    )


@pytest.mark.parametrize(
    "text", ["", "Successfully ran diagnostic for group.\n", "+----+----+\n"]
)
def test_nothing_recognisable_raises(text):
    with pytest.raises(ParseError):
        parse_dcgmi_diag(text)


REAL_LINES = sorted(
    {
        ln
        for name in (ALL_PASS, DEPLOY_ERROR, MEMORY_FAIL)
        for ln in load(name).splitlines()
    }
)


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_random_text_only_ever_raises_parse_error(text):
    only_parse_error_or_json(parse_dcgmi_diag, text)


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.sampled_from(REAL_LINES), max_size=40),
    cut=st.integers(min_value=0, max_value=80),
)
def test_shuffled_and_cut_real_lines_only_ever_raise_parse_error(lines, cut):
    only_parse_error_or_json(parse_dcgmi_diag, "\n".join(line[: cut or None] for line in lines))


@settings(max_examples=200, deadline=None)
@given(
    doc=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "DCGM GPU Diagnostic",
                        "test_categories",
                        "tests",
                        "results",
                        "name",
                        "status",
                        "gpu_ids",
                        "warnings",
                        "info",
                        "category",
                        "entity_id",
                        "entity_group",
                        "test_summary",
                    ]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=20,
    )
)
def test_random_json_documents_only_ever_raise_parse_error(doc):
    only_parse_error_or_json(parse_dcgmi_diag, "{" + json.dumps({"DCGM GPU Diagnostic": doc})[1:])


HARVEST13 = Path(__file__).parent.parent / "fixtures" / "real" / "harvest13" / "dcgmi-diag"


def test_a_json_document_pasted_from_inside_an_object_is_a_fragment_not_no_output():
    """DCGM issue 215 quotes one '"info" :' member of a -j document alone: it had been refused as
    'no diagnostic table rows' with no JSON (a paste read as nothing); it is a fragment now, no test
    read, its one error saying where it starts. A tail that reaches later objects is one too."""
    (path,) = HARVEST13.glob("02_*dcgm-issue215.txt")
    result = parse_dcgmi_diag(strip_source_header(path.read_text()))
    assert (result["tests"], result["format"]) == ([], "json")
    assert result["errors"] == ['a fragment starting inside an object (at its member "info"): '
                                "not a whole dcgmi diag -j document"]
    tail = '            "results": [\n                {\n                    "gpu_id": "0",\n' \
           '                    "status": "Fail"\n                }\n            ]\n        }\n    ]\n}\n'
    result = parse_dcgmi_diag(tail)
    assert result["tests"] == [] and result["errors"][0].startswith('a fragment starting inside an object (at its member "results")')
    with pytest.raises(ParseError):  # no key and no table: still not this view's output
        parse_dcgmi_diag("GPU 0 GPU to Host bandwidth: 24.02 GB/s\n")
