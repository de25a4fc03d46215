"""The GPUs a pasted ``nvidia-smi`` command line selects (:mod:`sncheck.vendors.nvidia.smi_query`):
``nvidia-smi -q -i 0`` prints ``Attached GPUs : 8`` and the section of GPU 0 only, so one section
of eight attached is a whole output, not an excerpt."""

from __future__ import annotations

import re

from sncheck.vendors.delivery import command_line

# a pasted command line above the listing: 'nvidia-smi -q -i 0' (or '-a', '--query', '--id=0,1') prints
# 'Attached GPUs : 8' and the sections of the GPUs -i names only (an index, bus id, UUID or serial; a comma list);
# behind any prompt delivery.command_line knows ('[root@h ~]#', '(base) user@h:~$', '#', '$', 'host$', 'PS C:\>')
_COMMAND = command_line(r"nvidia-smi(?:\.exe)?")
_QUERY = re.compile(r"\s(?:-q|-a|--query)(?:\s|$)")
_ID = re.compile(r"\s(?:-i|--id)(?:\s+|=)(\S+)")


def pasted_command(line: str) -> bool:
    """Whether ``line`` is a reporter's pasted ``nvidia-smi ...`` command line (a prompt before it or
    not): the reporter's, not the tool's output (HPE e-learning's '# nvidia-smi --query-gpu ...')."""
    return _COMMAND.match(line.strip()) is not None


def selected_gpus(text: str) -> int | None:
    """How many GPUs a pasted ``nvidia-smi -q -i ID[,ID...]`` line above the listing selects (None: no such line)."""
    for line in text.splitlines():
        body = line.strip()
        if body.startswith("==="):
            return None
        if (c := _COMMAND.match(body)) and _QUERY.search(c["args"]) and (m := _ID.search(c["args"])):
            return len([i for i in m.group(1).split(",") if i])
    return None
