"""Which card a kernel log report names: each GPU's bus id in the host's last
``nvidia-smi -q`` (or ``-q -x``) read, with its card index where that listing names every
card (:func:`sncheck.vendors.nvidia.gpu_checks.card_indices`). The plug-in's ``bus_listing``."""

from __future__ import annotations

from typing import Any

from sncheck.vendors import kernel_log
from sncheck.vendors.base import BusListing
from sncheck.vendors.nvidia import checks, fabric, nvidia_smi
from sncheck.vendors.nvidia.gpu_checks import card_indices

QUERIES = ("query", "query_fabric")  # the fact commands that list each card's bus id
_PARSE = {checks.COMMANDS["query"].display: nvidia_smi.parse_query,
          checks.COMMANDS["query_fabric"].display: fabric.parse_query_xml}


def listed_buses(raw_outputs: list[dict], expect: Any) -> dict[str, int | None]:
    """Bus id (``0000:3b:00``) -> card index, from the host's last ``nvidia-smi -q`` read:
    every GPU it lists, the index None where that listing does not name every card
    (:func:`sncheck.backends.hostreads.name_cards` names them then); {} without a listing."""
    for out in reversed(raw_outputs):
        if out.get("command") not in _PARSE or out.get("exit_code") not in (0, None):
            continue
        try:
            parsed = _PARSE[out["command"]](out.get("stdout") or "")
        except Exception:  # noqa: BLE001 - a listing that does not parse names no card
            return {}
        mapping: dict[str, int | None] = {}
        for g, index in zip(parsed.get("gpus") or [], card_indices(parsed, expect)):
            bus = kernel_log.bus_id(g.get("bus_id"))
            if bus:
                mapping[bus] = index
        return mapping
    return {}


BUS_LISTING = BusListing(QUERIES, listed_buses)
