"""A real InfiniBand subnet in user space for the tests: ibsim (Debian ibsim-utils) serves the
fabric a net file describes, the real opensm assigns its LIDs, and the real infiniband-diags
tools (ibnetdiscover, iblinkinfo, perfquery) read it through libumad2sim (LD_PRELOAD), as
``ibsim-run`` does. No kernel module, no root.

Each simulator gets its own abstract socket name (IBSIM_SOCKNAME) and working directory
(umad2sim writes ./sys-<pid>), so concurrent test runs never share a fabric. Its console
(stdin) sets port counters: ``PerformanceSet "<node>"[<port>] PortCounters.<Name>=<value>``
(ibsim/sim_cmd.c, do_perf_counter_set).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from sncheck.fabric import Cabling

IBSIM_RUN = "/usr/bin/ibsim-run"


def available() -> str | None:
    """Why the simulator cannot run here, or None."""
    for tool in ("ibsim", "opensm", "ibnetdiscover", "perfquery"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} is not installed (scripts/setup.sh installs ibsim-utils opensm infiniband-diags)"
    if preload() is None:
        return "libumad2sim.so not found (ibsim-utils)"
    return None


def preload() -> str | None:
    """libumad2sim's path, as ibsim-run names it."""
    try:
        m = re.search(r"^sim_so=(\S+)", Path(IBSIM_RUN).read_text(), re.M)
    except OSError:
        return None
    return m.group(1) if m and Path(m.group(1)).exists() else None


def adapter(host: str, rail: int) -> str:
    """A host adapter's node description, as the kernel sets it: ``<host> mlx5_<rail>``."""
    return f"{host} mlx5_{rail}"


def net_file(cabling: Cabling, ports: int = 16) -> str:
    """ibsim's net file (ibnetdiscover's topology grammar) for ``cabling``: a switch record per
    leaf and spine, a one-port CA per NIC."""
    switches: dict[str, list[tuple[int, str, int]]] = {}
    cas = []
    for nic, (leaf, port) in cabling.nics.items():
        host, _, rail = nic.rpartition("/nic")
        name = adapter(host, int(rail))
        switches.setdefault(leaf, []).append((port, name, 1))
        cas.append(f'Hca 1 "{name}"\n[1] "{leaf}"[{port}]\n')
    for (leaf, lp), (spine, sp) in cabling.uplinks.items():
        switches.setdefault(leaf, []).append((lp, spine, sp))
        switches.setdefault(spine, []).append((sp, leaf, lp))
    records = [f'Switch {ports} "{name}"\n' + "".join(f'[{p}] "{far}"[{fp}]\n' for p, far, fp in sorted(links))
               for name, links in switches.items()]
    return "\n".join(records + cas)


class IbSim:
    """One simulated subnet: ``with IbSim(dir, net) as sim: sim.run(["ibnetdiscover"])``."""

    def __init__(self, workdir: Path, net: str) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "net").write_text(net)
        self.env = {**os.environ, "IBSIM_SOCKNAME": f"sncheck-{uuid.uuid4().hex[:12]}",
                    "OSM_CACHE_DIR": str(self.dir), "OSM_TMP_DIR": str(self.dir)}
        self.proc: subprocess.Popen | None = None

    @property
    def tool_env(self) -> dict[str, str]:
        """The environment a fabric tool runs in: the simulator preloaded."""
        return {**self.env, "LD_PRELOAD": preload() or ""}

    def __enter__(self) -> IbSim:
        log = open(self.dir / "ibsim.log", "w")  # noqa: SIM115 - closed with the process in __exit__
        # stdbuf: the console answers line by line into the log (set_counter waits for its answer)
        self.proc = subprocess.Popen(["stdbuf", "-oL", "ibsim", "-s", "net"], cwd=self.dir, env=self.env, stdin=subprocess.PIPE,
                                     stdout=log, stderr=subprocess.STDOUT, text=True)
        self._log = log
        try:
            deadline = time.monotonic() + 15
            while self.run(["ibnetdiscover"]).returncode != 0:  # the console is up when a tool attaches
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"ibsim did not start: {(self.dir / 'ibsim.log').read_text()[-500:]}")
                time.sleep(0.1)
            sm = self.run(["opensm", "-o", "-f", str(self.dir / "opensm.log"), "-F", "/dev/null"], timeout=60)
            if sm.returncode != 0:
                raise RuntimeError(f"opensm failed: {sm.stdout[-300:]} {sm.stderr[-300:]}")
        except BaseException:
            self.__exit__()
            raise
        return self

    def run(self, argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(argv, cwd=self.dir, env=self.tool_env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def console(self, command: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def set_counter(self, node: str, port: int, name: str, value: int) -> None:
        """Set a port counter and wait until perfquery sees it."""
        self.console(f'PerformanceSet "{node}"[{port}] PortCounters.{name}={value}')
        deadline = time.monotonic() + 10
        while f"set to {value}" not in (self.dir / "ibsim.log").read_text():
            if time.monotonic() > deadline:
                raise RuntimeError(f"ibsim did not set {node}[{port}] {name}")
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            try:
                self.console("quit")
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - whatever the console did, the process goes
                self.proc.kill()
                self.proc.wait(timeout=5)
            self.proc = None
            self._log.close()
