"""The package list, found rather than listed: every package under sncheck/ (a new vendor or
backend package needs no line here), plus the three whose files live in other folders of
the tree (pyproject's [tool.setuptools.package-dir] maps them). Everything else is in
pyproject.toml."""

from setuptools import find_packages, setup

SHIPPED_DATA = ["sncheck.templates", "sncheck.playbooks", "sncheck.fixtures"]

setup(packages=[*find_packages(include=["sncheck", "sncheck.*"]), *SHIPPED_DATA])
