"""A JSON number no tool prints, in every JSON view: ``1e999`` (Python's json reads it as
infinity), ``NaN``, ``-Infinity``. The tools write doubles with printf/std::format/Python's
json.dumps of a measured value; none writes a number past a double's range, and their --json
writers print no NaN (amd-smi's json.dumps of a value it read: 'N/A' where none; mlxlink's
strings; nccl-tests util.cu's jsonDouble; Inspector's "%lf" of a finite time and size). Such
a number is an edited or corrupted document: refused naming its field
(:class:`sncheck.config.jsonio.NotFinite`), exit 1, never read as a bandwidth of inf.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

from grammars import Variant, generator

NOT_FINITE = ("1e999", "NaN", "-Infinity")
FINDING = "no finite number"


def _put(doc: str, marker: str, word: str) -> str:
    assert doc.count(marker) == 1, marker
    return doc.replace(marker, word)


@generator("amd-smi-json")
def amd_smi_json_not_finite(rng: random.Random) -> Iterator[Variant]:
    word = rng.choice(NOT_FINITE)
    gpus = [{"gpu": i, "power": {"socket_power": {"value": 123456 + i, "unit": "W"}}} for i in range(2)]
    text = _put(json.dumps(gpus, indent=4), "123457", word) + "\n"
    yield Variant("amd-smi-json", f"metric power {word}", text, (("len(gpus)", 0),), fails=True,
                  finding="[1].power.socket_power.value")


@generator("mlxlink")
def mlxlink_not_finite(rng: random.Random) -> Iterator[Variant]:
    word = rng.choice(NOT_FINITE)
    doc = {"result": {"output": {"Operational Info": {"State": "Active", "Physical state": "LinkUp",
                                                      "Speed": "IB-NDR", "Width": "4x"},
                                 "Physical Counters and BER Info": {"Link Down Counter": 987654}}},
           "status": {"code": 0, "message": "success"}}
    text = _put(json.dumps(doc, indent=3), "987654", word) + "\n"
    yield Variant("mlxlink", f"--json link down counter {word}", text, (("format", "json"),), fails=True,
                  finding="Physical Counters and BER Info.Link Down Counter")


@generator("nccl-tests")
def nccl_tests_not_finite(rng: random.Random) -> Iterator[Variant]:
    """rccl-tests --output_format json lines: one row's busBw a 1e999."""
    word = rng.choice(NOT_FINITE)
    lines = []
    for i, size in enumerate((1024, 2048)):
        bw = 765432.5 if i else 10.5
        lines.append(json.dumps({"#wrong": "0", "algBw": bw, "busBw": bw, "count": size // 4, "name": "AllReduce",
                                 "nGpus": 8, "redop": "sum", "root": -1, "size": size, "time": 12.5,
                                 "type": "float", "inPlace": 0}))
    text = _put("\n".join(lines), "765432.5, \"busBw\": 765432.5", f"1.0, \"busBw\": {word}") + "\n"
    yield Variant("nccl-tests", f"json lines busBw {word}", text, (), fails=True, finding="busBw",
                  hints={"collective": "all_reduce"}, stream=True)


@generator("nccl-inspector")
def nccl_inspector_not_finite(rng: random.Random) -> Iterator[Variant]:
    """Two records, the second's busbw a 1e999: the first is kept, the second refused naming its field."""
    word = rng.choice(NOT_FINITE)
    objects = []
    for rank, bw in ((0, 11.25), (1, 876543.25)):
        objects.append({"header": {"id": "0x7f8c496ae9f0", "comm_name": "default", "rank": rank, "n_ranks": 2,
                                   "nnodes": 1},
                        "metadata": {"inspector_output_format_version": "v4.0", "dump_timestamp_us": 1749000000000000,
                                     "hostname": "node7", "pid": 4242 + rank},
                        "coll_perf": {"coll": "AllReduce", "coll_sn": 1, "coll_msg_size_bytes": 1048576,
                                      "coll_exec_time_us": 100.5, "coll_timing_source": "kernel_gpu",
                                      "coll_algobw_gbs": 10.5, "coll_busbw_gbs": bw}})
    text = _put("".join(json.dumps(o) + "\n" for o in objects), "876543.25", word)
    yield Variant("nccl-inspector", f"second record's busbw {word}", text, (("len(records)", 1),), fails=True,
                  finding="coll_perf.coll_busbw_gbs", stream=True)
