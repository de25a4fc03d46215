"""A fake perftest (``ib_write_bw``, ``ib_write_lat``) for the SSH tests: a real TCP
rendezvous between the server and the client hosts (loopback sshd hosts on 127.0.1.x),
then the real captured output replayed.

Run as ``fake_perftest.py REPLAY_DIR TOOL ARGS...`` by a shell wrapper on a test host's
PATH. Arguments are checked as sncheck passes them (``-d DEV -p PORT -s SIZE -n ITERS -F
[--report_gbits] [SERVER]``); anything else exits 2, so a changed command line fails.

* server (no SERVER argument): listens on this host's own address (the server side of
  ``SSH_CONNECTION``) and PORT, waits for one client, prints ``server.TOOL.txt``;
* client: connects to SERVER:PORT (perftest's own message and exit 1 when nothing
  listens there), sends its host name, prints ``client.TOOL.SERVER.DEV.txt`` when the
  test planted one for that server address and NIC (a slow link), else ``client.TOOL.txt``.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

WAIT_S = 60.0


def main(argv: list[str]) -> int:
    replay, tool, args = Path(argv[0]), argv[1], argv[2:]
    opts: dict[str, str] = {}
    flags: set[str] = set()
    server = None
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-d", "-p", "-s", "-n") and i + 1 < len(args):
            opts[a] = args[i + 1]
            i += 2
        elif a in ("-F", "--report_gbits"):
            flags.add(a)
            i += 1
        elif not a.startswith("-") and server is None and i == len(args) - 1:
            server = a
            i += 1
        else:
            print(f"{tool}: unexpected argument {a!r}", file=sys.stderr)
            return 2
    if set(opts) != {"-d", "-p", "-s", "-n"} or "-F" not in flags or \
            (("--report_gbits" in flags) != (tool == "ib_write_bw")):
        print(f"{tool}: unexpected arguments {' '.join(args)}", file=sys.stderr)
        return 2
    port = int(opts["-p"])
    if server is None:
        me = (os.environ.get("SSH_CONNECTION") or "").split()
        address = me[2] if len(me) >= 3 else "127.0.0.1"
        with socket.create_server((address, port)) as srv:
            srv.settimeout(WAIT_S)
            print("************************************\n* Waiting for client to connect... *\n"
                  "************************************", flush=True)
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                return 1
            with conn:
                conn.recv(256)
        sys.stdout.write((replay / f"server.{tool}.txt").read_text())
        return 0
    try:
        with socket.create_connection((server, port), timeout=5) as c:
            c.sendall((os.environ.get("SNCHECK_TEST_HOST", "?") + "\n").encode())
    except OSError:
        print(f"Couldn't connect to {server}:{port}")
        print("Unable to open file descriptor for socket connection Unable to init the socket connection")
        return 1
    special = replay / f"client.{tool}.{server}.{opts['-d']}.txt"
    sys.stdout.write((special if special.exists() else replay / f"client.{tool}.txt").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
