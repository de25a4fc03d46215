"""The outcome of one remote command."""

from __future__ import annotations

from dataclasses import dataclass

# The most output (stdout and stderr together) one command may print, over SSH
# (``transport.connection``) or on this machine (``transport.local``): past it the command is
# killed as on a timeout and its Result says where it was cut (``cut_at``). A tool in a loop
# (`yes`) was held whole in memory until the command timeout, gigabytes at loopback speed
# (hostile round 16). The biggest real fact output is a few MB (nvidia-smi -q of 72 GPUs ~2 MB).
MAX_OUTPUT_BYTES = 64 << 20
# A control plane's reads grow with the fleet (ibnetdiscover of a 131,072-card fat tree, scontrol show
# node of 16,384 nodes: each past 64 MiB): this machine's reads for the fleet are bounded far above them
CONTROL_OUTPUT_BYTES = 1 << 30


@dataclass(frozen=True)
class Result:
    """What a command did on one host.

    A non-zero exit is data, not an exception: look at ``ok`` or ``exit_code``.
    ``exit_code`` is ``None`` when the command never reported one: it timed out
    (``timed_out`` is then true and the output so far is kept) or it was
    killed by a signal on the remote side, or printed more than the runner
    keeps: ``cut_at`` is then that many bytes, where its output was cut and
    the command killed.
    """

    host: str
    command: str
    stdout: str
    stderr: str
    exit_code: int | None
    duration: float
    timed_out: bool = False
    cut_at: int | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.cut_at is None

    def tail(self, n: int = 20) -> str:
        """The last ``n`` lines of stdout followed by stderr, for error messages."""
        if n <= 0:
            return ""
        lines = self.stdout.splitlines() + self.stderr.splitlines()
        return "\n".join(lines[-n:])

    def __str__(self) -> str:
        if self.timed_out:
            status = f"timed out after {self.duration:.1f}s"
        elif self.cut_at is not None:
            status = f"printed more than {self.cut_at:,} bytes and was killed"
        elif self.exit_code is None:
            status = "ended without an exit status"
        else:
            status = f"exit {self.exit_code}"
        return f"{self.host}: {self.command!r}: {status}"
