"""The grammars of the ``rocm-smi`` views (:mod:`sncheck.vendors.amd.rocm_smi`), read in the
CLI's own source: ROCm/rocm_smi_lib ``python_smi_tools/rocm_smi.py`` (a Python script over
the library; its history dates each layout: the tag that first holds a change)."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

_SMI = "ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py @ a129571 (rsmi 7.2.0, ROCm 6.2/6.3)"
_SPACER = ("printLogSpacer: the title centred in '=' (made even by one '='), as wide as the log (90) or, for "
           "the concise table, its header line")
_MAIN = ("main(): two blank lines, the ' ROCm System Management Interface ' spacer, the options' output, the "
         "' End of ROCm SMI Log ' spacer; 'ERROR: No DRM devices available. Exiting' alone when there is no GPU")

GRAMMAR = {
    "rocm-smi": Grammar(
        tool="rocm-smi (no option: the Concise Info table)",
        versions="rocm-smi of ROCm 2.x to 6.x (rocm_smi_lib 7.x): four layouts",
        sources=(
            f"{_SMI} showAllConcise: header Device, Node, IDs, Temp, Power, Partitions, SCLK, MCLK, Fan, Perf, "
            "PwrCap, VRAM%, GPU% over a subheader ((DID, GUID), the temperature's label '(Junction)'/'(Edge)', "
            "the power's '(Socket)'/'(Avg)', '(Mem, Compute, ID)'), each column as wide as its widest word + 2; "
            "cells '43.0°C', '155.0W', 'NPS1, SPX, 0', '94Mhz', '0%', perf lower-cased ('auto', 'manual', 'n/a', "
            "'unsupported'), 'N/A' where a partition past the first has no power management; '=' spacers around "
            "the rows, the footer after; the Partitions cell getMemoryPartition + ', ' + getComputePartition + "
            "', ' + getPartitionId: each 'N/A' where the library cannot read it ('N/A, N/A, 1': a secondary "
            "partition), the ID '{:d}' (a failed ID read returns None, which the concatenation cannot print), "
            "kept as printed (partitions: the text, never null where the row prints it); the identity cells "
            "getNodeId, getDRMDeviceId + ', ', getGUID each 'N/A' where the library cannot say (null; the cells "
            "after them are read by the header's place, never shifted)",
            f"{_SMI} history: 'Device [Model : Revision]' with the name on a second line and '(Mem, Compute)' "
            "(755e14d, 3602447: rocm-6.0.0); Node and IDs (4b5ccb5: rocm-6.1.0); the partition ID (c2035fa: "
            "rocm-6.1.2)",
            "ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py @ rocm-5.7.0 showAllConcise: 'GPU  Temp (DieEdge)  "
            "AvgPwr  SCLK  MCLK  Fan  Perf  PwrCap  VRAM%  GPU%', the temperature '35.0c', VRAM% '% 3.0f%%', no "
            "subheader; ROCm 2.x-3.x 'GPU Temp AvgPwr ...' (the captures under fixtures/real/r3/rocm-smi); the 2017 "
            "ROC-smi (AMDGPU-PRO 17.x) 'GPU  DID  Temp  AvgPwr  SCLK  MCLK  Fan  Perf  OverDrive  ECC' in fixed-width "
            "cells, a device without PowerPlay 'None%' fan and a blank Perf (ROC-smi-issue10: read by column place)",
            f"{_SMI} {_SPACER}; {_MAIN}",
            f"{_SMI} showAllConcise (harvest26): a Perf getPerfLevel cannot read is 'Unsupported' (lower-cased with "
            "the level: 'unsupported'; the library's own level may read 'unknown'), a PwrCap or GPU% whose getter "
            "returned -1 prints 'Unsupported' (not lower-cased): a whole row, those cells null; printLog prints the "
            "subheader in italics ('\\x1b[3m'...'\\x1b[0m'; an archive may keep '[3m' without its ESC) and, on a "
            "UnicodeEncodeError (a non-UTF-8 locale), the line encode('ascii', 'ignore')d: '43.0C' without the "
            "degree sign; a paste may keep one stand-in for the sign ('32.0_C', '?', U+FFFD, cp1252's 'Â°C')",
            "ROCm/rocm_smi_lib src/rocm_smi.cc @ a129571 get_dev_mon_value: 'Expected integer value from monitor, "
            "but got \"X\"' on stderr when a hwmon file held no integer (RSMI_STATUS_UNEXPECTED_DATA; the cell "
            "prints N/A): a sensor not read (ROCm/ROCm issue 4134's dead W7800s, twelve such lines before the table)",
            "ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py printLog(device, metricName, value): 'GPU[%d]\\t\\t: %s: "
            "%s' in text (--showmetrics' 'GPU Metrics' section, --showallinfo), formatJson's {\"card%d\": {metricName: "
            "value}} under --json (printSysLog's pairs under \"system\"), printed once at the end: the metric names "
            "by ROCm version (telegraf's amd_rocm_smi test data: ROCm 4.3.0 'GPU ID', 6.0.2 'Device ID'; 'Average "
            "Graphics Package Power (W)' to 5.x, 'Current Socket Graphics Package Power (W)' on 6.x; harvest8): "
            "sncheck.vendors.amd.rocm_smi_log",
            "ROCm/ROC-smi rocm_smi.py (1.x, 2016-2018) printLog(device, one string): 'Temperature: %sc', 'GPU Clock "
            "Level: L (FREQ)', 'GPU Memory Clock Level: L (FREQ)', 'Fan Level: L (S)%', 'Average Graphics Package "
            "Power: %sW', 'Max Graphics Package Power: %sW', 'Current GPU use: %s%', 'Current PowerPlay Level'; 2.x "
            "'Temperature (Sensor edge) (c)', 'Fan Level: L (S%)' (real captures ROCm/ROC-smi#22 and #62, harvest 22)",
            f"{_SMI} showCurrentClocks (-a, -c): printLog(device, '%s clock level: %s' % (clk_type, freq_index), "
            "'(%sMhz)'): 'sclk clock level: 1: (2100Mhz)', the level in the metric name (8f9f943, 2020 on); a named "
            "clock '{} clock level' with '{} ({:.0f}Mhz)'; freq_index 'S' the deep-sleep level (3d40c4b: "
            "rocm-6.0.0): 'sclk clock level: S: (137Mhz)' (harvest 27's MI300X 'rocm-smi -a'); the clock is the value",
        ),
        lines=("the banner, the ' Concise Info ' spacer, the header (and subheader), a '=' spacer, one row per "
               "GPU (ROCm 6.0: and its name line), a '=' spacer, the footer; or --json's document, or a --show* "
               "option's 'GPU[N]\\t\\t: metric: value' lines (read by metric name into the same values)"),
        end="the ' End of ROCm SMI Log ' spacer; without it the output was cut; --json: the document closes",
        failures=("'ERROR: No DRM devices available. Exiting'; rocm-smi --json's 'WARNING: No JSON data to "
                  "report' (errors); main()'s 'WARNING: One or more commands failed' before the footer (errors: "
                  "rocm_smi.py 8f9f943 to rocm-5.0.2 logging.warning when RETCODE is set, then exit(RETCODE); "
                  "rocm-5.1.0 on logging.debug, 007f326: harvest 29's LUMI capture of ROCm 5.0, dropped before); the library's 'Expected integer value from monitor, but got \"...\"' (a sensor "
                  "it could not read: not measured); a row with fewer cells than the whole ones (cut); rows pasted without the "
                  "banner and header (a reporter's excerpt from inside the table, told from other lines by the "
                  "identity cells or a '°C' beside a 'Mhz': legacy-rocm-build issue 4750, harvest 9): read, and an "
                  "excerpt, never whole"),
        values=("gpus[{device, node, did, guid (6.1 on: Node, IDs (DID, GUID)), model, revision (6.0: [Model : "
                "Revision]), temp_C, power_W, partitions, sclk_MHz, mclk_MHz, fan_pct, perf, pwrcap_W, vram_pct, "
                "gpu_pct, name (ROCm 6.0) (a layout's missing cells null); the log form: metrics {metricName: value "
                "as printed}}], driver_version (--json's system), warnings, errors"),
    ),
    "rocm-smi-showtopo": Grammar(
        tool="rocm-smi --showtopo",
        versions="rocm-smi of ROCm 5.x to 6.x",
        sources=(
            f"{_SMI} showHwTopology: showWeightTopology, showHopsTopology, showTypeTopology (a blank line after "
            "each), showNumaTopology",
            f"{_SMI} showWeightTopology & co.: the title spacer ('Weight between two GPUs', 'Hops between two "
            "GPUs', 'Link Type between two GPUs'), printTableRow's header ('      ' then 'GPU%d' as '%-12s', "
            "each cell followed by ' '), a row per GPU ('%-6s' its name, '%-12s' each cell: 0 on the diagonal, "
            "the weight or hop count, 'PCIE'/'XGMI'/'XXXX', 'N/A' where the library cannot read it)",
            f"{_SMI} showNumaTopology: the ' Numa Nodes ' spacer, 'GPU[%s]\\t\\t: (Topology) Numa Node: %s' and "
            "'... Numa Affinity: %s' per GPU (pasted: the tabs as blanks, or the brackets lost, 'GPU 0          :' "
            "in two HPC centres' pages of one node, harvest7); a matrix row starts with its 'GPU%d', so a "
            "reporter's line after the matrix ('****') is not one",
            f"{_SMI} the low-power check: 'WARNING: AMD GPU device(s) is/are in a low-power state. Check power "
            f"control/runtime_status'; {_MAIN}",
        ),
        lines=("the banner, then the three GPU x GPU matrices, the NUMA lines, the footer; --showtopoweight, "
               "--showtopohops, --showtopotype and --showtoponuma print one section each between the same banner "
               "and footer (rocm_smi.py main: each flag calls its show*Topology; real capture "
               "ROCm/legacy-rocm-build#4740, --showtoponuma)"),
        end="the ' End of ROCm SMI Log ' spacer; each matrix has a row per GPU its header names",
        failures=("a row with fewer cells than GPUs, 'Cannot read' / 'ERROR' lines, main()'s 'WARNING: One or more "
                  "commands failed' (errors, as rocm-smi's); in a judgement, a "
                  "pair that is not direct over XGMI (checks.check_xgmi_topo)"),
        values=("gpus, weight{GPUi: {GPUj: n}}, hops{...}, link_type{...}, numa{GPUi: node}, numa_affinity{GPUi: "
                "node} (a section the output does not print: null), warnings, errors"),
    ),
    "rocm-smi-showpids": Grammar(
        tool="rocm-smi --showpids",
        versions="rocm-smi of ROCm 4.x to 6.x",
        sources=(
            f"{_SMI} showPids: the ' KFD Processes ' spacer, then 'No KFD PIDs currently running' or 'KFD process "
            "information:' and print2DArray's table (PID, PROCESS NAME, GPU(s), VRAM USED, SDMA USED, CU "
            "OCCUPANCY: each cell left-justified to its column's widest, then a tab; 'UNKNOWN' where the "
            "library cannot read the process), then a '=' spacer",
            f"{_SMI} {_MAIN}",
            f"{_SMI} getPidList, rsmi_ret_ok (printLog(None, metric + ', ' + the status's text) for a status of "
            "rsmiBindings.py's rsmi_status_verbose_err_out)",
        ),
        lines="the banner, the KFD Processes spacer, the table (or the no-process line), a '=' spacer, the footer",
        end="the ' End of ROCm SMI Log ' spacer",
        failures=("'ERROR:' lines ('ERROR: No DRM devices available. Exiting' alone: no process); main()'s "
                  "'WARNING: One or more commands failed' (errors, as rocm-smi's); getPidList's "
                  "failed call, rsmi_ret_ok's 'get_compute_process_info, <status>' ('Permission denied', ...) "
                  "before the 'No KFD PIDs currently running' it then prints: not measured; a per-process call's "
                  "failure, rsmi_ret_ok's 'get_gpu_compute_process, <status>' (the GPU(s) cell stays UNKNOWN) or "
                  "'get_compute_process_info_by_pid, <status>' (VRAM, SDMA, CU stay UNKNOWN; 'Not supported on the "
                  "given system' on a W6800, harvest26 capture 01), printed as the loop runs, so above 'KFD process "
                  "information:': those cells not measured (errors; rocm_smi.py @a129571 showPids, rsmi_ret_ok, "
                  "rsmiBindings rsmi_status_verbose_err_out; CU OCCUPANCY alone UNKNOWN is cu_occupancy 0xFFFFFFFF, no "
                  "line: not a failure); a row the table does not hold (errors)"),
        values="processes[{pid, name, gpus, vram_bytes, sdma, cu_occupancy (null: UNKNOWN)}], errors",
    ),
}
