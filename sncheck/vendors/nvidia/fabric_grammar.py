"""The grammars of the NVL72 / MNNVL views (:mod:`sncheck.vendors.nvidia.fabric`): ``nvidia-smi
-q -x``, the Fabric section of ``nvidia-smi -q``, ``nvidia-smi nvlink -info``, ``nvidia-imex-ctl
-N`` and NCCL's MNNVL lines. nvidia-smi and nvidia-imex-ctl are closed: NVIDIA's documentation
and every real capture found; NCCL's lines are read from its source."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

_CAPTURES = "closed: the real captures under fixtures/real/ ({})"

GRAMMAR = {
    "nvidia-smi-qx": Grammar(
        tool="nvidia-smi -q -x",
        versions="drivers 340 to 580 (no -q -x of 590 or later seen; DTD nvsmi_device_v6 on 340, v9 390, v10 430, "
                 "v11 470-515, v12 535-570, v13 580: clocks_throttle_reasons renamed clocks_event_reasons and power_readings "
                 "gpu_power_readings in v12, average/instant_power_draw from 550, fabric on 535 (not on 515), platformInfo "
                 "and capabilities from 560)",
        sources=(
            "closed: NVIDIA nvidia-smi documentation (nvidia-smi.txt man page: -x/--xml-format, --dtd; the "
            "element names of the DTDs nvsmi_device_v6 to v13 the documents name in their DOCTYPE)",
            _CAPTURES.format("nvl72/04: a GB200 tray, 580.173.02 DTD v13 with fabric and platformInfo; r3: "
                             "535.54.03 4x A100 MIG (v12), 515.105.01 A10G (v11); r4: 570.148.08 A100 (v12); "
                             "harvest: 340.102 v6 (no cuda_version, a 4-digit PCI domain), 390.157 v9, 430.64 "
                             "v10, 535.54.03 v12 MIG, each cut by its reporter"),
        ),
        lines=("'<?xml version=\"1.0\" ?>', '<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_vN.dtd\">', "
               "<nvidia_smi_log> holding timestamp, driver_version, cuda_version (from v9; none on 340), "
               "attached_gpus, then one <gpu id=\"DDDDDDDD:BB:DD.F\"> per GPU (a 4-digit domain before v9), one "
               "element a line indented by tabs (blanks in some captures): product_name, mig_mode "
               "{current_mig, pending_mig} and mig_devices (mig_device {index, gpu_instance_id, "
               "compute_instance_id, ecc_error_count, fb_memory_usage ...} or the text None; A100 on), uuid, "
               "platformInfo {chassis_serial_number, slot_number, tray_index, host_id, peer_type, module_id, "
               "gpu_fabric_guid} (560 on), pci {pci_gpu_link_info {pcie_gen {max_link_gen, current_link_gen}, "
               "link_widths {max_link_width '16x', current_link_width}}, replay_counter}, performance_state, "
               "clocks_throttle_reasons / clocks_event_reasons {clocks_..._reason_gpu_idle .. display_clocks_"
               "setting: Active / Not Active}, fb_memory_usage {total, reserved (470 on), used, free: 'N MiB'}, "
               "utilization {gpu_util ... 'N %'}, ecc_mode {current_ecc, pending_ecc}, ecc_errors {volatile, "
               "aggregate: sram_correctable .. dram_uncorrectable (A100 on, sram_threshold_exceeded last in "
               "aggregate) or single_bit/double_bit {device_memory .. total}}, retired_pages {multiple_single_"
               "bit_retirement, double_bit_retirement {retired_count}, pending_blacklist, pending_retirement}, "
               "remapped_rows {remapped_row_corr, _unc, _pending, _failure, row_remapper_histogram {_max .. "
               "_none 'N bank(s)'}} or 'N/A', temperature {gpu_temp 'N C', ...}, power_readings / gpu_power_"
               "readings {power_draw or average_power_draw and instant_power_draw 'N.NN W', current_power_limit "
               "...}, clocks, fabric {state, status, cliqueId, clusterUuid, health {summary, bandwidth, route_"
               "recovery_in_progress, route_unhealthy, access_timeout_recovery, incorrect_configuration, "
               "partition_assigned}} (525 on), processes {process_info ...}, accounted_processes, capabilities "
               "{egm} (560 on); 'N/A' where the GPU does not say"),
        end="'</nvidia_smi_log>' closes the document (XML: any cut before it is not well-formed); "
            "'attached_gpus' states how many <gpu> elements follow",
        failures=("'No devices were found', 'NVIDIA-SMI has failed because it couldn't communicate with the "
                  "NVIDIA driver ...', 'Failed to initialize NVML: ...' printed in place of the document "
                  "(errors); a reader's paste from inside the document (no <nvidia_smi_log>, elements closed "
                  "before any opening: refused, naming where it starts, sncheck.vendors.fragment; no GPU read); "
                  "a document not well-formed (cut: errors, what closed before the cut kept), fewer "
                  "<gpu> elements than attached_gpus, a bus id or UUID twice (errors); what -q's query checks judge, "
                  "judged alike (faults: a link narrower than its max width, a volatile uncorrectable ECC "
                  "count, a pending row remap or page retirement, HW Slowdown active), as a run's query_fabric "
                  "judges them; the fabric's states are values, judged by a platform's fabric checks"),
        values=("driver_version, cuda_version, attached_gpus, gpus[{bus_id, product_name, uuid, persistence_mode, "
                "product_brand, product_architecture, serial_number (<serial>), minor_number, vbios_version, board_id, "
                "gpu_part_number, module_id (<gpu_module_id>), gsp_firmware_version, virtualization_mode "
                "(<gpu_virtualization_mode><virtualization_mode>), mig, temperature, "
                "power, pcie, memory, utilization, performance_state, ecc{mode_current, mode_pending, "
                "volatile{COUNTER: n} ('Double Bit/Total' as -q names it), aggregate}, retired_pages, "
                "remapped_rows, clock_reasons, fabric, platform}], errors: the shape of nvidia-smi-q"),
    ),
    "nvidia-smi-fabric": Grammar(
        tool="nvidia-smi -q (its Fabric and Platform Info sections), -q -x, a grep -A excerpt, gpud's table",
        versions="drivers 525 to 590 (Health without Summary on 570, with Summary, Incorrect Configuration and "
                 "Partition Assigned on 580; keys padded to column 42, 51 from 590); gpud's table of its PR 1108",
        sources=(
            "closed: NVIDIA nvidia-smi documentation (man page 'Fabric': State, Status, CliqueId, ClusterUUID, "
            "Health; 'Platform Info'), NVML nvmlGpuFabricInfo_v3 (the states and health mask it prints)",
            _CAPTURES.format("nvl72/05: Completed/Success but Unhealthy (grep -C3 excerpt); nvl72/06: Insufficient "
                             "Resources (grep -A4); nvl72/07: In Progress with every Health row N/A; nvl72/04: "
                             "the -q -x of a GB200 tray"),
            "leptonai/gpud PR 1108: its fabric state table ('| GPU UUID | ... |' rows between '+---+' rules)",
        ),
        lines=("in -q, per 'GPU <bus id>' section: 'Platform Info' {Chassis Serial Number, Slot Number, Tray Index, "
               "Host ID, Peer Type, Module Id} and 'Fabric' {State (Not Supported, Not Started, In Progress, "
               "Completed), Status (Success, Insufficient Resources, ..., N/A), CliqueId (a number or N/A), "
               "ClusterUUID, Health {Summary (Healthy, Unhealthy, Limited Capacity, N/A), Bandwidth (Full, "
               "Limited Capacity, N/A), Route Recovery in progress, Route Unhealthy, Access Timeout Recovery, "
               "Incorrect Configuration, Partition Assigned: True / False / N/A}}, 'Key<blanks>: value' four "
               "blanks deeper a level; a grep excerpt: the Fabric blocks alone, '--' between them; gpud: per GPU "
               "a table of '| KEY | VALUE |' rows (GPU UUID, Clique ID, State, Status, Health Summary, Bandwidth, "
               "Route Recovery, Route Unhealthy, Access Timeout Recovery) between '+---+' rules"),
        end="-q: its own (Attached GPUs, every GPU through Processes, Capabilities from 560: nvidia-smi-q); -q -x: "
            "'</nvidia_smi_log>'; an excerpt: each block through ClusterUUID, a Health heading with an entry, "
            "every block the entries of the first; gpud: each table through its closing rule with the first's rows",
        failures=("the nvidia-smi failure lines (errors); a cut (errors), a GPU UUID of hex short of NVML's "
                  "'GPU-' 8-4-4-4-12 included (a line wrapped inside it); the registration states are values: a "
                  "run's fabric checks judge them (fabric_state, fabric_health, fabric_clique), sncheck parse "
                  "reports them and exits 0"),
        values=("gpus[{bus_id, uuid, product_name, fabric{state, status, clique_id, cluster_uuid, health{summary, "
                "bandwidth, route_recovery_in_progress, route_unhealthy, access_timeout_recovery, "
                "incorrect_configuration, partition_assigned}}, platform{chassis_serial, slot, tray, host_id, "
                "peer_type, module_id}}], errors"),
    ),
    "nvlink-info": Grammar(
        tool="nvidia-smi nvlink -info",
        versions="drivers 570 to 590 on Blackwell (GB200, GB300, B200)",
        sources=(
            "closed: NVIDIA nvidia-smi documentation (nvidia-smi nvlink -h: -info), NVML API reference 'NvLink "
            "Methods' (NVML_NVLINK_FIRMWARE_UCODE_TYPE_MSE 0x1, NETIR 0x2, NETIR_UPHY 0x3, NETIR_CLN 0x4, "
            "NETIR_DLN 0x5: the firmware versions it prints, in that order)",
            _CAPTURES.format("nvl72/10: a GB200 tray of NVIDIA/k8s-test-infra issue 371, cut in GPU 2's header"),
        ),
        lines=("per GPU in index order 'GPU N: NAME (UUID: GPU-...)', then nine blanks 'NVLE: enabled|disabled' "
               "(NVLink encryption), 'Firmware Version:' and, four blanks deeper, one 'UCODE: a:b:c' line per "
               "firmware: MSE, NETIR, NETIR UPHY, NETIR CLN, NETIR DLN"),
        end="none printed: every GPU prints NVLE and its firmware versions through NETIR DLN (the last type NVML "
            "defines) and the firmware the first GPU lists; the GPUs against the judge's count (--expect N)",
        failures=("'NVML: Unable to retrieve NVLink information as all links are inactive' under a GPU (its "
                  "errors and the view's), the nvidia-smi/NVML failure lines (errors); a GPU cut short (errors)"),
        values="gpus[{index, name, uuid, nvle, firmware{UCODE: version}, errors}], errors",
    ),
    "imex-ctl": Grammar(
        tool="nvidia-imex-ctl -N [-c CONFIG]",
        versions="IMEX 570 on (the capture: 570.172; the daemon is versioned as the driver)",
        sources=(
            "closed: NVIDIA IMEX guide, 'IMEX Service Command Service' (nvidia-imex-ctl --help: -N the full status "
            "of the domain; -H a hostname beside each address and -j JSON are not read by this view)",
            _CAPTURES.format("nvl72/01: 18 nodes READY, all C, Domain State UP (AWS ParallelCluster docs, "
                             "u-p6e-gb200x72, IMEX 570.172)"),
        ),
        lines=("the legend 'Connectivity Table Legend:' and its nine 'CODE - meaning' lines (I, N, R, D, A, !V!, "
               "!M!, C), a blank, a timestamp 'M/D/YYYY HH:MM:SS.mmm', 'Nodes:', one 'Node #K - ADDRESS - STATE "
               "- Version: V' line per node of the config (K from 0, padded; STATE READY, UNAVAILABLE, ...), a "
               "blank, ' Nodes From\\To' and the node numbers, one row per node: its number and a cell per node "
               "(C, N, I, R, D, A, !V!, !M!), a blank, 'Domain State: UP|DEGRADED|DOWN'"),
        end="'Domain State: S', the last line; the table has a row for every node listed (a reporter's '...' is read "
            "in the legend, which carries no value; anywhere else it stands for nodes, rows or the state: not whole)",
        failures=("no failure line of its own is known (closed: neither the IMEX guide nor a capture shows one); "
                  "a line saying error, failed, could not or unable is read as one (errors; the legend's lines aside); a cut "
                  "(no Domain State, fewer rows than nodes, a row short of cells: errors); node states, cells "
                  "and the domain state are values: a run's imex check judges them (imex_domain, and imex_node "
                  "across the rack), sncheck parse exits 0 on them"),
        values="nodes[{index, address, state, version}], matrix{ROW: {COLUMN: cell}}, domain_state, errors",
    ),
    "nccl-mnnvl": Grammar(
        tool="an NCCL_DEBUG=INFO log (nccl-tests or a training job) read for its MNNVL lines",
        versions="NCCL 2.21 to 2.30 (the cliqueSize line from 2.21 in init.cc, mnnvl.cc from 2.25; the 'not "
                 "working' WARN and the busId line from 2.27; nvlDomainSize from 2.30)",
        sources=(
            "NVIDIA/nccl src/mnnvl.cc @ v2.25.1-1..v2.30.7-1: 'MNNVL %d cliqueId %x cliqueSize %d cliqueRank %d' "
            "(+ ' nvlDomainSize %d' @ v2.30.3-1), the WARN 'MNNVL (cliqueSize %d) is available but not working "
            "on this system. Check the IMEX channel configuration (/dev/nvidia-caps-imex-channels) | the IMEX "
            "configuration (nvidia-imex-ctl -N). Set NCCL_MNNVL_ENABLE=0 to ignore this issue.' @ v2.27.3-1 on",
            "NVIDIA/nccl src/init.cc @ v2.21.5-1..v2.23.4-1: the cliqueSize line (printed with MNNVL 0 too, a "
            "trailing blank); @ v2.21.5-1 on: 'comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d "
            "MNNVL %d'; @ v2.27.3-1 on: 'MNNVL busId 0x%lx fabric UUID %lx.%lx cliqueId 0x%x state %d "
            "healthMask 0x%x'; @ v2.30.3-1: 'Cross-clique P2P enabled: nvlDomainSize=%d cliqueSize=%d'",
            "NVIDIA/nccl src/transport/nvls.cc: 'NVLS multicast support is %savailable on dev %d' (+ ' "
            "(NVLS_NCHANNELS %d)' @ v2.27.3-1); src/debug.cc: the prefix 'HOST:PID:TID [DEV] NCCL INFO ' and "
            "'[DEV] FILE:LINE NCCL WARN '; init.cc VERSION_STRING 'NCCL version X.Y.Z+cudaC.D'",
        ),
        lines=("a log: any lines; of them, per rank, 'NCCL version V+cudaC' (rank 0), the busId line where the "
               "GPU reports fabric info, the cliqueSize line where MNNVL is checked and on, the comm line with "
               "nRanks and 'MNNVL 0|1', the NVLS line; nccl-tests' '#  Rank  N Group ...' lines"),
        end="none: a log is a stream (a cut between lines is a shorter log; a cut inside a line reads no "
            "partial number: the last line without its newline is a cut; a reporter's '...' may stand for any rank's "
            "MNNVL lines, its WARN among them: not whole)",
        failures=("the 'is available but not working' WARN (faults: the rank's init fails with ncclSystemError); "
                  "MNNVL 0 is a value (mnnvl false: a run's fabric checks judge the domain); a busId line short of "
                  "its healthMask, the WARN short of 'available but not working', or an MNNVL word on a line of "
                  "no NCCL log (a wrapped line's tail): errors naming the line; the ranks' lines interleaved "
                  "mid-line (one stdout block-buffered into a pipe: debug.cc's one vfprintf a line @ v2.30): the "
                  "nccl-debug view's interleaving error, its words (debug_log.interleaving)"),
        values=("nccl_version, mnnvl (true when every cliqueSize/comm line says MNNVL 1, false when one says 0 or "
                "a WARN, null when none is printed), clique_sizes, nvl_domain_sizes, fabric[{bus_id, cluster_uuid, "
                "clique_id, state (NVML's: 3 COMPLETED), health_mask}] (the busId lines), not_working (the WARN "
                "lines), ranks (nRanks), faults, errors"),
    ),
}
