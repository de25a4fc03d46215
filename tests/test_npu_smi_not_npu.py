"""npu15 (review reviewp): `sncheck parse npu-smi-fields` and `npu-smi-mapping` read only what
npu-smi prints; input of another tool is "not npu-smi's output", never exit 0. Each test failed
on main before the fix (main read a 2 MB 'a@a:' line as a field, 'k: v' files and nvidia-smi -q as
fields, a line of '1 1 1 ...' as a chip row)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main

ASCEND = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "ascend"

_NVIDIA_Q = """==============NVSMI LOG==============

Timestamp                                 : Mon Jan  8 10:00:00 2024
Driver Version                            : 535.104.05
CUDA Version                              : 12.2

Attached GPUs                             : 1
GPU 00000000:18:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Serial Number                         : 1650123456789
    Board ID                              : 0x1800
"""


def _parse(tmp_path: Path, view: str, text: str):
    p = tmp_path / "log.txt"
    p.write_text(text, encoding="utf-8")
    return CliRunner().invoke(main, ["parse", view, str(p), "--json"])


def _refused(result, view: str) -> None:
    assert result.exit_code != 0 and "not npu-smi's output" in result.output, (view, result.exit_code, result.output)
    assert "Traceback" not in result.output and len(result.output) < 2000, result.output[:300]


def test_fields_refuses_a_huge_line_with_a_colon(tmp_path: Path) -> None:
    _refused(_parse(tmp_path, "npu-smi-fields", "a@a:" + "x" * 2_000_000 + "\n"), "npu-smi-fields")


def test_fields_refuses_a_k_v_file_and_another_tools_key_lines(tmp_path: Path) -> None:
    for text in ("name: demo\nversion: 1.2\nhosts: 8\n", "Name : demo\nVersion : 1.2\n", _NVIDIA_Q):
        _refused(_parse(tmp_path, "npu-smi-fields", text), "npu-smi-fields")


def test_fields_still_reads_npu_smi(tmp_path: Path) -> None:
    got = _parse(tmp_path, "npu-smi-fields", next(ASCEND.glob("08_*")).read_text(encoding="utf-8"))
    assert got.exit_code == 0 and '"Aicore Count": "24"' in got.output, got.output[:400]


def test_mapping_refuses_numeric_lines_without_its_header(tmp_path: Path) -> None:
    _refused(_parse(tmp_path, "npu-smi-mapping", "1 1 1 1 1 1 1 1\n2 2 2 2 2 2 2 2\n"), "npu-smi-mapping")


def test_mapping_says_a_row_of_another_column_count(tmp_path: Path) -> None:
    header = "\t" + "".join(f"{h:<31}" for h in ("NPU ID", "Chip ID", "Chip Logic ID")) + "Chip Name\n"
    row = "\t" + "".join(f"{v:<31}" for v in (0, 0, 0)) + "Ascend 910B3\n"
    for bad in ("1 1 1\n", "1 1 1 1 1 1 1 1\n"):
        got = _parse(tmp_path, "npu-smi-mapping", header + row + bad)
        assert got.exit_code == 1 and "not a chip row of npu-smi info -m" in got.output, (bad, got.output)
    assert _parse(tmp_path, "npu-smi-mapping", header + row).exit_code == 0
