"""The explicit registry behind ``sncheck parse TOOL FILE``.

Each entry maps a TOOL name to a pure function ``text -> dict``; every result carries an
``errors`` list, and a function raises ``sncheck.errors.ParseError`` only when the text
holds nothing it recognises. The JSON shape each returns is documented in its module:

- ``nccl-tests``, ``rccl-tests``: ``sncheck.vendors.nvidia.nccl_tests``
- ``nvidia-smi-topo``, ``nvidia-smi-q``, ``nvlink-status``, ``nvlink-errors``,
  ``nvidia-smi-query-gpu``: ``sncheck.vendors.nvidia.nvidia_smi``
- ``ibstat``, ``ibstatus``: ``sncheck.vendors.infiniband.ibstat``
- ``dcgmi-diag``: ``sncheck.vendors.nvidia.dcgmi``
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sncheck.errors import ConfigError
from sncheck.vendors.infiniband import ibstat
from sncheck.vendors.nvidia import dcgmi, nccl_tests, nvidia_smi

Parser = Callable[[str], dict[str, Any]]

PARSERS: dict[str, Parser] = {
    "nccl-tests": nccl_tests.parse_nccl_tests,
    "rccl-tests": nccl_tests.parse_rccl_tests,
    "nvidia-smi-topo": nvidia_smi.parse_topo,
    "nvidia-smi-q": nvidia_smi.parse_query,
    "nvlink-status": nvidia_smi.parse_nvlink_status,
    "nvlink-errors": nvidia_smi.parse_nvlink_errors,
    "nvidia-smi-query-gpu": nvidia_smi.parse_query_gpu_csv,
    "ibstat": ibstat.parse_ibstat,
    "ibstatus": ibstat.parse_ibstatus,
    "dcgmi-diag": dcgmi.parse_dcgmi_diag,
}

# Provenance lines that head every captured file under fixtures/real/:
# "# source: ...", "# source: note: ...", "# note: ...", "# lines: 1-20 of ...", "# context: ...".
# Tool output never starts with these keys ("# nThread 1 ..." and "#  Rank 0 ..." do not match).
_SOURCE_HEADER = re.compile(r"^#\s*(?:source|note|lines|context)\s*:")


def get_parser(name: str) -> Parser:
    """The parser registered as ``name``; a ConfigError lists the valid names otherwise."""
    if name not in PARSERS:
        valid = ", ".join(sorted(PARSERS))
        raise ConfigError(f"unknown tool {name!r} for parse; choose one of: {valid}")
    return PARSERS[name]


def strip_source_header(text: str) -> str:
    """Remove the leading ``# source:``-style provenance lines of a captured file.

    Only lines at the very top are removed, so a log that merely mentions "# note:"
    later on keeps it. Text without such a header comes back unchanged.
    """
    lines = text.splitlines(keepends=True)
    start = 0
    while start < len(lines) and _SOURCE_HEADER.match(lines[start]):
        start += 1
    return "".join(lines[start:])
