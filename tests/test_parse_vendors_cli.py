"""`sncheck parse` over the vendor views: JSON out, exit 0 on a clean capture, exit 1 when
the output shows a failure or was cut short, exit 2 for an unknown tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def run(*args: str):
    return CliRunner().invoke(main, ["parse", *args])


@pytest.mark.parametrize("tool, rel, code", [
    ("nvidia-smi-qx", "nvl72/04_nvidia_smi_qx_gb200_real_tray.xml.txt", 0),
    ("imex-ctl", "nvl72/01_imex_ctl_N_18node_p6e_gb200.txt", 0),
    ("nvidia-smi-fabric", "nvl72/07_nvidia_smi_fabric_in_progress_gpu-operator-2511.txt", 0),
    ("nvbandwidth", "nvbandwidth/01_v0.10_2gpu_ce_with_cov.txt", 0),
    ("ib-write-bw", "perftest/03_ib_write_bw_roce_dgx_spark_run_infinitely_gbits.txt", 0),
    ("amd-smi-monitor", "amd/05_amd-smi_monitor_putm_mi300x_8gpu_blog.txt", 0),
    ("amd-smi", "amd/01_amd-smi_list_mi300x_8gpu_blog_truncated.txt", 1),          # [output truncated]
    ("transferbench", "amd/20_transferbench_examplecfg_mi350x_hip_error_invalid_resource_handle.txt", 1),
    ("rocm-smi", "amd/17_rocm-smi_json_showrasinfo_no_json_data_mi300a_issue4374.txt", 1),
    ("npu-smi", "ascend/10_npu-smi_info_A3_910C_16chips_vllm-ascend-issue3002.txt", 0),
    ("ascend-collected", "ascend/13_npu_info_before_910A_faultdiag_test_fixture_socket_failed_optical.txt", 1),
    ("hccl-test", "ascend/09_hccl_test_all_reduce_vendor_doc_example.txt", 0),
])
def test_parse_exit_codes(tool: str, rel: str, code: int) -> None:
    r = run(tool, str(REAL / rel), "--json")
    assert r.exit_code == code, r.output
    json.loads(r.stdout)


def test_hccl_test_busbw_needs_the_ranks(tmp_path: Path) -> None:
    f = REAL / "ascend/09_hccl_test_all_reduce_vendor_doc_example.txt"
    out = json.loads(run("hccl-test", str(f), "--collective", "all_reduce", "--ranks", "8").stdout)
    assert out["rows"][-1]["busbw_GBps"] == pytest.approx(23.76245 * 2 * 7 / 8, rel=1e-5)
    bad = tmp_path / "rank5.log"
    bad.write_text(f.read_text() + "\ncheck result failed\n")
    r = run("hccl-test", str(bad), "--collective", "all_reduce", "--ranks", "8")
    assert r.exit_code == 1 and "failed data checks" in r.stderr


def test_unknown_tool_lists_the_vendor_views(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("x\n")
    r = run("no-such-tool", str(f))
    assert r.exit_code == 2
    for name in ("imex-ctl", "amd-smi", "npu-smi", "hccn-net-health", "hccl-test", "nvbandwidth", "ib-write-bw"):
        assert name in r.output
