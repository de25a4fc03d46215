"""Which card an AMD kernel report names (amdgpu RAS/ACA, an AER or GHES record at a GPU's
bus id): each GPU's BDF in the host's last ``amd-smi list`` read, with its card index (the
``GPU: N`` amd-smi prints, the index every other amd-smi view and HIP number the card by) where
that listing names every card of the host. The plug-in's ``bus_listing``.

``amd-smi list`` (amdsmi_commands.py ``list``): per GPU ``GPU: <n>`` then its indented ``BDF:``
and ``UUID:`` (newer versions add ``KFD_ID``, ``NODE_ID``, ``PARTITION_ID``), the grammar
:mod:`sncheck.vendors.amd.amd_smi_grammar` writes down; ``amd-smi static --bus`` prints the
same ``BDF:`` under each GPU's ``BUS:`` section and parses to the same ``gpus`` rows."""

from __future__ import annotations

from typing import Any

from sncheck.vendors import kernel_log
from sncheck.vendors.amd import amd_smi, checks
from sncheck.vendors.base import BusListing

LISTS = ("list",)  # the fact commands that list each card's bus id
_SHOWN = checks.COMMANDS["list"].display


def bdf(gpu: dict[str, Any]) -> str | None:
    """A parsed GPU's BDF (``amd-smi list``'s ``BDF``, ``static --bus``'s ``BUS.BDF``)."""
    bus = gpu.get("BUS")
    return gpu.get("BDF") or (bus.get("BDF") if isinstance(bus, dict) else None)


def card_indices(parsed: dict[str, Any], cards: int) -> list[int | None]:
    """Each listed GPU's card index: its ``GPU: N`` where the listing is whole (as many GPUs
    as the host's cards, each N once and below that, no error); else None for every one."""
    gpus = parsed.get("gpus") or []
    numbers = [g.get("gpu") for g in gpus]
    whole = (len(gpus) == cards and not parsed.get("errors")
             and sorted(n for n in numbers if isinstance(n, int)) == list(range(cards)))
    return [n if whole and isinstance(n, int) else None for n in numbers]


def listed_buses(raw_outputs: list[dict], expect: Any) -> dict[str, int | None]:
    """Bus id (``0000:05:00``) -> card index, from the host's last ``amd-smi list`` read: every
    GPU it lists, the index None where that listing does not name every card; {} without one
    (a listing that does not parse names no card: the reports are the host's)."""
    for out in reversed(raw_outputs):
        if out.get("command") != _SHOWN or out.get("exit_code") not in (0, None):
            continue
        try:
            parsed = amd_smi.parse_amd_smi(out.get("stdout") or "")
        except Exception:  # noqa: BLE001 - a listing that does not parse names no card
            return {}
        mapping: dict[str, int | None] = {}
        for g, index in zip(parsed.get("gpus") or [], card_indices(parsed, expect.cards)):
            bus = kernel_log.bus_id(bdf(g))
            if bus:
                mapping[bus] = index
        return mapping
    return {}


BUS_LISTING = BusListing(LISTS, listed_buses)
