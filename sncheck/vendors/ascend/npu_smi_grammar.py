"""The grammars of the ``npu-smi`` views (:mod:`sncheck.vendors.ascend.npu_smi`).

npu-smi ships closed with the Ascend driver: what is written here comes from Huawei's
npu-smi command reference (Atlas A2/A3, 23.0 and 24.1), the npucli print code that
hicann/driver publishes (``src/custom/dev_prod/user/npucli/src``: the ``\\t%-30s : %s`` key
lines, ``print_npu_spod_info``, the health states of ``npu_common.c``), and every real
capture under ``fixtures/real*/``."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

_CLOSED = "closed: Huawei npu-smi command reference (Atlas A2/A3, CANN 23.0 and 24.1)"
_NPUCLI = "hicann/driver src/custom/dev_prod/user/npucli/src/npu_info_print.c: '\\t%-30s : %s' key lines"
_PRINT = ("hicann/driver src/custom/dev_prod/user/npucli/src @ ef377e9: npu_info_print.c (print_common_info, "
          "print_ascend_board_info, print_npu_card_info, print_ascend_chip_info, print_all_info), npu_card_info.c "
          "(show_ascend_card_info: the NPU form's header, chip blocks, 'Chip ID' after each, 'Failed to query ...')")
_KV = ("one 'Key : Value' line a field, printed '\\t%-30s : %s' (the ECC counters pad the key to 40); "
       "'NA' where the chip does not say")

# DCMI's init failure, printed instead of a view's output (npu_smi.dcmi_failed): no value, not measured
_DCMI_REFUSED = ("DCMI's init failure printed instead ('dcmi module initialize failed. ret is -8005', as the npu-smi "
                 "view and every other Ascend view read it, in one home: npu_smi.dcmi_failed): no value, tool_failed, "
                 "errors naming it (not measured)")

GRAMMAR = {
    "npu-smi": Grammar(
        tool="npu-smi info (the NPU table and its process table)",
        versions=("npu-smi 23.0 to 26.0 (A2 910B one chip an NPU; A3 910C two dies with Phy-ID; the 26.0 wide box; "
              "Atlas 300I / 300I Duo 310P3: 'Chip Device' and Memory-Usage without HBM)"),
        sources=(_CLOSED,
                 "closed: the captures under fixtures/real/ (ascend/10 and 12: 23.0.5, 25.2.0; harvest/npu-smi: "
                 "24.1.rc3.7, 24.1.1, 25.3.rc1; r3/npu-smi: 24.1.rc2.2, 26.0.rc2; harvest6/npu-smi: 25.2.0 and "
                 "25.0.rc1.b033 on 310P3 (Syllo/nvtop#421, vllm-project/vllm-ascend#3316), 25.5.0 A3)",
                 "closed: the DCMI init failure lines as users pasted them (vllm-project/vllm-ascend issue 2698, "
                 "Ascend/cann-container-image issue 46, Project-HAMi/HAMi issue 1696, hw-native-sys/simpler PR 2043: "
                 "exit 187)"),
        lines=("a '+---+' rule; '| npu-smi V   Version: V |'; a '+---+---+---+' rule; the header 'NPU Name | Health | "
               "Power(W) Temp(C) Hugepages-Usage(page)' and 'Chip [Phy-ID] | Bus-Id | AICore(%) Memory-Usage(MB) "
               "HBM-Usage(MB)' (Phy-ID on A3, 24.1 on; the 310P's 'Chip Device | Bus-Id | AICore(%) Memory-Usage(MB)', "
               "no HBM); a '+===+' rule; per chip two rows: 'NPU NAME | HEALTH | POWER "
               "TEMP USED / TOTAL' (W, C, pages) and 'CHIP [PHY|DEVICE] | BUS-ID | AICORE USED / TOTAL [USED / TOTAL]' "
               "(%, MB, MB; the BUS-ID 'NA' on an SoC NPU, the 310B4 of an Atlas 200I DK A2, harvest7: bus_id null), closed by '+===+' (the last die of an NPU) or a full-width '+---+' (between the dies of one "
               "NPU); the second die of a 910C prints power '-' (the package reports it once); health OK, Warning, "
               "Alarm, Critical or UNKNOWN (npucli npu_common.c); then the process table: a '+---+' rule, 'NPU Chip "
               "| Process id | Process name | Process memory(MB)', '+===+', per NPU either 'No running processes "
               "found in NPU n' or a row per process 'NPU CHIP | PID | NAME | MB' (the name blank in a container; the wide "
               "layout adds '| Process id in container |', 'NA' outside one: nyaterm#268, harvest8), "
               "each NPU's block closed by '+===+'"),
        end=("the NPU table: every chip's rows closed by their border, the last one by '+===' (on an A3 the plain "
             "'+---' border under a die says the NPU's next die follows: a table ending on it is cut; a paste often "
             "stops at a '+===': the judge's count "
             "of chips, --expect or the inventory, says whether every chip is listed); the process table after it is "
             "checked where present (a block per NPU of the table, each closed)"),
        failures=("a chip's health other than OK (faults: npu_health); npu-smi's DCMI init failure printed instead "
                  "of the box (exit 187): an optional 'DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)' (or "
                  "'(ret=4)') line, then 'dcmi module initialize failed. ret is -8005' (no access to the driver, a "
                  "device held by another container) or 'dcmi model initialized failed, because the device is used. "
                  "ret is -8020': no NPU measured (tool_failed, errors: exit 1; a run's info facts not_measured); "
                  "other lines outside the box naming an error (errors); a chip's first row without its second, "
                  "rows without their border, a border without its closing '+' (cut mid-line, then another "
                  "command pasted: vllm-ascend 834, harvest19), a process block unclosed or missing, '...' (errors: "
                  "cut short)"),
        values=("version, chips[{npu, chip, phy_id, device_id (310P), name, health, power_W, temp_C, hugepages_used, "
                "hugepages_total (Hugepages-Usage(page), the NPU row's; kept since issue 28's spot-check), bus_id, aicore_pct, "
                "memory_used_MB, memory_total_MB, hbm_used_MB, hbm_total_MB (null without an HBM column)}], processes (process rows), process_rows[{npu, chip, pid, name, "
                "memory_MB, container_pid}] (each whole row), tool_failed (the DCMI "
                "failure lines), errors"),
    ),
    "npu-smi-health": Grammar(
        tool="npu-smi info -t health -i N [-c C]",
        versions="npu-smi 23.0 to 25.x (A2/A3 'Health Status'; the 950's 'Health' with its die lines)",
        sources=(_CLOSED, _NPUCLI, "hicann/driver npucli/src/npu_common.c: the states OK, Warning, Alarm, Critical, "
                 "UNKNOWN", "closed: fixtures/real/ascend/12 (23.0.5) and 18b (950 doc)"),
        lines=(_KV + ": A2/A3 'Health Status', 'Error Code' (NA or codes split by blanks), 'Error Information'; the "
               "950 'NPU ID', 'Health', 'Error Code', 'Error Information', then VDie/NDie ID, Chip Position ID, "
               "PCIe Bus Info, Firmware Version"),
        end="the 'Error Code' line (every version prints it after the health line; the lines after it carry no "
            "judged value and differ by version)",
        failures="health other than OK, any error code (faults: the run's npu_health_codes); no 'Error Code' line, "
                 "'...' (errors: cut short)",
        values="health, error_codes, error_information, faults, errors",
    ),
    "npu-smi-ecc": Grammar(
        tool="npu-smi info -t ecc -i N",
        versions="npu-smi 23.0 to 25.x (A2 one chip an NPU, A3 two)",
        sources=(_CLOSED, _NPUCLI, "closed: fixtures/real/ascend/12 (23.0.5)"),
        lines=(_KV + ": 'NPU ID', 'Chip Count' N, a blank line, then per chip the DDR and HBM counters (Single/"
               "Double Bit Error Count, Aggregate Total Err Cnt, Isolated Pages Count) and its 'Chip ID'"),
        end="N chip blocks, each closed by its 'Chip ID' line (N: the 'Chip Count' line)",
        failures=("a double-bit count or isolated pages above zero on any chip (faults: the run's ecc fact); fewer "
                  "'Chip ID' lines than 'Chip Count', '...' (errors: cut short)"),
        values="counters (each counter summed over the chips), chips[{chip, counters}], faults, errors",
    ),
    "npu-smi-spod": Grammar(
        tool="npu-smi info -t spod-info -i N -c C",
        versions="npu-smi 24.1 to 26.0 (A3 910C SuperPod; the 950's form without SDID)",
        sources=(_CLOSED, "hicann/driver npucli/src/npu_info_print.c print_npu_spod_info: the lines and their order",
                 "closed: fixtures/real/ascend/16 (hicann/shmem doc)"),
        lines=(_KV + ": A3 'SDID', 'Super Pod Size', 'Super Pod ID', 'Server Index' (unsigned integers); the 950 "
               "'Super Pod Size', 'Super Pod ID', 'Chassis ID' (a pod mainboard) or 'Server Index', 'Super Pod Type'"),
        end="the last line of its form: 'Server Index' (A3) or 'Super Pod Type' (950)",
        failures="'This device does not support get spod info.' (no fields: errors naming the line, not measured); " + _DCMI_REFUSED
                 + "; the last line missing (errors: cut short)",
        values="sdid, super_pod_size, super_pod_id, server_index, chassis_id, super_pod_type, errors",
    ),
}


GRAMMAR.update({
    "npu-smi-topo": Grammar(
        tool="npu-smi info -t topo",
        versions="npu-smi 23.0 to 25.x (A2 HCCS mesh; A3 SIO / HCCS_SW; PCIe cards)",
        sources=(_CLOSED, "closed: fixtures/real/ascend/06 (910B, 8 NPUs)"),
        lines=("a header row of the devices 'NPU0 NPU1 ... CPU Affinity' (cells padded to 11); a row a device: its name, "
               "one link a device ('X' itself; HCCS, SIO, HCCS_SW on the NPUs' own buses; PIX, PXB, PHB, SYS over "
               "PCIe) and its CPU affinity ('0-23'); then a blank line and the Legend"),
        end="the row of every device the header names (the matrix square); the Legend after it carries no value",
        failures="a pair not over SIO, HCCS or HCCS_SW (faults: the run's ub_topology); a row with fewer cells, a "
                 "missing row (errors: cut short); a header of names without 'CPU Affinity' or a line inside the "
                 "matrix that is no device's row (errors: a line wrapped or cut, its cells under unknown columns)",
        values="devices, matrix {NPUi: {NPUj: link}}, affinity {NPUi: cpus}, errors"),
    "npu-smi-help": Grammar(
        tool="npu-smi info -h",
        versions="npu-smi 23.0 to 25.x (the type list grows: spod-info, hccs on A3)",
        sources=(_CLOSED, "closed: fixtures/real/ascend/05"),
        lines=("'Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]', 'Commands:' with one command a line, "
               "'-t type  Show information for type' then 'type: a, b, ...,' wrapped over lines, the last ending "
               "'.'; a blank line; 'Options:' with -i, -c, -p"),
        end="the blank line after the type list", failures="no failure line of its own is known (the help is fixed text; closed: neither the guide nor a "
                 "capture shows one); no 'type:' list (a parse error)",
        values="types, errors"),
    "npu-smi-mapping": Grammar(
        tool="npu-smi info -m",
        versions="npu-smi 23.0 to 25.x (910A, 910B, A3 two chips an NPU)",
        sources=(_CLOSED, "closed: fixtures/real/ascend/13 (910A)"),
        lines=("a header 'NPU ID  Chip ID  Chip Logic ID  Chip Name' and a row a chip, tab-indented, cells padded to 30 "
               "or 31: four cells, NPU ID, Chip ID, the logic id ('-' on an MCU row) and a name with a letter"),
        end="none stated: the judge's count of chips (--expect N) says whether every chip is listed; the table ends at "
            "its first blank line after a row",
        failures="no header (a parse error: not npu-smi's output); no row (a parse error); a line under the header "
                 "that is no such row, another column count or a name with no letter (errors naming its line); "
                 + _DCMI_REFUSED + "; fewer chips than expected (errors)",
        values="chips [{npu, chip, logic_id, name}], errors"),
    "npu-smi-hbm": Grammar(
        tool="npu-smi info -t memory -i N (or -t usages: its HBM Capacity line)",
        versions="npu-smi 23.0 to 25.x (910B, A3, 950)",
        sources=(_CLOSED, "hicann/driver npucli/src/npu_info_print.c print_hbm_info: the HBM lines",
                 "closed: fixtures/real/ascend/07 (usages, 910B) and 18a (memory, 950 doc)"),
        lines=(_KV + ": -t memory 'NPU ID', ['Chip Count'], 'DDR Capacity(MB)', 'DDR Clock Speed(MHz)', 'HBM "
               "Capacity(MB)', 'HBM Clock Speed(MHz)', 'HBM Temperature(C)', 'HBM Manufacturer ID'; -t usages carries "
               "'HBM Capacity(MB)' among its rates; an NPU's form ('Chip Count') closes each chip with 'Chip ID'"),
        end="'HBM Manufacturer ID' (-t memory); with a 'Chip Count', that many 'Chip ID' lines",
        failures="no 'HBM Capacity(MB)' line (a parse error); " + _DCMI_REFUSED + "; the end missing, '...' (errors: cut short)",
        values="hbm_capacity_MB, errors"),
})


GRAMMAR["npu-smi-fields"] = Grammar(
    tool="npu-smi info -t TYPE -i N [-c C] and npu-smi info -l (any 'Key : Value' view)",
    versions="npu-smi 23.0 to 26.0 (910, 910B, A3 910C, 950; the forms of npucli's print code)",
    sources=(_CLOSED, _PRINT, "hicann/driver npucli/src/npu_smi.c @ ef377e9 handle_dcmi_initialization: the DCMI "
             "failure lines", "closed: fixtures/real/ascend/08 (-t common, 910B), 12 and 13 (board, usages, health)"),
    lines=(_KV + ". Forms: the NPU form (-t TYPE -i N: 'NPU ID', 'Chip Count' N and a blank line, then per chip the "
           "type's lines, its 'Chip ID' and a blank line; an MCU's lines closed by 'Chip Name : MCU'); -t common "
           "(no blank after 'Chip Count'; each chip opens with a blank line and 'Chip ID', then Memory/HBM/Aicore "
           "Usage Rate(%), Aicore Freq/curFreq(MHZ), Aicore Count, Temperature(C), NPU Real-time Power(W); then a "
           "blank line, 'Chip Name : mcu', 'Temperature(C)'); -t board -i N ('NPU ID', [Product Name, Model, "
           "Manufacturer, Serial Number: 910B/A3/950], Software Version, Firmware Version, Compatibility, Board ID, "
           "PCB ID, BOM ID, PCIe Bus Info, Slot ID, Class ID, PCI Vendor/Device ID, Subsystem Vendor/Device ID, "
           "'Chip Count' [, 'Chip Fault']); -t board -i N -c C ('NPU ID', ['NPU Name': A3/950], 'Chip ID', ['Chip "
           "Type'], Chip Name, Chip Version, Board ID, PCB ID, BOM ID, VDie ID and NDie ID (910 family; 950: DDie "
           "Count, DDie ID), Chip Position ID, PCIe Bus Info, 'Firmware Version'); -l ('Total Count' N, a blank, "
           "then per NPU 'NPU ID', [Product Name, Serial Number], 'Chip Count', a blank); a repeated key starts "
           "a new block"),
    end=("the form's own: the NPU form's N 'Chip ID' lines (-t common: N chip blocks, each through its "
         "Temperature(C) and, on the 910 family (Aicore Count), its NPU Real-time Power(W); the MCU's lines after "
         "them are optional), -l's N records each closed by 'Chip Count', -t board -i N's 'Chip "
         "Count', -t board -i N -c C's 'Firmware Version' (310/310B SoC modules print none: read as cut); other -c "
         "forms (a line or two of one chip) state no end"),
    failures=("text with no line of npucli's key shape ('Key : Value': a key of words, a blank before the colon, "
              "a value under 257 characters) or with none of the keys that open or close a form (NPU ID, Chip ID, "
              "Chip Count, Total Count, Card Count, Health Status, Health, SDID, Super Pod Size, Chip Name, and a chip's "
              "-t memory -c form's DDR Capacity(MB) and HBM Manufacturer ID: npucli npu_info_print.c print_ddr_info, "
              "print_hbm_info, hicann/driver 999c25d; each checked on a real capture, npu_smi._FORM_KEYS) and not "
              "a one-chip -c reading (every key ending in its unit: 'NPU Real-time Power(W)'): a "
              "parse error, not npu-smi's output; "
              "'Failed to query chip count.', 'Failed to query npu chip: C info.', 'Failed to query mcu chip: C "
              "info.' (errors: not measured); the DCMI init failure instead of any line (a parse error naming it: "
              "not measured); fewer 'Chip ID' lines or records than stated, the closing key missing, '...' "
              "(errors: cut short)"),
    values="fields (the first value of each key), blocks (a dict a chip or record), errors",
)
