"""A fake vendor tool for the SSH tests: prints what the real tool printed, faults included.

Installed on a test host's PATH as ``nvidia-smi``, ``ibstat`` and ``dcgmi`` (see
:func:`install_fake_tools`); run as ``fake_tool.py CARDS TOOL ARGS...``. It serves the
output of the fact command whose argv is ``TOOL ARGS`` for a host with CARDS cards:

* the faults in ``SNCHECK_FAULTS`` (JSON, set by the SSH backend with
  ``--act-faults-on-real-hosts``) are acted out as the real tool shows them;
* the output is the vendor renderers' (:mod:`sncheck.vendors.sim`), which edit real
  captures the same way the mock backend does: a card with a pending row remap, for
  example, shows in ``nvidia-smi -q`` the ``Remapped Rows`` section of the real capture
  ``nvidia-smi-q/02_a100_ecc_dram_correctable_177_remap_pending_elided.txt``, in the
  block of that card, in a listing of all the host's GPUs (as a real host prints it,
  so the checks can tell which card it is);
* ``missing_tool`` exits 127 as a shell does for a program that is not there;
* each host lists its own GPUs: the capture's UUIDs made the host's own
  (:func:`sncheck.vendors.sim.own_ids`), as the mock relabels them.

Unexpected arguments exit 2 with a message, so a changed command line fails loudly.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from sncheck.backends import mockfacts
from sncheck.config.faultplan import Fault
from sncheck.vendors.nvidia.checks import COMMANDS
from sncheck.vendors.sim import HostState, own_ids

REPO = Path(__file__).resolve().parents[1]
TOOLS = sorted({c.tool for c in COMMANDS.values()})


def main(argv: list[str]) -> int:
    cards, tool, args = int(argv[0]), argv[1], argv[2:]
    cmd = next((c for c in COMMANDS.values() if list(c.argv) == [tool, *args]), None)
    if cmd is None:
        print(f"{tool}: unexpected arguments: {shlex.join(args)}", file=sys.stderr)
        return 2
    host = os.environ.get("SNCHECK_TEST_HOST", "host")
    faults = tuple(Fault(**f) for f in json.loads(os.environ.get("SNCHECK_FAULTS") or "[]"))
    state = HostState(host, cards, None, tuple(f for f in faults if f.host == host))
    out = mockfacts.render(cmd, state)
    sys.stdout.write(own_ids(out.stdout, host))
    sys.stderr.write(own_ids(out.stderr, host))
    return out.exit_code


def install_fake_tools(host, cards: int) -> None:
    """Put ``nvidia-smi``, ``ibstat`` and ``dcgmi`` on ``host``'s PATH (an SshdHost)."""
    from sshd_harness import install_fake_tool

    for tool in TOOLS:
        install_fake_tool(host, tool, (
            "#!/bin/sh\n"
            f"PYTHONPATH={shlex.quote(str(REPO))} exec {shlex.quote(sys.executable)} "
            f"{shlex.quote(str(Path(__file__).resolve()))} {cards} {tool} \"$@\"\n"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
