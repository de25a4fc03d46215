"""amdgpu RAS and ACA lines in the kernel log, from their grammar (sncheck/vendors/amd/kernel_ras.py,
read in Linux's amdgpu_ras.c, amdgpu_aca.c, amdgpu_umc.c, amdgpu_job.c, amdgpu_device.c): the
count lines of kernels to 6.7 and the socket/die lines of 6.8+ (with 6.10's event id), the
fatal ERREVENT interrupt, ACA bank dumps in both register layouts, resets, ring timeouts, VM
page faults, the bad page threshold and a GPU that fails init; in every time format the kernel-log view reads."""

from __future__ import annotations

import random
from collections.abc import Iterator

from grammars import Variant, generator
from grammars.kernel_log import _TIMES, _stamp

_BLOCKS = ("umc", "gfx", "sdma", "xgmi_wafl", "mmhub", "hdp")
_UC, _DEFERRED, _CORRECTED = 0xBAA000000000080B, 0x9C20100000060150, 0xD820000000060150  # bit 61 / 44 / neither


class _Log:
    def __init__(self, rng: random.Random, style: str) -> None:
        self.rng, self.style = rng, style
        self.lines: list[str] = []
        self.values: list[tuple[str, object]] = []
        self.events = self.faults = 0

    def line(self, bdf: str | None, msg: str, drm: bool = True) -> None:
        pre = f"amdgpu {bdf}: " + ("amdgpu: " if drm else "") if bdf else "amdgpu: "
        self.lines.append(pre + msg)

    def event(self, bdf: str, klass: str, fault: bool, **more: object) -> None:
        i = self.events
        self.values += [(f"events[{i}].source", "amdgpu"), (f"events[{i}].class", klass),
                        (f"events[{i}].bus_id", bdf[:10])]
        self.values += [(f"events[{i}].{k}", v) for k, v in more.items()]
        self.events += 1
        self.faults += fault


def _eid(rng: random.Random, new: bool) -> str:
    return f"{{{rng.randrange(1, 40)}}}" if new else ""  # 6.10+: RAS_EVENT_LOG's event id


@generator("kernel-log")
def amdgpu(rng: random.Random) -> Iterator[Variant]:
    for style in _TIMES:
        for case in rng.sample(("counts", "socket counts", "erREVENT aca", "aca 6.9", "reset", "ring page fault",
                                "threshold", "correctable only", "init failed"), 3):
            log = _Log(rng, style)
            bdfs = [f"0000:{b:02x}:00.0" for b in rng.sample(range(0x1b, 0xfe), 2)]
            new = rng.random() < 0.5
            if case in ("counts", "correctable only"):
                bdf, block = bdfs[0], rng.choice(_BLOCKS)
                kind = "correctable" if case == "correctable only" else rng.choice(("uncorrectable", "correctable"))
                n = rng.randrange(1, 2000)
                log.line(bdf, f"{n} {kind} hardware errors detected in {block} block")
                log.event(bdf, kind, kind != "correctable", block=block, count=n)
                log.line(bdfs[1], f"no uncorrectable hardware errors detected in {block} block")  # the all-clear
            elif case == "socket counts":
                bdf, block = bdfs[0], rng.choice(("umc", "xgmi_wafl", "gfx"))
                kind = "deferred" if block == "umc" and rng.random() < 0.5 else rng.choice(("uncorrectable",
                                                                                           "correctable"))
                n, eid = rng.randrange(1, 2000), _eid(rng, new)
                sock, die = rng.randrange(8), rng.randrange(2)
                log.line(bdf, f"{eid}socket: {sock}, die: {die}, {n} new {kind} hardware errors detected in {block} "
                         "block", drm=False)
                log.line(bdf, f"{eid}socket: {sock}, die: {die}, {n} {kind} hardware errors detected in total in "
                         f"{block} block", drm=False)  # updates the event before it
                log.event(bdf, kind, kind != "correctable", block=block, count=n, total=n, socket=sock, die=die)
                if rng.random() < 0.5:
                    m = rng.randrange(1, 9)
                    log.line(bdf, f"{eid}socket: {sock}, die: {die}, {m} new poison consumption detected in gfx block",
                             drm=False)
                    log.event(bdf, "poison", True, block="gfx", count=m)
            elif case in ("erREVENT aca", "aca 6.9"):
                eid = _eid(rng, True)
                if case == "erREVENT aca":
                    log.line(bdfs[1], f"{eid}uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!", drm=False)
                    log.event(bdfs[1], "fatal", True, block="ERREVENT_ATHUB_INTERRUPT")
                status = rng.choice((_UC, _DEFERRED, _CORRECTED))
                log.line(bdfs[0], f"{eid}[Hardware Error]: Accelerator Check Architecture events logged", drm=False)
                regs = (("STATUS", status), ("ADDR", 0), ("MISC0", 0xD008000100000000), ("IPID", 0x1D02E1F007900),
                        ("SYND", 0x5D003E1B))
                for bank in range(rng.randint(1, 2)):
                    for reg, value in regs:
                        where = f"aca entry[{bank:02d}]" if case == "erREVENT aca" else f"ACA[{bank:02d}/02]"
                        log.line(bdfs[0], f"{eid}[Hardware Error]: {where}.{reg}=0x{value:016x}", drm=False)
                klass = {_UC: "uncorrectable", _DEFERRED: "deferred", _CORRECTED: "correctable"}[status]
                log.event(bdfs[0], "aca", status != _CORRECTED, status_class=klass)
            elif case == "reset":
                log.line(bdfs[0], "GPU reset begin!")
                outcome = rng.choice(("succeeded", "failed", None))  # None: the log ends before the outcome
                n = rng.randrange(1, 5)
                if outcome is not None:
                    log.line(bdfs[0], f"GPU reset({n}) succeeded!" if outcome == "succeeded" else f"GPU reset({n}) failed")
                    log.event(bdfs[0], "reset" if outcome == "succeeded" else "reset-failed", True, count=n,
                              outcome=outcome)
                else:
                    log.event(bdfs[0], "reset", True, outcome=None)
            elif case == "init failed":  # amdgpu_device_init's failure, then the driver core's probe line
                log.line(bdfs[0], "Fatal error during GPU init")
                err = rng.choice((-12, -22, -110))
                log.lines.append(f"amdgpu: probe of {bdfs[0]} failed with error {err}" if rng.random() < 0.5
                                 else f"amdgpu {bdfs[0]}: probe with driver amdgpu failed with error {err}")
                log.event(bdfs[0], "init-failed", True, error=err)
            elif case == "ring page fault":
                log.line(bdfs[0], "ring gfx_0.0.0 timeout, signaled seq=41211, emitted seq=41213")
                log.event(bdfs[0], "ring-timeout", True, block="gfx_0.0.0")
                log.line(bdfs[1], "[gfxhub] no-retry page fault (src_id:0 ring:24 vmid:8 pasid:32769)")
                log.line(bdfs[1], "  in process python3 pid 4242 thread python3 pid 4242")
                log.event(bdfs[1], "page-fault", True, block="gfxhub")
            else:  # the bad page table is full: the GPU is not initialised
                n = rng.randrange(100, 5000)
                log.line(bdfs[0], f"RAS records:{n} exceed threshold:{n - 1}")
                log.event(bdfs[0], "bad-page-threshold", True, count=n, total=n - 1)
            text = "".join(_stamp(style, i) + ln + "\n" for i, ln in enumerate(log.lines))
            values = log.values + [("len(events)", log.events), ("len(faults)", log.faults)]
            yield Variant("kernel-log", f"{style} amdgpu {case}", text, tuple(values), fails=log.faults > 0,
                          stream=True)
