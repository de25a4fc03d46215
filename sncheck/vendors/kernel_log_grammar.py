"""The grammar of the kernel log (:mod:`sncheck.vendors.kernel_log`), from the kernel's and the drivers' source."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

GRAMMAR = {"kernel-log": Grammar(
    tool="kernel log: `dmesg` (any time format), `journalctl -k`, syslog, and sncheck's bounded read",
    versions="Linux 3.x to 6.16 (AER), 3.x to 6.12 (amdgpu RAS/ACA, mlx5 health, APEI GHES records), 4.x to 6.17 (mlx5 "
             "carrier; RDMA port state from 6.15), 4.17 to 6.17 (PCIe link status), 2.6.30 to 6.15 (hung tasks); NVIDIA driver "
             "3xx to 595 (Xid, SXid, RmInitAdapter)",
    sources=(
        "NVIDIA/open-gpu-kernel-modules @ 595.45.04: src/nvidia/src/kernel/gpu/rc/kernel_rc.c (XID_PRINT_WITH_ATTR: "
        "'NVRM: Xid (PCI:%04x:%02x:%02x[ GPU-I:%02u[ GPU-CI:%02u]]): %d, pid=%s, name=%s, %s%s', ' caused by "
        "previous Xid %d'; _krcLogUuidOnce: 'NVRM: GPU at PCI:...: %s', 'GPU Board Serial Number'), "
        "src/common/nvswitch/kernel/inc/common_nvswitch.h (NVSWITCH_PRINT_SXID: 'nvidia-%s: SXid (PCI:%s): %05d, "
        "...'), src/nvidia/arch/nvalloc/unix/src/osinit.c ('RmInitAdapter failed! (0x%x:0x%x:%d)' after "
        "NV_DEV_PRINTF's 'NVRM: GPU %04x:%02x:%02x.%x: '), kernel-open/nvidia/nv.c ('rm_init_adapter failed, "
        "device minor number %d', 'NVRM: loading %s' with pNVRM_ID, 'API mismatch')",
        "torvalds/linux drivers/pci/pcie/aer.c (aer_print_error, __aer_print_error '   [%2d] %-22s%s', "
        "aer_error_severity_string ('Corrected' to 6.7, 'Correctable' from 6.8: one table, kernel_aer.SEVERITY), "
        "aer_error_layer, aer_agent_string, the short bit names from 4.17; "
        "aer_print_port_info '%s%s error message received from %04x:%02x:%02x.%d' on the receiving port (6.16's "
        "aer_print_source adds ' (no details found', no closing parenthesis), the "
        "'PCIe Bus Error' lines on the device in error; pr_fmt/dev_fmt 'AER: ' before every line of it) and "
        "drivers/pci/pcie/aer/aerdrv_errprint.c up to 4.16 ('id=%04x(%s)', the long bit names)",
        "torvalds/linux drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c, amdgpu_aca.c: see sncheck/vendors/amd/kernel_ras.py",
        "torvalds/linux drivers/net/ethernet/mellanox/mlx5/core/health.c (3.x, 5.5, 5.15, 6.x: poll_health, "
        "print_health_info, hsynd_str, mlx5_health_try_recover): see sncheck/vendors/infiniband/kernel_mlx5.py",
        "torvalds/linux drivers/net/ethernet/mellanox/mlx5/core/en_main.c (mlx5e_update_carrier: netdev_info 'Link up' / "
        "'Link down', 4.x to 6.17), drivers/infiniband/core/cache.c (ib_cache_update, 6.15 on: ibdev_info 'Port: %d Link "
        "%s', ib_port_state_to_str), drivers/pci/pci.c (__pcie_print_link_status, 4.17 on: '%u.%03u Gb/s available PCIe "
        "bandwidth, limited by %s x%d link at %s (capable of %u.%03u Gb/s with %s x%d link)', PCIE_SPEED2STR then "
        "pci_speed_string, 6.15's ', in Flit mode'; pcie_report_downtraining): see sncheck/vendors/kernel_links.py; real "
        "captures harvest 28's bond0 flap (an sglang PD notes file) and ml-engineering's 'limited by' grep",
        "torvalds/linux kernel/hung_task.c (check_hung_task / hung_task_info, debug_show_blocker): see "
        "sncheck/vendors/kernel_hung.py",
        "torvalds/linux drivers/acpi/apei/ghes.c (3.x as indexed: __ghes_print_estatus '%s{%u}[Hardware Error]: ' "
        "then 'Hardware error from APEI Generic Hardware Error Source: %d'; panic('Fatal hardware error!')) and "
        "drivers/firmware/efi/cper.c (6.x as indexed: cper_estatus_print 'It has been corrected by h/w and requires "
        "no further action', 'event severity: %s'; cper_estatus_print_section '[im]precise tstamp:', 'Error %d, type: "
        "%s', fru_id, fru_text, 'section_type: ...' / 'section type: unknown, %pUl'; cper_print_pcie, cper_print_mem "
        "('error_status: %s (0x%016llx)', cper_mem_err_location 'node:%d card:%d ...', 'error_type: %d, %s', 'DIMM "
        "location: ...'), cper_print_proc_generic), drivers/pci/pcie/aer.c cper_print_aer (the AER decode after a "
        "record): see sncheck/vendors/kernel_ghes.py",
    ),
    lines=("any line, optionally timed ('[  12.345678]', '[Mon Mar  3 12:00:01 2025]', ISO, the journal's or syslog's "
           "'Mar 03 12:00:01 host kernel: ', that followed by dmesg's '[  12.3]'; a bare 'kernel: ' of such a line pasted "
           "without its date and host), a /dev/kmsg record's 'PRI,SEQ,USEC,FLAGS;' (the kernel's "
           "Documentation/ABI/testing/dev-kmsg: read as dmesg's '[SEC.USEC]', its ' KEY=value' dictionary lines the "
           "record's), dmesg --decode's 'kern  :err   : ' "
           "before the stamp (util-linux dmesg.c print_record); a record glued to the line before it (its line end "
           "lost: '... CmpltTO [  200.105524,009][  T292] igb ...: AER:   TLP Header: ...', harvest7) split at its "
           "stamp; the reports: sncheck/vendors/nvidia/kernel_nvrm.py (Xid, SXid with its "
           "Data and Severity lines, RmInitAdapter, the fallen-off-the-bus message without an Xid, loading, API mismatch), sncheck/vendors/kernel_aer.py (AER "
           "received / PCIe Bus Error / device status / one line per error bit / TLP Header), "
           "sncheck/vendors/amd/kernel_ras.py (amdgpu RAS counts, ERREVENT, ACA banks, resets, ring timeouts, "
           "page faults, bad-page threshold), sncheck/vendors/infiniband/kernel_mlx5.py (mlx5 Fatal error, health "
           "compromised, the health buffer, the recovery), sncheck/vendors/kernel_links.py (mlx5 'NETDEV: Link "
           "up|down', 'IBDEV: Port: N Link STATE', the PCI core's 'available PCIe bandwidth, limited by'), "
           "sncheck/vendors/kernel_hung.py (INFO: task ... blocked "
           "for more than N seconds, its Tainted, sched and Call Trace lines, the blocker, the panic), "
           "sncheck/vendors/kernel_ghes.py ('{SEQ}[Hardware Error]: ' records: source, severity, per section its "
           "severity, type and values; the AER driver's 'aer_status' decode of a record's PCIe device); every "
           "other line is counted, not read. sncheck's read adds "
           "'# boot: EPOCH' (/proc/stat btime: places the uptime stamps), '# now: EPOCH' (the host's clock), "
           "'-- cursor: C' (journalctl --show-cursor) and "
           "its end line '# end of kernel log'."),
    end="none: a log is a stream, any line may be its last; sncheck's read ends with '# end of kernel log' "
        "(complete: true). A last line without its newline is a cut; so is, anywhere, a report's line holding "
        "journalctl's '…' (systemd src/shared/logs-show.c print_multiline: without --full a message wider than "
        "the screen goes through ellipsize_mem, '…' in a UTF-8 locale; printk writes none) and an AER line "
        "ending in less -S's '>' (journalctl's pager marks a line it chopped so) that is no whole line of aer.c's.",
    failures=("every Xid, SXid, RmInitAdapter failure, API mismatch, uncorrected AER report, amdgpu fault, "
              "mlx5 health report (but a recovery's success alone), PCIe link below its capability, hung task and "
              "fatal, recoverable or "
              "unknown-severity APEI GHES section "
              "(faults); a NIC port's state change is counted, not a fault (the policy's count and window judge a flap); 'dmesg: read kernel buffer failed', 'Operation not permitted', journalctl's 'Failed "
              "to' lines (errors). Severity and action per code: the rules file's kernel-log policy."),
    values=("driver_version; events[]: source (xid, sxid, rm_init, api_mismatch, aer, amdgpu, mlx5, nic_link, pcie_link, "
            "hung_task, ghes), "
            "code, bus_id, "
            "class, time, text, boot_back (a report of an earlier boot than the log's last: how many boots "
            "before it, told by dmesg's uptime going back; absent for the last boot's), and per source: xid gpu_instance, compute_instance, pid, process, message, "
            "caused_by, driver_version, recovery_action and recovery_action_name (Xid 154), xid_line false and pci_id "
            "(the fallen-off-the-bus message read as Xid 79); sxid device, link, "
            "engine_instance, message, driver_version, data_only (a Data line whose report line is not in the log); rm_init "
            "device, code, minor; aer port, type, agent, vendor_device, status, mask, bits[{bit, name, first}], reported_by, multiple, "
            "tlp_header, details (false: the kernel found no details for the message); amdgpu see kernel_ras; mlx5 port, sensor, synd, syndrome, ext_synd, fw_version, "
            "fw_severity, rfr, pci_unavailable, recovery; nic_link port, netdev, ib_device, ib_port, state; pcie_link port, "
            "driver, available_gbps, speed, width, limited_at, capable_gbps, cap_speed, cap_width, flit, limited; hung_task process, pid, seconds, tainted, kernel, state, "
            "trace, module, blocked_by, suppressed; ghes seq, source_id, record_severity, corrected_note, section, "
            "section_type, kind, fru_id, fru_text, tstamp, head_missing, fields{name: value}, pcie port_type, "
            "port_type_name, version, command, status, port, slot, secondary_bus, vendor_id, device_id, "
            "vendor_device, class_code, serial_lower, serial_upper, bridge_secondary_status, bridge_control, "
            "aer_uncor_status, aer_uncor_mask, aer_uncor_severity, tlp_header, aer_status, aer_mask, bits[], "
            "aer_layer, aer_agent; memory error_status, error_status_name, physical_address, "
            "physical_address_mask, location{node, card, module, rank, bank, bank_group, bank_address, device, row, "
            "column, bit_position, requestor_id, responder_id, target_id, chip_id}, error_type, error_type_name, "
            "dimm; lines, cursor, last_time, boot, complete, cursor_lost, faults, errors"),
)}
