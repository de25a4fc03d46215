"""Fabric error counters judged as deltas, and kernel log events judged by a table.

Two metrics over ``host_fact`` rows, and the ops that judge them (listed in
:data:`sncheck.health.metrics.METRICS` and :data:`sncheck.health.ops.OPS` with the others):

``fabric_counters``: the NVLink error counters (fact ``nvlink_errors``: ``nvidia-smi
nvlink -e``) and the InfiniBand port counters (fact ``ib_counters``: sysfs) as read
before the run (the host facts) and after it (the SSH backend reads them again when the
layer's traffic is over). One entry per entity and counter, with ``before``, ``after``
and ``growth`` (None when the run read them once). The entity is the card for an NVLink
link (the link is named in the message: ``link 3``) and the NIC ``<host>/nic<rail>`` for
an IB port (rail: the device's place among the host's RDMA devices in natural order); a
device the inventory has no card for stays the host's.

* op ``counter_growth`` (``of: growth``, the default): a counter of ``counters`` that grew
  by more than ``above`` during the run;
* op ``counter_growth`` with ``of: before``: a counter already above ``above`` when the
  run began. The shipped rule is ``info``: last month's CRC burst is not tonight's failure.

``kernel_events``: the Xid, SXid and PCIe AER reports of the kernel log lines that are
new since the last run (fact ``kernel_log``), one entry per report. An Xid names the card
whose ``nvidia-smi -q`` bus id it carries, an AER report the card at its device when
there is one, else the host; an SXid names the NVSwitch tray: the host.

* op ``kernel_events``: ``source`` (xid, sxid or aer) and ``table``: code (Xid, SXid) or
  class (AER: fatal, non-fatal, corrected; SXid: fatal, non-fatal) -> ``{severity, action,
  summary, confirm}``. A code the table does not list takes the rule's severity. ``confirm``
  defaults to ``none`` (isolate at once: the driver's record of a fault that already
  happened cannot be re-measured) for a critical entry, else to the rule's own (retest:
  the kernel log is read again, and no new report releases it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from sncheck.health.findings import SEVERITIES, jsonable
from sncheck.model import Finding
from sncheck.store.frames import kind_rows
from sncheck.model import card_id
from sncheck.vendors.kernel_log import describe

if TYPE_CHECKING:
    from sncheck.health.metrics import DetectContext
    from sncheck.health.rules import Rule

COUNTER_FACTS = {"nvlink_errors": "NVLink", "ib_counters": "IB port"}
KERNEL_FACT = "kernel_log"
ACTIONS = ("restart_app", "reset_gpu", "reboot", "drain", "contact_support", "ignore")
SOURCES = ("xid", "sxid", "aer")
_COUNTER_COLUMNS = ["entity", "kind", "value", "fact", "device", "counter", "before", "after", "growth"]
_EVENT_COLUMNS = ["entity", "kind", "value", "fact", "source", "code", "klass", "bus_id", "text", "time"]
_SHOWN = 6


# ------------------------------------------------------------------------------ metrics

def _reads(rows: pd.DataFrame, facts: tuple[str, ...]) -> list[tuple[str, str, list[dict]]]:
    """(host, fact, the values of its readable reads in order) for each host and fact."""
    f = kind_rows(rows, "host_fact")
    if f.empty:
        return []
    f = f[f["fact"].isin(facts) & (f["status"] == "ok")]
    out: dict[tuple[str, str], list[dict]] = {}
    for host, fact, value in zip(f["host"].astype(str), f["fact"].astype(str), f["value"]):
        if isinstance(value, dict):
            out.setdefault((host, fact), []).append(value)
    return [(h, fact, sorted(v, key=lambda x: x.get("read", 0))) for (h, fact), v in out.items()]


def _nvlink_counters(host: str, value: dict) -> dict[tuple[str, str, str, str], int]:
    out = {}
    for g in value.get("gpus") or []:
        card = g.get("card")
        entity, kind = (card_id(host, int(card)), "card") if card is not None else (host, "host")
        for link, counters in (g.get("links") or {}).items():
            for name, v in counters.items():
                if isinstance(v, int):
                    out[(entity, kind, f"GPU {g.get('index')} link {link}", name)] = v
    return out


def _ib_counters(host: str, value: dict, cards: int) -> dict[tuple[str, str, str, str], int]:
    # each port's rail and the counters that count faults: as the vendor's NIC plug-in read them
    ports = value.get("ports") or []
    faults = set(value.get("error_counters") or ())
    out = {}
    for p in ports:
        r = p.get("rail")
        entity, kind = (f"{host}/nic{r}", "nic") if isinstance(r, int) and r < cards else (host, "host")
        for name, v in (p.get("counters") or {}).items():
            if isinstance(v, int) and name in faults:
                out[(entity, kind, f"{p['device']} port {p['port']}", name)] = v
    return out


def fabric_counters(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    """Per entity and counter: before, after and growth over the run (see the module)."""
    out = []
    for host, fact, reads in _reads(rows, tuple(COUNTER_FACTS)):
        cards = ctx.topo.inventory.hosts[host].cards if host in ctx.topo.inventory.hosts else 0
        read = (lambda v: _nvlink_counters(host, v)) if fact == "nvlink_errors" else \
            (lambda v: _ib_counters(host, v, cards))
        first, last = read(reads[0]), read(reads[-1]) if len(reads) > 1 else None
        for key in sorted(set(first) | set(last or {})):
            before = first.get(key)
            after = last.get(key) if last is not None else None
            # a counter that went down was reset (or wrapped): its growth is what it reads now
            growth = None if last is None or after is None else \
                (after - before if before is not None and after >= before else after)
            entity, kind, device, counter = key
            out.append({"entity": entity, "kind": kind, "value": growth, "fact": fact, "device": device,
                        "counter": counter, "before": before, "after": after, "growth": growth})
    return pd.DataFrame(out, columns=_COUNTER_COLUMNS)


def kernel_events(rows: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    """One entry per new kernel log report (see the module)."""
    out = []
    for host, _, reads in _reads(rows, (KERNEL_FACT,)):
        for value in reads:
            for e in value.get("events") or []:
                card = e.get("card")
                if e.get("source") != "sxid" and card is not None:
                    entity, kind = card_id(host, int(card)), "card"
                else:
                    entity, kind = host, "host"
                out.append({"entity": entity, "kind": kind, "value": 1, "fact": KERNEL_FACT,
                            "source": e.get("source"), "code": e.get("code"), "klass": e.get("class"),
                            "bus_id": e.get("bus_id"), "text": e.get("text"), "time": e.get("time")})
    return pd.DataFrame(out, columns=_EVENT_COLUMNS)


# ------------------------------------------------------------------------------ ops

def counter_growth(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    frame = frame[frame["counter"].isin(rule.params["counters"])]
    of, above = rule.params["of"], rule.params["above"]
    column = "growth" if of == "growth" else "before"
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = frame[values.notna() & (values > above)]
    out = []
    for (entity, kind), group in bad.groupby(["entity", "kind"], sort=True):
        what = COUNTER_FACTS.get(group["fact"].iloc[0], "")
        parts = [f"{r.device} {r.counter} +{int(r.growth)} ({_n(r.before)} -> {_n(r.after)})" if of == "growth"
                 else f"{r.device} {r.counter}={int(r.before)}" for r in group.itertuples()]
        shown = ", ".join(parts[:_SHOWN]) + (f", ... ({len(parts)} in all)" if len(parts) > _SHOWN else "")
        when = "grew during the run" if of == "growth" else "were already above zero before the run"
        message = f"{kind} {entity}: {rule.summary}: {what} error counters {when}: {shown}"
        if of == "before":
            message += " (not judged as tonight's failure: only growth during the run is)"
        measured = int(group[column].max())
        evidence = {"measured": measured, "expected": f"at most {above:g}" if of == "growth" else above,
                    "unit": "errors", "fact": group["fact"].iloc[0],
                    "counters": [{"device": r.device, "counter": r.counter, "before": jsonable(r.before),
                                  "after": jsonable(r.after), "growth": jsonable(r.growth)}
                                 for r in group.head(20).itertuples()]}
        out.append(Finding(str(entity), str(kind), rule.layer, rule.name, rule.severity, message, evidence))
    return out


def _n(v: Any) -> str:
    return "?" if v is None or v != v else str(int(v))


def table_entry(rule: "Rule", source: str, code: Any, klass: Any) -> dict[str, Any]:
    """The table's entry for a report: by code (Xid, SXid), else by class (AER, SXid)."""
    table = {str(k): v for k, v in (rule.params.get("table") or {}).items()}
    for key in (code, klass):
        if key is not None and str(key) in table:
            return table[str(key)]
    return {}


def kernel_op(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    frame = frame[frame["source"] == rule.params["source"]]
    out = []
    keys = frame.assign(key=frame["code"].where(frame["code"].notna(), frame["klass"]).astype(str))
    for (entity, kind, key), group in keys.groupby(["entity", "kind", "key"], sort=True):
        first = group.iloc[0]
        code = None if first["code"] is None or first["code"] != first["code"] else int(first["code"])
        entry = table_entry(rule, rule.params["source"], code, first["klass"])
        severity = entry.get("severity", rule.severity)
        confirm = entry.get("confirm", "none" if severity == "critical" else rule.confirm)
        action = entry.get("action", rule.params.get("action"))
        event = {"source": first["source"], "code": code, "class": first["klass"], "bus_id": first["bus_id"]}
        what = entry.get("summary") or rule.summary
        n = len(group)
        message = (f"{kind} {entity}: {describe(event)}: {what}" + (f" ({n} reports)" if n > 1 else "")
                   + (f"; action: {action}" if action else "") + f". Kernel log: {first['text']}")
        evidence = {"measured": describe(event), "expected": "no such report since the last run", "unit": None,
                    "fact": KERNEL_FACT, "tool": "kernel log", "source": first["source"], "code": code,
                    "class": first["klass"], "action": action, "reports": n,
                    "lines": [str(t) for t in group["text"].head(5)]}
        if confirm == "none":
            evidence["confirm"] = "none"
        out.append(Finding(str(entity), str(kind), rule.layer, rule.name, severity, message, evidence))
    return out


def check_table(table: Any) -> str | None:
    """Why a ``table`` param is wrong, or None: each key a code or class, each entry a
    mapping with a known severity and, where given, a known action and confirm."""
    if not isinstance(table, dict):
        return "table must be a mapping of code or class to {severity, action}"
    for key, entry in table.items():
        if not (isinstance(key, int) and not isinstance(key, bool) and key >= 0) and \
                key not in ("fatal", "non-fatal", "corrected"):
            return f"table key {key!r} is neither a code (a whole number) nor a class (fatal, non-fatal, corrected)"
        if not isinstance(entry, dict):
            return f"table[{key!r}] must be a mapping, e.g. {{severity: critical, action: reset_gpu}}"
        unknown = set(entry) - {"severity", "action", "summary", "confirm"}
        if unknown:
            return f"table[{key!r}] has unknown keys {', '.join(sorted(map(str, unknown)))} " \
                   "(severity, action, summary, confirm)"
        if entry.get("severity") not in SEVERITIES:
            return f"table[{key!r}].severity must be one of {', '.join(SEVERITIES)}, got {entry.get('severity')!r}"
        if "action" in entry and entry["action"] not in ACTIONS:
            return f"table[{key!r}].action must be one of {', '.join(ACTIONS)}, got {entry['action']!r}"
        if "confirm" in entry and entry["confirm"] not in ("retest", "none"):
            return f"table[{key!r}].confirm must be retest or none, got {entry['confirm']!r}"
        if "summary" in entry and not isinstance(entry["summary"], str):
            return f"table[{key!r}].summary must be text"
    return None
