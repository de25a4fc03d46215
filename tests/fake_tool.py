"""A fake vendor tool for the SSH tests: prints what the real tool printed, faults included.

Installed on a test host's PATH as ``nvidia-smi``, ``ibstat`` and ``dcgmi`` (see
:func:`install_fake_tools`); run as ``fake_tool.py CARDS TOOL ARGS...``. It serves the
output of the fact command whose argv is ``TOOL ARGS`` for a host with CARDS cards:

* the faults in ``SNCHECK_FAULTS`` (JSON, set by the SSH backend with
  ``--act-faults-on-real-hosts``) are acted out as the real tool shows them;
* a card with a pending row remap makes ``nvidia-smi -q`` replay the real capture
  ``nvidia-smi-q/02_a100_ecc_dram_correctable_177_remap_pending_elided.txt`` verbatim;
* everything else is the vendor renderers' output (:mod:`sncheck.vendors.sim`), which
  edits real captures the same way the mock backend does;
* ``missing_tool`` exits 127 as a shell does for a program that is not there.

Unexpected arguments exit 2 with a message, so a changed command line fails loudly.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from sncheck.backends import mockfacts
from sncheck.faults import Fault
from sncheck.vendors.facts import COMMANDS
from sncheck.vendors.sim import HostState, capture

REPO = Path(__file__).resolve().parents[1]
# (fault type, fact command) -> a real capture replayed verbatim while the fault is on
REPLAY = {("remap_pending", "query"): "nvidia-smi-q/02_a100_ecc_dram_correctable_177_remap_pending_elided.txt"}
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
    for f in state.faults:
        if (f.type, cmd.name) in REPLAY and not state.host_faults("missing_tool"):
            sys.stdout.write(capture(REPLAY[f.type, cmd.name]))
            return 0
    out = mockfacts.render(cmd, state)
    sys.stdout.write(out.stdout)
    sys.stderr.write(out.stderr)
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
