"""The grammar of ``nvidia-smi -q`` (:mod:`sncheck.vendors.nvidia.smi_query`). nvidia-smi is
closed: NVIDIA's documentation and every real capture found, not a source file."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

GRAMMAR = {"nvidia-smi-q": Grammar(
    tool="nvidia-smi -q (and -q -d SECTION,...)",
    versions="drivers 375 to 610 (Clocks Throttle Reasons renamed Clocks Event Reasons in 535; Power Readings "
             "renamed GPU Power Readings in 535, Average/Instantaneous Power Draw from 550; SRAM/DRAM ECC counters "
             "on A100 and later, Single/Double Bit on older boards; Capabilities last from 560; keys padded to "
             "column 51 from 590; KMD Version and CUDA UMD Version from 610, Driver and CUDA Version marked "
             "[Deprecated ...] there)",
    sources=(
        "closed: NVIDIA nvidia-smi documentation (nvidia-smi.txt man page, 'GPU ATTRIBUTES': every -q entry and "
        "what it means; -d MEMORY,UTILIZATION,ECC,TEMPERATURE,POWER,CLOCK,COMPUTE,PIDS,PERFORMANCE,"
        "SUPPORTED_CLOCKS,PAGE_RETIREMENT,ACCOUNTING,ENCODER_STATS,FBC_STATS,ROW_REMAPPER; r470, r535, r570)",
        "closed: the real captures under fixtures/real/ (nvidia-smi-q: gpud's 535.161.08 8x H100 with HW Slowdown, "
        "510.73.08 A100 remap pending, 535.129.03 A10, 560.35.03 Titan V, 535.154.05 8x RTX 4090, 535.86.10 "
        "-d PAGE_RETIREMENT; r3: 590.48.01 H100 and H200 with MIG; r4: 580.105.06 -d MEMORY,PERFORMANCE; "
        "harvest: 535.183.01 8x H100, 375.66 -d MEMORY,UTILIZATION; nvidia-versions: 595.80 L40S and 610.57.04 "
        "RTX 2080 SUPER of utkuozdemir/nvidia_gpu_exporter's captures)",
    ),
    lines=("'==============NVSMI LOG==============', then 'Key<blanks>: value' lines, every key padded to column 42 whatever its depth (the ':' at 43; 51 on 590): "
           "Timestamp, Driver Version, CUDA Version, 'Attached GPUs : N'; then per GPU 'GPU DDDDDDDD:BB:DD.F' "
           "(a 4-digit domain on old drivers) and its entries four blanks deeper per level, a section a key with "
           "no value ('PCI', then 'GPU Link Info', 'PCIe Generation' Max/Current, 'Link Width' Max/Current as "
           "'16x'): Product Name, Persistence Mode, MIG Mode Current/Pending (A100 on), Serial Number, GPU UUID, "
           "PCI (Replays Since Reset), Performance State, Clocks Event (Throttle before 535) Reasons (Idle ... "
           "'HW Slowdown' with 'HW Thermal Slowdown' and 'HW Power Brake Slowdown' nested under it, Active / "
           "Not Active), FB Memory Usage Total/Reserved (from 470)/Used/Free 'N MiB', BAR1 Memory Usage, "
           "Utilization Gpu/Memory/Encoder/Decoder (JPEG, OFA from 525) 'N %', ECC Mode Current/Pending, ECC "
           "Errors: Volatile then Aggregate (the same counters: SRAM/DRAM Correctable and Uncorrectable, on H100 "
           "SRAM Uncorrectable split in Parity and SEC-DED with 'SRAM Threshold Exceeded' after Aggregate's and an "
           "'Aggregate Uncorrectable SRAM Sources' section; older boards 'Single Bit' and 'Double Bit' each with "
           "Device Memory ... Total), Retired Pages (Single/Double Bit ECC, 'Pending Page Blacklist' or 'Pending "
           "Page Retirement'), Remapped Rows (or 'Remapped Rows : N/A': Correctable Error, Uncorrectable Error, "
           "Pending, Remapping Failure Occurred, 'Bank Remap Availability Histogram' Max .. None 'N bank(s)'), "
           "Temperature ('N C'; from 535 the T.Limit margins), (GPU) Power Readings ('N.NN W'), Clocks 'N MHz', "
           "Fabric (State, Status, CliqueId, ClusterUUID, Health: Hopper on), 'MIG Device' blocks (their own ECC Errors with Volatile only), Processes "
           "('None', or per process GPU/Compute instance ID, Process ID, Type, Name, Used GPU Memory), "
           "Capabilities (560 on); 'N/A' where the GPU does not say. -d prints the header and only the sections "
           "asked for under each GPU (no Product Name)"),
    end="'Attached GPUs' states the GPU count: that many GPU sections (as many as a pasted command line above "
        "the listing selects: 'nvidia-smi -q -i 0' or '--id=1,2' still prints 'Attached GPUs : 8' and lists only the "
        "GPUs it names, harvest 9's H800 and A100 captures); a full listing (with Product Name) ends "
        "each GPU at Processes (at Capabilities from driver 560); each section through its last entry (ECC Mode "
        "and MIG Mode at Pending, a GPU's ECC Errors at Aggregate holding every counter Volatile holds, Retired Pages at "
        "its Pending entry, the histogram at None, FB/BAR1 Memory Usage at Free, Utilization at Decoder); each process through 'Used GPU Memory'; ECC Mode followed "
        "by ECC Errors and FB by BAR1 Memory Usage (one -d group each: -d ECC, -d MEMORY); every GPU with the "
        "sections the first GPU has",
    failures=("'No devices were found', 'NVIDIA-SMI has failed ...', 'Failed to initialize NVML: ...', 'Unable to "
              "determine the device handle for GPU ...' (errors); a listing cut short or not one machine's (a bus "
              "id or UUID twice, more sections than attached GPUs: errors); a Yes/No flag (Remapped Rows' Pending and "
              "Remapping Failure Occurred, Retired Pages' Pending entries) holding any other value: an error, not "
              "null (a reader's '<===' after 'Yes', harvest 21: read as unknown, the pending remap it marks passed); "
              "what the host checks judge (faults): "
              "a PCIe link narrower than its max, a volatile uncorrectable ECC count above zero or SRAM Threshold "
              "Exceeded, a pending row remap or remapping failure, a pending page retirement, HW Slowdown, HW "
              "Thermal, HW Power Brake or SW Thermal Slowdown active"),
    values=("driver_version, cuda_version, attached_gpus, gpus[{bus_id, product_name, uuid, persistence_mode, "
            "product_brand, product_architecture, serial_number, minor_number, vbios_version, board_id, gpu_part_number, "
            "module_id, gsp_firmware_version, virtualization_mode (GPU Virtualization Mode's Virtualization Mode: "
            "smi_query.IDENTITY, the same names from -q -x), mig{current, pending, "
            "devices}, temperature{gpu_C, memory_C, ...}, power{draw_W, instant_W, limit_W, default_limit_W, "
            "max_limit_W}, pcie{gen_current, gen_max, width_current, width_max, replays_since_reset, below_max}, "
            "memory{total_MiB, reserved_MiB, used_MiB, free_MiB}, utilization{gpu_pct, ...}, ecc{mode_current, "
            "mode_pending, volatile{COUNTER: n}, aggregate{...}} (nested counters 'Double Bit/Total'), "
            "retired_pages, remapped_rows, performance_state, clock_reasons{section, reasons, active, "
            "counters_us}, fabric, platform}], errors (the module docstring has the shape)"),
)}
