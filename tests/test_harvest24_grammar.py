"""Harvest 24's first-try misses, each read now by its tool's grammar (README "Harvest 24").

Each case is written from the layout the tool prints, not from the capture that showed it:
amd-smi monitor's default output (ROCm/rocm-systems projects/amdsmi subcommands/monitor.py), whose
one memory column is 'VRAM_USAGE' ('GTT_USAGE' on an APU) right-justified to 16, its cell
f'{used/1024:5.1f}/{total/1024:5.1f} GB': a blank inside the cell when the total is under 100 GB."""

from __future__ import annotations

from sncheck.vendors.parsers import parse_text

_HEADER = ("GPU" + "XCP".rjust(5) + "POWER".rjust(7) + "GPU_T".rjust(8) + "MEM_T".rjust(8) + "GFX_CLK".rjust(10)
           + "GFX%".rjust(7) + "MEM%".rjust(7) + "ENC%".rjust(7) + "DEC%".rjust(7))


def _row(gpu: int, xcp: int, cells: list[str], usage: str) -> str:
    widths = (7, 8, 8, 10, 7, 7, 7, 7)
    return (str(gpu).rjust(3) + str(xcp).rjust(5) + "".join(c.rjust(w) for c, w in zip(cells, widths))
            + usage.rjust(16))


def test_monitors_default_memory_column_used_over_total_is_one_cell() -> None:
    """'0.3/192.0 GB' and '0.5/ 48.0 GB' (the total padded to 5) are one cell each: every row read,
    none 'N cells for M columns' (the unit GB followed no plain number, and the padded total split
    the cell in two)."""
    busy = ["183 W", "49 °C", "48 °C", "1427 MHz", "0 %", "0 %", "N/A", "0 %"]
    text = "\n".join([_HEADER + "VRAM_USAGE".rjust(16),
                      _row(0, 0, busy, f"{0.3:5.1f}/{192.0:5.1f} GB"),
                      _row(1, 1, ["N/A"] * 8, f"{0.5:5.1f}/{48.0:5.1f} GB"),
                      _row(2, 2, ["N/A"] * 8, "N/A")]) + "\n"
    out = parse_text("amd-smi-monitor", text)
    assert out["errors"] == []
    assert [g["VRAM_USAGE"] for g in out["gpus"]] == ["0.3/192.0 GB", "0.5/ 48.0 GB", "N/A"]
    assert (out["gpus"][1]["XCP"], out["gpus"][1]["POWER"]) == ("1", "N/A")


def test_monitors_apu_memory_column_is_gtt_usage() -> None:
    """On an APU the column is 'GTT_USAGE' (get_apu_memory_type_and_name), the same cell."""
    cells = ["49 W", "27 °C", "29 °C", "43 MHz", "2 %", "0 %", "N/A", "0 %"]
    text = _HEADER + "GTT_USAGE".rjust(16) + "\n" + _row(0, 0, cells, f"{0.0:5.1f}/{376.7:5.1f} GB") + "\n"
    out = parse_text("amd-smi-monitor", text)
    assert out["errors"] == []
    assert out["gpus"][0]["GTT_USAGE"] == "0.0/376.7 GB"


def test_a_command_line_behind_roots_bare_prompt_is_no_line_of_the_output() -> None:
    """'# amd-smi static -g 0' (root's prompt '#' alone, then the command: delivery.command_line's
    grammar, which asked() reads) is the pasted command line, not 'an unrecognised line' of the
    output; '$ ' and '[root@h ~]# ' prompts were already skipped, the bare '#' was not."""
    static = ("# amd-smi static -g 0 --asic --limit\nGPU: 0\n    ASIC:\n        MARKET_NAME: AMD Instinct MI350X\n"
              "        DEVICE_ID: 0x75A0\n        OAM_ID: 0\n    LIMIT:\n        MAX_POWER: 1000 W\n"
              "        SOCKET_POWER: 1000 W\n" + "".join(f"        {k}: 100 \u00b0C\n" for k in (  # LIMIT whole (6.1.x's record)
                  "SLOWDOWN_EDGE_TEMPERATURE", "SLOWDOWN_HOTSPOT_TEMPERATURE", "SLOWDOWN_VRAM_TEMPERATURE",
                  "SHUTDOWN_EDGE_TEMPERATURE", "SHUTDOWN_HOTSPOT_TEMPERATURE", "SHUTDOWN_VRAM_TEMPERATURE")))
    out = parse_text("amd-smi", static)
    assert out["errors"] == []
    assert out["gpus"][0]["LIMIT"]["MAX_POWER"] == "1000 W"
    monitor = "# amd-smi monitor -p\nGPU  POWER\n  0  183 W\n"
    assert parse_text("amd-smi-monitor", monitor)["errors"] == []
