"""The registry behind ``sncheck parse TOOL FILE``: every vendor plug-in's parsers.

Each entry maps a TOOL name to a pure function ``text -> dict``; every result carries an
``errors`` list, and a function raises ``sncheck.errors.ParseError`` only when the text
holds nothing it recognises. The names come from each vendor's ``VENDOR.parsers``
(:mod:`sncheck.vendors.registry`) plus the vendor-neutral scale-out tools below; the
JSON shape each returns is documented in its module.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sncheck.errors import ConfigError
from sncheck.vendors import registry
from sncheck.vendors.infiniband import perftest
from sncheck.vendors.nvidia import nccl_tests

Parser = Callable[[str], dict[str, Any]]

PARSERS: dict[str, Parser] = {
    **{name: fn for v in registry.vendors().values() for name, fn in v.parsers.items()},
    "ib-write-bw": perftest.parse_ib_write_bw,
    "ib-write-lat": perftest.parse_ib_lat,  # ib_read_lat / ib_send_lat print the same report
    "rccl-tests": nccl_tests.parse_rccl_tests,  # the nccl-tests layout, whichever vendor runs it
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
