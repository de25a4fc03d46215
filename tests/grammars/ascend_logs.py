"""ascend-sweep and ascend-collected, from their grammars (sncheck/vendors/ascend/sweep.py and
collected.py): compositions of the npu-smi and hccn_tool outputs their tools' generators write
(``npu_smi.py``, ``hccn_tool.py``), under each composition's own section markers:

- the sweep: sncheck's loop, an empty line and ``== device N VIEW`` above each device's output,
  a device's query that printed DCMI's init failure instead (not measured);
- the collected log: MindCluster's ``npu_info_collect.sh``, its ``Datetime:`` header, each
  command echoed above its output and two empty lines after it, in the script's order, the
  ``| grep`` sections holding the lines grep kept.

Each section's values are its tool's generator's, under the section (``devices.3.link``,
``sections[7].parsed.link``); the composition fails where a section does."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from grammars import Variant, generator, variants
from grammars.npu_smi import _DCMI, _chip_board

_ECHO = re.compile(r"^/usr/local/Ascend/driver/tools/hccn_tool -i \d+ ")


def _output(v: Variant) -> tuple[list[str], int]:
    """``v``'s lines without the command echo its generator may put above them (the sweep
    prints none, the collected log its own), and how many of them run through its end marker
    (a stream's: its first line; what follows is a list of a length nothing states)."""
    lines = v.text.split("\n")
    if lines[-1] == "":
        lines.pop()
    echo = 1 if lines and _ECHO.match(lines[0]) else 0
    end = 1 + echo if v.stream else len(lines) if v.end is None else v.end
    return lines[echo:], end - echo


def _under(prefix: str, at: str) -> str:
    """``at`` (a value's place in its tool's JSON) under ``prefix`` (the section's place)."""
    m = re.fullmatch(r"len\((.*)\)", at)
    return f"len({prefix}.{m.group(1)})" if m else f"{prefix}.{at}"


class _Log:
    """Lines being composed, the values they hold, whether a section fails, and where the
    last section's end marker is."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.values: list[tuple[str, object]] = []
        self.fails = False
        self.end = 0

    def add(self, marker: list[str], v: Variant | None, prefix: str, body: list[str] | None = None) -> None:
        self.lines += marker
        if v is None:  # a section no view reads, or one whose lines are given
            self.lines += body or []
            self.end = len(self.lines)
            return
        out, end = _output(v)
        self.end = len(self.lines) + end
        self.lines += out
        self.values += [(_under(prefix, at), value) for at, value in v.values]
        self.fails |= v.fails

    def variant(self, view: str, name: str, count: int, elide: tuple[int, int] | None = None) -> Variant:
        return Variant(view, name, "\n".join(self.lines) + "\n", tuple(self.values), fails=self.fails, end=self.end,
                       count=count, elide=elide)


# the sweep's VIEW word -> the view of one device's output
_SWEPT = {"health": "npu-smi-health", "ecc": "npu-smi-ecc", "net_health": "hccn-net-health", "link": "hccn-link",
          "optical": "hccn-optical", "fec": "hccn-fec", "stat": "hccn-stat", "link_stat": "hccn-link-stat"}


@generator("ascend-sweep")
def ascend_sweep(rng: random.Random) -> Iterator[Variant]:
    for word, view in _SWEPT.items():
        # a device whose tool failed (DCMI's lines) is the sweep's own case below: null, its lines under tool_failed
        outs = [v for v in variants(view) if not v.hints and not any(at.startswith("tool_failed") for at, _ in v.values)]
        for n in (1, 16) if word == "link" else (rng.choice((2, 4)),):
            log = _Log()
            for i in range(n):
                log.add(["", f"== device {i} {word}"], rng.choice(outs), f"devices.{i}")
            log.values += [("view", word), ("len(devices)", n)]
            yield log.variant("ascend-sweep", f"{word} x {n}", n)
    # -t board -i N -c C on every die (the run's die_ids): each die its own VDie ID
    for n, a3 in ((2, False), (16, True)):
        log = _Log()
        for i in range(n):
            lines = _chip_board(rng, i // 2 if a3 else i, i % 2 if a3 else 0, a3)
            vdie = next(x.split(":", 1)[1].strip() for x in lines if x.strip().startswith("VDie ID"))
            log.add(["", f"== device {i} board"], Variant("npu-smi-fields", "board", "\n".join(lines) + "\n",
                                                         (("fields.VDie ID", vdie),)), f"devices.{i}")
        log.values += [("view", "board"), ("len(devices)", n)]
        yield log.variant("ascend-sweep", f"board x {n}{' A3' if a3 else ''}", n)
    # one device's query could not reach the driver (its 2>&1 puts DCMI's lines in its section)
    for word in ("health", "ecc", "link", "optical"):
        outs = [v for v in variants(_SWEPT[word]) if not v.fails]
        n, bad = 4, rng.randrange(4)
        log = _Log()
        for i in range(n):
            if i == bad:
                lines = list(rng.choice(_DCMI))
                log.add(["", f"== device {i} {word}"], None, "", lines)
                log.values += [(f"devices.{i}", None), (f"tool_failed.{i}[0]", lines[-1])]
            else:
                log.add(["", f"== device {i} {word}"], rng.choice(outs), f"devices.{i}")
        log.fails = True  # not measured: never a pass
        yield log.variant("ascend-sweep", f"{word} x {n}, device {bad} DCMI failed", n)


@generator("ascend-sweep")
def ascend_sweep_hccn_failed(rng: random.Random) -> Iterator[Variant]:
    """One device's hccn_tool query failed with one of hccn_tool's own lines (main.c/cmd.c: its
    health unread, the device gone): not measured, as DCMI's failure is."""
    for word in ("net_health", "optical"):
        outs = [v for v in variants(_SWEPT[word]) if not v.fails]
        n, bad = 4, rng.randrange(4)
        line = rng.choice(("Get device health status failed!", "The device is not exist!", "Cmd execute failed!"))
        log = _Log()
        for i in range(n):
            if i == bad:
                log.add(["", f"== device {i} {word}"], None, "", [line])
                log.values += [(f"devices.{i}", None), (f"tool_failed.{i}[0]", line)]
            else:
                log.add(["", f"== device {i} {word}"], rng.choice(outs), f"devices.{i}")
        log.fails = True  # not measured: never a pass
        yield log.variant("ascend-sweep", f"{word} x {n}, device {bad} hccn_tool failed", n)


_NPU_SMI = "/usr/local/bin/npu-smi info"
_HCCN = "/usr/local/Ascend/driver/tools/hccn_tool"
_TLS = ("dev_id:{i}, tls switch[0](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), tls alarm "
        "time threshold[60]days")
_LSPCI = "{bus:02x}:00.0 Processing accelerators: Huawei Technologies Co., Ltd. Device d802 (rev 20)"


def _own_failure(v: Variant) -> bool:
    """A variant of hccn_tool's own failure line (hccn_tool.py's _own_failed, hccn_ip_port_failed)."""
    return any(at == "tool_failed[0]" and not str(x).startswith("dcmi") for at, x in v.values)


def _pick(rng: random.Random, view: str, name: str = "") -> Variant:
    # hccn_tool's own failure lines are left out (a section failing is DCMI's variants' here), so the
    # compositions tests/test_elision.py reads stay those it was written on
    return rng.choice([v for v in variants(view) if v.name.startswith(name) and not v.hints and not _own_failure(v)])


@generator("ascend-collected")
def ascend_collected(rng: random.Random) -> Iterator[Variant]:
    """npu_info_collect.sh (npus x chips devices) and its compatible form (one chip, the older
    board/usages commands), whole; the rest of each section's shapes the tools' generators vary."""
    for npus, chips, compatible in ((1, 1, False), (1, 2, False), (2, 1, True)):
        log = _Log()
        log.lines += [f"Datetime: 2026-03-0{npus} 12:0{chips}:44.179645", "", ""]
        sections: list[tuple[str, Variant | None, list[str] | None]] = []
        if not compatible:
            sections.append((f"{_NPU_SMI} -m", _pick(rng, "npu-smi-mapping"), None))
        sections.append((_NPU_SMI, _pick(rng, "npu-smi"), None))
        sections.append(('pip list | grep "torch "', None, ["torch                             2.1.0"]))
        sections.append(("lspci | grep acce", None, [_LSPCI.format(bus=0x3D + i) for i in range(npus)]))
        devices = [(n, c) for n in range(npus) for c in range(chips)]
        sections += [(f"{_NPU_SMI} -i {n} -c {c} -t health", _pick(rng, "npu-smi-health"), None) for n, c in devices]
        for flag, view in (("-net_health", "hccn-net-health"), ("-ip", "hccn-ip"), ("-link_stat", "hccn-link-stat"),
                           ("-link", "hccn-link"), ("-tls", None), ("-optical", "grep"), ("-optical", "hccn-optical"),
                           ("-stat", "hccn-stat"), ("-fec", "hccn-fec")):
            for i in range(len(devices)):
                if view is None:
                    sections.append((f"{_HCCN} -i {i} -tls -g | grep switch", None, [_TLS.format(i=i)]))
                elif view == "grep":  # the module's 'present' line alone
                    v = _pick(rng, "hccn-optical")
                    kept = [ln for ln in v.text.split("\n") if "prese" in ln]
                    sections.append((f"{_HCCN} -i {i} -optical -g | grep prese",
                                     Variant("hccn-optical", v.name, "\n".join(kept) + "\n",
                                             (("present", v.values[0][1]),), fails=v.values[0][1] != "present"),
                                     None))
                else:
                    sections.append((f"{_HCCN} -i {i} {flag} -g", _pick(rng, view), None))
        if compatible:
            per = (("-i {n} -t ecc", "npu-smi-ecc", ""), ("-i {n} -t board", "npu-smi-fields", "board -i N"),
                   ("-i {n} -c 0 -t board", "npu-smi-fields", "board -i N -c C"),
                   ("-i {n} -t usages", "npu-smi-hbm", "usages"))
            sections += [(f"{_NPU_SMI} {cmd.format(n=n)}", _pick(rng, view, name), None) for cmd, view, name in per
                         for n in range(npus)]
        else:
            for cmd, view, name in (("ecc", "npu-smi-ecc", ""), ("board", "npu-smi-fields", "board -i N -c C"),
                                    ("usages", "npu-smi-hbm", "usages")):
                sections += [(f"{_NPU_SMI} -i {n} -c {c} -t {cmd}", _pick(rng, view, name), None) for n, c in devices]
        elide = None
        for k, (cmd, v, body) in enumerate(sections):
            if cmd.startswith("lspci"):  # a section no view reads: a reporter's '...' there loses no value
                elide = (len(log.lines) + 1, len(log.lines) + 1 + len(body or []))
            log.add([cmd], v, f"sections[{k}].parsed", body)
            log.lines += ["", ""]  # echo -e "\n"
            log.values.append((f"sections[{k}].command", cmd.split(" | ")[0]))
        log.values += [("len(sections)", len(sections)), ("datetime", f"2026-03-0{npus} 12:0{chips}:44.179645")]
        yield log.variant("ascend-collected", f"{'compatible ' if compatible else ''}{npus} NPUs x {chips}",
                          len(sections), elide)
