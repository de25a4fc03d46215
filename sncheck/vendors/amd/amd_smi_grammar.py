"""The grammars of the ``amd-smi`` views (:mod:`sncheck.vendors.amd.amd_smi`), read in the
amd-smi CLI's own source (ROCm/amdsmi ``amdsmi_cli/``, rocm-6.2.2; ROCm 6.4-7 from the
ROCm/rocm-systems monorepo's ``projects/amdsmi``: IFWI for VBIOS)."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

_CLI = "ROCm/amdsmi amdsmi_cli @ rocm-6.2.2"

# amd-smi's own failure prints (ROCm/amdsmi amdsmi_cli.py, amdsmi_cli_exceptions.py), each printed alone
# instead of the command's output: the init's logging.error ('ERROR:root:Unable to detect any GPU devices,
# check amdgpu version ...', '... driver not initialized (amdgpu not found in modules)') and the CLI's
# exceptions, '<message> Error code: <value>' ("Can not find a device: GPU '9' Error code: -3", "AMDSMI has
# returned error '-1007' - 'API call failed' Error code: -1007", "Command 'xgmi' is not supported on the
# system. ... Error code: -7")
_FAILED_SOURCE = ("ROCm/amdsmi amdsmi_cli (0ceca28, 2024) amdsmi_commands.py __init__ (logging.error), "
                  "amdsmi_cli_exceptions.py (stdout_message, json_message), amdsmi_cli.py _print_error: the failure "
                  "prints")
_FAILED = ("amd-smi's failure lines printed instead of the output ('ERROR:root:Unable to detect any GPU devices, "
           "...', '<message> Error code: -N' of the CLI's exceptions): no value, errors naming the line: not "
           "measured")

GRAMMAR = {
    "amd-smi": Grammar(
        tool="amd-smi list, static, metric (human-readable text), also a grep-ed fragment; amd-smi with no command "
             "(26.x): the boxed summary",
        versions="amd-smi 24.x (ROCm 6.0) to 26.x (ROCm 7.x)",
        sources=(
            "amd-smi with no command, 26.0.0 to 26.2.2, from eight real captures (ROCm/amdsmi PR 110, MI300X VFs, "
            "MI355X, RX 6800/9070 XT, APUs; sncheck.vendors.amd.amd_smi_summary): the banner box ('AMD-SMI <ver>  "
            "amdgpu version: <drv>  ROCm version: <rocm>', 'VBIOS version' from 26.2, 'Platform'), the GPU box (two "
            "rows a GPU: BDF, name right-aligned | Mem-Uti, Temp, UEC, Power-Usage W[/cap]; GPU, HIP-ID, OAM-ID, "
            "Partition-Mode | GFX-Uti, Fan, used/total MB; '|---+---|' between GPUs, '+---+---+' after the last), "
            "then the Processes box closed by its '+---+' (whole only when both boxes close); UEC is the GPU's "
            "accumulated uncorrectable ECC count (ROCm/rocm-systems projects/amdsmi/amdsmi_cli/subcommands/default.py: "
            "amdsmi_get_gpu_total_ecc_count's uncorrectable_count): above zero a fault",
            f"{_CLI} amdsmi_logger.py (_convert_json_to_human_readable: the device dict capitalised "
            "(_capitalize_keys), yaml.dump'ed, quotes removed, '- ' list markers made indentation, one block a "
            "device joined by blank lines)",
            "ROCm/amdsmi rocm-6.0.0/6.0.2 amdsmi_logger.py: the device dict yaml.dump'ed as is, so a device's "
            "sections start at its own 'GPU: n' column (the CLI README of 5018a57, 2023-10, and f586135, 2024-02: "
            "harvest 14's captures); from rocm-6.1.0 (180f893 'Unified human readable output tabbing with Host') "
            "every key but GPU/CPU/CORE goes under AMDSMI_SPACING_REMOVAL, 4 deeper",
            "ROCm/amdsmi rocm-6.1.0+ amdsmi_commands.py static_cpu/metric_cpu (ESMI): 'CPU: n' blocks (SMU "
            "FW_VERSION, INTERFACE_VERSION PROTO VERSION, ...) and 'CORE: n' blocks, printed before the GPUs when "
            "the host has amd_hsmp (the README's MI300A example)",
            f"{_CLI} amdsmi_commands.py (static_gpu: sections asic, bus, vbios, limit, driver, board, ras, "
            "partition, soc_pstate, xgmi_plpd, process_isolation, numa, vram, cache_info in that order, each "
            "printed when asked for, all when none is; metric_gpu: usage, power, clock, temperature, pcie, ecc, "
            "ecc_blocks, fan, voltage_curve, overdrive, perf_level, xgmi_err, energy, mem_usage, throttle)",
            f"{_CLI} amdsmi_parser.py (_add_static_parser, _add_metric_parser: each option and its short "
            "flag; -g/--gpu takes one or more indices)",
            "ROCm/rocm-systems projects/amdsmi (ROCm 6.4+): the VBIOS section prints as IFWI (--ifwi, --vbios)",
            _FAILED_SOURCE,
        ),
        lines=("[amd-smi version's line, a reporter's command before the view: 'AMDSMI Tool: V | AMDSMI Library version: V "
               "| ROCm version: V' (5.x '| Kernel version: V'; 6.4 on '| amdgpu version: V | amd_hsmp version: V'), "
               "amdsmi_commands.py version: version{NAME: value}]; "
               "'GPU: N' opens a device; then 'KEY: value' lines, 4 spaces deeper per level, every KEY upper case "
               "(amdsmi_logger's _capitalize_keys, rocm-5.5 on: a 'Chip Count : 1' or 'nvidia-peermem x:' line is "
               "another tool's; with no device line, a parse error) and one KEY at least amd-smi's own "
               "(sncheck/vendors/amd/amd_smi_keys.py: the dict keys amdsmi_commands.py and amdsmi_interface.py "
               "write: ROCm/amdsmi rocm-5.5.0 to rocm-6.2.2 and amd-staging 0ceca28, ml-energy/amdsmi's py-interface "
               "6.3.0 to 7.0.2, and the ROCm 7.1.0 CLI (TheRock's base/amdsmi), made by scripts/amd-smi-keys.py: "
               "upper-case text none of whose keys amd-smi prints is another tool's, a parse error), a 'KEY:' with "
               "nothing after it opening a section; values as the library gives them: integers, strings "
               "('N/A', '32 GT/s', an IFWI VERSION '00154951' kept as a string), units inside the string; up to "
               "ROCm 6.0.x the sections at the device line's own column (each line until the next device line is "
               "the device's). 'CPU: N' and 'CORE: N' blocks (ESMI) are cpus[], never GPUs. A "
               "command line ('$ amd-smi static --bus -g 0 1', also after bash's 'user@host:~/dir$ ' or '~$ ' prompt, "
               "or root's bare '# ' (harvest24: '# amd-smi static -g 0'): delivery.command_line) the capture "
               "shows says which sections and GPUs were asked for. amd-smi list of 26.x lists an AMD AI NIC after "
               "the GPUs: 'AI_NIC: N' and its BDF, PERMANENT_ADDRESS, PRODUCT_NAME, PART_NUMBER, SERIAL_NUMBER, "
               "VENDOR_NAME (ROCm/rocm-systems PR 3654's run: nics[], never a GPU's entries). A list of scalars "
               "(its '- ' markers made indentation) is one item a line under its 'KEY:', deeper than it: static "
               "--profile's PROFILES under NUM_PROFILES (the changelog of ROCm 7.12, harvest17): the key's list; a "
               "flow list ('[0, 0, N/A]', yaml's inner lists: metric -v's XCP_n) is kept as printed."),
        end=("none in the text itself (a blank line follows each device; a list printed under its NUM_<KEY> count "
             "holds that many items; a fixed record, a clock's CLK..DEEP_SLEEP, an ECC block's counts, a process's "
             "MEMORY_USAGE, list's GPU (BDF, UUID to 6.2.2; then KFD_ID, NODE_ID, PARTITION_ID from 6.3.0), static's "
             "ASIC, BUS, BOARD, VBIOS/IFWI, LIMIT and each cache, metric's USAGE, PCIE, POWER and TEMPERATURE (round 15: the dicts at rocm-5.7.0, "
             "6.0.0, 6.1.0, 6.2.2 and amd-staging 2024-10-23, later keys from AMD's changelog captures), holds every "
             "key of one version's dict: amd_smi_records.py, from amdsmi_commands.py and "
             "amdsmi_interface.py rocm-5.5.0 to 7.1.0, the last one open at the end stopped short of every version's "
             "is cut); with the command line: every GPU -g "
             "names, each holding every section its options ask for; in a run: the inventory's cards"),
        failures=("'ERROR'/'...failed to'/'not initialized'/'No GPUs found' lines; " + _FAILED
                  + "; '[output truncated]', '...'"),
        values="gpus[{gpu, <SECTION>: {<KEY>: value}}], nics[{nic, ...}], cpus[{cpu|core, <SECTION>: {...}}], errors",
    ),
    "amd-smi-json": Grammar(
        tool="amd-smi list, static, metric, process, topology, xgmi, firmware, bad-pages, partition, version ... --json",
        versions="amd-smi of ROCm 5.7 to 6.4 (24.x, 25.x) and 26.x (ROCm 7.x)",
        sources=(f"{_CLI} amdsmi_logger.py (_print_json_output: json.dumps([self.output] or the list of device "
                 "dicts, indent=4); _store_output_amdsmi: the id 'gpu' (cpu, core) as int(id), 'timestamp' first "
                 "under --watch)",
                 "the keys of each command's device record (sncheck/vendors/amd/amd_smi_commands.py, generated by "
                 "scripts/amd-smi-keys.py --commands from amdsmi_commands.py at ROCm/amdsmi rocm-5.7.0 to rocm-6.2.2, "
                 "amd-mainline, amd-staging 0ceca28, and TheRock's base/amdsmi of ROCm 7.1 (github:chuck-gcc/"
                 "la-pleiade 0c5a8aeb): store_output's keys, the 'values' dict's, topology's and xgmi's lists, "
                 "version's logger.output)",
                 "26.x amdsmi_logger.py combine_arrays_to_json: one object of cpu_data, core_data, gpu_data, "
                 "xgmi_metric (a list of lists), link_status, current_partition, memory_partition, partition_profiles, "
                 "partition_resources",
                 "a NIC's list record (ROCm/rocm-systems projects/amdsmi/amdsmi_cli/subcommands/list_devices.py "
                 "@1bc8b9e: bdf, permanent_address, device_name, part_number, firmware_version, product_name, "
                 "serial_number, vendor_name; its id 'nic' from the text view's 'NIC: n', not seen in a JSON capture)"),
        lines=("a JSON list of device objects ({\"gpu\": N, \"<section>\": {...}}; a value with its unit is "
               "{\"value\": V, \"unit\": U}; 'N/A' strings), each holding only keys its command prints; 26.x's "
               "combined object; version's [{tool, version, amdsmi_library_version, rocm_version[, amdgpu_version, "
               "amd_hsmp_driver_version]}]; or one object of amd-smi's keys without an id (a jq fragment); a command "
               "line before it is skipped"),
        end="the document closes; a document cut short keeps every value printed before the cut (exit 1)",
        failures=("a document that does not close; the CLI's exception in --json, printed alone: "
                  "'{\"error\": \"Can not find a device: GPU '9'\", \"code\": -3}' (amdsmi_cli_exceptions.py "
                  "json_message: no GPU, errors: not measured); a reader's paste from inside the document (a member's "
                  "key or a close before the first brace: sncheck.vendors.fragment) is refused, no GPU read; a record "
                  "whose keys no one command prints, or whose id is not an int, among amd-smi's records: an error, the "
                  "others kept; a {\"value\"} without its \"unit\" or the reverse outside the record a cut went through "
                  "(amdsmi_helpers.unit_format and the commands' literals write both): an error; a JSON value that holds no amd-smi record (any other object, list or scalar) and no "
                  "JSON at all are parse errors naming what the value is not"),
        values="gpus[{...the device object as printed...}], cpus[{cpu|core, ...}], nics[...], version{...}, "
               "26.x's link_status/current_partition/memory_partition/partition_profiles/partition_resources, errors",
    ),
    "amd-smi-monitor": Grammar(
        tool="amd-smi monitor [-p -t -u -m -v -e -r ...] [--watch]",
        versions="amd-smi 24.x (ROCm 6.0) to 26.x (ROCm 7.x; its shorter column names from a capture)",
        sources=(
            f"{_CLI} amdsmi_commands.py monitor: the header 'GPU' then each asked-for column's name "
            "right-justified to its width (POWER 7, GPU_TEMP and MEM_TEMP 10, GFX_UTIL 10, GFX_CLOCK 11, MEM_UTIL "
            "10, MEM_CLOCK 11, ENC/DEC 10/11, SINGLE_ECC and DOUBLE_ECC 12, PCIE_REPLAY 13, VRAM_USED 11, "
            "VRAM_TOTAL 12, PCIE_BW 12), in monitor's order whatever the flags'; --watch puts 'TIMESTAMP' "
            "(rjust 10, two blanks) first; a value with its unit ('182 W', '42 °C', '83 %', '1613 MHz', "
            "'283 MB') or 'N/A'",
            f"{_CLI} amdsmi_logger.py _convert_json_to_tabular: a row's cells right-justified to the same "
            "widths (the GPU index to 3): a value as wide as its column leaves one blank before it",
            "ROCm 7 (amd-smi 26.x, ROCm/rocm-systems, not stored): POWER PWR_CAP GPU_T MEM_T GFX_CLK GFX% "
            "MEM% MEM_CLOCK, read from fixtures/real/amd/12",
            "ROCm/amdsmi 0ceca28 (ROCm 6.2+) amdsmi_commands.py monitor -q and amdsmi_logger.py "
            "_print_tabular_output: after the rows, '\\nPROCESS INFO:', the secondary header ('GPU'.rjust(3), "
            "'NAME'.rjust(22), PID 9, GTT_MEM, CPU_MEM, VRAM_MEM 10, MEM_USAGE 11, GFX, ENC 8; TIMESTAMP first "
            "under --watch) and a row a process ('0.0 B', '1.1 GB', '0 ns'), or the GPU's 'No running processes "
            "detected' (its N/A placeholder: every GPU has a row); helpers.unit_format puts a unit after N/A too ('N/A Mb/s' under PCIE_BW: the changelog's "
            "6.2.0 example)",
            "ROCm 7.0 monitor -V (the changelog's 7.0.0 example, harvest17): GPU, XCP, PVIOL, TVIOL, TVIOL_ACTIVE, "
            "PHOT_TVIOL, VR_TVIOL, HBM_TVIOL, GFX_CLKVIOL, then GFXCLK_PVIOL, GFXCLK_TVIOL, GFXCLK_TOTALVIOL, "
            "LOW_UTILVIOL as lists, one value an XCC ('[0 %, 0 %, N/A]': one cell, its blanks inside it)",
            "ROCm/rocm-systems 0c0fb88 projects/amdsmi subcommands/monitor.py, the default output (no flag): GPU, "
            "XCP 5, POWER 7, GPU_T and MEM_T 8, GFX_CLK 10, GFX% MEM% ENC% DEC% 7, then one memory column "
            "'VRAM_USAGE' (or 'GTT_USAGE' on an APU: get_apu_memory_type_and_name) rjust 16, its cell "
            "f'{used/1024:5.1f}/{total/1024:5.1f} GB' ('0.3/192.0 GB'; '0.5/ 48.0 GB', a blank inside the cell "
            "under 100 GB) or N/A; the AMD SMI CLI doc's two examples (harvest24)",
        ),
        lines=("an optional command line, the header, one row per GPU (logical GPUs of a partitioned device too); "
               "with -q the PROCESS INFO table; under -w N each round again, TIMESTAMP first (sncheck.vendors.amd."
               "amd_smi_watch: handle_watch, rocm-6.1.0 on): every round read, the last one's values kept"),
        end=("none: no end line, no count; a row must have a cell per column (a cut row has fewer), and the "
             "judge's expectation (--expect, the inventory's cards) counts the rows"),
        failures=("a row with another number of cells than columns or a list cell without its ']', a GPU without "
                  "its PROCESS INFO row (-q), "
                  "'ERROR'/'failed to' lines (errors); " + _FAILED),
        values="columns, gpus[{gpu, <COLUMN>: 'value unit'}], processes[{gpu, NAME, PID, <COLUMN>: ...}] (-q), "
               "rounds (-w: how many; gpus and processes are the last round's), errors",
    ),
    "amd-smi-topology": Grammar(
        tool="amd-smi topology [-a -w -o -t -b]",
        versions="amd-smi 24.x (ROCm 6.0) to 26.x (ROCm 7.x)",
        sources=(
            f"{_CLI} amdsmi_commands.py topology (and rocm-6.0.2, rocm-6.1.0, rocm-6.2.0, ROCm/rocm-systems "
            "projects/amdsmi subcommands/topology.py: the same default): with no option every table (ACCESS, WEIGHT, "
            "HOPS, LINK TYPE, NUMA BW, then from 6.3 CACHE COHERANCY, ATOMICS, DMA, BI-DIRECTIONAL), each "
            "'<NAME> TABLE:', a "
            "header (''.rjust(12), then each GPU's BDF .rjust(13)) and a row per GPU ('<bdf> ' then a cell a "
            "GPU .ljust(13): ENABLED/DISABLED/N/A, a weight or hop count, SELF/XGMI/PCIE/UNKNOWN/N/A, "
            "'<min>-<max>' NUMA bandwidth or N/A); print_output leaves a blank line between tables",
            f"{_CLI} amdsmi_logger.py _convert_json_to_tabular: 'gpu_' keys ljust(13)",
            "ROCm/amdsmi 0ceca28 (ROCm 6.3) amdsmi_parser.py topology: -c/--coherent, -n/--atomics, -d/--dma, "
            "-z/--bi-dir ask for the CACHE COHERANCY, ATOMICS, DMA and BI-DIRECTIONAL tables (argparse: '-cndz' "
            "is the four); amdsmi_commands.py topology prints its 'Legend:' lines (SELF, ENABLED / DISABLED, N/A, "
            "T/F, C/NC, 64,32, <BW from>-<BW to>) after the last table (the changelog's 6.3.0 example)",
        ),
        lines="an optional command line, then the asked-for tables in topology()'s order, then (6.3+) the Legend",
        end=("each table is square (a row per BDF of its header); with the command line, every table its "
             "options ask for (none: ACCESS to NUMA BW, and the four io-link tables where the 6.3+ Legend is "
             "printed); without it nothing says which tables were asked for"),
        failures=("a row with another number of cells than GPUs, a table its command asked for missing (errors); "
                  + _FAILED),
        values="tables{<NAME>: {<bdf>: {<bdf>: value}}}, errors",
    ),
}
