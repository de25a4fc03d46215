"""The grammars of the ``amd-smi`` views (:mod:`sncheck.vendors.amd.amd_smi`), read in the
amd-smi CLI's own source (ROCm/amdsmi ``amdsmi_cli/``, rocm-6.2.2; ROCm 6.4-7 from the
ROCm/rocm-systems monorepo's ``projects/amdsmi``: IFWI for VBIOS)."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

_CLI = "ROCm/amdsmi amdsmi_cli @ rocm-6.2.2"

GRAMMAR = {
    "amd-smi": Grammar(
        tool="amd-smi list, static, metric (human-readable text), also a grep-ed fragment",
        versions="amd-smi 24.x (ROCm 6.0) to 26.x (ROCm 7.x)",
        sources=(
            f"{_CLI} amdsmi_logger.py (_convert_json_to_human_readable: the device dict capitalised "
            "(_capitalize_keys), yaml.dump'ed, quotes removed, '- ' list markers made indentation, one block a "
            "device joined by blank lines)",
            f"{_CLI} amdsmi_commands.py (static_gpu: sections asic, bus, vbios, limit, driver, board, ras, "
            "partition, soc_pstate, xgmi_plpd, process_isolation, numa, vram, cache_info in that order, each "
            "printed when asked for, all when none is; metric_gpu: usage, power, clock, temperature, pcie, ecc, "
            "ecc_blocks, fan, voltage_curve, overdrive, perf_level, xgmi_err, energy, mem_usage, throttle)",
            f"{_CLI} amdsmi_parser.py (_add_static_parser, _add_metric_parser: each option and its short "
            "flag; -g/--gpu takes one or more indices)",
            "ROCm/rocm-systems projects/amdsmi (ROCm 6.4+): the VBIOS section prints as IFWI (--ifwi, --vbios)",
        ),
        lines=("'GPU: N' opens a device; then 'KEY: value' lines, 4 spaces deeper per level, a 'KEY:' with "
               "nothing after it opening a section; values as the library gives them: integers, strings "
               "('N/A', '32 GT/s', an IFWI VERSION '00154951' kept as a string), units inside the string. A "
               "command line ('$ amd-smi static --bus -g 0 1') the capture shows says which sections and GPUs "
               "were asked for."),
        end=("none in the text itself (a blank line follows each device); with the command line: every GPU -g "
             "names, each holding every section its options ask for; in a run: the inventory's cards"),
        failures="'ERROR'/'...failed to'/'not initialized'/'No GPUs found' lines; '[output truncated]', '...'",
        values="gpus[{gpu, <SECTION>: {<KEY>: value}}], errors",
    ),
    "amd-smi-json": Grammar(
        tool="amd-smi list, static, metric, ... --json",
        versions="amd-smi 24.x (ROCm 6.0) to 26.x (ROCm 7.x)",
        sources=(f"{_CLI} amdsmi_logger.py (_print_json_output: json.dumps(list of device dicts, indent=4); "
                 "newer releases wrap it as {\"gpu_data\": [...]})",),
        lines=("a JSON list of device objects ({\"gpu\": N, \"<section>\": {...}}; a value with its unit is "
               "{\"value\": V, \"unit\": U}; 'N/A' strings), or {\"gpu_data\": [...]}, or one object (a jq "
               "fragment); a command line before it is skipped"),
        end="the document closes; a document cut short keeps every value printed before the cut (exit 1)",
        failures="a document that does not close; no JSON at all is a parse error",
        values="gpus[{...the device object as printed...}], errors",
    ),
}
