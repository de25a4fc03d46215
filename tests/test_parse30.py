"""parse30: issue 28's open grammar gaps and hostile parse inputs.

1. A file no view recognises is never quoted: ``sncheck parse npu-smi /etc/shadow`` printed
   root's hash (amd-smi, npu-smi's seven views, iblinkinfo, ibnetdiscover, the --query-gpu
   CSV likewise). Every view, given secret-shaped files, names lines and never shows them
   (sncheck/vendors/withheld.py).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ParseError
from sncheck.vendors import parsers
from sncheck.vendors.withheld import withheld

SECRET = "SeCrEt0Hash"
# files of a machine that are no tool's output, each holding the secret
SHAPES = {
    "shadow": f"root:$6$salt${SECRET}zz9:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n",
    "private key": f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU{SECRET}AAAA\n"
                   "-----END OPENSSH PRIVATE KEY-----\n",
    "netrc": f"machine example.com login admin password {SECRET}\n",
    "config": f"password: {SECRET}\ntoken : {SECRET}x\n",
    "env": f"AWS_SECRET_ACCESS_KEY={SECRET}\n",
    "columns": f"{SECRET} 1 2 3 4 5 6 7 8\n\tadmin | 0 | {SECRET} |\n",
}


def _shown(view: str, text: str) -> tuple[str, bool]:
    """What ``sncheck parse`` shows of ``text`` (its JSON or its error) and whether it failed."""
    try:
        data = parsers.parse_text(view, text)
    except ParseError as e:
        return str(e), True
    return json.dumps(data) + "\n".join(parsers.failures(data)), bool(parsers.failures(data))


@pytest.mark.parametrize("view", sorted(parsers.views()))
def test_a_file_no_view_recognises_is_named_never_shown(view: str) -> None:
    for shape, text in SHAPES.items():
        said, failed = _shown(view, text)
        assert SECRET not in said, f"{view} shows a {shape} file's line: {said[:300]}"
        assert failed, f"{view} reads a {shape} file whole"


def test_the_cli_names_the_line(tmp_path) -> None:
    path = tmp_path / "shadow"
    path.write_text(SHAPES["shadow"])
    for view in ("npu-smi", "amd-smi", "iblinkinfo", "nvidia-smi-query-gpu"):
        result = CliRunner().invoke(main, ["parse", view, str(path)])
        assert result.exit_code == 1, result.output
        assert SECRET not in result.output and "daemon:" not in result.output, result.output
    assert "line 1" in result.output or "no GPU rows" in result.output, result.output


def test_a_recognised_output_still_quotes_its_foreign_line() -> None:
    # a switch's port then a line of no grammar: the text is iblinkinfo's, the line is shown
    text = ("Switch: 0x0002c90200487428 Infiniscale-IV Mellanox Technologies:\n"
            "           1    1[  ] ==( 4X 10.0 Gbps Active/  LinkUp)==>       2    1[  ] \"node1 HCA-1\" ( )\n"
            "stray line\n")
    data = parsers.parse_text("iblinkinfo", text)
    assert data["ports"], data
    assert "a line the grammar does not hold: 'stray line'" in data["errors"], data["errors"]


def test_withheld_keeps_the_grammar_words_and_numbers_the_file() -> None:
    text = "first\nroot:$6$abc:1:::\n"
    said = withheld("no 'GPU: n' blocks, and 'root:$6$abc' is no line", text, lambda k: k + 3)
    assert said == "no 'GPU: n' blocks, and line 5 is no line"


# 5. A JSON number no tool prints (1e999 reads as infinity, NaN, Infinity) is no measurement: refused naming
#    its field, in the views (tests/grammars/json_numbers.py, one variant each) and in input files alike.

def test_an_input_file_refuses_a_number_past_a_double(tmp_path) -> None:
    from sncheck.config.jsonio import read_json
    from sncheck.errors import ConfigError

    path = tmp_path / "curve.json"
    path.write_text('{"steps": [1, 2], "loss": [2.5, 1e999]}')
    with pytest.raises(ConfigError, match=r"loss\[1\]: infinite"):
        read_json(path, "golden curve")


def test_mlxlink_json_counter_of_1e999_is_no_count() -> None:
    text = ('{"result": {"output": {"Operational Info": {"State": "Active", "Physical state": "LinkUp"},\n'
            '"Physical Counters and BER Info": {"Link Down Counter": 1e999}}}, "status": {"code": 0}}\n')
    data = parsers.parse_text("mlxlink", text)
    assert parsers.failures(data) == [
        "result.output.Physical Counters and BER Info.Link Down Counter: infinite (1e999 or Infinity), "
        "no finite number: no measurement"]
