"""NVIDIA's kernel driver lines in the kernel log, read by the ``kernel-log`` view
(:mod:`sncheck.vendors.kernel_log` asks :func:`event` about every line, its time stripped).

Grammar (NVIDIA/open-gpu-kernel-modules @ 595.45.04; the proprietary module prints the same):

- ``NVRM: Xid (PCI:dddd:bb:dd[ GPU-I:NN[ GPU-CI:NN]]): CODE, [pid=PID, name=NAME, ]MSG[ caused by
  previous Xid N]`` (``src/nvidia/src/kernel/gpu/rc/kernel_rc.c``, ``XID_PRINT_WITH_ATTR``: the
  MIG instance where the error is attributed to one; ``pid='<unknown>'`` when no process;
  the cause from 555 on for Xid 45 "preemptive removal"). Drivers before 400 print ``Xid
  (0000:3b:00)`` without ``PCI:``. The proprietary drivers before the open modules (510.73.08 and
  earlier, closed source: the real captures are the grammar, harvests 12 and 28) print ``pid=PID, `` with
  no ``name=``: ``Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked ...``.
  A reporter may mask the address (``Xid (PCI:...): 145, ...``: NCCL-issue 2241): the driver's Xid, ``bus_id`` null.
- ``nvidia-nvswitchN: SXid (PCI:dddd:bb:dd.f): %05d, MSG`` (``src/common/nvswitch/kernel/inc/
  common_nvswitch.h``, ``NVSWITCH_PRINT_SXID``): one report is its ``Fatal``/``Non-fatal`` line
  (``..., Link NN ...``), then ``Severity S Engine instance E Sub-engine instance SS`` and
  ``Data {0x..., ...}`` lines that belong to it (a report may print its Data line first; error_nvswitch.c
  ``_nvswitch_dump_error_entry`` prints the pair per logged error entry, two for one report on harvest7's
  capture). Switches serviced side by side interleave their lines: within one burst of SXid lines a dump
  belongs to the newest report of its own switch and code.
- ``NVRM: GPU dddd:bb:dd.f: RmInitAdapter failed! (0xINIT:0xRM:LINE)`` (``src/nvidia/arch/
  nvalloc/unix/src/osinit.c``: ``NV_DEV_PRINTF``'s prefix) and ``NVRM: GPU dddd:bb:dd.f:
  rm_init_adapter failed, device minor number N`` (``kernel-open/nvidia/nv.c``): the GPU could
  not be initialised; the code says where.
- ``NVRM: The NVIDIA GPU dddd:bb:dd.f`` / ``NVRM: (PCI ID: vvvv:dddd) installed in this system has`` /
  ``NVRM: fallen off the bus and is not responding to commands.`` (``src/nvidia/arch/nvalloc/unix/
  src/osinit.c``: the GPU's registers read all ones when the driver probes it; three printk lines, the
  second and third without a stamp of their own when dmesg prints them) and the one-line ``NVRM: GPU
  [at ]dddd:bb:dd[.f]: GPU has fallen off the bus.`` (331-era drivers: ``NVRM: GPU at dddd:bb:dd.f has
  fallen off the bus.``, Bumblebee-issue 554): the GPU is lost with no Xid line: read as the Xid
  it is (79, ``xid_line`` false), so the kernel-log policy's Xid 79 entry judges it; the one-line form
  right after the GPU's own Xid 79 line is that report's.
- ``NVRM: loading NVIDIA UNIX [Open Kernel Module for ]x86_64[ Kernel Module]  VERSION  ...``
  (``kernel-open/nvidia/nv.c``, ``pNVRM_ID``): the driver version every later report ran on.
- ``NVRM: GPU at PCI:dddd:bb:dd: GPU-UUID`` and ``NVRM: GPU Board Serial Number: S``
  (``kernel_rc.c``, ``_krcLogUuidOnce``, before a GPU's first Xid): the GPU's identity.
- ``NVRM: API mismatch: the client has the version X, but this kernel module has the version Y``
  (``kernel-open/nvidia/nv.c``): a failure, the driver stack is inconsistent.

- Xid 144-150 (NVLink5, r570 on): ``UNIT Fatal|Nonfatal XC0 i0 Link N (0x.. x6)``: ``unit``,
  ``class`` fatal / non-fatal, ``link`` (-1: not one link), ``status`` words (the text comes
  from GSP firmware: the real captures are its grammar, gpud PR #1174).
- Xid 154 (R550 on): ``GPU recovery action changed from 0xN (WORDS) to 0xM (WORDS)``: the
  action the GPU now needs, ``nvmlDeviceGpuRecoveryAction_t`` (0 none, 1 GPU reset, 2 node
  reboot, 3 drain P2P, 4 drain and reset; R610 adds 5 recover IMEX domain, 6 bus reset, 7
  system reboot); its words vary by version (``Node Reboot Required``, 610's ``OS Reboot``).

Events: ``xid`` (``code``, ``bus_id``, ``gpu_instance``, ``compute_instance``, ``pid``,
``process``, ``message``, ``caused_by``; the fallen-off-the-bus message ``xid_line`` false, ``pci_id``; Xid 154 ``recovery_action`` and ``recovery_action_name``), ``sxid`` (``code``, ``bus_id``, ``device``
``nvidia-nvswitchN``, ``class`` fatal/non-fatal, ``link``, ``engine_instance``, ``message``),
``rm_init`` (``bus_id``, ``device`` ``dddd:bb:dd.f``, ``code`` ``0x24:0x72:1568``, ``minor``),
``api_mismatch``; each with ``driver_version`` (the last ``loading`` line before it, else null).
"""

from __future__ import annotations

import re
from typing import Any

_BUS = r"(?:PCI:)?(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?"
# a reporter may mask the GPU's address ('Xid (PCI:...): 145, ...', nccl-issue2241): the Xid is the driver's, its GPU unknown
XID = re.compile(rf"NVRM: Xid \((?:{_BUS}|PCI:(?P<masked>[.xX*]+(?::[.xX*]+)*))(?: GPU-I:(?P<gi>\d+))?(?: GPU-CI:(?P<ci>\d+))?\): "
                 r"(?P<code>\d+)(?:,\s*(?P<rest>.*))?")
SXID = re.compile(rf"(?:(?P<dev>nvidia-nvswitch\d+): )?SXid \({_BUS}\): (?P<code>\d+)(?:,\s*(?P<rest>.*))?")
# 'pid=PID, name=NAME, ' (a reporter may cut the pid and keep the name: both optional apart); the
# proprietary drivers before the open modules print 'pid=PID, ' with no name (510.73.08: 'Xid (PCI:0000:10:1c):
# 63, pid=1896, Row Remapper: ...', harvest 28; harvest 12's 'pid=0, GPU has fallen off the bus.')
_PID = re.compile(r"^(?:pid=(?P<pid>'[^']*'|\S+?), )?name=(?P<name>.*?), |^pid=(?P<bare>'[^']*'|\d+), ")
_CAUSE = re.compile(r"\s*caused by previous Xid (\d+)\s*$")
# Xid 154 (R550 on): 'GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)'; the
# value is nvmlDeviceGpuRecoveryAction_t (0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and
# reset; R610 adds 5 recover IMEX domain, 6 bus reset, 7 system reboot); the words differ by version
# ('0x2 (OS Reboot)' on 610, '0x1 (PF FLR)'): the number is what a table judges by
_RECOVERY = re.compile(r"recovery action changed from 0x(?P<old>[0-9a-fA-F]+)(?: \([^)]*\))? to "
                       r"0x(?P<new>[0-9a-fA-F]+)(?: \((?P<name>[^)]*)\))?")
_LINK = re.compile(r"\bLink (\d+)\b", re.I)
# the NVLink5 Xids 144-150 (GB200/B200, r570 on; GSP firmware composes the text, so the grammar is
# from the real captures: gpud PR #1174's kmsg, open-gpu-kernel-modules#1150): 'NETIR Fatal XC0 i0
# Link -1 (0x000fe406 0x00000000 ...)', 'RLW_RXPIPE Nonfatal XC0 i0 Link 13 (...)'
_NVLINK5 = re.compile(r"^(?P<unit>[A-Z][A-Z0-9_]*) (?P<sev>Fatal|Nonfatal|Non-fatal) XC\d+ i\d+ "
                      r"Link (?P<link>-?\d+) \((?P<words>[0-9a-fA-Fx ]*)\)")
_ENGINE = re.compile(r"^Severity (\d+) Engine instance (\d+)")
_DEV = r"(?P<dev>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
_RM_INIT = re.compile(rf"NVRM: GPU {_DEV}: RmInitAdapter failed! \((?P<code>0x[0-9a-fA-F]+:0x[0-9a-fA-F]+:\d+)\)")
_RM_MINOR = re.compile(rf"NVRM: GPU {_DEV}: rm_init_adapter failed, device minor number (?P<minor>\d+)")
_FALLEN_HEAD = re.compile(rf"NVRM: The NVIDIA GPU {_DEV}\s*$")
_FALLEN_ID = re.compile(r"NVRM: \(PCI ID: (?P<id>[0-9a-fA-F]{4}:[0-9a-fA-F]{4})\) installed in this system has")
_FALLEN = re.compile(r"NVRM: fallen off the bus and is not responding to commands")
# 'NVRM: GPU [at ]PCI:dddd:bb:dd: GPU has fallen off the bus.' (NV_DEV_PRINTF's prefix); drivers of the 331 era
# 'NVRM: GPU at dddd:bb:dd.f has fallen off the bus.' (no ': GPU', Bumblebee-issue554)
_FALLEN_ONE = re.compile(r"NVRM: GPU (?:at )?(?:PCI:)?(?P<dev>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)"
                         r"(?:: GPU)? has fallen off the bus")
LOADING = re.compile(r"NVRM: loading NVIDIA UNIX .*?(?P<version>\d{3}\.\d+(?:\.\d+)?)\b")
_MISMATCH = re.compile(r"NVRM: API mismatch: the client has the version (?P<client>\S+?),? but\s+"
                       r"this kernel module has the version (?P<kernel>\S+?)\.?\s")
PATTERN = ("NVRM: (Xid|loading|API mismatch|GPU [0-9a-fA-F:.]+: (RmInitAdapter|rm_init_adapter)|The NVIDIA GPU|"
           "\\(PCI ID|fallen off the bus|GPU (at )?[0-9a-fA-F:.PCI]+(: GPU)? has fallen)|SXid")  # the lines a run's kernel log read keeps (grep -E)


def _bus(text: str) -> str:
    m = re.search(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})", text)
    assert m is not None
    return f"{m.group(1)[-4:]}:{m.group(2)}:{m.group(3)}".lower()


def _xid(code: int, bus: str | None, message: str | None, driver: str | None, **more: Any) -> dict[str, Any]:
    return {"source": "xid", "code": code, "bus_id": bus, "class": None, "gpu_instance": None, "compute_instance": None,
            "pid": None, "process": None, "message": message, "caused_by": None, "driver_version": driver, **more}


def event(body: str, last: dict[str, Any] | None, driver: str | None,
          head: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The NVIDIA event a line starts (``last``: the event before it, which an SXid's Data and
    Severity lines, or a repeated ``rm_init_adapter`` line, continue: then ``last`` is
    updated and an empty dict returned), or None for a line that is not the driver's.
    ``head``: the caller's scratch for a message printed over several lines (the
    fallen-off-the-bus one: its GPU is on its first line, its meaning on its last)."""
    scratch = head if head is not None else {}
    if not SXID.search(body):
        scratch.pop("sxid_reports", None)  # a switch's dump lines follow its report within one burst of SXid lines
    if m := _FALLEN_HEAD.search(body):
        scratch.update(dev=m.group("dev").lower(), pci_id=None)
        return {}
    if m := _FALLEN_ID.search(body):
        if scratch:
            scratch["pci_id"] = m.group("id").lower()
        return {}
    if _FALLEN.search(body):
        dev, pci_id = scratch.get("dev"), scratch.get("pci_id")
        scratch.clear()  # a head cut off the excerpt: the GPU is not known
        return _xid(79, _bus(dev) if dev else None, "fallen off the bus and is not responding to commands", driver,
                    device=dev, pci_id=pci_id, xid_line=False)
    if m := _FALLEN_ONE.search(body):
        if last is not None and last.get("source") == "xid" and last.get("code") == 79 \
                and last.get("bus_id") == _bus(m.group("dev")):
            return {}  # the driver's line after its own Xid 79 for the GPU: the same report
        return _xid(79, _bus(m.group("dev")), "GPU has fallen off the bus", driver, device=m.group("dev").lower(),
                    pci_id=None, xid_line=False)
    if m := XID.search(body):
        rest = (m.group("rest") or "").strip()
        pid = name = cause = None
        if p := _PID.match(rest + " "):
            pid = (p.group("pid") or p.group("bare") or "").strip("'") or None
            name, rest = p.group("name"), rest[p.end():].strip()
        if c := _CAUSE.search(rest):
            cause, rest = int(c.group(1)), rest[: c.start()]
        out = {"source": "xid", "code": int(m.group("code")), "bus_id": _bus(m.group("bus")) if m.group("bus") else None, "class": None,
               "gpu_instance": int(m.group("gi")) if m.group("gi") else None,
               "compute_instance": int(m.group("ci")) if m.group("ci") else None,
               "pid": pid, "process": name, "message": rest or None, "caused_by": cause, "driver_version": driver}
        if (r := _RECOVERY.search(rest)) and len(r.group("new")) <= 8:
            out.update(recovery_action=int(r.group("new"), 16), recovery_action_name=r.group("name"))
        if nv := _NVLINK5.match(rest):  # Xid 144-150: which unit, how bad, which link
            out.update(unit=nv.group("unit"), link=int(nv.group("link")), status=nv.group("words").split(),
                       **{"class": "fatal" if nv.group("sev") == "Fatal" else "non-fatal"})
        return out
    if m := SXID.search(body):
        rest = (m.group("rest") or "").strip()
        same = last is not None and last.get("source") == "sxid" and last.get("code") == int(m.group("code")) \
            and last.get("bus_id") == _bus(m.group("bus"))
        # the switches' interrupts are serviced side by side: a switch's Severity and Data lines (error_nvswitch.c
        # _nvswitch_dump_error_entry, one pair per logged error entry) may follow other switches' reports, so
        # they belong to the newest report of their own switch and code, not only to the line before them
        reports: dict[tuple, dict[str, Any]] = scratch.setdefault("sxid_reports", {})
        key = (m.group("dev"), _bus(m.group("bus")), int(m.group("code")))
        owner = last if same else reports.get(key)
        if re.match(r"Data\s*\{", rest) or (rest and any(w.startswith(rest) for w in ("Data", "Severity"))):
            if owner is not None or not re.match(r"Data\s*\{", rest):
                return {}  # the register dump belongs to its report; so does one of these lines
                # cut inside its first word (a paste that ends mid-line): not a report
            # a Data line with no report before it: the report itself is not in the log (an excerpt
            # kept this line), or its line follows (a report may print the dump first): the SXid is
            # known by its code and switch; the report line after it fills it
            reports[key] = {"source": "sxid", "code": int(m.group("code")), "bus_id": _bus(m.group("bus")),
                            "class": None, "device": m.group("dev"), "link": None, "engine_instance": None,
                            "message": None, "data_only": True, "driver_version": driver}
            return reports[key]
        if engine := _ENGINE.match(rest):
            if owner is not None and owner.get("engine_instance") is None:
                owner["engine_instance"] = int(engine.group(2))  # its report's engine
            return {}
        klass = "fatal" if re.match(r"fatal\b", rest, re.I) else "non-fatal" if re.match(r"non-fatal", rest, re.I) \
            else None
        link = _LINK.search(rest)
        if owner is not None and owner.pop("data_only", False):  # the dump came first: this is its report
            owner.update({"class": klass, "link": int(link.group(1)) if link else None,
                          "message": re.sub(r"^(?:Non-fatal|Fatal),\s*", "", rest, flags=re.I) or None})
            return {}
        reports[key] = {"source": "sxid", "code": int(m.group("code")), "bus_id": _bus(m.group("bus")), "class": klass,
                        "device": m.group("dev"), "link": int(link.group(1)) if link else None, "engine_instance": None,
                        "message": re.sub(r"^(?:Non-fatal|Fatal),\s*", "", rest, flags=re.I) or None,
                        "driver_version": driver}
        return reports[key]
    if m := _RM_INIT.search(body):
        return {"source": "rm_init", "code": m.group("code"), "bus_id": _bus(m.group("dev")), "class": "fatal",
                "device": m.group("dev").lower(), "minor": None, "driver_version": driver}
    if m := _RM_MINOR.search(body):
        if last is not None and last.get("source") == "rm_init" and last.get("device") == m.group("dev").lower():
            last["minor"] = int(m.group("minor"))
            return {}
        return {"source": "rm_init", "code": None, "bus_id": _bus(m.group("dev")), "class": "fatal",
                "device": m.group("dev").lower(), "minor": int(m.group("minor")), "driver_version": driver}
    if m := _MISMATCH.search(body + " "):
        return {"source": "api_mismatch", "code": None, "bus_id": None, "class": "fatal",
                "client_version": m.group("client"), "kernel_version": m.group("kernel"), "driver_version": driver}
    return None


def describe(e: dict[str, Any]) -> str:
    where = f" on {e['bus_id']}" if e.get("bus_id") else ""
    if e["source"] == "rm_init":
        return f"GPU {e['device']} failed RmInitAdapter ({e['code'] or 'no code'}): not initialised"
    if e["source"] == "api_mismatch":
        return f"NVIDIA API mismatch: client {e['client_version']}, kernel module {e['kernel_version']}"
    what = "Xid" if e["source"] == "xid" else "SXid"
    klass = f" ({e['class']})" if e.get("class") else ""
    link = f" link {e['link']}" if e.get("link") is not None else ""
    mig = f" GPU-I {e['gpu_instance']}" if e.get("gpu_instance") is not None else ""
    return f"{what} {e['code']}{klass}{where}{mig}{link}"
