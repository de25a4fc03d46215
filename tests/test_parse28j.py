"""Issue 28, round 15 (parse28j): the grammar cases the generators found with other seeds, and
the views that share a check (README "Parse views", round 15)."""

from __future__ import annotations

import random

from grammars import load
from test_grammars import _wrong_values, outcome

from sncheck.vendors.kernel_log import parse_kernel_log


def _kernel_log(seed: int, name: str, prefix: str) -> list:
    gens = load()["kernel-log"]
    i = next(k for k, fn in enumerate(gens) if fn.__name__ == name)
    rng = random.Random(f"{seed}:kernel-log" + (f":{name}" if i else ""))
    return [v for v in gens[i](rng) if v.name.startswith(prefix)]


def test_kernel_log_generators_other_seeds_read_whole() -> None:
    """The kernel-log generators' draws that the plain run's seed (28) never makes: journalctl -o
    short-iso (the read's own command) with a GHES record or a hung task, whose 'host kernel: '
    stood before the record's '{SEQ}[Hardware Error]: ' and the trace's lines (every ghes record
    missed, 'whole output exits 0, want 1'); a record's AER decode with another CPU's record lines
    between its lines (ghes.c prints each line alone, aer_recover_queue decodes later on a
    workqueue); a quiet log of one 'usb 1-1: ' line under no stamp (hub.c's dev_info)."""
    cases = [(0, "ghes_records", "short-iso"), (3, "ghes_records", "short-iso"), (6, "ghes_records", "none"),
             (3, "host_reports", "short-iso"), (53, "kernel_log", "none")]
    bad = []
    for seed, name, prefix in cases:
        got = _kernel_log(seed, name, prefix)
        assert got, (seed, name, prefix)
        for v in got:
            code, whole = outcome(v.view, v.text, v)
            if code != (1 if v.fails else 0) or whole is None:
                bad.append(f"{seed} {v.name}: exits {code}")
            else:
                bad += [f"{seed} {v.name}: {w}" for w in _wrong_values(v, whole)]
    assert not bad, bad[:5]


def test_a_short_iso_ghes_record_is_read_after_its_host_and_unit() -> None:
    text = ("2025-03-04T09:01:40+0000 gpu-node-17 kernel: {382}[Hardware Error]: Hardware error from APEI Generic "
            "Hardware Error Source: 1\n"
            "2025-03-04T09:01:47+0000 gpu-node-17 kernel: {382}[Hardware Error]: event severity: fatal\n")
    [e] = parse_kernel_log(text)["events"]
    assert (e["source"], e["seq"], e["class"]) == ("ghes", 382, "fatal"), e


def test_amd_smi_sections_that_are_fixed_dicts_cut_between_their_lines_exit_1() -> None:
    """static's ASIC, BUS, BOARD, VBIOS, LIMIT and metric's USAGE, POWER and PCIE are dicts of fixed keys in
    each version's source (amd_smi_records.py): one at the output's end stopping short of every
    version's dict was cut between two lines (the random cuts' "one device's entries" held them)."""
    from pathlib import Path

    from sncheck.vendors.parsers import failures, parse_text

    real = Path(__file__).resolve().parents[1] / "fixtures" / "real"
    cases = [("amd/02_amd-smi_static_text_mi300x_blog_truncated.txt", "        VENDOR_ID: 0x1002\n", "ASIC"),
             ("amd/02_amd-smi_static_text_mi300x_blog_truncated.txt", "        MAX_PCIE_WIDTH: 16\n", "BUS"),
             ("harvest/amd-smi/03_amd-smi_static_gpu0_phoenix3_apu_vbios_limit_0W_driver_7.0.14-pve_cut_in_board_"
              "pve-mods-issue348.txt", "        SLOWDOWN_EDGE_TEMPERATURE: N/A\n", "LIMIT"),
             ("amd/04_amd-smi_metric_mi300x_blog_truncated.txt", "        UMC_ACTIVITY: 0 %\n", "USAGE"),
             ("amd/04_amd-smi_metric_mi300x_blog_truncated.txt", "        GFX_VOLTAGE: N/A mV\n", "POWER"),
             ("harvest20/amd-smi/03_amd_smi_metric_26.2.1_radeon_890m_apu_usage_na_edge_28c_pcie_all_na_ecc_0_0_0_"
              "cache_na_ecc_blocks_na_mem_usage_1512_of_65536_mb_gtt_129_of_12288_throttle_31_na_four_blank_indent_"
              "whole_strix-apu-rocm-container-blog.txt", "            BANDWIDTH: N/A\n", "PCIE")]
    for rel, upto, section in cases:
        text = (real / rel).read_text(encoding="utf-8")
        whole = failures(parse_text("amd-smi", text))
        assert not any(section in f and "cut short" in f for f in whole), (rel, whole)
        cut = text[: text.index(upto) + len(upto)]
        said = failures(parse_text("amd-smi", cut))
        assert any(f.startswith(f"{section}: ") and "cut short" in f for f in said), (rel, section, said)
