"""Every real capture under fixtures/real/{nvl72,amd,ascend,perftest,nvbandwidth} has a
registered `sncheck parse` view that reads it (the values are checked in the
test_vendor_* files); a new capture without a view fails here. Random text gives a
ParseError or strict JSON from every registered view."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parser_checks import only_parse_error_or_json

from sncheck.vendors.parsers import parsers, strip_source_header

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
DIRS = ("nvl72", "amd", "ascend", "perftest", "nvbandwidth")

VIEW = {
    "nvl72/01": "imex-ctl", "nvl72/02": "nccl-tests", "nvl72/03": "nccl-tests", "nvl72/04": "nvidia-smi-qx",
    "nvl72/05": "nvidia-smi-fabric", "nvl72/06": "nvidia-smi-fabric", "nvl72/07": "nvidia-smi-fabric",
    "nvl72/08": "nvidia-smi-fabric", "nvl72/10": "nvlink-info",
    "amd/01": "amd-smi", "amd/02": "amd-smi", "amd/03": "amd-smi-json", "amd/04": "amd-smi",
    "amd/05": "amd-smi-monitor", "amd/06": "amd-smi-topology", "amd/07": "amd-smi-xgmi",
    "amd/08": "amd-smi-monitor", "amd/09": "amd-smi", "amd/10": "amd-smi", "amd/11": "amd-smi",
    "amd/12": "amd-smi-monitor", "amd/13": "rocm-smi-showtopo", "amd/14": "rocm-smi", "amd/15": "rocm-smi",
    "amd/16": "rocm-smi-showtopo", "amd/17": "rocm-smi", "amd/18": "transferbench", "amd/20": "transferbench",
    "amd/21": "transferbench", "amd/22": "transferbench", "amd/23": "rocm-smi-showpids", "amd/24": "rocm-smi",
    "ascend/02a": "hccn-status", "ascend/02b": "hccn-hw-stats", "ascend/02c": "hccn-lldp",
    "ascend/02d": "hccn-route", "ascend/03": "hccn-ping", "ascend/04": "hccn-conf", "ascend/05": "npu-smi-help",
    "ascend/06": "npu-smi-topo", "ascend/07": "npu-smi-hbm", "ascend/08": "npu-smi-fields",
    "ascend/09": "hccl-test", "ascend/10": "npu-smi", "ascend/11": "ascend-collected",
    "ascend/12": "ascend-collected", "ascend/13": "ascend-collected", "ascend/14": "asys", "ascend/15": "asys",
    "ascend/16": "npu-smi-spod", "ascend/17": "ascend-dmi", "ascend/18a": "npu-smi-hbm",
    "ascend/18b": "npu-smi-health", "ascend/19": "npu-smi-hbm",
    "perftest/01": "ib-write-bw", "perftest/02": "ib-write-bw", "perftest/03": "ib-write-bw",
    "perftest/04": "ib-write-lat",
    "nvbandwidth/01": "nvbandwidth", "nvbandwidth/02": "nvbandwidth", "nvbandwidth/03": "nvbandwidth",
    "nvbandwidth/04": "nvbandwidth",
}


def _captures() -> dict[str, Path]:
    out = {}
    for d in DIRS:
        for p in sorted((REAL / d).glob("*.txt")):
            if not p.name.startswith("00_"):
                out[f"{d}/{p.name.split('_')[0]}"] = p
    return out


def test_every_capture_has_a_view_that_reads_it() -> None:
    caps = _captures()
    assert set(caps) == set(VIEW), (set(caps) ^ set(VIEW))
    for key, path in caps.items():
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# source:"), key  # provenance header kept
        out = parsers()[VIEW[key]](strip_source_header(text))
        json.dumps(out, allow_nan=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=400))
def test_every_view_takes_random_text(text: str) -> None:
    for parser in parsers().values():
        only_parse_error_or_json(parser, text)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(VIEW)), st.integers(min_value=0, max_value=4000), st.integers(min_value=0, max_value=400))
def test_every_view_takes_cut_and_spliced_captures(key: str, cut: int, junk: int) -> None:
    text = strip_source_header(_captures()[key].read_text(encoding="utf-8"))
    only_parse_error_or_json(parsers()[VIEW[key]], text[:cut] + "\x00|:" * (junk % 7) + text[cut + junk:])
