"""Values as nvidia-smi prints them, shared by its views (nvidia_smi, smi_query, fabric):
``N/A``-style cells as None, counters, Yes/No and Active flags, the tool's own error lines, a GPU UUID cut short."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

NA_VALUES = frozenset(
    {
        "",
        "N/A",
        "[N/A]",
        "Not Supported",
        "[Not Supported]",
        "Unknown Error",
        "[Unknown Error]",
        "Unknown",
        "[Unknown]",
        "Requested functionality has been deprecated",
    }
)
TOOL_ERROR = re.compile(
    r"NVIDIA-SMI has failed|No devices were found|Failed to initialize NVML|"
    r"Unable to determine the device handle|Unable to retrieve|GPU is lost|version mismatch|"
    r"is not a valid field to query|^NVML:|^Error:|"
    r"not supported for Devices in MIG mode",  # nvlink -s / -e of a GPU in MIG mode (590 on a H200)
    re.IGNORECASE,
)
# NVML's error strings (nvmlErrorString; DCGM's copy, nvml_error_strings.h): what nvidia-smi -q prints where
# a query failed, bracketed or not. A flag holding one was not read by the tool (a container without the
# NVML privilege prints "Insufficient Permissions"): still not read, said as the tool's (reviews13, 20:49)
NVML_ERRORS = frozenset({
    "Uninitialized", "Invalid Argument", "Insufficient Permissions", "Already Initialized", "Not Found",
    "Insufficient Size", "Insufficient External Power", "Driver Not Loaded", "Timeout", "Interrupt Request Issue",
    "NVML Shared Library Not Found", "Function Not Found", "Corrupted infoROM", "GPU is lost", "GPU requires reset",
    "GPU access blocked by the operating system", "Driver/library version mismatch", "In use by another client",
    "Insufficient Memory", "Insufficient Resources"})
ELISION = re.compile(r"^\[?\.\.\.\]?$")
# The short N/A set of the -q -x and Fabric views (there "Not Supported" is a value, kept).
NA_SHORT = {"", "N/A", "[N/A]", "n/a"}


def na_or(value: str | None, convert: Callable[[str], Any]) -> Any:
    if value is None or value.strip() in NA_VALUES:
        return None
    return convert(value.strip())


def int_or_none(value: str | None) -> int | None:
    if value is None:
        return None
    value = value.strip()
    return int(value) if re.fullmatch(r"[+-]?[0-9]+", value) else None


def leading_int(value: str | None) -> int | None:
    m = re.match(r"^\s*([0-9]+)", value or "")
    return int(m.group(1)) if m else None


def as_number(value: str) -> int | float:
    return float(value) if "." in value else int(value)


def yes_no(value: str | None) -> bool | None:
    return {"Yes": True, "No": False}.get((value or "").strip())


def active(value: str | None) -> bool | None:
    return {"Active": True, "Not Active": False}.get((value or "").strip())


def scalar(value: str | None) -> Any:
    """A counter cell: int, Yes/No as bool, N/A as null, anything else as printed."""
    if value is None or value.strip() in NA_VALUES:
        return None
    as_int = int_or_none(value)
    if as_int is not None:
        return as_int
    as_bool = yes_no(value)
    return as_bool if as_bool is not None else value.strip()


def text_value(v: str | None) -> str | None:
    """A cell as printed, stripped; None for the short N/A set."""
    if v is None:
        return None
    v = v.strip()
    return None if v in NA_SHORT else v


def int_value(v: str | None) -> int | None:
    """A decimal or 0x hex cell as an int; None for N/A or anything else."""
    v = text_value(v)
    if v is None:
        return None
    m = re.fullmatch(r"(0x[0-9A-Fa-f]+|[0-9]+)", v)
    return int(m.group(1), 0) if m else None


def clique_value(v: str | None) -> int | str | None:
    """A CliqueId: an int when printed as one, else the text (None for N/A)."""
    as_int = int_value(v)
    return as_int if as_int is not None else text_value(v)


# The flags -q prints as 'Yes' or 'No' (nvidia-smi's row remapper and page retirement sections), or N/A:
# any other value is none the tool prints (a reader's marker pasted after it, 'Yes      <===', harvest 21),
# and reading it as unknown would pass the very remap it flags
_FLAGS = {"Remapped Rows": ("Pending", "Remapping Failure Occurred"),
          "Retired Pages": ("Pending Page Blacklist", "Pending Page Retirement", "Pending")}


def unknown_flags(gpu: Any) -> list[str]:
    """``GPU <bus>: Remapped Rows / Pending is 'Yes <==='``: a Yes/No flag of a -q GPU section (a node
    with ``key``, ``get`` and ``children``) holding a value nvidia-smi does not print."""
    out = []
    for name, flags in _FLAGS.items():
        section = gpu.get(name)
        for child in section.children if section else ():
            value = (child.value or "").strip()
            if child.key in flags and value not in NA_VALUES and value not in ("Yes", "No"):
                said = (f"nvidia-smi could not read it (NVML: {value.strip('[]')})" if value.strip("[]") in NVML_ERRORS
                        else "a value the tool does not print")
                out.append(f"{gpu.key}: {name} / {child.key} is {value[:40]!r} (nvidia-smi prints Yes or No): "
                           f"{said}, not read")
    return out


_UUID_WHOLE = re.compile(r"^GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_UUID_HEX = re.compile(r"^GPU-[0-9a-fA-F-]*$")


def uuid_cut(uuid: str | None) -> bool:
    """A GPU UUID of hex that is no whole 'GPU-' + 8-4-4-4-12 (NVML's nvmlDeviceGetUUID): a line cut or
    wrapped inside it; a redacted one ('GPU-xxxx...', 'GPU-<uuid>') is no hex and stays as printed."""
    return bool(uuid and _UUID_HEX.match(uuid) and not _UUID_WHOLE.match(uuid))
