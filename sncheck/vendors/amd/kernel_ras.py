"""amdgpu RAS and ACA lines in the kernel log, read by the ``kernel-log`` view
(:mod:`sncheck.vendors.kernel_log` asks :func:`event` about every line it does not know).

Grammar (Linux ``drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c``, ``amdgpu_aca.c``,
``amdgpu_mca.c``, ``amdgpu_umc.c``, ``amdgpu_job.c``, ``amdgpu_device.c``, and the RAS core
``drivers/gpu/drm/amd/ras/``; every line is ``amdgpu BDF: [amdgpu: ]MSG`` from ``dev_info`` /
``dev_err``, the ``amdgpu: `` word from 6.x's ``drm_*`` helpers):

- counts, up to 6.7: ``N uncorrectable hardware errors detected in BLOCK block`` (and
  ``correctable``; the UMC page retirement path ``amdgpu: N uncorrectable hardware errors
  detected in UMC block``); ``no uncorrectable hardware errors detected in BLOCK block`` is
  the all-clear (no event);
- counts, 6.8+: ``socket: S, die: D, N new uncorrectable hardware errors detected in BLOCK
  block`` and ``... N uncorrectable hardware errors detected in total in BLOCK block``
  (``correctable``; ``deferred hardware errors`` for UMC, ``poison consumption`` otherwise);
  6.10+ prefixes an event id ``{ID}`` (``RAS_EVENT_LOG``). A total line updates the event
  before it, never counts again.
- a fatal RAS interrupt: ``{ID}uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT)
  detected!`` (the GPU resets);
- ACA bank dumps: ``{ID}[Hardware Error]: Accelerator Check Architecture events logged``
  then ``aca entry[NN].STATUS=0x...`` (``ADDR``, ``MISC0``, ``IPID``, ``SYND``) or, 6.9+,
  ``ACA[NN/TT].REG=0x...`` (``CONTROL``, ``STATUS``, ``ADDR``, ``MISC``, ``CONFIG``, ``IPID``,
  ``SYND``, ``DESTAT``, ``DEADDR``, ``CONTROL_MASK``): one event, its registers attached;
- ``GPU reset begin!``, ``GPU reset(N) succeeded!`` / ``GPU reset(N) failed`` (one ``reset`` event per
  reset: ``outcome`` ``succeeded``, ``failed`` (class ``reset-failed``) or null where the log ends
  before it), ``ring NAME
  timeout, signaled seq=S, emitted seq=E`` (a job that hung: ``signaled``, ``emitted``, and the
  ``Process information: process X pid N`` line after it as ``process``, ``pid``), ``RAS records:N exceed
  threshold:M`` (the bad page table is full: the GPU is not initialised), ``[HUB] retry page
  fault`` / ``[HUB] no-retry page fault`` (``gmc_v9_0.c``: a VM fault, an application's bad
  access; the lines after it describe it).
- ``Fatal error during GPU init`` (``amdgpu_device.c``, ``amdgpu_device_init``'s failure) and the
  driver core's ``amdgpu: probe of BDF failed with error -E`` (``drivers/base/dd.c``; 6.x: ``amdgpu
  BDF: probe with driver amdgpu failed with error -E``): the GPU was not initialised; one event per
  GPU, ``error`` the probe's errno when its line follows.

Each event: ``source: amdgpu``, ``class``: ``uncorrectable``, ``correctable``, ``deferred``,
``poison``, ``fatal`` (ERREVENT), ``aca``, ``page-fault``, ``reset``, ``reset-failed``, ``ring-timeout``,
``bad-page-threshold``, ``init-failed`` (with ``error``); ``block`` (``umc``, ``gfx``, ``sdma``, ``xgmi_wafl``, ``mmhub``...),
``count``, ``total``, ``socket``, ``die``, ``event_id``, ``registers`` and ``status_class`` (ACA:
the STATUS register's UC / Deferred / Poison bits, ``amdgpu_aca.h``). Failures: every class
but ``correctable`` and the ACA dumps whose STATUS says corrected.

Cut lines (a paste wrapped at its width): a register is printed ``0x%016llx`` (``amdgpu_mca.c``,
``amdgpu_aca.c``), so a value of fewer than 16 hex digits is not whole and is not read (a STATUS
so cut leaves the dump "STATUS not read": a failure, never the corrected class its first digits
might say); a fatal line that ends inside its ``(NAME`` is that fatal interrupt, its block unknown.
"""

from __future__ import annotations

import re
from typing import Any

_BDF = re.compile(r"amdgpu (?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): ")
_EVENT_ID = re.compile(r"^\{(?P<id>\d+)\}")
_COUNT = re.compile(r"(?:socket: (?P<socket>\d+), die: (?P<die>\d+),? )?(?P<n>\d+|no) (?P<new>new )?"
                    r"(?P<kind>uncorrectable|correctable|deferred) hardware errors detected (?P<total>in total )?"
                    r"in (?P<block>\w+) block")
_POISON = re.compile(r"(?:socket: (?P<socket>\d+), die: (?P<die>\d+),? )?(?P<n>\d+) (?P<new>new )?poison consumption "
                     r"detected (?P<total>in total )?in (?P<block>\w+) block")
_FATAL = re.compile(r"uncorrectable hardware error\((?P<what>\w+)(?P<end>\) detected)?")
_ACA_HEAD = "Accelerator Check Architecture events logged"
_ACA_REG = re.compile(r"(?:aca entry\[(?P<i>\d+)\]|ACA\[(?P<j>\d+)/\d+\])\.(?P<reg>\w+)=(?P<v>0x[0-9a-fA-F]+)")
_RESET = re.compile(r"GPU reset(?:\((?P<n>\d+)\))? (?P<how>begin|succeeded|failed)")
_RING = re.compile(r"ring (?P<ring>\S+) timeout, signaled seq=(?P<sig>\d+), emitted seq=(?P<emit>\d+)")
# the line after it (amdgpu_job.c): "Process information: process X pid N thread T pid M" (to 6.x),
# " Process X pid N thread T pid M" (later, device-prefixed)
_PROCESS = re.compile(r"Process (?:information: process )?(?P<name>.+?) pid (?P<pid>\d+) thread ")
_PAGE_FAULT = re.compile(r"\[(?P<hub>\w+)\] (?:no-)?retry page fault")
_INIT_FAILED = "Fatal error during GPU init"
_PROBE = re.compile(r"probe (?:of (?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) )?(?:with driver amdgpu )?"
                    r"failed with error (?P<err>-?\d+)")
_THRESHOLD = re.compile(r"RAS records:\s*(?P<n>\d+) exceed threshold:\s*(?P<max>\d+)")


def event(body: str, last: dict[str, Any] | None, begun: dict[str, dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """The amdgpu event a kernel log line (its time stripped) starts, or None. A line that
    continues ``last`` (an ACA register, a total count) updates it in place and returns
    None: ``last`` is the previous amdgpu event of the same log. ``begun``: the caller's
    record of the resets begun per GPU, which their outcome line completes."""
    body = body[:1024]  # printk lines are at most 1 KB: a longer one is not the kernel's
    if "amdgpu" not in body and "Hardware Error" not in body and not (last and _ACA_REG.search(body)):
        return None
    dev = _BDF.search(body)
    bdf = dev["bdf"].lower().rsplit(".", 1)[0] if dev else None  # dddd:bb:dd, as an Xid names a GPU
    msg = body[dev.end():] if dev else body
    msg = msg[len("amdgpu: "):] if msg.startswith("amdgpu: ") else msg
    eid = _EVENT_ID.match(msg)
    msg = msg[eid.end():] if eid else msg
    base: dict[str, Any] = {"source": "amdgpu", "code": None, "bus_id": bdf, "class": None, "block": None,
                            "count": None, "total": None, "socket": None, "die": None,
                            "event_id": int(eid["id"]) if eid else None, "registers": None}
    if reg := _ACA_REG.search(msg):
        if last is not None and last.get("class") == "aca" and last.get("bus_id") == bdf:
            if len(reg["v"]) != 18:  # 0x%016llx: fewer digits is a line cut inside the value
                return None
            last["registers"].setdefault(f"{int(reg['i'] or reg['j']):02d}", {})[reg["reg"]] = reg["v"]
            if reg["reg"] == "STATUS":
                last["status_class"] = status_class(int(reg["v"], 16))
        return None
    if _ACA_HEAD in msg:
        return {**base, "class": "aca", "registers": {}, "status_class": None}
    m = _COUNT.search(msg) if "hardware errors detected" in msg else \
        _POISON.search(msg) if "poison consumption" in msg else None
    if m:
        kind = m.groupdict().get("kind") or "poison"
        if m["n"] == "no":
            return None  # the all-clear
        n = int(m["n"])
        if m["total"]:
            if last is not None and last.get("class") == kind and last.get("block") == m["block"].lower() \
                    and last.get("bus_id") == bdf:
                last["total"] = n
                return None
            return {**base, "class": kind, "block": m["block"].lower(), "count": None, "total": n,
                    "socket": _int(m["socket"]), "die": _int(m["die"])}
        return {**base, "class": kind, "block": m["block"].lower(), "count": n, "socket": _int(m["socket"]),
                "die": _int(m["die"])}
    if (m := _FATAL.search(msg)) and (m["end"] or m.end() == len(msg.rstrip())):
        return {**base, "class": "fatal", "block": m["what"] if m["end"] else None}
    if m := _RESET.search(msg):
        resets = begun if begun is not None else {}
        if m["how"] == "begin":  # a reset: its outcome line, when the log has it, completes this event
            resets[bdf or ""] = {**base, "class": "reset", "outcome": None}
            return resets[bdf or ""]
        klass = "reset" if m["how"] == "succeeded" else "reset-failed"
        if (started := resets.pop(bdf or "", None)) is not None:
            started.update({"class": klass, "count": _int(m["n"]), "outcome": m["how"]})
            return None
        return {**base, "class": klass, "count": _int(m["n"]), "outcome": m["how"]}
    if "timeout, signaled" in msg and (m := _RING.search(msg)):
        return {**base, "class": "ring-timeout", "block": m["ring"], "signaled": int(m["sig"]),
                "emitted": int(m["emit"]), "process": None, "pid": None}
    if (m := _PROCESS.search(msg)) and last is not None and last.get("class") == "ring-timeout" \
            and last.get("process") is None:
        last["process"], last["pid"] = m["name"], int(m["pid"])  # the job's process, printed next
        return None
    if "page fault" in msg and (m := _PAGE_FAULT.search(msg)):
        return {**base, "class": "page-fault", "block": m["hub"]}
    if _INIT_FAILED in msg:
        return {**base, "class": "init-failed", "error": None}
    if m := _PROBE.search(msg):
        bus = m["bdf"].lower().rsplit(".", 1)[0] if m["bdf"] else bdf
        if last is not None and last.get("class") == "init-failed" and last.get("bus_id") == bus \
                and last.get("error") is None:
            last["error"] = int(m["err"])  # the driver core's line after amdgpu's own: the same failure
            return None
        return {**base, "bus_id": bus, "class": "init-failed", "error": int(m["err"])}
    if m := _THRESHOLD.search(msg):
        return {**base, "class": "bad-page-threshold", "count": int(m["n"]), "total": int(m["max"])}
    return None


def status_class(status: int) -> str:
    """An ACA bank's STATUS register read as the MCA architecture lays it out (``amdgpu_aca.h``
    ``ACA_REG__STATUS__*``): bit 61 UC (uncorrected), 44 Deferred, 43 Poison; else corrected."""
    if status >> 61 & 1:
        return "uncorrectable"
    if status >> 44 & 1:
        return "deferred"
    if status >> 43 & 1:
        return "poison"
    return "correctable"


def is_fault(e: dict[str, Any]) -> bool:
    """Whether the event shows a failure: all but correctable counts and the bank dumps of
    correctable errors (an ACA dump whose STATUS was not read stays a failure)."""
    if e["class"] == "correctable":
        return False
    return not (e["class"] == "aca" and e.get("status_class") == "correctable")


def _int(v: str | None) -> int | None:
    return int(v) if v is not None else None


def describe(e: dict[str, Any]) -> str:
    where = f" on {e['bus_id']}" if e.get("bus_id") else ""
    what = {"aca": f"ACA bank dump ({e.get('status_class') or 'STATUS not read'})", "fatal": f"fatal RAS interrupt ({e.get('block')})",
            "reset": "GPU reset succeeded", "reset-failed": "GPU reset failed",
            "ring-timeout": f"ring {e.get('block')} timeout", "page-fault": f"{e.get('block')} page fault",
            "bad-page-threshold": f"bad page records {e.get('count')} over the threshold {e.get('total')}",
            "init-failed": f"GPU not initialised (probe error {e.get('error')})"}.get(e["class"])
    if what is None:
        n = e.get("count") if e.get("count") is not None else e.get("total")
        what = f"{n} {e['class']} errors in {e.get('block')}"
    return f"amdgpu {what}{where}"
