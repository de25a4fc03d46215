"""Real captured tool outputs (``fixtures/real/``, shipped as ``sncheck.fixtures``), for the
vendors' simulators: the mock renders a host's tool output from these, with its faults
acted out by the plug-in that parses them."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from sncheck.vendors.parsers import strip_source_header


@cache
def capture(rel: str) -> str:
    """The body of ``fixtures/real/<rel>`` without its ``# source:`` header."""

    checkout = Path(__file__).resolve().parents[2] / "fixtures" / "real"
    if checkout.is_dir():  # a source tree: its own captures
        path = checkout / rel
    else:  # an installed wheel: the captures ship as package data
        import sncheck.fixtures  # noqa: PLC0415 -- package data: present in an installed wheel only

        path = Path(sncheck.fixtures.__file__).parent / "real" / rel
    return strip_source_header(path.read_text(encoding="utf-8"))
