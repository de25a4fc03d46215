"""The grammar of ``mlxlink`` (:mod:`sncheck.vendors.infiniband.mlxlink`), from mstflint's source."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

GRAMMAR = {"mlxlink": Grammar(
    tool="mlxlink -d DEV [-m] [-c] [-e] [--json] (mstflint, NVIDIA MFT)",
    versions="mstflint 4.14 to 4.3x, MFT 4.2x to 4.3x",
    sources=(
        "Mellanox/mstflint mlxlink/modules/printutil/mlxlink_cmd_print.cpp @ b9d9e84 (MlxlinkCmdPrint: a section "
        "is '\\n' TITLE '\\n' and a '-' rule as long as the title, then one MlxlinkRecord a line)",
        "Mellanox/mstflint mlxlink/modules/printutil/mlxlink_record.cpp (operator<<: the key padded to 37 columns, "
        "': ', the value, coloured where the state is bad)",
        "Mellanox/mstflint mlxlink/modules/mlxlink_commander.cpp (prepareBasicData / showModuleInfo / showBer / "
        "showEye: the sections Operational Info, Supported Info, Troubleshooting Info, Tool Information, Module "
        "Info (-m), Physical Counters and BER Info (-c), EYE Opening Info (-e); the JSON writer's result.output "
        "and status {code, message}; '-E- ' errors)",
    ),
    lines=("sections, each a TITLE line, a '-' rule as long as it, then 'KEY<pad to 37>: VALUE' records: Operational "
           "Info (State Active|Polling|Disable|Physical LinkUp..., Physical state, Speed IB-NDR|400G, Width 4x, FEC, "
           "Loopback Mode, Auto Negotiation), Supported Info, Troubleshooting Info (Status Opcode, Group Opcode, "
           "Recommendation), Tool Information (Firmware Version, amBER Version, MFT Version), Module Info, "
           "Physical Counters and BER Info (Time Since Last Clear [Min]: minutes as '%.1f', 25074.8 -- "
           "mlxlink_commander.cpp prepareBerInfo, the amBER collector's field; Effective Physical Errors, Effective "
           "Physical BER '15E-255', Raw Physical Errors Per Lane '0,0,0,0', Raw Physical BER, Link Down Counter, "
           "Link Error Recovery Counter), EYE Opening Info; 'N/A' where the device does not say; --json: "
           "{result: {output: {TITLE: {KEY: VALUE | {values: [...]}}}}, status: {code, message}}"),
    end=("Operational Info with its State (printed first, whatever the options) and Troubleshooting Info with its "
         "Recommendation (every run but a PRBS test); where the command line is pasted with it, the sections its "
         "-m / -c / -e (--show_module, --show_counters, --show_eye) add, -c's through its 'Raw Physical BER' record, "
         "--show_ber_monitor's 'BER Monitor Info' through 'BER Monitor Type' (showBerMonitorInfo) unless mlxlink's "
         "'-E- \"--show_ber_monitor\" option is not supported for HCA' stands in its place (harvest 12's 8-HCA loop) "
         "(harvest7's BlueField-3 capture: a cut inside Module Info read as whole), a long option as getopt_long "
         "takes it, abbreviated to a unique prefix ('--show_mo', harvest 9); Tool Information, where printed, through "
         "its last record, runningVersion's PKG_NAME ' Version' (printed by every mlxlink since mstflint 4.18, 121a3904: "
         "required where the output shows it is that new, a pasted '--amber_collect' or 'Physical state : N/A'; "
         "harvest 12's random cuts of cluster-toolkit's NVLink capture) (MFT Version / mstflint Version; amBER Version only "
         "on 16 nm devices on: mlxlink_commander.cpp); JSON that parses whole"),
    failures=("'-E- ...' lines or JSON status code 1 (errors); State not Active, a Status Opcode other than 0, "
              "Link Down Counter, Link Error Recovery Counter or Effective Physical Errors above zero (faults), in each "
              "output a file holds (a loop over devices: 'output K of N: ...')"),
    values=("format, sections{TITLE: {KEY: VALUE}}, state, physical_state, speed, width, fec, status_opcode, "
            "recommendation, firmware, counters{link_down, link_error_recovery, effective_errors, effective_ber, "
            "raw_ber, raw_errors_per_lane, symbol_errors, symbol_ber, minutes_since_clear}, faults, errors"),
)}
