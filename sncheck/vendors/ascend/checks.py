"""Ascend host facts: the fact commands and pure checks of their parsed output.

The two networks of a CloudMatrix384 node are judged each on its own: the Unified Bus
(scale-up: ``ub_topology`` from ``npu-smi info -t topo``) and RoCE (scale-out:
``roce_*`` from ``hccn_tool`` per NPU). On A3, RoCE can be down while UB works and the
other way round, so a RoCE fault never taints a UB fact, nor the reverse.

* ``card_count``: dies listed by ``npu-smi info`` against the inventory (a 910C package
  is two devices: 8 packages = 16).
* ``npu_health``: every die's Health OK (Warning, Alarm, Critical and UNKNOWN fail), with
  the error codes of ``npu-smi info -t health`` per die.
* ``hbm_capacity``: each die's HBM total at least 95% of the platform's rated capacity.
* ``ecc``: no double-bit errors and no isolated pages (``npu-smi info -t ecc``).
* ``ub_topology``: every device pair over SIO, HCCS or HCCS_SW; never SYS/PHB/PIX/PXB.
* ``super_pod``: ``npu-smi info -t spod-info``: the platform's Super Pod size; across
  the supernode (:func:`domain_check`): one Super Pod ID, every SDID unique.
* ``roce_link`` UP, ``roce_net_health`` Success, ``roce_optical`` (module present, Tx/Rx
  power of every lane within the module's own thresholds, no LoS/LoL flag),
  ``roce_fec`` RS FEC -- each per NPU, the NPUs named.
"""

from __future__ import annotations

from typing import Any

from sncheck.model import Status
from sncheck.vendors.facts import Expect, command, device_ids, fact_row, listed, on_cards
from sncheck.vendors.ascend import hccn_tool, npu_smi, sweep
from sncheck.vendors.identity import unique_id

_UB_OK = ("SIO", "HCCS", "HCCS_SW", "X")


def _params(expect: Expect) -> dict[str, Any]:
    return dict(expect.platform.params) if expect.platform else {}


def check_info(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    if parsed.get("tool_failed"):
        return _not_measured(host, parsed["tool_failed"][0], "npu-smi info",
                             ("card_count", "npu_health") + (("hbm_capacity",) if _params(expect).get("hbm_MB") else ()))
    chips = parsed.get("chips") or []
    errors = parsed.get("errors") or []
    per_pkg = expect.platform.devices_per_package if expect.platform else 1
    n = len(chips)
    count_msg = f"{n} NPU devices listed by npu-smi info, inventory says {expect.cards}"
    if per_pkg > 1:
        count_msg += f" ({expect.cards // per_pkg} packages x {per_pkg} dies)"
    if errors:
        count_msg += f"; {listed(errors)}"
    rows = [fact_row(host, "card_count", n, expect.cards, n == expect.cards and not errors, count_msg, "npu-smi",
                     ids=device_ids(chips, "bus_id"))]
    # A whole listing names each die: its place in the listing is its logic device id
    # (the card, ASCEND_RT_VISIBLE_DEVICES's index); an excerpt names the node.
    where = list(range(n)) if n == expect.cards and not errors else [None] * n
    sick = [(where[i], f"NPU {c['npu']} chip {c['chip']}" + (f" (phy {c['phy_id']})" if c.get("phy_id") is not None
                                                              else "") + f": {c['health']}")
            for i, c in enumerate(chips) if c["health"] != "OK"]
    text = [t for _, t in sick]
    rows.append(fact_row(host, "npu_health", n - len(sick), n, not sick and bool(chips),
                         f"npu-smi health OK on {n - len(sick)}/{n} devices" + (f"; {listed(text)}" if text else ""),
                         "npu-smi", cards=on_cards(sick, "npu-smi health")))
    rated = _params(expect).get("hbm_MB")
    if rated:
        # a listing without an HBM column (the 310P layout) measured none: not a pass where HBM
        # is rated, and no card's fault (not measured, naming none) unless another chip is short
        small = [(where[i], f"NPU {c['npu']} chip {c['chip']}: {c['hbm_total_MB']} MB") for i, c in enumerate(chips)
                 if c["hbm_total_MB"] is not None and c["hbm_total_MB"] < 0.95 * rated]
        unlisted = [f"NPU {c['npu']} chip {c['chip']}: no HBM listed" for c in chips if c["hbm_total_MB"] is None]
        low = [t for _, t in small] + unlisted
        smallest = min((c["hbm_total_MB"] for c in chips if c["hbm_total_MB"] is not None), default=None)
        rows.append(_measured_or_not(fact_row(host, "hbm_capacity", smallest, rated, not low and bool(chips),
                                              f"HBM capacity >= 95% of {rated} MB on {n - len(low)}/{n} devices"
                                              + (f"; {listed(low)}" if low else ""), "npu-smi",
                                              cards=on_cards(small, "HBM capacity")), [t for _, t in small], unlisted))
    return rows


def _not_measured(host: str, failed: str, what: str, facts: tuple[str, ...]) -> list[dict]:
    """``facts`` of a command whose tool failed before measuring anything (npu-smi's DCMI init
    failure): a finding about the check, never a pass, never a device's fault."""
    rows = []
    for fact in facts:
        row = fact_row(host, fact, None, None, False, f"{what} failed ({failed}): {fact} not measured", "npu-smi")
        row["status"] = Status.NOT_MEASURED
        rows.append(row)
    return rows


def _device(dev: Any, expect: Expect) -> int | None:
    """The card of a sweep's device number (its logic id), None when it names none."""
    try:
        i = int(dev)
    except (TypeError, ValueError):
        return None
    return i if 0 <= i < expect.cards else None


def check_health_codes(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    devices = parsed.get("devices") or {}
    problems: list[tuple[int | None, str]] = []
    for dev, h in sorted(devices.items(), key=lambda kv: int(kv[0])):
        if h is None:
            continue
        if h["health"] != "OK" or h["error_codes"]:
            problems.append((_device(dev, expect), f"device {dev}: {h['health']}"
                             + (f" {', '.join(h['error_codes'])}" if h["error_codes"] else "")
                             + (f" ({h['error_information']})" if h.get("error_information") else "")))
    errors, unmeasured = _tool_failures(parsed)
    problems += [(None, str(e)) for e in errors]
    bad = [t for _, t in problems]
    row = fact_row(host, "npu_health_codes", len(bad), 0, not bad and not unmeasured and bool(devices),
                   f"npu-smi -t health on {len(devices)} devices"
                   + (f": {listed(bad + unmeasured)}" if bad or unmeasured else ": OK, no error codes"),
                   "npu-smi", cards=on_cards(problems, "npu-smi -t health"))
    return [_measured_or_not(row, bad, unmeasured)]


def check_ecc(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    devices = parsed.get("devices") or {}
    problems: list[tuple[int | None, str]] = []
    for dev, e in sorted(devices.items(), key=lambda kv: int(kv[0])):
        if e is None:
            continue
        hits = [f"{k} {v}" for k, v in e["counters"].items()
                if isinstance(v, int) and v > 0 and ("Double Bit" in k or "Isolated Pages" in k)]
        if hits:
            problems.append((_device(dev, expect), f"device {dev}: {', '.join(hits)}"))
    errors, unmeasured = _tool_failures(parsed)
    problems += [(None, str(e)) for e in errors]
    bad = [t for _, t in problems]
    row = fact_row(host, "ecc", len(bad), 0, not bad and not unmeasured and bool(devices),
                   f"ECC on {len(devices)} devices" + (f": {listed(bad + unmeasured)}" if bad or unmeasured else
                                                       ": no double-bit errors or isolated pages"),
                   "npu-smi", cards=on_cards(problems, "ECC"))
    return [_measured_or_not(row, bad, unmeasured)]


def check_die_ids(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    """``npu-smi info -t board -i N -c C`` on every die: its VDie ID (the 310P form's Die ID), the
    identity a run holds each die to (``ids``: one card is in one machine, two hosts listing one are
    ``devices_shared``; :mod:`sncheck.vendors.identity`). Judged only for the sweep being read whole
    and no id listed for two dies of the host; a die that prints none (NA: a vNPU) or a placeholder
    (zeros: :func:`~sncheck.vendors.identity.unique_id`, the one home for placeholders, which the
    fleet's devices_shared asks too) is said, identity not proven, never its fault."""
    devices = parsed.get("devices") or {}
    ids: dict[str, str] = {}
    for dev, p in sorted(devices.items(), key=lambda kv: int(kv[0])):
        fields = (p or {}).get("fields") or {}
        value = fields.get("VDie ID") or fields.get("Die ID")
        if value and unique_id(value):  # NA (a vNPU), zeros: a placeholder names no die
            ids[dev] = value
    errors, unmeasured = _tool_failures(parsed)
    problems: list[tuple[int | None, str]] = [(None, str(e)) for e in errors]
    missing = expect.cards - len(devices)
    if missing > 0:
        problems.append((None, f"{missing} devices not reported"))
    owners: dict[str, list[str]] = {}
    for dev, value in ids.items():
        owners.setdefault(value, []).append(dev)
    problems += [(None, f"VDie ID {value} listed for devices {', '.join(devs)}")
                 for value, devs in owners.items() if len(devs) > 1]
    bad = [t for _, t in problems]
    none = [d for d, p in devices.items() if p is not None and d not in ids]
    msg = (f"npu-smi -t board on {len(devices)} devices: {len(ids)} die ids (VDie ID)"
           + (f"; no die id on device{'s' if len(none) > 1 else ''} {', '.join(none)} (identity not proven)" if none else "")
           + (f"; {listed(bad + unmeasured)}" if bad or unmeasured else ""))
    row = fact_row(host, "die_ids", len(ids), expect.cards, not bad and not unmeasured and bool(devices), msg,
                   "npu-smi", ids=list(ids.values()))
    return [_measured_or_not(row, bad, unmeasured)]


def check_topo(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:  # noqa: ARG001 -- the host check interface (host, parsed, expect)
    matrix = parsed.get("matrix") or {}
    devs = parsed.get("devices") or []
    bad = [f"{a}-{b} {matrix[a].get(b)}" for i, a in enumerate(devs) for b in devs[i + 1:]
           if a in matrix and matrix[a].get(b) not in _UB_OK]
    kinds = sorted({v for row in matrix.values() for v in row.values() if v != "X"})
    return [fact_row(host, "ub_topology", len(bad), 0, not bad and bool(matrix),
                     f"UB plane: {len(devs)} devices over {', '.join(kinds) or '?'}"
                     + (f"; not over SIO/HCCS: {listed(bad)}" if bad else ""), "npu-smi")]


def _node_in_pod(parsed: dict[str, Any]) -> str:
    """What names this node in its Super Pod, for :func:`domain_check`'s uniqueness: the SDID
    (A2/A3), else the 950's Server Index ('server N'); '' where the output names neither (the
    950 pod form's Chassis ID: the docs do not say a chassis holds one node alone)."""
    if parsed.get("sdid") is not None:
        return str(parsed["sdid"])
    return f"server {parsed['server_index']}" if parsed.get("server_index") is not None else ""


def check_spod(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    size = _params(expect).get("super_pod_size")
    got = parsed.get("super_pod_size")
    # the 950 prints no SDID: its Super Pod Type line stands where A2/A3 print one (npucli print_npu_spod_info)
    sdid = parsed.get("sdid") is not None or parsed.get("super_pod_type") is not None
    ok = parsed.get("super_pod_id") is not None and sdid and (size is None or got == size)
    node = _node_in_pod(parsed)
    where = (f"SDID {parsed['sdid']}" if parsed.get("sdid") is not None else
             f"Server Index {parsed['server_index']}" if node else f"Chassis ID {parsed.get('chassis_id')}")
    return [fact_row(host, "super_pod", f"{parsed.get('super_pod_id')}/{node}",
                     f"pod size {size}" if size else None, ok,
                     f"Super Pod ID {parsed.get('super_pod_id')}, {where}, size {got}"
                     + (f" (platform: {size})" if size and got != size else ""), "npu-smi")]


def _per_npu(host: str, fact: str, parsed: dict[str, Any], judge, what: str, expect: Expect) -> list[dict]:
    devices = parsed.get("devices") or {}
    errors, unmeasured = _tool_failures(parsed)
    failed = parsed.get("tool_failed") or {}
    problems: list[tuple[int | None, str]] = []
    for dev, p in sorted(devices.items(), key=lambda kv: int(kv[0])):
        if dev in failed:
            continue  # not measured: said below, no fault of the NPU's
        problem = "no output" if p is None else judge(p)
        if problem:
            problems.append((_device(dev, expect), f"NPU {dev}: {problem}"))
    good = len(devices) - len(problems) - len(unmeasured)
    missing = expect.cards - len(devices)
    if missing > 0:
        problems.append((None, f"{missing} devices not reported"))
    # what the sweep found cut or unreadable in a section the judge above passed ('device 3: no
    # 'Rx LoL Flag' line ...: cut short') is the fact's too, as `sncheck parse` exits 1 on it
    unread = {d for d, p in devices.items() if p is None}  # 'no output' above already
    problems += [(None, e) for e in errors if e.split(":", 1)[0].removeprefix("device ") not in unread]
    bad = [t for _, t in problems]
    msg = f"RoCE plane {what}: {good}/{expect.cards} NPUs fine" + (f"; {listed(bad + unmeasured)}"
                                                                    if bad or unmeasured else "")
    # each NPU's RoCE port is its rail's NIC; every port bad is the node's (its switch, its driver)
    named = on_cards(problems, f"RoCE {what}")
    nics = named if named and len(named) < expect.cards else None
    row = fact_row(host, fact, good, expect.cards, not bad and not unmeasured, msg, "hccn_tool", nics=nics)
    return [_measured_or_not(row, bad, unmeasured)]


def _tool_failures(parsed: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(a sweep's errors but its devices' tool failures, one 'device N not measured (...)' a device
    whose query could not reach the driver: :func:`sncheck.vendors.ascend.sweep.parse_sweep`)."""
    failed = parsed.get("tool_failed") or {}
    errors = [str(e) for e in parsed.get("errors") or [] if not any(str(e).startswith(f"device {d}: ") for d in failed)]
    return errors, [f"device {d} not measured ({lines[0]})" for d, lines in sorted(failed.items(), key=lambda kv: int(kv[0]))]


def _measured_or_not(row: dict, bad: list[str], unmeasured: list[str]) -> dict:
    """A sweep's row whose only problems are devices its tool could not measure is not_measured
    (never a pass, no device blamed: the single npu-smi view's DCMI failure); a fault found on
    another device keeps it a failure that names the unmeasured ones too."""
    if unmeasured and not bad:
        row["status"] = Status.NOT_MEASURED
    return row


def _judge_optical(p: dict[str, Any]) -> str | None:
    return ", ".join(hccn_tool.optical_faults(p)) or None


def check_net_health(host, parsed, expect):
    # net_health None: a status g_net_health_status does not hold (cut inside it): the sweep's error says so, no
    # fault of the NPU's ('NPU 2: net health None' named its NIC)
    return _per_npu(host, "roce_net_health", parsed,
                    lambda p: None if p["net_health"] in ("Success", None) else f"net health {p['net_health']}",
                    "net_health", expect)


def check_link(host, parsed, expect):
    # link None: a status hccn_tool does not print (cut inside it): the sweep's error says so, no fault of the NPU's
    return _per_npu(host, "roce_link", parsed, lambda p: None if p["link"] in ("UP", None) else f"link {p['link']}",
                    "link", expect)


def check_optical(host, parsed, expect):
    return _per_npu(host, "roce_optical", parsed, _judge_optical, "optical", expect)


def check_fec(host, parsed, expect):
    return _per_npu(host, "roce_fec", parsed,
                    lambda p: None if p["fec"].lower().startswith("rs") else f"fec {p['fec']}", "FEC", expect)


def _sweep_of(view: str, check: Any) -> Any:
    """``check`` on a sweep of ``view`` only. The sweep commands share one parse view
    (``ascend-sweep``), and ``sncheck parse`` runs the check of every command whose output that
    view reads (one parser, one judgement): a health sweep given to the ECC check raised
    KeyError (exit 3). Another view's sweep (or one whose sections name none: sncheck's own
    loop always names it) is nothing this check judges."""
    def judged(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
        return check(host, parsed, expect) if parsed.get("view") == view else []
    return judged


def commands_for_node(packages: int, chips: int) -> dict[str, Any]:
    devices = packages * chips

    def sh(script: str) -> list[str]:
        return ["sh", "-c", script]

    return {c.name: c for c in (
        command("info", "npu-smi", ["npu-smi", "info"], npu_smi.parse_info, check_info,
                "card_count", "npu_health", "hbm_capacity"),
        command("health", "npu-smi", sh(sweep.npu_smi_script("health", packages, chips)), sweep.parse_sweep,
                _sweep_of("health", check_health_codes), "npu_health_codes"),
        command("ecc", "npu-smi", sh(sweep.npu_smi_script("ecc", packages, chips)), sweep.parse_sweep,
                _sweep_of("ecc", check_ecc), "ecc"),
        command("board", "npu-smi", sh(sweep.npu_smi_script("board", packages, chips)), sweep.parse_sweep,
                _sweep_of("board", check_die_ids), "die_ids"),
        command("topo", "npu-smi", ["npu-smi", "info", "-t", "topo"], npu_smi.parse_topo, check_topo, "ub_topology"),
        command("spod", "npu-smi", ["npu-smi", "info", "-t", "spod-info", "-i", "0", "-c", "0"], npu_smi.parse_spod,
                check_spod, "super_pod"),
        command("roce_link", "hccn_tool", sh(sweep.hccn_script("link", devices)), sweep.parse_sweep, _sweep_of("link", check_link),
                "roce_link"),
        command("roce_net_health", "hccn_tool", sh(sweep.hccn_script("net_health", devices)), sweep.parse_sweep,
                _sweep_of("net_health", check_net_health), "roce_net_health"),
        command("roce_optical", "hccn_tool", sh(sweep.hccn_script("optical", devices)), sweep.parse_sweep,
                _sweep_of("optical", check_optical), "roce_optical"),
        command("roce_fec", "hccn_tool", sh(sweep.hccn_script("fec", devices)), sweep.parse_sweep, _sweep_of("fec", check_fec),
                "roce_fec"),
    )}


def domain_check(platform: Any, supernode: str, hosts: tuple[str, ...], rows: list[dict],  # noqa: ARG001 -- the domain check interface
                 host_info: Any = None) -> list[dict]:  # noqa: ARG001 -- the domain check interface
    """Across the supernode: one Super Pod ID, and every SDID unique (the 950, printing no
    SDID: every Server Index unique)."""
    pods: dict[str, list[str]] = {}
    sdids: dict[str, list[str]] = {}
    for r in rows:
        if r.get("fact") == "super_pod" and r.get("status") == "ok" and isinstance(r.get("value"), str):
            pod, _, sdid = r["value"].partition("/")
            pods.setdefault(pod, []).append(r["host"])
            sdids.setdefault(sdid, []).append(r["host"])
    if not pods:
        return []
    out = []
    main = max(pods, key=lambda p: len(pods[p]))
    split = ", ".join(f"ID {p}: {len(hs)} nodes" for p, hs in sorted(pods.items()))
    for pod, hs in pods.items():
        for h in hs:
            ok = pod == main and len(pods) == 1 or (pod == main and len(pods[main]) > len(hosts) / 2)
            out.append(fact_row(h, "super_pod_domain", pod, main, pod == main and ok,
                                f"Super Pod of {supernode}: {split}" + ("" if len(pods) == 1 else
                                                                       f"; this node says {pod}"), "npu-smi"))
    for sdid, hs in sdids.items():
        # '' : the node's output names no SDID nor Server Index (the 950 pod form): nothing to
        # compare, never a duplicate (every such node once shared the SDID 'None')
        if len(hs) > 1 and sdid:
            what = f"Server Index {sdid.removeprefix('server ')}" if sdid.startswith("server ") else f"SDID {sdid}"
            for h in hs:
                out.append(fact_row(h, "sdid_unique", sdid, "unique", False,
                                    f"{what} is reported by {len(hs)} nodes: {', '.join(sorted(hs))}", "npu-smi"))
    return out


COMMANDS = commands_for_node(8, 2)  # a CloudMatrix384 node: 8 x 910C, two dies each

FACTS = {
    "reachable": ("", "SSH connect, host key or login failed (one row, status unreachable)"),
    "card_count": ("info", "devices listed by npu-smi info differ from the inventory's cards"),
    "npu_health": ("info", "a device whose Health is Warning, Alarm, Critical or UNKNOWN"),
    "hbm_capacity": ("info", "a device's HBM below 95% of the platform's rated capacity"),
    "npu_health_codes": ("health", "npu-smi -t health not OK, or an error code, on a device"),
    "ecc": ("ecc", "double-bit ECC errors or isolated pages on a device"),
    "die_ids": ("board", "npu-smi -t board per die: a die id listed for two dies, or the sweep not read whole "
                "(each die's VDie ID: the identity devices_shared holds it to)"),
    "ub_topology": ("topo", "a device pair not over SIO/HCCS/HCCS_SW (SYS: the UB path is gone)"),
    "super_pod": ("spod", "no Super Pod ID / SDID, or a Super Pod size other than the platform's"),
    "super_pod_domain": ("(whole supernode)", "a node in another Super Pod than the rest of its supernode"),
    "sdid_unique": ("(whole supernode)", "two nodes report the same SDID (the 950, without one: Server Index)"),
    "roce_link": ("roce_link", "a RoCE port not UP (per NPU)"),
    "roce_net_health": ("roce_net_health", "net_health other than Success (Init, Socket fail...) per NPU"),
    "roce_optical": ("roce_optical", "module not present, Tx/Rx power outside the module's thresholds, LoS/LoL"),
    "roce_fec": ("roce_fec", "FEC other than RS"),
}
