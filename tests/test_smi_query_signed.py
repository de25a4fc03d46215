"""nvidia-smi --query-gpu's signed fields (reviews14 #7): a T.Limit margin is negative exactly while
the GPU throttles, and nvidia-smi prints it so; a negative power or memory figure stays no reading."""

from __future__ import annotations

import pytest

from sncheck.vendors.nvidia.nvidia_smi import parse_query_gpu_csv


@pytest.mark.parametrize(("field", "cell", "value"), [
    ("temperature.gpu.tlimit", "-3", -3), ("temperature.gpu.tlimit", "5", 5),
    ("clocks.offset.graphics", "-150 MHz", -150),
])
def test_a_signed_field_reads_its_sign(field, cell, value):
    out = parse_query_gpu_csv(f"index, temperature.gpu, {field}\n0, 87, {cell}\n")
    assert out["gpus"][0][field] == value
    assert not out.get("errors"), out


@pytest.mark.parametrize(("field", "cell"), [("power.draw", "-60.10 W"), ("memory.used", "-1 MiB")])
def test_an_unsigned_field_refuses_a_sign(field, cell):
    out = parse_query_gpu_csv(f"index, {field}\n0, {cell}\n")
    assert out["gpus"][0][field] is None
    assert out["errors"], out
