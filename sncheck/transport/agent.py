"""The ssh-agent, every exchange with it bounded in time and size.

paramiko's ``Agent`` connects to ``$SSH_AUTH_SOCK`` and reads its answers with no timeout and
no bound on a message's length: an agent that accepts and never answers (a forwarded agent
whose session died, a stopped process holding the socket) hung the connection, and with it the
host's fact read and the run, past every connect timeout (hostile round 22, H22-07). Here each
read waits at most the connection's connect timeout, and a message is at most OpenSSH's
AGENT_MAX_LEN (256 KiB, authfd.c); an agent that does not answer in time is no agent: its keys
are not tried, said once in the log, and the other ways to log in go on.
"""

from __future__ import annotations

import logging
import os
import socket

import paramiko
from paramiko.agent import AgentSSH

log = logging.getLogger(__name__)

AGENT_MAX_LEN = 256 * 1024  # OpenSSH authfd.c: the longest message an agent sends


class BoundedAgent(AgentSSH):
    """The agent at ``$SSH_AUTH_SOCK`` (none: no keys), each read bounded by ``timeout`` seconds."""

    def __init__(self, timeout: float) -> None:
        super().__init__()
        path = os.environ.get("SSH_AUTH_SOCK")
        if not path:
            return
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)  # connect, send and every recv: a socket.timeout (an OSError) past it
        try:
            sock.connect(path)
            self._connect(sock)  # type: ignore[attr-defined]  # AgentSSH's, which the stub leaves out
        except (OSError, paramiko.SSHException) as e:
            self._close()  # type: ignore[attr-defined]  # AgentSSH's, which the stub leaves out
            sock.close()
            log.warning("ssh-agent at %s gave no keys within %g s (%s): its keys are not tried",
                        path, timeout, e or type(e).__name__)

    def _read_all(self, wanted: int) -> bytes:
        if wanted > AGENT_MAX_LEN:
            raise paramiko.SSHException(f"ssh-agent sent a message of {wanted} bytes (the cap is {AGENT_MAX_LEN})")
        return super()._read_all(wanted)  # type: ignore[misc]  # AgentSSH's, which the stub leaves out

    def close(self) -> None:
        """What paramiko's SSHClient calls on its agent when it closes."""
        self._close()  # type: ignore[attr-defined]  # AgentSSH's, which the stub leaves out
