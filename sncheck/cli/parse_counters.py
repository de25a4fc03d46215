"""``sncheck parse ib-counters FILE [--since EARLIER]``: a NIC counter read judged as a run
judges its reads (one parser, one judgement). The read becomes the ``ib_counters`` row a run
records (:func:`sncheck.backends.hostreads.counter_rows`) and the rules' counter_growth rules
judge it (:func:`sncheck.health.fabric.judge_reads`): alone, as the run's read before the
traffic (a counter above zero: the shipped rule says info, exit 0); after ``--since EARLIER``
(an earlier read of the same ports), by each counter's growth since it, as ``sncheck fabric
check --since`` judges the switch ports. An earlier read that is not whole, or that shares no
counter with this one, judges nothing: refused (exit 2), never a pass.

The fabric's own reads of the same counters, ``perfquery`` and ``ibqueryerrors``
(``ScaleOut.counter_views``), are judged by the same function (issue 28: they exited 1 on any
error counter above zero): each port named by its LID or node GUID for its NIC. ibqueryerrors
lists only the ports over its thresholds: with ``--since`` a port it no longer lists is not
lost, and a port it lists now and not before grew by an unknown amount: not judged (exit 1).
"""

from __future__ import annotations

import os
from typing import Any

from sncheck.config.fileio import read_input
from sncheck.config.inventory import Host, Inventory, Supernode
from sncheck.errors import ConfigError, ParseError
from sncheck.vendors import registry
from sncheck.vendors.parsers import parse_text
from sncheck.vendors.delivery import decode

HOST = "log"  # a pasted read names no host: its NICs are this one's (as sncheck parse kernel-log --rules)


def views() -> tuple[str, ...]:
    """The views judged this way: every vendor's NIC counter read (``ib-counters``) and the other
    views of the same counters (``perfquery``, ``ibqueryerrors``)."""
    return tuple(registry.counter_reads())


def _named(tool: str, so: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every port named by a device, as the counter read names its ports: a fabric
    read's port by its node GUID (ibqueryerrors) or LID (perfquery), the NIC it is judged as."""
    if tool == so.counters_tool:
        return data
    def device(p: dict[str, Any]) -> str:
        return str(p.get("guid") or (f"lid {p['lid']}" if p.get("lid") is not None else "the queried port"))
    return {**data, "ports": [{**p, "device": device(p)} for p in data.get("ports") or []]}


def _earlier(tool: str, since: str) -> dict[str, Any]:
    text = decode(read_input(since, "log"))
    try:
        data = parse_text(tool, text)
    except ParseError as e:
        raise ConfigError(f"--since: not {tool} output: {e}", since) from e
    if data.get("errors"):
        raise ConfigError(f"--since: the earlier read is not whole ({'; '.join(map(str, data['errors'][:2]))}): "
                          "no growth since it can be judged", since)
    return data


def refuse_itself(file: str, since: str) -> None:
    """``--since`` naming FILE itself (the same file, by any path): a read since itself shows no
    growth, so every counter would pass (exit 0) whatever it counts: refused, exit 2."""
    try:
        same = os.path.samefile(file, since)
    except OSError:
        return  # the reads' own checks say what is wrong with either
    if same:
        raise ConfigError("--since names the read itself (FILE): a read since itself shows no growth and would "
                          "pass every counter; give the earlier read", since)


def _counted(data: dict[str, Any], faults: tuple[str, ...]) -> set[tuple[str, int, str]]:
    return {(str(p.get("device")), p.get("port"), c) for p in data.get("ports") or []
            for c, v in (p.get("counters") or {}).items() if c in faults and isinstance(v, int)}


def _context(reads: list[dict[str, Any]]) -> Any:
    """The run's context for a host of as many cards as the reads have RDMA devices: each port
    is its NIC's (``log/nic<rail>``), as a run names a NIC of its inventory's host."""
    from sncheck.health.metrics import DetectContext, rows_context  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them
    from sncheck.topology import Topology  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them

    nics = len({p.get("device") for data in reads for p in data.get("ports") or []})
    if not nics:
        return rows_context()
    inventory = Inventory(name="<pasted read>", supernodes=(Supernode(HOST, (HOST,)),),
                          hosts={HOST: Host(HOST, HOST, nics)}, source="<sncheck parse>")
    return DetectContext(topo=Topology(inventory), design={})


def judge(tool: str, data: dict[str, Any], since: str | None, rules_ref: str) -> tuple[list[dict], list[str]]:
    """(what the rules found, as printed under 'judged'; the failures among them: warning or
    critical) for the read ``data`` of ``tool``, after the read in ``since`` where given."""
    from sncheck.backends.hostreads import counter_rows  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them
    from sncheck.health.findings import merge_findings  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them
    from sncheck.health.fabric import judge_reads  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them
    from sncheck.health.rules import load_rules  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them

    so = registry.counter_reads()[tool]
    data = _named(tool, so, data)
    reads = [data]
    lost: set[tuple[str, Any]] = set()
    if since is not None:
        earlier = _named(tool, so, _earlier(tool, since))
        # (a view of the ports over its thresholds only: a port it no longer lists is not lost; one it
        # lists only now is not judged, as counter_growth judges every counter the earlier read lacks)
        if tool not in so.over_threshold_views:
            if not _counted(data, so.error_counters) & _counted(earlier, so.error_counters):
                raise ConfigError(f"--since: holds no error counter of the {len(data.get('ports') or [])} ports read "
                                  "now (another host's?): no counter's growth could be judged", since)
            lost |= _ports(earlier) - _ports(data)
        # a port absent now has no growth to judge here: the missing-port line says so, or the view
        # lists it no more (under its thresholds); its entry stays, so every device keeps its rail
        earlier = _only_counted(earlier, _ports(data))
        reads = [earlier, data]
    rules = list(load_rules(rules_ref).rules)
    # merged per entity as a run's findings are (the worst first); rails from both reads' devices
    found = merge_findings(judge_reads(counter_rows(HOST, reads, so), rules, _context(reads)))
    judged = [{"entity": f.entity, "rule": f.rule, "severity": str(f.severity), "message": f.message,
               "counters": f.evidence.get("counters")} for f in found]
    missing = [f"{len(lost)} port(s) of the earlier read are missing from this one (a NIC lost?), not judged: "
               + ", ".join(f"{d} port {p}" for d, p in sorted(lost, key=str))] if lost else []
    return judged, failing(judged, missing + unjudged(data, rules, so, "growth" if since is not None else "before"))


def failing(judged: list[dict[str, Any]], not_judged: list[str]) -> list[str]:
    """A judged read's failures as ``sncheck parse`` prints them: each warning or critical
    finding, then what no rule judged ('not judged': never a pass)."""
    return [f"{j['severity']}: {j['message']}" for j in judged if str(j["severity"]) in ("warning", "critical")] + \
        not_judged


def unjudged(data: dict[str, Any], rules: list[Any], so: Any, of: str) -> list[str]:
    """The error counters of the read no enabled counter_growth rule on fabric_counters judges by
    ``of`` (growth with --since, the value before the run without): 'not judged', as
    :func:`sncheck.health.kernel.unjudged` says of the kernel log's reports."""
    covered = {c for r in rules if r.op == "counter_growth" and r.metric == "fabric_counters"
               and r.params.get("of", "growth") == of and r.params.get("fact") in (None, "ib_counters")
               for c in r.params.get("counters") or ()}
    left = sorted({c for _, _, c in _counted(data, so.error_counters)} - covered)
    return [f"not judged: counter(s) {', '.join(left)} of the read, and no counter_growth rule of these rules "
            f"judges their {of}"] if left else []


def _only_counted(data: dict[str, Any], ports: set[tuple[str, Any]]) -> dict[str, Any]:
    """``data`` with the counters of each port not in ``ports`` left out (the port itself kept)."""
    return {**data, "ports": [p if (str(p.get("device")), p.get("port")) in ports else {**p, "counters": {}}
                              for p in data.get("ports") or []]}


def _ports(data: dict[str, Any]) -> set[tuple[str, Any]]:
    return {(str(p.get("device")), p.get("port")) for p in data.get("ports") or []}
