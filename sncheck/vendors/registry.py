"""The registry of vendors and platforms.

A vendor is a package ``sncheck/vendors/<name>/`` with a ``plugin.py`` that defines
``VENDOR`` (:class:`sncheck.vendors.base.Vendor`). The registry lists the packages of
this folder and reads ``VENDOR`` from each one's ``plugin`` module, on first use: no
module registers itself on import, and adding a vendor touches only its package.
Packages without a ``plugin.py`` (``infiniband``: shared by every vendor) are helpers.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from pathlib import Path

from sncheck.errors import ConfigError
from sncheck.vendors.base import Platform, Vendor

DEFAULT_VENDOR = "nvidia"  # hosts whose inventory names no platform (sncheck before platforms)


@cache
def vendors() -> dict[str, Vendor]:
    here = Path(__file__).parent
    found: dict[str, Vendor] = {}
    for mod in sorted(pkgutil.iter_modules([str(here)]), key=lambda m: m.name):
        if mod.ispkg and (here / mod.name / "plugin.py").is_file():
            vendor = importlib.import_module(f"{__package__}.{mod.name}.plugin").VENDOR
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


def torch_device(inventory, hosts) -> str | None:
    """The torch probe's device type for a job on ``hosts``: their vendor plug-in's
    (``cuda``, ``npu``), or None when the hosts' vendors differ."""
    kinds = {vendor_of(inventory.platform_of(h)).torch_device for h in hosts}
    return kinds.pop() if len(kinds) == 1 else None
