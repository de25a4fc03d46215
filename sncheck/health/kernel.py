"""Kernel log reports judged by the kernel-log policy: the rules file's tables.

Metric ``kernel_events``: one entry per report of the kernel log lines read since the last
run (fact ``kernel_log``: NVIDIA Xid, NVSwitch SXid, RmInitAdapter failures, PCIe AER,
amdgpu RAS/ACA, mlx5 NIC health, mlx5 port state changes, PCIe links below capability, hung tasks), and, ``new: false``, the reports of earlier runs that the SSH backend keeps
in the state dir (``kernel-log-cursors.json``, at most :data:`MAX_WINDOW_S` old) so that a
count over a window spans runs. An Xid names the card whose ``nvidia-smi -q`` bus id it
carries (likewise an RmInitAdapter failure, an AER report or a PCIe link below capability at a GPU's
bus id, an amdgpu report where the plug-in lists bus ids), else the host; an SXid names the NVSwitch
tray, an mlx5 health report or port state change its NIC and a hung task its process: the host.

Op ``kernel_events``: ``source`` (:data:`SOURCES`), ``severity`` and ``action`` for a report
the ``table`` does not list, and the ``table``: code (Xid, SXid) or class -> an entry, or a
list of entries tried in order (the first that applies wins)::

    {severity, action, summary, confirm,      # what the report is and what to do
     count, window, below,                    # N reports of it within the window: the severity;
                                              #   fewer: ``below`` (default info, recorded)
     drivers, when}                           # applies only to these driver versions / fields

* A report is keyed by its code, then its class (AER ``fatal``/``non-fatal``/``corrected``,
  SXid ``fatal``/``non-fatal``, amdgpu's classes, ``rm_init``/``api_mismatch``; an APEI GHES
  record's section by ``KIND-SEVERITY`` such as ``memory-corrected``, then its severity): :data:`KEYS`,
  per source; a key the rule's source cannot carry is refused, and so is a list entry after
  one without ``when`` or ``drivers`` (it would never be reached).
* ``drivers``: a version range (``">=550"``, ``">=535.104,<560"``) the entry's meaning holds
  for, compared with the driver the report ran on (its ``NVRM: loading`` line, else the last
  one the host's log showed). A report whose driver is not known takes the most severe of
  the entries its fields match, and says so.
* ``when``: fields the report must carry with these values (``{recovery_action: 2}``: Xid
  154's new action; ``{status_class: uncorrectable}``: an ACA bank's STATUS). Equality only.
* ``count`` and ``window`` (``24h``, ``30m``, ``7d``; at most 30 days; default: every report
  kept): judged on the kernel log's own timestamps (ISO, ``dmesg -T``, the journal, dmesg's
  uptime placed by the boot time sncheck's read prints), never on when sncheck read them;
  the reports of earlier runs count. A report whose time is not known counts in every
  window (it cannot be placed outside one); an earlier boot's uptime stamps (the log's
  ``boot_back``) are a clock of their own, compared with no other boot's.
* ``confirm`` defaults to ``none`` for a critical entry (the driver's record of a fault that
  happened cannot be re-measured: isolate at once), else to the rule's own.
"""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from sncheck.model import EntityKind, Finding, Severity, card_id
from sncheck.rows import host_fact_row
from sncheck.store.frames import fact_rows
from sncheck.vendors.kernel_ghes import KINDS as GHES_KINDS, SEVERITIES as GHES_SEVERITIES
from sncheck.vendors.kernel_links import CLASSES as LINK_CLASSES
from sncheck.vendors.kernel_log import GPU_SOURCES, HOST_SOURCES, KEPT_FIELDS, describe, placed

if TYPE_CHECKING:
    from sncheck.health.metrics import DetectContext
    from sncheck.health.rules import Rule

KERNEL_FACT = "kernel_log"
ACTIONS = ("restart_app", "reset_gpu", "reset_fabric", "reboot", "drain", "update_software", "contact_support",
           "ignore")
# rule source -> the parser's event sources it judges
SOURCES: dict[str, tuple[str, ...]] = {"xid": ("xid",), "sxid": ("sxid",), "aer": ("aer",), "amdgpu": ("amdgpu",),
                                       "nvrm": ("rm_init", "api_mismatch"), "mlx5": ("mlx5",),
                                       "hung_task": ("hung_task",), "ghes": ("ghes",), "nic_link": ("nic_link",),
                                       "pcie_link": ("pcie_link",)}
# rule source -> (whether its reports carry a code, the classes they are keyed by): a table key
# no report of the source can carry (Xid 'ring-timeout', AER 13) would never apply: refused
KEYS: dict[str, tuple[bool, tuple[str, ...]]] = {
    "xid": (True, ()), "sxid": (True, ("fatal", "non-fatal")), "aer": (False, ("fatal", "non-fatal", "corrected")),
    "amdgpu": (False, ("uncorrectable", "correctable", "deferred", "poison", "fatal", "aca", "page-fault", "reset",
                       "reset-failed", "ring-timeout", "bad-page-threshold", "init-failed")),
    "nvrm": (False, ("rm_init", "api_mismatch")),
    "mlx5": (True, ("fatal", "health-compromised", "syndrome", "recovered", "recovery-failed", "unloaded")),
    "hung_task": (False, ("hung-task", "hung-task-panic")),
    # APEI GHES records: by section kind and severity ('memory-corrected'), then by severity
    "ghes": (False, (*GHES_SEVERITIES, *(f"{k}-{s}" for k in GHES_KINDS for s in GHES_SEVERITIES))),
    # a NIC port's carrier and RDMA port state; a PCIe link below its device's capability (kernel_links)
    "nic_link": (False, LINK_CLASSES["nic_link"]), "pcie_link": (False, LINK_CLASSES["pcie_link"])}
CLASSES = tuple(dict.fromkeys(c for _, classes in KEYS.values() for c in classes))
MIN_WINDOW_S = 1.0  # the shortest window: dmesg -T and journalctl times are whole seconds
MAX_WINDOW_S = 30 * 86400  # how long the state dir keeps a host's reports: the longest window
MAX_COUNT = 10_000
MAX_CODE = 2**32 - 1  # an Xid, SXid or mlx5 sensor as the kernel prints it (hostile round 18, H18-08)
ENTRY_KEYS = ("severity", "action", "summary", "confirm", "count", "window", "below", "drivers", "when")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# ASCII digits (re.ASCII): '\d' took 'window: ٢٤h' and 'drivers: ">=٥٥٠"' as 24 h and driver 550
# (hostile round 20, H20-23), as no rules file a person types and no driver prints
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$", re.ASCII)
_CLAUSE = re.compile(r"^\s*(>=|<=|>|<|==)?\s*(\d{1,4}(?:\.\d{1,4}){0,2})\s*$", re.ASCII)
_COLUMNS = ["entity", "kind", "value", "fact", "source", "code", "klass", "bus_id", "text", "time", "clock", "t",
            "new", "driver", "event"]
_SHOWN = 5


# ------------------------------------------------------------------------------ the table

@dataclass(frozen=True)
class Entry:
    severity: str
    action: str | None = None
    summary: str | None = None
    confirm: str | None = None
    count: int = 1
    window_s: float | None = None
    below: str = "info"
    drivers: tuple[tuple[str, tuple[int, ...]], ...] = ()
    when: dict[str, Any] = field(default_factory=dict)

    def applies(self, event: dict[str, Any]) -> bool:
        return all(event.get(k) == v for k, v in self.when.items())

    def holds_for(self, driver: tuple[int, ...]) -> bool:
        return all(_compare(driver, op, v) for op, v in self.drivers)


def duration(value: Any) -> float | None:
    """``24h``, ``30m``, ``7d``, ``90s`` or a number of seconds -> seconds; None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value > 0 else None
    m = _DURATION.match(str(value))
    return float(m.group(1)) * _UNITS[m.group(2)] if m and float(m.group(1)) > 0 else None


def version(text: Any) -> tuple[int, ...] | None:
    """``570.195.03`` -> (570, 195, 3); None for anything else."""
    m = re.match(r"^(\d{1,4}(?:\.\d{1,4}){0,2})$", str(text).strip(), re.ASCII) if text is not None else None
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


MAX_CLAUSES = 4  # of a driver version range ('>=535.104,<560' has two)


def _range(text: Any) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        return None
    if len(clauses := str(text).split(",")) > MAX_CLAUSES:  # a range is a bound or two: no check of thousands
        return None
    out = []
    for clause in clauses:
        m = _CLAUSE.match(clause)
        if not m:
            return None
        out.append((m.group(1) or "==", tuple(int(p) for p in m.group(2).split("."))))
    return tuple(out)


def _compare(have: tuple[int, ...], op: str, want: tuple[int, ...]) -> bool:
    a = have[:len(want)]  # '>=550' holds for 550.90.07: compare as many parts as the bound gives
    return {">=": a >= want, "<=": a <= want, ">": a > want, "<": a < want, "==": a == want}[op]


def _satisfiable(clauses: tuple[tuple[str, tuple[int, ...]], ...]) -> bool:
    """Whether some driver version holds for every clause: one of the bounds, a step either
    side of one, or the ends of the range is such a version if any is (the clauses compare
    versions part by part, as many parts as each bound gives)."""
    near = {(0,), (10 ** 4,) * 3}
    for _, want in clauses:
        near |= {want, (*want[:-1], want[-1] + 1), (*want[:-1], max(want[-1] - 1, 0))}
    return any(all(_compare(v, op, want) for op, want in clauses) for v in near)


def _entry_error(where: str, entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return f"{where} must be a mapping, e.g. {{severity: critical, action: reset_gpu}}"
    unknown = set(entry) - set(ENTRY_KEYS)
    if unknown:
        return f"{where} has unknown keys {', '.join(sorted(map(str, unknown)))} ({', '.join(ENTRY_KEYS)})"
    for key in ("severity", "below"):
        if (key == "severity" or key in entry) and entry.get(key) not in tuple(Severity):
            return f"{where}.{key} must be one of {', '.join(Severity)}, got {entry.get(key)!r}"
    if "action" in entry and entry["action"] not in ACTIONS:
        return f"{where}.action must be one of {', '.join(ACTIONS)}, got {entry['action']!r}"
    if "confirm" in entry and entry["confirm"] not in ("retest", "none"):
        return f"{where}.confirm must be retest or none, got {entry['confirm']!r}"
    if "summary" in entry and not isinstance(entry["summary"], str):
        return f"{where}.summary must be text"
    count = entry.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        return f"{where}.count must be a whole number from 1 to {MAX_COUNT}, got {count!r}"
    if "window" in entry:
        w = duration(entry["window"])
        if w is None or w > MAX_WINDOW_S:
            return (f"{where}.window must be a duration up to 30d (24h, 30m, 7d, or seconds), "
                    f"got {entry['window']!r}")
        if w < MIN_WINDOW_S:  # dmesg -T and journal stamps are whole seconds, raw dmesg's microseconds
            return (f"{where}.window must be at least 1s (dmesg -T and journal times are whole seconds: a shorter "
                    f"window would judge the same {count} reports by the log's form), got {entry['window']!r}")
        if count == 1:
            return f"{where}: a window needs a count above 1 (how many reports within it)"
    if "below" in entry and count == 1:
        return f"{where}: below is the severity under the count: it needs a count above 1"
    if "below" in entry and Severity(entry["below"]).rank >= Severity(entry["severity"]).rank:
        return (f"{where}: below ({entry['below']}) must be less severe than severity ({entry['severity']}): "
                "fewer reports would weigh as much or more")
    if "drivers" in entry and (clauses := _range(entry["drivers"])) is None:
        return f"{where}.drivers must be a driver version range such as '>=550' or '>=535.104,<560' " \
               f"(at most {MAX_CLAUSES} bounds), " \
               f"got {str(entry['drivers'])[:40]!r}"
    if "drivers" in entry and clauses is not None and not _satisfiable(clauses):
        return f"{where}.drivers {str(entry['drivers'])[:40]!r} holds for no driver version: " \
               "the entry could never apply"
    when = entry.get("when", {})
    if not isinstance(when, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, bool)) and
                                             not isinstance(v, float) for k, v in when.items()):
        return f"{where}.when must map a report's fields to values (e.g. {{recovery_action: 2}}), got {when!r}"
    # a field no report carries (a misspelling), or one the state directory does not keep with the earlier
    # runs' reports a count spans: the entry would apply to nothing, or to tonight's reports only
    if strange := [str(k) for k in when if k not in KEPT_FIELDS]:
        near = difflib.get_close_matches(strange[0], KEPT_FIELDS, 1)
        return (f"{where}.when: {strange[0]!r} is no field a report is judged by" + (f" (did you mean {near[0]!r}?)"
                if near else "") + f"; the kernel-log view's are {', '.join(KEPT_FIELDS)}")
    return None


def check_table(table: Any, rule: dict[str, Any] | None = None) -> str | None:
    """Why a ``table`` param is wrong, or None (see the module for what an entry holds);
    ``rule``: the rule's node, whose ``source`` says which keys its reports can carry."""
    if not isinstance(table, dict):
        return "table must be a mapping of code or class to {severity, action}"
    source = (rule or {}).get("source")
    codes, classes = KEYS.get(source, (True, CLASSES)) if isinstance(source, str) else (True, CLASSES)
    for key, entry in table.items():
        # an Xid or SXid is an NvU32 the driver prints with %d: a larger key is no code any report carries
        code = isinstance(key, int) and not isinstance(key, bool) and 0 <= key <= MAX_CODE
        if not (code and codes) and key not in classes:
            takes = ([f"a code (a whole number from 0 to {MAX_CODE}, as the kernel prints it: 13, not '13' or 0x0d)"]
                     if codes else []) + \
                ([f"a class ({', '.join(classes)})"] if classes else [])
            return f"table key {key!r}: {source or 'kernel'} reports are keyed by {' or '.join(takes)}"
        cases = entry if isinstance(entry, list) else [entry]
        if not cases:
            return f"table[{key!r}] is an empty list: give at least one entry"
        for i, case in enumerate(cases):
            where = f"table[{key!r}]" + (f"[{i}]" if isinstance(entry, list) else "")
            if why := _entry_error(where, case):
                return why
            if isinstance(entry, list) and i < len(cases) - 1 and not case.get("when") and "drivers" not in case:
                # the first entry that applies wins, and a count is not what makes one apply
                return (f"{where} applies to every report (no when or drivers), so table[{key!r}][{i + 1}] "
                        f"is never reached: put it last")
    return None


def _entry(raw: dict[str, Any]) -> Entry:
    return Entry(raw["severity"], raw.get("action"), raw.get("summary"), raw.get("confirm"), raw.get("count", 1),
                 duration(raw["window"]) if "window" in raw else None, raw.get("below", "info"),
                 _range(raw["drivers"]) or () if "drivers" in raw else (), dict(raw.get("when") or {}))


def entries(table: dict[Any, Any]) -> dict[str, tuple[Entry, ...]]:
    """A validated table: key (as text) -> its entries in order."""
    return {str(k): tuple(_entry(c) for c in (v if isinstance(v, list) else [v])) for k, v in table.items()}


def keys_of(event: dict[str, Any]) -> tuple[str, ...]:
    """The table keys a report is looked up by, first match first: its code, then its class
    (an RmInitAdapter failure and an API mismatch: their own names)."""
    out = []
    if isinstance(event.get("code"), int):
        out.append(str(event["code"]))
    if event.get("source") in ("rm_init", "api_mismatch"):
        out.append(str(event["source"]))
    elif event.get("source") == "ghes" and event.get("kind") and event.get("class"):
        out += [f"{event['kind']}-{event['class']}", str(event["class"])]
    elif event.get("class"):
        out.append(str(event["class"]))
    return tuple(out)


def choose(table: dict[str, tuple[Entry, ...]], event: dict[str, Any],
           driver: str | None) -> tuple[str | None, int, Entry | None, str]:
    """(the key, the entry's place in its list, the entry, a note) a report is judged by;
    (None, -1, None, "") where the table lists none of its keys or none of its entries applies."""
    have = version(driver)
    for key in keys_of(event):
        cases = [(i, e) for i, e in enumerate(table.get(key, ())) if e.applies(event)]
        if not cases:
            continue
        if have is not None:
            for i, e in cases:
                if e.holds_for(have):
                    return key, i, e, ""
            continue
        if any(e.drivers for _, e in cases):  # which meaning holds depends on a driver we do not know
            i, e = max(cases, key=lambda c: (Severity(c[1].severity).rank, -c[0]))
            return key, i, e, "the driver version is not in the log: judged by its most severe meaning"
        return key, cases[0][0], cases[0][1], ""
    return None, -1, None, ""


def most_in_window(times: list[tuple[str, float] | None], ats: list[tuple[str, float] | None],
                   window_s: float | None) -> int:
    """The most of ``times`` within ``window_s`` up to one of ``ats``: :func:`in_window` of each,
    by bisection (a flood of one code is thousands of reports: not a quadratic count)."""
    unknown = sum(t is None for t in times)
    if window_s is None or any(a is None for a in ats):
        return len(times)
    by_clock: dict[str, list[float]] = {}
    for t in times:
        if t is not None:
            by_clock.setdefault(t[0], []).append(t[1])
    for v in by_clock.values():
        v.sort()
    best = 0
    for clock, at in (a for a in ats if a is not None):
        v = by_clock.get(clock, [])
        best = max(best, bisect.bisect_right(v, at) - bisect.bisect_left(v, at - window_s))
    return best + unknown


def in_window(times: list[tuple[str, float] | None], at: tuple[str, float] | None, window_s: float | None) -> int:
    """How many of ``times`` (each report's (clock, seconds), None: not known) fall within
    ``window_s`` up to ``at``; an unknown time counts in every window, a time on another
    clock (an uptime stamp against a wall time, another boot's uptime) in none."""
    return most_in_window(times, [at], window_s)


# ------------------------------------------------------------------------------ metric

def _reads(rows: pd.DataFrame) -> list[tuple[str, dict]]:
    f = fact_rows(rows, ["fact", "status"], lambda f: (f["fact"] == KERNEL_FACT) & (f["status"] == "ok"))
    if f.empty:
        return []
    return [(h, v) for h, v in zip(f["host"].astype(str), f["value"]) if isinstance(v, dict)]


def kernel_events(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:  # noqa: ARG001 -- the metric interface (rows, ctx)
    """One entry per report, new (``new``) or kept from earlier runs (see the module)."""
    out = []
    for host, value in _reads(rows):
        boot = value.get("boot") if isinstance(value.get("boot"), int) else None
        driver = value.get("driver_version")
        for new, events in ((True, value.get("events") or []), (False, value.get("earlier") or [])):
            for e in events:
                if not isinstance(e, dict):
                    continue
                card = e.get("card")
                if e.get("source") not in HOST_SOURCES and isinstance(card, int):
                    entity, kind = card_id(host, card), "card"
                elif e.get("source") not in HOST_SOURCES and isinstance(card, str) and card:
                    entity, kind = card, "card"  # a pasted log's GPU: its bus id (judge_log)
                else:
                    entity, kind = host, "host"
                out.append({"entity": entity, "kind": kind, "value": 1 if new else 0, "fact": KERNEL_FACT,
                            "source": e.get("source"), "code": e.get("code"), "klass": e.get("class"),
                            "bus_id": e.get("bus_id"), "text": e.get("text"), "time": e.get("time"),
                            "clock": None, "t": None, "new": new,
                            "driver": e.get("driver_version") or driver, "event": e})
                when = placed(e, boot if new else None)
                if when is not None:
                    out[-1].update(clock=when[0], t=when[1])
    return pd.DataFrame(out, columns=_COLUMNS)


# ------------------------------------------------------------------------------ op

def kernel_op(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    frame = frame[frame["source"].isin(SOURCES[rule.params["source"]])]
    if not frame["new"].any():
        return []
    table = entries(rule.params.get("table") or {})
    picked = [choose(table, r.event, r.driver) for r in frame.itertuples()]
    frame = frame.assign(key=[p[0] or "|".join(keys_of(r.event)) or str(r.source) for p, r in
                              zip(picked, frame.itertuples())], case=[p[1] for p in picked],
                         entry=[p[2] for p in picked], note=[p[3] for p in picked])
    out = []
    for (entity, kind, key, case), group in frame.groupby(["entity", "kind", "key", "case"], sort=True):
        new = group[group["new"]]
        if new.empty:
            continue  # earlier runs' reports only: judged when they were new
        out.append(_finding(rule, str(entity), str(kind), new, group))
    return out


def _finding(rule: "Rule", entity: str, kind: str, new: pd.DataFrame, group: pd.DataFrame) -> Finding:
    first = new.iloc[0]
    entry: Entry | None = first["entry"]
    severity = entry.severity if entry else rule.severity
    times = [(c, t) if isinstance(c, str) else None for c, t in zip(group["clock"], group["t"])]
    reports = len(new)
    bar = ""
    if entry is not None and entry.count > 1:
        # the most reports of it within the window ending at one of tonight's reports
        reports = most_in_window(times, [(c, t) if isinstance(c, str) else None for c, t in
                                         zip(new["clock"], new["t"])], entry.window_s)
        within = f" within {_span(entry.window_s)}" if entry.window_s else " on record"
        bar = f"{reports} reports{within} (the table: {entry.count} make it {entry.severity})"
        if reports < entry.count:
            severity = entry.below
    action = entry.action if entry and entry.action else rule.params.get("action")
    confirm = (entry.confirm if entry and entry.confirm else None) or ("none" if severity == "critical"
                                                                      else rule.confirm)
    event = first["event"]
    what = (entry.summary if entry and entry.summary else None) or rule.summary
    message = (f"{kind} {entity}: {describe(event)}: {what}"
               + (f" ({bar})" if bar else f" ({len(new)} reports)" if len(new) > 1 else "")
               + (f"; action: {action}" if action else "")
               + (f"; {first['note']}" if first["note"] else "")
               + f". Kernel log: {first['text']}")
    evidence: dict[str, Any] = {
        "measured": describe(event), "expected": "no such report since the last run", "unit": None,
        "fact": KERNEL_FACT, "tool": "kernel log", "source": first["source"], "key": first["key"],
        "code": event.get("code") if isinstance(event.get("code"), int) else None, "class": first["klass"],
        "action": action, "reports": len(new), "lines": [str(t) for t in new["text"].head(_SHOWN)],
        "driver_version": first["driver"] if isinstance(first["driver"], str) else None}
    if entry is not None and entry.count > 1:
        evidence.update(in_window=reports, count=entry.count, window_s=entry.window_s,
                        earlier=int((~group["new"]).sum()))
    if confirm == "none":
        evidence["confirm"] = "none"
    return Finding(entity, EntityKind(kind), rule.layer, rule.name, Severity(severity), message, evidence)


def judge_log(parsed: dict[str, Any], rules: list["Rule"], ctx: DetectContext, host: str = "log") -> list[Finding]:
    """A kernel log read whole (``sncheck parse kernel-log FILE --rules R``) judged by ``rules``'
    kernel-log policy as a run judges a host's read: every report new, windows on the log's own
    timestamps, and grouped as a run groups them: a pasted log comes with no card listing, so each
    GPU the log names (the bus id of an Xid, RmInitAdapter or amdgpu report, or of an AER report
    at such a bus id) is an entity of its own, named by its bus id, and the rest (SXid: the tray,
    AER at a root port) is ``host``'s. ``ctx``: a context without a topology
    (``metrics.rows_context()``)."""
    events = [e for e in parsed.get("events") or [] if isinstance(e, dict)]
    gpus = {e["bus_id"] for e in events if e.get("source") in GPU_SOURCES
            and isinstance(e.get("bus_id"), str)}
    named = [{**e, "card": e["bus_id"] if e.get("source") not in HOST_SOURCES and e.get("bus_id") in gpus else None}
             for e in events]
    value = {"events": named, "earlier": [], "boot": parsed.get("boot"), "driver_version": parsed.get("driver_version")}
    frame = pd.DataFrame([host_fact_row(host, KERNEL_FACT, value, None, True, tool="kernel-log")])
    return [f for r in rules if r.op == "kernel_events" for f in kernel_op(frame, r, ctx)]


def judged_sources(rules: list["Rule"]) -> frozenset[str]:
    """The report sources (the parser's) that an enabled ``kernel_events`` rule of ``rules`` takes."""
    return frozenset(s for r in rules if r.op == "kernel_events" for s in SOURCES.get(str(r.params.get("source")), ()))


def rule_source(source: str) -> str:
    """The rule ``source`` that takes the parser's ``source`` (``rm_init``: ``nvrm``)."""
    return next((k for k, v in SOURCES.items() if source in v), source)


def not_judged(source: str, n: int) -> str:
    """What ``n`` reports of ``source`` that no rule takes are (one line)."""
    return (f"not judged: {n} {source} report{'s' if n > 1 else ''}, and no kernel_events rule of these rules "
            f"takes {source} reports")


def unjudged(parsed: dict[str, Any], rules: list["Rule"]) -> list[str]:
    """The reports of a read that no ``kernel_events`` rule of ``rules`` takes (its source's rule
    disabled, or a rules file without one): 'not judged', never a pass, one line per source."""
    judging = judged_sources(rules)
    counts: dict[str, int] = {}
    for e in parsed.get("events") or []:
        if isinstance(e, dict) and e.get("source") not in judging:
            counts[str(e.get("source"))] = counts.get(str(e.get("source")), 0) + 1
    return [not_judged(source, n) for source, n in sorted(counts.items())]


def judged(parsed: dict[str, Any], rules: list["Rule"], ctx: DetectContext) -> list[dict[str, Any]]:
    """:func:`judge_log`'s findings as ``sncheck parse kernel-log --rules`` prints them ('judged')."""
    return [{"entity": f.entity, "rule": f.rule, "severity": f.severity, "action": f.evidence.get("action"),
             "key": f.evidence.get("key"), "reports": f.evidence.get("reports"),
             "in_window": f.evidence.get("in_window"), "message": f.message} for f in judge_log(parsed, rules, ctx)]


def _span(s: float | None) -> str:
    if s is None:
        return "the record"
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n and s % n == 0 and (unit != "d" or s > 86400):  # 24h, not 1d
            return f"{int(s // n)}{unit}"
    return f"{s:g}s"
