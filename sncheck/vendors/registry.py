"""The registry of vendors and platforms: the one door from the rest of sncheck to
vendor code.

The plug-ins are listed once, here: :data:`BUILTIN` names the built-in ones, and a
third-party package adds its own through the ``sncheck.vendors`` entry-point group
(``[project.entry-points."sncheck.vendors"] acme = "acme_sncheck.plugin:VENDOR"``).
:func:`vendors` reads both the same way, on first use: each entry is a
``module:attribute`` that names a :class:`sncheck.vendors.base.Vendor`. Nothing
registers itself on import and no folder is scanned. Packages that are no vendor
(``infiniband``, ``nccltests``: tools the vendors share) are reached through the
vendors that use them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from sncheck.errors import ConfigError
from sncheck.vendors.base import CollectiveTool, CopyBench, PairTest, Platform, ScaleOut, Vendor

DEFAULT_VENDOR = "nvidia"  # hosts whose inventory names no platform (sncheck before platforms)
ENTRY_POINT_GROUP = "sncheck.vendors"

# The built-in plug-ins, as "module:attribute"; a new vendor is one line here.
BUILTIN = (
    "sncheck.vendors.nvidia.plugin:VENDOR",
    "sncheck.vendors.amd.plugin:VENDOR",
    "sncheck.vendors.ascend.plugin:VENDOR",
)


def load(spec: str) -> Vendor:
    """The Vendor that ``spec`` (``module:attribute``) names."""
    module, _, attr = spec.partition(":")
    vendor = getattr(importlib.import_module(module), attr or "VENDOR")
    if not isinstance(vendor, Vendor):
        raise ConfigError(f"vendor plug-in {spec} is a {type(vendor).__name__}, not a sncheck Vendor")
    return vendor


def _specs() -> Iterable[str]:
    yield from BUILTIN
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        yield ep.value


@cache
def vendors() -> dict[str, Vendor]:
    found: dict[str, Vendor] = {}
    for spec in _specs():
        vendor = load(spec)
        if vendor.name in found:
            raise ConfigError(f"two vendor plug-ins are named {vendor.name!r} (the second is {spec})")
        found[vendor.name] = vendor
    return found


@cache
def platforms() -> dict[str, Platform]:
    return {name: p for v in vendors().values() for name, p in v.platforms.items()}


def platform(name: str) -> Platform:
    known = platforms()
    if name not in known:
        raise ConfigError(f"unknown platform {name!r}; choose one of: {', '.join(sorted(known))}")
    return known[name]


def vendor_of(plat: Platform | None) -> Vendor:
    return vendors()[plat.vendor if plat else DEFAULT_VENDOR]


def vendor_of_hosts(inventory: Any, hosts: Iterable[str]) -> Vendor | None:
    """The one vendor of ``hosts`` (their platforms'), or None when they differ."""
    found = {vendor_of(inventory.platform_of(h)).name for h in hosts}
    return vendors()[found.pop()] if len(found) == 1 else None


def torch_device(inventory: Any, hosts: Iterable[str]) -> str | None:
    """The torch probe's device type for a job on ``hosts``: their vendor plug-in's
    (``cuda``, ``npu``), or None when the hosts' vendors differ."""
    kinds = {vendor_of(inventory.platform_of(h)).torch_device for h in hosts}
    return kinds.pop() if len(kinds) == 1 else None


def dist_backend(inventory: Any, hosts: Iterable[str]) -> str | None:
    """The torch.distributed backend of ``hosts``' vendor (nccl, hccl), or None when
    their vendors differ: what the probe uses on the vendor's device when no backend is named."""
    vendor = vendor_of_hosts(inventory, hosts)
    return vendor.dist_backend if vendor else None


def torch_module(inventory: Any, hosts: Iterable[str]) -> str | None:
    """The module that gives torch the vendor's device (torch_npu), None when torch has it."""
    vendor = vendor_of_hosts(inventory, hosts)
    return vendor.torch_module if vendor else None


def collective_tool(inventory: Any, hosts: Iterable[str]) -> CollectiveTool | None:
    """The collective benchmark sncheck can launch on ``hosts`` (nccl-tests, rccl-tests):
    their vendor's, or None when the hosts' vendors differ or theirs has none to launch."""
    vendor = vendor_of_hosts(inventory, hosts)
    tool = vendor.collective if vendor else None
    return tool if tool is not None and tool.argv is not None else None


@cache
def pair_tools() -> dict[str, PairTest]:
    """Every vendor's scale-out pair test by tool name (ib_write_bw, ib_write_lat)."""
    return {t.tool: t for v in vendors().values() if v.scale_out for t in v.scale_out.pair_tests.values()}


@cache
def copy_benches() -> dict[str, CopyBench]:
    """Every vendor's copy test inside a host by tool name (nvbandwidth, transferbench)."""
    return {v.copy_bench.tool: v.copy_bench for v in vendors().values() if v.copy_bench}


def counter_reads() -> dict[str, ScaleOut]:
    """Every vendor's NIC counter read by its parse view (``ib-counters``), and the other views of
    the same counters (``perfquery``, ``ibqueryerrors``: ``ScaleOut.counter_views``): the
    scale-out that reads them and says which of its counters count faults (``sncheck parse``
    judges each so: one judgement)."""
    return {view: v.scale_out for v in vendors().values() if v.scale_out and v.scale_out.parse_counters is not None
            for view in (v.scale_out.counters_tool, *v.scale_out.counter_views)}


def scale_out_tools() -> tuple[str, ...]:
    """The names a connectivity layer's ``tools`` may list: the pair tests, then the copy tests."""
    return (*pair_tools(), *copy_benches())


@cache
def kernel_log_words() -> tuple[str, ...]:
    """Every vendor's words for its driver in kernel log lines (the evidence bundles' read)."""
    return tuple(w for v in vendors().values() for w in v.kernel_log_words)


def fabric_discovery() -> Any:
    """The reader of a fabric itself (``sncheck fabric``): the InfiniBand package's
    ``discovery`` module (ibnetdiscover's topology as cabling, perfquery's switch port
    counters). One fabric kind today; another is one more reader here."""
    return importlib.import_module("sncheck.vendors.infiniband.discovery")


# The facts sncheck's own reads make, not a vendor's fact command: ``reachable``,
# ``devices_changed`` and ``devices_shared`` (vendors.hostjudge), ``host_facts`` (a backend that lost a host's facts),
# ``kernel_log`` and ``ib_counters`` (backends.hostreads), ``cpu_count``, ``torch_version``,
# ``dist_backend`` and ``card_count`` (the local backend). test_hostile_r6 reads every fact a row is made with
# in the source against fact_names().
ENGINE_FACTS = ("reachable", "devices_changed", "devices_shared", "host_facts", "kernel_log", "ib_counters", "cpu_count",
                "torch_version", "dist_backend", "card_count")


@cache
def fact_names() -> frozenset[str]:
    """Every host fact a row may carry, from the declarations: each vendor's fact commands'
    facts, its scale-out pair tests' and copy test's, and sncheck's own (ENGINE_FACTS). The
    names a rule's ``facts``/``not_facts`` may give."""
    out = set(ENGINE_FACTS)
    for v in vendors().values():
        out.update(f for c in v.commands.values() for f in c.facts)
        out.update(v.facts)
        if v.scale_out:
            out.update(t.fact for t in v.scale_out.pair_tests.values())
        if v.copy_bench:
            out.update((v.copy_bench.card_fact, *v.copy_bench.facts))
    return frozenset(out)


@cache
def counter_names() -> frozenset[str]:
    """Every error counter a read names, as its fact command and scale-out NIC plug-in declare
    them: the names a rule's ``counters`` may give."""
    return frozenset(n for v in vendors().values() for n in (
        *(n for c in v.commands.values() for n in c.counters), *(v.scale_out.counters if v.scale_out else ())))
