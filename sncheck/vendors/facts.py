"""Host facts: the commands the SSH backend runs on each host, and pure checks of their output.

``COMMANDS`` is the registry, in the order the commands run. Each entry names the
tool, its argv, the parser (:mod:`sncheck.vendors.parsers`) and a check that turns the
parsed dict into ``host_fact`` rows (:func:`sncheck.rows.host_fact_row`). ``FACTS``
lists every fact with the command that yields it and what makes it fail.

:func:`evaluate` does the whole step for one command's outcome (exit code, output,
timeout) without any SSH, so every rule is testable on captured output:

* exit 127 (the shell's "command not found") -> one ``missing_tool`` row per fact;
* a timeout -> ``timeout`` rows that name the command;
* output no parser can read -> ``parse_failed`` rows (``error`` when the tool also
  exited non-zero) that name the tool;
* otherwise the check's rows, ``ok`` False where the hardware is not as it should be.

Every tool is required, ``ibstat`` and ``dcgmi`` included: a host without them gives
``missing_tool`` rows, which the detectors report as warnings. An inventory has no
way yet to say "this cluster has no InfiniBand" or "no DCGM here", and a check that
could not run must never read as a pass.

Choices worth knowing:

* PCIe: the link *width* below its max is a fault (``pcie_width``, ok False). The
  *generation* is not judged: an idle GPU drops to gen 1 to save power, so a gen
  below max on a healthy idle host is normal. ``pcie_gen`` records current vs max
  (ok True, the downshift said in the message) so a report shows it, but a
  ``host_fact`` row has no severity field short of a finding, and a critical finding
  on every idle host would be a false alarm.
* NVLink: no inventory field gives the expected link count, so it is the largest
  count any GPU of the host lists; every link must be active and at the host's top
  speed. A host whose GPUs list no NVLink at all (PCIe cards) passes with a message.
* InfiniBand: every port Active / LinkUp; the expected rate of a port is the highest
  rate among ports of the same adapter model and link layer on the host (a 400G
  RoCE NIC next to a 100G management NIC is fine; one 400G NIC at 200G is not).
* Clock event (throttle) reasons that mean trouble: HW Slowdown, HW Thermal Slowdown,
  HW Power Brake Slowdown, SW Thermal Slowdown. SW Power Cap, Idle, application
  clocks, sync boost and display clocks are benign.
* ECC: volatile uncorrectable counters (SRAM/DRAM, or "Double Bit" on old GPUs) above
  zero, or the SRAM threshold exceeded. Correctable counts are reported, not judged.
* Remapped rows: a pending remap or a remapping failure; retired pages: pending.
* A section that ``nvidia-smi -q`` prints as N/A for every GPU (ECC on consumer
  cards) gives a row with value null, ok True and the message "not reported".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ParseError
from ..rows import host_fact_row
from .infiniband import ibstat
from .nvidia import dcgmi, nvidia_smi

Check = Callable[[str, dict[str, Any], "Expect"], list[dict]]
Parser = Callable[[str], dict[str, Any]]

MISSING_EXIT = 127   # POSIX shells: command not found
TROUBLE_CLOCK_REASONS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown",
                         "SW Thermal Slowdown")
_LISTED = 6  # how many offenders a message names before "..."


@dataclass(frozen=True)
class Expect:
    """What the inventory says a host should have."""

    cards: int


@dataclass(frozen=True)
class FactCommand:
    name: str
    tool: str
    argv: tuple[str, ...]
    parse: Parser
    check: Check
    facts: tuple[str, ...]

    @property
    def display(self) -> str:
        return " ".join(self.argv)


# --------------------------------------------------------------------------- helpers

def _row(host: str, fact: str, value: Any, expected: Any, ok: bool, message: str, tool: str) -> dict:
    return host_fact_row(host, fact, value, expected, ok, message=f"{host}: {message}", tool=tool)


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_LISTED])
    return shown + (f", ... ({len(items)} in all)" if len(items) > _LISTED else "")


def _gpu_name(gpu: dict[str, Any], i: int) -> str:
    return f"GPU {gpu.get('bus_id') or gpu.get('index', i)}"


# --------------------------------------------------------------------------- checks

def check_card_count(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    gpus = parsed.get("gpus") or []
    errors = parsed.get("errors") or []
    n = len(gpus)
    ok = n == expect.cards and not errors
    names = sorted({str(g.get("name")) for g in gpus if g.get("name")})
    msg = f"{n} GPUs found, inventory says {expect.cards}"
    if names:
        msg += f" ({', '.join(names)})"
    if errors:
        msg += f"; nvidia-smi: {_listed(errors)}"
    return [_row(host, "card_count", n, expect.cards, ok, msg, "nvidia-smi")]


def check_topology(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    """Recorded for the report (link type of each GPU pair), not judged."""
    kinds: dict[str, int] = {}
    gpus = parsed.get("gpus") or []
    matrix = parsed.get("matrix") or {}
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            cell = (matrix.get(a) or {}).get(b)
            if cell:
                kinds[cell] = kinds.get(cell, 0) + 1
    summary = ", ".join(f"{v} pairs {k}" for k, v in sorted(kinds.items())) or "no GPU pairs"
    return [_row(host, "gpu_topology", kinds, None, True,
                 f"nvidia-smi topo -m: {len(gpus)} GPUs, {summary} (recorded, not judged)", "nvidia-smi")]


def check_nvlink(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    gpus = parsed.get("gpus") or []
    if not gpus and not parsed.get("errors"):
        return [_row(host, "nvlink", 0, None, True, "no NVLink reported (GPUs without NVLink)", "nvidia-smi")]
    per_gpu = max((len(g["links"]) for g in gpus), default=0)
    speeds = [ln["speed_GBps"] for g in gpus for ln in g["links"] if ln.get("speed_GBps")]
    top = max(speeds, default=None)
    up = sum(1 for g in gpus for ln in g["links"] if ln.get("active"))
    bad: list[str] = []
    for i, g in enumerate(gpus):
        name = f"GPU {g.get('index', i)}"
        for err in g.get("errors") or []:
            bad.append(f"{name}: {err}")
        for ln in g["links"]:
            if not ln.get("active"):
                bad.append(f"{name} link {ln['link']} inactive")
            elif top is not None and ln.get("speed_GBps") is not None and ln["speed_GBps"] < top:
                bad.append(f"{name} link {ln['link']} at {ln['speed_GBps']:g} GB/s (others {top:g} GB/s)")
        if len(g["links"]) < per_gpu:
            bad.append(f"{name} lists {len(g['links'])} links, others {per_gpu}")
    loose = [e for e in parsed.get("errors") or [] if not e.startswith("GPU ")]
    bad += loose
    expected = per_gpu * len(gpus)
    speed = f" at {top:g} GB/s" if top is not None else ""
    msg = f"NVLink {up}/{expected} links up{speed} on {len(gpus)} GPUs"
    if bad:
        msg += f": {_listed(bad)}"
    return [_row(host, "nvlink", up, expected, not bad, msg, "nvidia-smi")]


def check_nvlink_errors(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    total = 0
    bad: list[str] = []
    for i, g in enumerate(parsed.get("gpus") or []):
        for ln in g["links"]:
            for counter, value in sorted(ln["counters"].items()):
                if value:
                    total += value
                    bad.append(f"GPU {g.get('index', i)} link {ln['link']} {counter}={value}")
    errors = parsed.get("errors") or []
    msg = f"NVLink error counters: {total} errors" + (f" ({_listed(bad)})" if bad else "")
    if errors:
        msg += f"; nvidia-smi: {_listed(errors)}"
    return [_row(host, "nvlink_errors", total, 0, not bad and not errors, msg, "nvidia-smi")]


def _section_rows(host: str, fact: str, gpus: list[dict], key: str,
                  judge: Callable[[dict], str | None], what: str) -> dict:
    """One row over every GPU's ``key`` section; ``judge`` returns a problem or None."""
    seen = [(i, g[key]) for i, g in enumerate(gpus) if g.get(key)]
    if not seen:
        return _row(host, fact, None, None, True, f"{what}: not reported by nvidia-smi -q (N/A)", "nvidia-smi")
    bad = [f"{_gpu_name(gpus[i], i)}: {p}" for i, s in seen if (p := judge(s))]
    msg = f"{what}: {len(seen) - len(bad)}/{len(seen)} GPUs fine" + (f"; {_listed(bad)}" if bad else "")
    return _row(host, fact, len(bad), 0, not bad, msg, "nvidia-smi")


def _judge_width(p: dict) -> str | None:
    cur, top = p.get("width_current"), p.get("width_max")
    if cur is not None and top is not None and cur < top:
        return f"PCIe x{cur} of x{top}"
    return None


def _judge_ecc(e: dict) -> str | None:
    counters = e.get("volatile") or e.get("aggregate") or {}
    problems = []
    for name, value in counters.items():
        uncorrectable = "Uncorrectable" in name or name.startswith("Double Bit/Total")
        if uncorrectable and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            problems.append(f"{name} {value}")
        if "Threshold Exceeded" in name and value is True:
            problems.append(name)
    return ", ".join(problems) or None


def _judge_remap(r: dict) -> str | None:
    problems = []
    if r.get("pending"):
        problems.append(f"row remap pending (remapped rows: {r.get('correctable')} correctable, "
                        f"{r.get('uncorrectable')} uncorrectable)")
    if r.get("failure"):
        problems.append("row remapping failure occurred")
    return ", ".join(problems) or None


def _judge_retired(r: dict) -> str | None:
    return "page retirement pending" if r.get("pending") else None


def _judge_clocks(c: dict) -> str | None:
    trouble = [r for r in c.get("active") or [] if r in TROUBLE_CLOCK_REASONS]
    return f"{', '.join(trouble)} active" if trouble else None


def check_query(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    gpus = parsed.get("gpus") or []
    errors = parsed.get("errors") or []
    attached = parsed.get("attached_gpus")
    report_msg = f"nvidia-smi -q lists {len(gpus)} GPUs" + (f" of {attached} attached" if attached is not None else "")
    if errors:
        report_msg += f"; {_listed(errors)}"
    rows = [_row(host, "gpu_report", len(gpus), attached, not errors and bool(gpus), report_msg, "nvidia-smi")]
    rows.append(_section_rows(host, "pcie_width", gpus, "pcie", _judge_width, "PCIe link width"))
    rows.append(_pcie_gen(host, gpus))
    rows.append(_section_rows(host, "ecc", gpus, "ecc", _judge_ecc, "ECC uncorrectable errors"))
    rows.append(_section_rows(host, "remapped_rows", gpus, "remapped_rows", _judge_remap, "remapped rows"))
    rows.append(_section_rows(host, "retired_pages", gpus, "retired_pages", _judge_retired, "retired pages"))
    rows.append(_section_rows(host, "clock_reasons", gpus, "clock_reasons", _judge_clocks, "clock event reasons"))
    _note_correctable(rows, gpus)
    return rows


def _pcie_gen(host: str, gpus: list[dict]) -> dict:
    seen = [(i, g["pcie"]) for i, g in enumerate(gpus) if g.get("pcie")]
    known = [(i, p) for i, p in seen if p.get("gen_current") is not None and p.get("gen_max") is not None]
    if not known:
        return _row(host, "pcie_gen", None, None, True, "PCIe generation: not reported", "nvidia-smi")
    low = [f"{_gpu_name(gpus[i], i)}: gen {p['gen_current']} of {p['gen_max']}"
           for i, p in known if p["gen_current"] < p["gen_max"]]
    value = min(p["gen_current"] for _, p in known)
    expected = max(p["gen_max"] for _, p in known)
    msg = f"PCIe generation: {len(known) - len(low)}/{len(known)} GPUs at max"
    if low:
        msg += (f"; {_listed(low)} (not judged: idle GPUs lower the PCIe generation to save power; "
                "recheck under load if bandwidth is low)")
    return _row(host, "pcie_gen", value, expected, True, msg, "nvidia-smi")


def _note_correctable(rows: list[dict], gpus: list[dict]) -> None:
    total = 0
    for g in gpus:
        for name, value in ((g.get("ecc") or {}).get("volatile") or {}).items():
            if "Correctable" in name and "Uncorrectable" not in name and isinstance(value, int):
                total += value
    if total:
        for r in rows:
            if r["fact"] == "ecc":
                r["message"] += f" ({total} correctable errors, not judged)"


def check_ib_ports(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    ports = [(ca, p) for ca in parsed.get("cas") or [] for p in ca["ports"]]
    top: dict[tuple, float] = {}
    for ca, p in ports:
        key = (ca.get("ca_type"), p.get("link_layer"))
        if p.get("rate_gbps") is not None:
            top[key] = max(top.get(key, 0), p["rate_gbps"])
    bad: list[str] = []
    up = 0
    for ca, p in ports:
        name = f"{ca['name']} port {p['port']}"
        state, phys = str(p.get("state") or "?"), str(p.get("physical_state") or "?")
        if state.lower() != "active" or phys.lower() != "linkup":
            bad.append(f"{name} {state}/{phys}")
            continue
        up += 1
        best = top.get((ca.get("ca_type"), p.get("link_layer")))
        if p.get("rate_gbps") is not None and best is not None and p["rate_gbps"] < best:
            bad.append(f"{name} at {p['rate_gbps']:g} Gb/s (same adapters run {best:g} Gb/s)")
    bad += [str(e) for e in parsed.get("errors") or []]
    rates = ", ".join(f"{r:g}" for r in sorted(set(top.values()), reverse=True)) or "?"
    msg = f"{up}/{len(ports)} IB/RoCE ports active (rates {rates} Gb/s)"
    if bad:
        msg += f": {_listed(bad)}"
    return [_row(host, "ib_ports", up, len(ports), not bad and bool(ports), msg, "ibstat")]


def check_dcgmi(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    result = parsed.get("result")
    failed = [t["name"] for t in parsed.get("tests") or [] if t.get("result") == "Fail"]
    notes = failed + [str(e) for e in parsed.get("errors") or []]
    ok = result in ("Pass", "Warn", "Skip")
    msg = f"dcgmi diag: {result or 'no result'}"
    if notes:
        msg += f": {_listed(notes)}"
    warnings = [w for t in parsed.get("tests") or [] for w in t.get("warnings") or []]
    warnings += list(parsed.get("warnings") or [])
    if warnings:
        msg += f" (warnings: {_listed(warnings)})"
    return [_row(host, "dcgmi_diag", result, "Pass", ok, msg, "dcgmi")]


# --------------------------------------------------------------------------- registry

def _cmd(name: str, tool: str, argv: Sequence[str], parse: Parser, check: Check, *facts: str) -> FactCommand:
    return FactCommand(name, tool, tuple(argv), parse, check, facts)


COMMANDS: dict[str, FactCommand] = {c.name: c for c in (
    _cmd("query_gpu", "nvidia-smi", nvidia_smi.query_gpu_command(), nvidia_smi.parse_query_gpu_csv,
         check_card_count, "card_count"),
    _cmd("topo", "nvidia-smi", ["nvidia-smi", "topo", "-m"], nvidia_smi.parse_topo, check_topology,
         "gpu_topology"),
    _cmd("nvlink_status", "nvidia-smi", ["nvidia-smi", "nvlink", "-s"], nvidia_smi.parse_nvlink_status,
         check_nvlink, "nvlink"),
    _cmd("nvlink_errors", "nvidia-smi", ["nvidia-smi", "nvlink", "-e"], nvidia_smi.parse_nvlink_errors,
         check_nvlink_errors, "nvlink_errors"),
    _cmd("query", "nvidia-smi", ["nvidia-smi", "-q"], nvidia_smi.parse_query, check_query,
         "gpu_report", "pcie_width", "pcie_gen", "ecc", "remapped_rows", "retired_pages", "clock_reasons"),
    _cmd("ibstat", "ibstat", ["ibstat"], ibstat.parse_ibstat, check_ib_ports, "ib_ports"),
    # Level 1: the quick deployment checks (seconds); -r 2/3 take minutes per host.
    _cmd("dcgmi_diag", "dcgmi", ["dcgmi", "diag", "-r", "1"], dcgmi.parse_dcgmi_diag, check_dcgmi,
         "dcgmi_diag"),
)}

FACTS: dict[str, tuple[str, str]] = {
    # fact: (command, what makes it fail)
    "reachable": ("", "SSH connect, host key or login failed (one row, status unreachable)"),
    "card_count": ("query_gpu", "GPUs listed by --query-gpu differ from the inventory's cards"),
    "gpu_topology": ("topo", "never: the link type of each GPU pair is recorded"),
    "nvlink": ("nvlink_status", "an inactive link, a link below the host's top speed, an NVML error"),
    "nvlink_errors": ("nvlink_errors", "a non-zero replay, recovery or CRC counter"),
    "gpu_report": ("query", "nvidia-smi -q printed errors or fewer GPUs than attached"),
    "pcie_width": ("query", "a link narrower than its max width"),
    "pcie_gen": ("query", "never: gen below max is recorded (idle GPUs downshift)"),
    "ecc": ("query", "volatile uncorrectable ECC errors, SRAM threshold exceeded"),
    "remapped_rows": ("query", "a pending row remap or a remapping failure"),
    "retired_pages": ("query", "a pending page retirement"),
    "clock_reasons": ("query", "HW Slowdown, HW Thermal, HW Power Brake or SW Thermal slowdown active"),
    "ib_ports": ("ibstat", "a port not Active/LinkUp, below its adapters' top rate, or an ibpanic"),
    "dcgmi_diag": ("dcgmi_diag", "a Fail result or a DCGM error"),
}


# --------------------------------------------------------------------------- evaluation

def failure_rows(host: str, cmd: FactCommand, status: str, message: str) -> list[dict]:
    """One row per fact of ``cmd`` that could not be checked (ok False, never a pass)."""
    return [host_fact_row(host, fact, None, None, False, status=status,
                          message=f"{host}: {message}: cannot check {fact}", tool=cmd.tool)
            for fact in cmd.facts]


def evaluate(host: str, cmd: FactCommand, expect: Expect, *, exit_code: int | None, stdout: str,
             stderr: str = "", timed_out: bool = False, duration: float | None = None) -> list[dict]:
    """Rows for one command's outcome on one host."""
    if timed_out:
        took = f" after {duration:.1f}s" if duration is not None else ""
        return failure_rows(host, cmd, "timeout", f"`{cmd.display}` timed out{took} and was killed")
    if exit_code == MISSING_EXIT or _not_found(stderr, cmd.argv[0]):
        return failure_rows(host, cmd, "missing_tool", f"{cmd.tool} not found on the PATH (exit {exit_code})")
    try:
        parsed = cmd.parse(stdout)
    except ParseError as e:
        if exit_code not in (0, None):
            return failure_rows(host, cmd, "error",
                                f"`{cmd.display}` failed with exit {exit_code}: {_tail(stderr or stdout)}")
        return failure_rows(host, cmd, "parse_failed", f"cannot parse {cmd.tool} output ({e.message})")
    if exit_code is None:
        parsed.setdefault("errors", []).append("the command ended without an exit status")
    elif exit_code != 0 and not parsed.get("errors"):
        # Clean-looking output from a command that says it failed: do not trust it.
        parsed.setdefault("errors", []).append(f"exit {exit_code}: {_tail(stderr) or 'no error text'}")
    return cmd.check(host, parsed, expect)


def _not_found(stderr: str, program: str) -> bool:
    return bool(re.search(rf"\b{re.escape(program)}: (?:command )?not found", stderr))


def _tail(text: str, lines: int = 2) -> str:
    kept = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(kept[-lines:])
