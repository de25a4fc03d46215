"""Harvest 27's first-try miss, read now by its tool's grammar (README "Harvest 27").

Written from what rocm_smi.py prints, not from the capture that showed it: showCurrentClocks
(ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py @ a129571) prints, for ``-a``/``-c`` (no clock
named), ``printLog(device, '%s clock level: %s' % (clk_type, freq_index), '(%sMhz)' % ...)``: the
level inside the metric name, so the pair reads ``sclk clock level: 1: (2100Mhz)`` (8f9f943, 2020
on); since rocm-6.0.0 (3d40c4b, has_deep_sleep) the deep-sleep level is ``S``. With a clock named
(``--showclkfrq``-style ``clk_defined``) it is ``'{} ({:.0f}Mhz)'.format(freq_index, fr)``:
``sclk clock level: S (137Mhz)``."""

from __future__ import annotations

from sncheck.vendors.parsers import parse_text

_SPACER = "=" * 90


def _log(pairs: list[str]) -> str:
    return "\n".join(["", "", _SPACER, *pairs, _SPACER, "End of ROCm SMI Log".center(90, "=")]) + "\n"


def test_rocm6_current_clock_levels_with_the_level_in_the_metric_name_are_read() -> None:
    """'sclk clock level: S: (137Mhz)' (deep sleep) and 'mclk clock level: 0: (900Mhz)': both were null."""
    pairs = [f"GPU[{d}]\t\t: {clk} clock level: {level}: ({mhz}Mhz)" for d, sclk in ((0, ("S", 137)), (1, ("1", 2100)))
             for clk, level, mhz in (("fclk", "0", 1300), ("mclk", "0", 900), ("sclk", *sclk))]
    out = parse_text("rocm-smi", _log(pairs))
    assert out["errors"] == []
    assert [(g["device"], g["sclk_MHz"], g["mclk_MHz"]) for g in out["gpus"]] == [(0, 137, 900), (1, 2100, 900)]


def test_a_named_clock_at_its_deep_sleep_level_is_read() -> None:
    """clk_defined's 'sclk clock level: S (137Mhz)': the level 'S' was not a level."""
    out = parse_text("rocm-smi", _log(["GPU[0]\t\t: sclk clock level: S (137Mhz)"]))
    assert out["gpus"][0]["sclk_MHz"] == 137
