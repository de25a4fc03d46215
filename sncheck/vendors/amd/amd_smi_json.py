"""Which of amd-smi's --json documents a JSON value is, and its device records.

amd-smi's logger prints one document per command (amdsmi_cli/amdsmi_logger.py _print_json_output):
``json.dumps(list of device dicts, indent=4)``; each dict holds the logger's id key (``gpu``, ``cpu``
or ``core``: store_output's ``int(gpu_id)``), ``timestamp`` first under --watch, and the keys the
command stored (:data:`amd_smi_commands.RECORD_KEYS`, read from amdsmi_commands.py per version).
amd-smi 26.x (ROCm 7.x) prints some commands as one object instead (combine_arrays_to_json:
``gpu_data``, ``cpu_data``, ``core_data``, ``xgmi_metric`` - a list of lists -, ``link_status``,
``current_partition``, ``memory_partition``, ``partition_profiles``, ``partition_resources``).
``amd-smi version --json`` prints one object without an id (tool, version, amdsmi_library_version,
rocm_version; amdgpu_version and amd_hsmp_driver_version from 26.x). A reader's ``| jq '.[0].vram'``
leaves one object of amd-smi's keys (amd_smi_keys.KEYS) without an id: kept as one entry.

A JSON value that is none of these is no amd-smi output: refused (ParseError, as every view refuses a
text it recognises nothing in: exit 1, one line naming the file and what the value is not; the keys it
names are withheld to their line at the front, sncheck.vendors.withheld). A document holding amd-smi's records and one that is not: the others kept,
that one an error (exit 1).
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors.amd.amd_smi_commands import COMBINED, RECORD_KEYS
from sncheck.vendors.amd.amd_smi_keys import KEYS

IDS = ("gpu", "cpu", "core")  # the logger's id of a record (_store_output_amdsmi, _store_cpu_..., _store_core_...)
# 'amd-smi list' of a NIC (ROCm/rocm-systems projects/amdsmi/amdsmi_cli/subcommands/list_devices.py @1bc8b9e:
# list_brcm_nic's store_nic_output and list_ainic's store_ainic_output, their json keys; the id 'nic' as the
# text view prints it, 'NIC: n', _capitalize_keys's upper case of the dict's key)
NIC_KEYS = frozenset(("bdf", "permanent_address", "device_name", "part_number", "firmware_version", "product_name",
                      "serial_number", "vendor_name"))
_PER_PROCESS = re.compile(r"process_info_\d+")  # process --json of 6.1: f'process_info_{index}' (amdsmi_commands.py)
TOOL = "amd-smi-json"
_DEVICES = ("gpu_data", "cpu_data", "core_data", "xgmi_metric")  # 26.x's combined sections of device records


def commands(record: dict[str, Any]) -> list[str]:
    """The amd-smi commands whose device record can hold every key of ``record`` (none: not amd-smi's)."""
    own = {k for k in record if k not in (*IDS, "nic", "timestamp") and not _PER_PROCESS.fullmatch(k)}
    if "nic" in record:
        return ["list"] if own <= NIC_KEYS else []
    return [name for name, keys in RECORD_KEYS.items() if own <= keys]


def _named(keys: list[str]) -> str:
    foreign = sorted({k for k in keys if not commands({k: 0})})
    return ", ".join(repr(k[:40]) for k in foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")


def _not_a_record(record: Any, last_cut: bool) -> str | None:
    """Why ``record`` is no device record amd-smi prints; None when it is one (the last record of a cut
    document may lack its id: the cut came before it)."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, where amd-smi prints a device's object"
    ids = [k for k in (*IDS, "nic") if k in record]
    if not ids and not last_cut:
        return "an object without the device id amd-smi's logger writes (gpu, cpu, core)"
    if any(not isinstance(record[k], int) or isinstance(record[k], bool) or record[k] < 0 for k in ids):
        return f"its {ids[0]} is not a device index (the logger writes int(id))"
    if not commands(record):
        return (f"keys no amd-smi command prints in one device record ({_named(list(record))}; the commands: "
                f"{', '.join(sorted(RECORD_KEYS))})")
    return None


def _half_values(value: Any, path: str) -> list[str]:
    """The places in ``value`` holding a measured value without its unit or a unit without its value:
    amdsmi_helpers.unit_format writes both in --json ({"value": V, "unit": U}; a value with no unit is the bare
    value, N/A the string), as do the commands' own literals, so half of one is no output of amd-smi's."""
    if isinstance(value, list):
        return [w for i, v in enumerate(value) for w in _half_values(v, f"{path}[{i}]")]
    if not isinstance(value, dict):
        return []
    if value and set(value) <= {"value", "unit"} and len(value) == 1:
        return [path]
    return [w for k, v in value.items() for w in _half_values(v, f"{path}.{k}" if path else str(k))]


def _is_version(doc: Any) -> bool:
    """``amd-smi version --json``'s object (AmdSmiCommands.version: self.logger.output['tool'] = 'AMDSMI Tool', ...)."""
    return isinstance(doc, dict) and "tool" in doc and set(doc) <= RECORD_KEYS["version"]


def records(doc: Any, whole: bool) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    """(GPU records, the document's other parts by name, errors) of the document ``doc``: ESMI's cpu and
    core records are ``cpus``, NICs ``nics`` (as the text view lists them), 26.x's non-device parts under
    their own names; ParseError when ``doc`` is no amd-smi output at all."""
    extra: dict[str, Any] = {}
    if isinstance(doc, dict) and doc and set(doc) <= COMBINED and all(isinstance(v, list) for v in doc.values()):
        found: list[Any] = []
        for name in _DEVICES:  # xgmi_metric holds one list per call (store_xgmi_metric_json_output.append(list))
            found += [r for item in doc.get(name, []) for r in (item if isinstance(item, list) else [item])]
        extra = {k: v for k, v in doc.items() if k not in _DEVICES}
    elif isinstance(doc, dict) and not any(k in doc for k in (*IDS, "nic")):
        if _is_version(doc):
            return [], {"version": doc}, []
        if doc and all(isinstance(k, str) and k.upper() in KEYS for k in doc):  # a jq fragment of one section
            return [doc], {}, []
        raise ParseError("a JSON object that is no amd-smi --json output: no device list, no gpu/cpu/core id, not "
                         f"version's, not one section's ({_named(list(doc))}: no amd-smi command prints it)", tool=TOOL)
    elif isinstance(doc, dict):
        found = [doc]
    elif isinstance(doc, list) and len(doc) == 1 and _is_version(doc[0]):  # _print_json_output's [self.output]
        return [], {"version": doc[0]}, []
    elif isinstance(doc, list):
        found = doc
    else:
        raise ParseError(f"a JSON {type(doc).__name__}, not amd-smi's list of devices", tool=TOOL)
    kept: list[dict[str, Any]] = []
    errors: list[str] = []
    for i, record in enumerate(found):
        why = _not_a_record(record, not whole and i == len(found) - 1)
        if why is None:
            kept.append(record)
            if whole or i < len(found) - 1:  # the cut went through the last record: its halves are the cut's
                errors += [f"device record {i + 1}: {at}: a value without its unit or a unit without its value "
                           "(amd-smi's unit_format writes both): not as amd-smi prints it"
                           for at in _half_values(record, "")[:3]]
        else:
            errors.append(f"device record {i + 1} of {len(found)} is no amd-smi record: {why}")
    if found and not kept:
        raise ParseError(f"no amd-smi --json output: {errors[0]}" + (f" (and {len(errors) - 1} more)" if errors[1:] else ""),
                         tool=TOOL)
    for name, ids in (("cpus", ("cpu", "core")), ("nics", ("nic",))):  # as the text view lists them (amd_smi.py)
        if others := [r for r in kept if any(k in r for k in ids)]:
            extra[name] = others
            kept = [r for r in kept if not any(k in r for k in ids)]
    return kept, extra, errors
