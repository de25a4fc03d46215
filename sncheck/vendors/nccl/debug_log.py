"""``NCCL_DEBUG=WARN`` / ``INFO`` logs: view ``nccl-debug``.

Grammar (NVIDIA/nccl ``src/debug.cc``, ``ncclDebugLog``; read at v2.8.3, v2.18.1, v2.23.4,
v2.26.2, v2.27.3 and v2.30):

- every line NCCL prints is ``[TS ]HOST:PID:TID [DEV] NCCL INFO MSG``; a WARN is
  ``\\n[TS ]HOST:PID:TID [DEV] FILE:LINE NCCL WARN MSG`` (an empty line before it), from 2.30
  ``FILE:LINE (FUNC) NCCL WARN``; TRACE ``... [DEV] MS FUNC:LINE NCCL TRACE MSG``, CALL
  ``HOST:PID:TID NCCL CALL MSG``. The timestamp (``NCCL_DEBUG_TIMESTAMP_FORMAT``, default
  ``[%F %T] ``, on WARN lines only by default) exists from 2.26; HOST is the host name with
  special characters made ``-``. Any other line (the application's, MPI's) is not NCCL's.
- ``NCCL version 2.18.3+cuda12.2`` (``init.cc`` ``VERSION_STRING``): as an INFO message, or
  bare (the VERSION level: no host prefix, from 2.2x).
- ``comm 0x.. rank R nranks N cudaDev D [nvmlDev M] busId B [commId ..|parent ..] - Init COMPLETE``
  (``init.cc``; ``nvmlDev`` from 2.19, the function name before ``comm`` from 2.21).
- ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>`` (``net_ib``),
  ``NET/Socket : Using [0]eth0:10.0.0.1<0>``; ``Using network IB`` (``init.cc``; a plugin's name as it gives
  it, a blank and all: ``Using network AWS Libfabric``, its connections ``via NET/AWS Libfabric/0``). From 2.20.3 to 2.23 a
  merged device (``NCCL_IB_MERGE_NICS``) prints as ``[D]={[I] mlx5_2:1/RoCE, [J] mlx5_3:1/RoCE}``
  (a plain device beside it with its IB device's index, ``ibDev``; from 2.24.3 merged devices are not
  on this line); from 2.30.7 a device NCCL_IB_HCA gives a rail or plane prints them after its port,
  ``[0]mlx5_0:1:RAIL:PLANE/IB`` (``:RAIL``, ``::PLANE``; ``net_ib/init.cc``)
  (``ncclIbInit``: ``" [%d]={"``, then ``"[%d] %s:%d/%s%s"`` per member, ``", "`` between, ``"}"``).
- ``Channel CC/S : R[D] -> P[E] [send|receive] via TRANSPORT`` (``transport/{p2p,shm,net}.cc``):
  ``P2P/IPC``, ``P2P/CUMEM``, ``P2P/direct pointer`` (``"via P2P/direct pointer%s"``, ``useReadStr``
  ``/read`` or empty: kind ``P2P/direct pointer``), ``SHM/direct/direct``, ``NET/IB/0``,
  ``NET/Socket/0``, ``NET/IB/0/GDRDMA``, ``CollNet`` ...; ``channels`` counts these connection lines, not
  ``graph/connect.cc``'s ring listing ``Channel 00/02 :    0   1``; 2.4 to 2.8's ``shm.cc`` names its connection
  ``via direct shared memory`` (the kind later printed ``SHM/direct/direct``: kind ``SHM/direct``,
  nccl-issue 644); up to 2.6 (and RCCL of that age) the
  same connection is ``Ring RR : R[BUSID] -> P[BUSID] via TRANSPORT`` (``transport/p2p.cc`` @ v2.5.6:
  ``"Ring %02d : %d[%lx] -> %d[%lx] via P2P/IPC"``).
- HOST is empty where a reporter removed the host name and kept the rest (``:22901:22901 [0]
  NCCL INFO ...``): the line is NCCL's, its host unknown (not listed in ``hosts``). A WARN whose
  whole ``HOST:PID:TID [DEV]`` was removed (``init.cc:1247 NCCL WARN ...``: NCCL-issue 296) is
  still NCCL's by its ``FILE:LINE NCCL WARN`` layout: its host, pid and tid null; one quoted from its
  device field on (``[1] misc/shmutils.cc:103 NCCL WARN ...``, ``[3] NCCL INFO ...``: NCCL-issue 1518) is
  NCCL's, its device read (before a WARN's FILE:LINE never MPICH's ``-prepend-rank`` label:
  :mod:`sncheck.vendors.delivery`; ``[0] NCCL INFO`` on every line is that label's); one quoted with nothing
  before its level (``NCCL WARN MSG``, ``NCCL INFO MSG``: a report's quote, harvest 21) is NCCL's by its
  level and message, its process, file and line null. A PID or TID a
  reporter masked (``host:XXXXXX:XXXXXX``, or ``PID:TID`` as one mask ``host:XXXXXX``: NCCL-issue 2013)
  leaves the line NCCL's, that number null.
- the IB completion error (``transport/net_ib.cc``, ``net_ib/p2p.cc``), a WARN whose layout
  changed: up to 2.9 ``NET/IB : Got completion with error E, opcode O, len L, vendor err V``;
  2.11 to 2.19 ``... from peer ADDR with error E, opcode O, len L, vendor err V[ (TYPE)...]``;
  2.20/2.21 ``NET/IB : ... with status=E opcode=O len=L vendor err V (TYPE)...``; 2.22 to 2.28
  ``NET/IB: ... with status=E opcode=O len=L vendor err V (TYPE)[ localGid G remoteGids G] hca H``;
  from 2.29 ``NET/IB: ... with status=NAME(E) opcode=NAME(O) vendor_err=V [localGid ..] hca H``.
  E is an ``ibv_wc_status`` (rdma-core ``libibverbs/enum_strs.c``): 12 is "transport retry
  counter exceeded" (the peer's port or the path to it stopped answering), 5 a flushed
  request (a consequence of an earlier error).
- the results ``ncclGetErrorString`` names (``init.cc``): "unhandled cuda error",
  "unhandled system error", "internal error - please report this issue to the NCCL
  developers", "invalid argument", "invalid usage", "remote process exited or there was a
  network error"; printed by NCCL's callers (``NCCL error in: FILE:LINE, <string>``,
  ``Test NCCL failure``) and as ``ncclSystemError`` etc. by PyTorch.

A log has no end marker: it is a stream. Failures (exit 1): every WARN (the NCCL
documentation: WARN "prints only messages indicating a fatal error"), every error result
named in the log, two NCCL versions in one log (ranks on two releases, or two logs spliced), and two
networks in one log (hosts whose own 'Using network X' lines differ: one fell back to sockets after
'NET/IB : No device found.'; up to 2.5 a NET/Socket line is the bootstrap's, no choice). A line cut
mid-way is reported by ``sncheck parse`` (no newline at the end).

Interleaved mid-line (several processes writing one stdout into a pipe or file: block-buffered,
so their bytes interleave anywhere; ``NCCL_DEBUG_FILE`` is line-buffered): a line holding another
process's ``:PID:TID [DEV] NCCL LEVEL`` is split there, the head before it a line cut short (no
value; a WARN's stays a warning, ``"cut": true``, without its completion numbers), the rest read
as a line (its HOST the longest known host its glued text ends with, else null); a HOST holding
':' (another line's cut prefix glued before a line) is null; an ``Init COMPLETE`` whose cudaDev is
not its line's [DEV] is two ranks' halves, not a rank. Any of them is an error naming the lines
(exit 1); a splice inside a value of the same message from another process shows nothing and is
said in that error to be possible.

JSON::

    {"tool": "nccl-debug", "nccl_version": "2.18.3", "cuda_version": "12.2",
     "lines": 812, "hosts": ["node1", "node2"], "processes": 16, "nranks": 16,
     "ranks": [{"host", "pid", "rank", "nranks", "cuda_dev", "nvml_dev", "bus_id", "comm"}],
     "net": {"network": "IB", "devices": [{"index": 0, "device": "mlx5_0", "port": 1, "link": "IB"}],
             (a merged device: "device": "mlx5_2+mlx5_3", "port": null, "members": [{index, device, port, link}];
              a plain one beside it: "ib_index", the index it printed; "rail", "plane" where printed)
             "oob": "ib0:10.0.0.1<0>"},  (the first process's line: its devices and its OOB)
     "net_hosts": [{"host": "node2", "network": "IB", "devices": ["mlx5_0", ...], "oob": "ib0:10.0.0.2<0>"}],
             (each host's own 'NET/<net> : Using' line: a host listing fewer NICs than another shows here)
     "transports": {"P2P/IPC": 48, "NET/IB": 16}, "channels": 64,
     "warnings": [{"host", "pid", "tid", "device", "file", "line", "func", "time", "message"}],
     "completion_errors": [{"peer", "status", "status_name", "opcode", "len", "vendor_err", "hca",
                            "local_gid", "remote_gids",
                            "host", "pid"}],
     "nccl_errors": ["unhandled system error"],  (each result once)
     "nccl_error_sources": [{"result", "host", "pid", "rank", "lines"}],  (who printed each, where the line
             says: :mod:`sncheck.vendors.nccl.results`)
     "faults": [...], "errors": []}
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from sncheck.errors import ParseError
from sncheck.vendors.nccl.results import named_results, printed, where

TOOL = "nccl-debug"
_LEVELS = (" NCCL INFO", " NCCL WARN", " NCCL TRACE", " NCCL CALL")
_BARE = ("NCCL INFO ", "NCCL WARN ")  # a quoted line whose whole prefix the reporter removed
_DEV = re.compile(r"\[(\d+)\]$")
_MASKED = re.compile(r"X+|x+|\*+")  # a number a reporter masked
_FILE_LINE = re.compile(r"(?P<file>[\w./+-]+):(?P<line>\d+)$")
_VERSION = re.compile(r"NCCL version (?P<v>\d+\.\d+\.\d+)(?P<suffix>[\w.-]*)(?:\+cuda(?P<cuda>\d+\.\d+))?")
_RAS_BANNER = re.compile(r"^NCCL version \S+ compiled with CUDA ", re.MULTILINE)
_INIT = re.compile(r"comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) rank (?P<rank>\d+) nr?anks (?P<nranks>\d+) "
                   r"cudaDev (?P<dev>\d+)(?: nvmlDev (?P<nvml>\d+))? busId (?P<bus>[0-9a-fA-F]+)\b")
_NET_USING = re.compile(r"^NET/(?P<net>\w+) ?: Using(?P<rest>.*)$")
# '[0]mlx5_0:1/IB' (net_ib: device, port, link layer), '[0]eth0:10.0.0.1<0>' (net_socket: interface and
# its address, the port in '<>' 0); a Socket device's ':' is followed by its address, not a port. From
# 2.30.7 (net_ib/init.cc, NCCL_IB_HCA naming a rail and plane) the port may be followed by ':RAIL',
# ':RAIL:PLANE' or '::PLANE' before the link: '[0]mlx5_0:1:0:1/IB'
_NET_DEV = re.compile(r"\[(?P<i>\d+)\](?P<dev>[^\s:\[\];]+)(?::(?P<port>\d+)(?::(?P<rail>\d*)(?::(?P<plane>\d+))?(?=/)|(?![\d.:<]))"
                      r"|:(?P<addr>[^\s<\[\];]+)<\d+>)?(?:/(?P<link>\w+))?")
# NCCL_IB_MERGE_NICS (2.20.3 to 2.23, net_ib.cc ncclIbInit): a merged device ' [D]={[I] mlx5_2:1/RoCE, [J] mlx5_3:1/RoCE}';
# a plain device beside it prints its IB device's index, not D ('" [%d]%s:%d/%s", ibDev')
_NET_MERGED = re.compile(r"\[(?P<i>\d+)\]=\{(?P<members>[^}]*)\}?")
_NET_MEMBER = re.compile(r"\[(?P<i>\d+)\] (?P<dev>[^\s:,\[\]{}]+):(?P<port>\d+)/(?P<link>\w+)")


def _net_devices(listed: str) -> list[dict[str, Any]]:
    """The devices of a 'NET/IB : Using' line, in order: a plain one's index, device, port and link (a
    Socket device's address); a merged one (``[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}``) its index,
    ``device`` its members' names joined by '+' (as NCCL names a merged device), the members' common
    link, and ``members`` [{index, device, port, link}] (each the IB device's own index). NCCL prints
    its devices in index order; a plain one beside a merged one prints its IB device's index (2.20 to
    2.23): ``index`` is then its place, ``ib_index`` the printed one."""
    out: list[dict[str, Any]] = []
    at = 0
    for merged in _NET_MERGED.finditer(listed):
        out += _plain_devices(listed[at:merged.start()])
        found = list(_NET_MEMBER.finditer(merged["members"]))
        members = [{"index": int(d["i"]), "device": d["dev"], "port": int(d["port"]), "link": d["link"]} for d in found]
        links = {d["link"] for d in found}
        out.append({"index": int(merged["i"]), "device": "+".join(d["dev"] for d in found) or None, "port": None,
                    "link": links.pop() if len(links) == 1 else None, "members": members})
        at = merged.end()
    out += _plain_devices(listed[at:])
    if at:  # a merged device in the line: each plain one's printed index is its IB device's
        for place, d in enumerate(out):
            if "members" not in d and d["index"] != place:
                d["ib_index"], d["index"] = d["index"], place
    return out


def _plain_devices(listed: str) -> list[dict[str, Any]]:
    return [{"index": int(d["i"]), "device": d["dev"], "port": int(d["port"]) if d["port"] else None,
             "link": d["link"], **({"address": d["addr"]} if d["addr"] else {}),
             **({"rail": int(d["rail"])} if d["rail"] else {}), **({"plane": int(d["plane"])} if d["plane"] else {})}
            for d in _NET_DEV.finditer(listed)]


# 'comm 0x.. rank R nranks N ... - Init START', 'comm 0x.. rank R nRanks N nNodes M localRanks ..': the size
_COMM_SIZE = re.compile(r"comm (?:0x[0-9a-fA-F]+|\(nil\)) rank \d+ nr?anks (\d+)", re.I)
_OOB = re.compile(r"OOB (\S+)")
# init.cc 'Using network %s' (ncclNet->name: a plugin's name may hold a blank, aws-ofi-nccl's 'AWS Libfabric');
# greedy, its trailing blanks stripped after the match (a lazy name before '\s*$' was quadratic: reviews13)
_USING_NETWORK = re.compile(r"^Using network (\S.*)")
_NET_NAME_MAX = 64  # a net plugin's name is a word or two: longer is no name NCCL prints
# 'Channel 00/0 : ...' (2.7 on), 'Ring 00 : ...' (to 2.6): one connection of a channel, by its transport
# ('via NET/%s/%d': the net's name as 'Using network' prints it, a blank and all: 'NET/AWS Libfabric/0': split
# by _via); graph's 'Channel 00/02 :    0   1' lists a ring's ranks: no connection, not counted
_CHANNEL = re.compile(r"^(?:Channel|Ring) \d+(?:/\d+)? : .* via (?P<via>\S.*)")
# the words shm.cc printed (2.4 to 2.8) for the transport it later names SHM/direct/direct
_OLD_SHM = "direct shared memory"
_COMPLETION = re.compile(
    r"NET/IB ?: Got completion (?:from peer (?P<peer>\S+) )?with "
    r"(?:error (?P<e1>\d+)(?:, opcode (?P<o1>\d+)(?:, len (?P<l1>\d+)(?:, vendor err (?P<v1>\d+))?)?)?"
    r"|status=(?:(?P<sname>[A-Za-z_ ]+)\()?(?P<e2>\d+)\)? opcode=(?:[A-Za-z_]+\()?(?P<o2>\d+)\)?"
    r"(?: len=(?P<l2>\d+))? vendor[ _]err[ =](?P<v2>\d+))"
    r"(?: \((?P<type>[^)]*)\))?")
_HCA = re.compile(r" hca (\S+)\s*$")
# " localGid G remoteGids" then the peer GIDs, glued on ("remoteGidsfd00:..", "remoteGids::ffff:..")
_GIDS = re.compile(r"\blocalGid (?P<local>\S+) remoteGids ?(?P<remote>\S+)")
# ibv_wc_status (rdma-core libibverbs/enum_strs.c), by code
WC_STATUS = ("success", "local length error", "local QP operation error", "local EE context operation error",
             "local protection error", "Work Request Flushed Error", "memory management operation error",
             "bad response error", "local access error", "remote invalid request error", "remote access error",
             "remote operation error", "transport retry counter exceeded", "RNR retry counter exceeded",
             "local RDD violation error", "remote invalid RD request", "aborted error", "invalid EE context number",
             "invalid EE context state", "fatal error", "response timeout error", "general error", "TM error",
             "TM software rendezvous")
_MAX_LISTED = 200
_LINE_MAX = 4096
# another process's line beginning inside a line: its ':PID:TID [DEV] NCCL LEVEL' (debug.cc's prefix; its
# HOST glued to whatever text it follows), or ':PID:TID NCCL CALL'
_ANCHOR = re.compile(r":(?:\d+|X+|x+|\*+):(?:\d+|X+|x+|\*+) (?:\[\d+\] NCCL (?:INFO|WARN|TRACE)|NCCL CALL)\b")
_HOST_RUN = re.compile(r"[\w.-]*$")


def _split(line: str) -> tuple[str, str, str] | None:
    """(prefix, level, message) of an NCCL line, or None. Found by the level word, then the
    prefix read from its end: linear in the line. A line that starts with the level word is one a
    reporter quoted without its whole prefix ('NCCL WARN NET/IB : Got completion ...', harvest 21's
    B200 report): an empty prefix."""
    for bare in _BARE:
        if line.startswith(bare):
            return "", bare.split()[-1], line[len(bare):]
    for marker in _LEVELS:
        at = line.find(marker)
        if at >= 0:
            rest = line[at + len(marker):]
            return line[:at], marker.split()[-1], rest[1:] if rest.startswith(" ") else rest
    return None


def _prefix(prefix: str, level: str) -> dict[str, Any] | None:
    """HOST:PID:TID [DEV] [FILE:LINE [(FUNC)]] before the level, read from the end."""
    tokens = prefix.split()
    out: dict[str, Any] = {"file": None, "line": None, "func": None, "device": None, "time": None}
    if level == "WARN" and tokens and tokens[-1].startswith("(") and tokens[-1].endswith(")"):
        out["func"] = tokens.pop()[1:-1]
    if level in ("WARN", "TRACE") and tokens and (m := _FILE_LINE.match(tokens[-1])):
        out["file"], out["line"] = m["file"], int(m["line"])
        tokens.pop()
        if level == "TRACE" and tokens and re.fullmatch(r"[\d.]+", tokens[-1]):
            tokens.pop()  # TRACE's milliseconds since init
    if level != "CALL" and tokens and (m := _DEV.match(tokens[-1])):
        out["device"] = int(m[1])
        tokens.pop()
    if not prefix.strip() and level in ("INFO", "WARN"):
        # 'NCCL WARN MSG' / 'NCCL INFO MSG': quoted with nothing before the level word; the layout is NCCL's
        # level and message alone: the line is NCCL's, its process, file and line unknown
        out.update(host=None, pid=None, tid=None)
        return out
    if not tokens and ((level == "WARN" and out["file"]) or (level in ("INFO", "WARN") and out["device"] is not None)):
        # 'FILE:LINE NCCL WARN MSG': a reporter removed the whole HOST:PID:TID [DEV] before it
        # (nccl-issue296); '[DEV] NCCL INFO MSG', '[DEV] FILE:LINE NCCL WARN MSG': removed HOST:PID:TID
        # and kept the device (nccl-issue1518); the layout is NCCL's alone: the line is NCCL's, its process unknown
        out.update(host=None, pid=None, tid=None)
        return out
    who = tokens[-1].rsplit(":", 2) if tokens else []
    if len(who) == 2 and _MASKED.fullmatch(who[1]):
        who = [":".join(who[:-1]), who[-1], who[-1]]  # 'HOST:XXXXXX': the reporter masked PID:TID as one
    if len(who) != 3 or not all(w.isdecimal() or _MASKED.fullmatch(w) for w in who[1:]):
        return None
    # an empty HOST: the reporter removed the host name (':PID:TID [DEV]'); the line is still NCCL's. A PID or
    # TID masked by the reporter ('host-01.example.com:XXXXXX [5]', nccl-issue2013: PID:TID as one mask) is
    # unknown: the line is NCCL's by its layout
    # a label before HOST is no part of it: a timestamp's '[...]' and torchrun's TailLog header '[{role}{N}]:'
    # glued to it ('[default0]:node1:4000:4000 [0] NCCL INFO ...', reviews14 #3: read as host ':node1', spliced)
    host = who[0].rsplit("]", 1)[-1]
    host = host[1:] if host.startswith(":") and "]" in who[0] else host
    out.update(host=host or None, pid=int(who[1]) if who[1].isdecimal() else None,
               tid=int(who[2]) if who[2].isdecimal() else None)
    head = " ".join(tokens[:-1]).strip()
    out["time"] = head.strip("[]") or None
    return out


def parse_nccl_debug(text: str) -> dict[str, Any]:
    """An ``NCCL_DEBUG`` log (see the module)."""
    data: dict[str, Any] = {"tool": TOOL, "nccl_version": None, "cuda_version": None, "lines": 0, "hosts": [],
                            "processes": 0, "nranks": None, "ranks": [], "net": None, "net_hosts": [],
                            "transports": {},
                            "channels": 0, "warnings": [], "completion_errors": [], "nccl_errors": [],
                            "nccl_error_sources": [],
                            "faults": [], "errors": []}
    hosts: dict[str, int] = {}  # each host -> how many of its lines
    procs: set[tuple[str, int]] = set()
    results: dict[str, None] = {}
    versions: dict[str, str] = {}  # every NCCL version the log prints -> its first line
    net: dict[str, Any] = {"network": None, "devices": [], "oob": None}
    broken: list[tuple[int, str, list[int]]] = []  # (line number, text, where each NCCL line in it starts)
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()[:_LINE_MAX]  # NCCL's buffer is 1024 bytes a line: longer is not NCCL's
        if not line:
            continue
        if " NCCL " in line and len(anchors := [m.start() for m in _ANCHOR.finditer(line)]) > 1:
            broken.append((number, line, anchors))  # read after the whole lines, by the hosts they name
            continue
        if "NCCL version " in line and (m := _VERSION.search(line)):
            versions.setdefault(m["v"], line[:120])
            if data["nccl_version"] is None:
                data["nccl_version"], data["cuda_version"] = m["v"], m["cuda"]
        parts = _split(line)
        who = _prefix(parts[0], parts[1]) if parts is not None else None
        for result in named_results(line):
            results[result] = None
            printed(data["nccl_error_sources"], result, line, who)
        if parts is None or who is None:
            continue
        prefix, level, msg = parts
        if who["host"] and ":" in who["host"]:
            # 'node0:400node0:4003:4003 [3] ...': a HOST holds no ':'; another line's cut head (its prefix's
            # first bytes) glued before this line's start: the line is read, its host unknown
            data.setdefault("_spliced", []).append(f"line {number}: a line's start glued to another's cut head "
                                                   f"({who['host'][:40]!r})")
            who["host"] = None
        data["lines"] += 1
        if who["host"] is not None:
            hosts[who["host"]] = hosts.get(who["host"], 0) + 1
        procs.add((who["host"], who["pid"]))
        if level == "WARN":
            _warn(data, who, msg)
        elif level == "INFO":
            _info(data, net, who, msg)
    if broken:
        _interleaved(data, net, broken, hosts, procs)
    _reglued(data, net, hosts, procs)
    if spliced := data.pop("_spliced", None):
        _say_interleaved(data, spliced)
    if not data["lines"] and not results and (data["nccl_version"] is None or _RAS_BANNER.search(text)):
        # NCCL_DEBUG=VERSION prints 'NCCL version 2.x.y+cudaA.B' alone; the RAS client's report opens with
        # 'NCCL version 2.x.y compiled with CUDA A.B' (ras/client.cc): no NCCL_DEBUG log's
        raise ParseError("no NCCL_DEBUG line (HOST:PID:TID [DEV] NCCL INFO/WARN ...) and no NCCL error"
                         + (" (an NCCL RAS report: view nccl-ras)" if _RAS_BANNER.search(text) else ""), tool=TOOL)
    data["hosts"], data["processes"] = list(hosts), len(procs)
    data["nccl_errors"] = list(results)
    by_host = net.pop("hosts", {})
    if net["network"] or net["devices"]:
        data["net"] = {k: v for k, v in net.items() if k not in ("sizes", "from", "chosen")}
    data["net_hosts"] = [{"host": h, "network": n["network"], "devices": [d["device"] for d in n["devices"]],
                          "oob": n["oob"]} for h, n in by_host.items()]
    nranks = [r["nranks"] for r in data["ranks"]] + net.pop("sizes", [])
    data["nranks"] = max(nranks) if nranks else None  # a comm's size, from its Init START or comm line too
    net.pop("from", None)
    faults = [f"NCCL WARN {(w['file'] or '') + (':' + str(w['line']) if w['line'] else '') or '(no file:line)'} on "
              f"{w['host'] or '(host removed)'}{':' + str(w['pid']) if w['pid'] is not None else ''}: "
              f"{w['message'][:200]}" for w in data["warnings"]]
    faults += [f"NCCL error: {r}{where(data['nccl_error_sources'], r)}" for r in data["nccl_errors"]]
    if len(versions) > 1:  # the ranks of a job run one NCCL (its wire protocol is the version's); or two logs spliced
        faults.append(f"{len(versions)} NCCL versions in one log ({', '.join(versions)}): ranks on different NCCL "
                      "releases, or two jobs' logs spliced")
    faults += _networks(net.pop("chosen", {}))
    data["faults"] = list(dict.fromkeys(faults))[:_MAX_LISTED]
    return data


def _networks(chosen: dict[str, list[str]]) -> list[str]:
    """Hosts whose processes chose different networks ('Using network IB' on one, 'Using network Socket'
    on another after its 'NET/IB : No device found.'): init.cc picks a process's network alone, and a
    job's ranks connect over one."""
    nets = {n: list(dict.fromkeys(hs)) for n, hs in chosen.items()}
    if len(nets) < 2:
        return []
    said = ", ".join(f"{n} on {hs[0]}" + (f" and {len(hs) - 1} more" if len(hs) > 1 else "") for n, hs in nets.items())
    return [f"{len(nets)} networks in one log ({said}): a host fell back to another transport (its ranks "
            "cannot reach the others' over it, or run at its speed)"]


def _warn(data: dict[str, Any], who: dict[str, Any], msg: str) -> None:
    if len(data["warnings"]) < _MAX_LISTED:
        data["warnings"].append({**who, "message": msg})
    if "Got completion" in msg and (m := _COMPLETION.search(msg)):
        status = int(m["e1"] or m["e2"])
        hca, gids = _HCA.search(msg), _GIDS.search(msg)
        data["completion_errors"].append({
            "peer": m["peer"], "status": status,
            "status_name": (m["sname"] or (WC_STATUS[status] if status < len(WC_STATUS) else "unknown")).strip(),
            "opcode": _opt(m["o1"] or m["o2"]), "len": _opt(m["l1"] or m["l2"]),
            "vendor_err": _opt(m["v1"] or m["v2"]), "type": m["type"], "hca": hca[1] if hca else None,
            "local_gid": gids["local"] if gids else None, "remote_gids": gids["remote"] if gids else None,
            "host": who["host"], "pid": who["pid"]})


def _via(via: str) -> str:
    """A connection's transport kind: 'P2P/IPC', 'SHM/direct', 'NET/IB', 'NET/AWS Libfabric' (a net's name with
    its blank, up to the next '/'), 'P2P/direct pointer'; the text after 'via' read by split, never by a regex."""
    if via.startswith((_OLD_SHM, "P2P/direct pointer")):
        return "SHM/direct" if via.startswith(_OLD_SHM) else "P2P/direct pointer"
    parts = via.split("/")
    if parts[0] == "NET" and len(parts) > 1 and len(parts[1]) <= _NET_NAME_MAX:
        return "NET/" + parts[1]
    token = via.split()[0].split("/")
    return "/".join(token[:2]) if token[0] in ("NET", "P2P", "SHM") and len(token) > 1 else token[0]


def _opt(v: str | None) -> int | None:
    return int(v) if v else None  # an excerpt that wrapped the line keeps its head only


def _net_line(net: dict[str, Any], m: re.Match[str]) -> None:
    """A 'NET/<net> : Using' line into ``net``: NCCL up to 2.5 prints 'NET/Socket : Using' for its bootstrap
    too; a 'NET/IB : Using' line says the IB transport came up and is the network (net.cc tries IB first):
    it replaces a Socket line's. The OOB is the chosen line's own (another process's line names its host's)."""
    if not net["devices"] or (net.get("from") == "Socket" and m["net"] != "Socket"):
        net["network"] = m["net"] if net.get("from") is not None else net["network"] or m["net"]
        net["from"] = m["net"]
        net["devices"] = _net_devices(m["rest"].split("; OOB")[0])
        oob = _OOB.search(m["rest"])
        net["oob"] = oob[1] if oob else None


def _info(data: dict[str, Any], net: dict[str, Any], who: dict[str, Any], msg: str) -> None:
    if msg.startswith(("Channel ", "Ring ")):
        if m := _CHANNEL.match(msg):
            data["channels"] += 1
            kind = _via(m["via"].rstrip())
            data["transports"][kind] = data["transports"].get(kind, 0) + 1
    elif "Init COMPLETE" in msg and (m := _INIT.search(msg)):
        if not _spliced(data, who, m):
            data["ranks"].append({"host": who["host"], "pid": who["pid"], "rank": int(m["rank"]),
                                  "nranks": int(m["nranks"]), "cuda_dev": int(m["dev"]),
                                  "nvml_dev": int(m["nvml"]) if m["nvml"] else None, "bus_id": m["bus"],
                                  "comm": m["comm"]})
    elif m := _NET_USING.match(msg):
        # each process prints its own line (ncclIbInit / ncclNetSocketInit, once a process): the OOB a line
        # names is its own host's, kept with that line's devices; every host's own line in net_hosts
        _net_line(net, m)
        if who["host"] is not None:
            _net_line(net.setdefault("hosts", {}).setdefault(who["host"], {"network": None, "devices": [],
                                                                           "oob": None}), m)
    if m := _COMM_SIZE.search(msg):
        net.setdefault("sizes", []).append(int(m[1]))
    if (m := _USING_NETWORK.match(msg)) and len(name := m[1].rstrip()) <= _NET_NAME_MAX:
        net["network"] = name
        if who["host"] is not None:  # init.cc's choice, a process's own: up to 2.5 a NET/Socket line is the bootstrap's too
            net.setdefault("chosen", {}).setdefault(name, []).append(who["host"])


def _spliced(data: dict[str, Any], who: dict[str, Any], m: re.Match[str]) -> bool:
    """An 'Init COMPLETE' line whose cudaDev is not its prefix's [DEV]: init.cc prints it from the
    comm's own device, so its head and its tail are two processes' lines (an interleaving that shows no
    other mark); not a rank (``data["_spliced"]`` counts it for :func:`_say_interleaved`)."""
    if who["device"] is None or who["device"] == int(m["dev"]):
        return False
    data.setdefault("_spliced", []).append(f"'comm ... cudaDev {m['dev']}' on a [{who['device']}] line")
    return True


def _interleaved(data: dict[str, Any], net: dict[str, Any], broken: list[tuple[int, str, list[int]]],
                 hosts: dict[str, int], procs: set[Any]) -> None:
    """Lines holding another process's NCCL line (its ':PID:TID [DEV] NCCL' inside them): debug.cc
    writes each line with one vfprintf to its file, stdout unless NCCL_DEBUG_FILE names one; stdout into
    a pipe or a file is block-buffered, so processes sharing it interleave at any byte. What precedes
    each later line's start is a line cut short: a WARN stays a warning (its message as far as it goes,
    ``cut``), never its completion error's numbers; an INFO gives no value. The last is read as a line
    from its start (its HOST: the longest host of the whole lines that ends the text before its ':PID',
    else unknown)."""
    longest = max(map(len, hosts), default=0)  # (a host is a suffix of the glued run: look no further back)
    for number, line, anchors in broken:
        starts = []
        for at in anchors:
            run = _HOST_RUN.search(line, max(0, at - longest), at)
            host = longest_suffix(run[0] if run else "", hosts, longest) or ""
            starts.append(at - len(host) if at > anchors[0] else 0)
        for i, start in enumerate(starts):
            part = line[start:starts[i + 1]] if i + 1 < len(starts) else line[start:]
            parts = _split(part)
            who = _prefix(parts[0], parts[1]) if parts else None
            if parts is None or who is None:
                continue
            data["lines"] += 1
            if who["host"] is not None:
                hosts[who["host"]] = hosts.get(who["host"], 0) + 1
                longest = max(longest, len(who["host"]))
            procs.add((who["host"], who["pid"]))
            if i + 1 < len(starts):  # cut by the next process's line
                if parts[1] == "WARN" and len(data["warnings"]) < _MAX_LISTED:
                    data["warnings"].append({**who, "message": parts[2], "cut": True})
                continue
            if parts[1] == "WARN":
                _warn(data, who, parts[2])
            elif parts[1] == "INFO":
                _info(data, net, who, parts[2])
        data.setdefault("_spliced", []).append(f"line {number}: {len(anchors)} NCCL lines in one (the next begins at "
                                               f"column {starts[1] + 1})")


INTERLEAVED = "the log's lines are interleaved mid-line"


def interleaving(text: str) -> str | None:
    """This view's interleaving error for another view that reads NCCL_DEBUG lines from the same
    logs (``nccl-mnnvl``, ``torch-nccl``: one check, one judgement), or None: the log's NCCL lines
    read as :func:`parse_nccl_debug` reads them, the error it gives when they are interleaved
    mid-line (a line holding another's ':PID:TID [DEV] NCCL LEVEL', a HOST glued or cut, an
    'Init COMPLETE' of two ranks' halves)."""
    if " NCCL " not in text:
        return None
    try:
        data = parse_nccl_debug(text)
    except ParseError:
        return None
    return next((e for e in data["errors"] if e.startswith(INTERLEAVED)), None)


def _say_interleaved(data: dict[str, Any], spliced: list[str]) -> None:
    data["errors"].append(
        f"{INTERLEAVED} ({len(spliced)} line{'s' if len(spliced) > 1 else ''}: "
        f"{'; '.join(spliced[:5])}{'; ...' if len(spliced) > 5 else ''}): several processes wrote one file without "
        "line buffering (NCCL prints each line with one vfprintf to stdout, block-buffered into a pipe or a file); "
        "a line cut by another is not read, and a line spliced where nothing shows it may read as other values: "
        "give each process its own file (NCCL_DEBUG_FILE=nccl.%h.%p) or tag each line (srun --label, mpirun "
        "--tag-output)")


def _reglued(data: dict[str, Any], net: dict[str, Any], hosts: dict[str, int], procs: set[Any]) -> None:
    """A HOST on one line that ends with a host of other lines ('NCCLnode2', 'INFnode3': another
    line's cut head glued before this line's start) is that host; one that another host of other
    lines ends with ('0' of 'node0': the line's own start cut) is unknown. Either is an
    interleaving (:func:`_say_interleaved`); the values that named it are moved."""
    once = [h for h, n in hosts.items() if n == 1]
    if not once:
        return
    known = {h: n for h, n in hosts.items() if n > 1}
    longest = max(map(len, known), default=0)
    ends = suffix_owners(known)  # (by lookup, not a scan of every host for each: a fleet's log has 16k hosts)
    moved: dict[str, str | None] = {}
    for h in once:
        if tail := longest_suffix(h, known, longest):
            moved[h] = tail
        elif h in ends:
            moved[h] = None
    if not moved:
        return
    data.setdefault("_spliced", []).extend(f"host {h!r} on one line, another's cut head glued to it"
                                           if k else f"host {h!r} on one line, the end of {ends[h]!r}"
                                           for h, k in moved.items())
    for h, k in moved.items():
        del hosts[h]
    for key in ("ranks", "warnings", "completion_errors", "nccl_error_sources"):
        for item in data[key]:
            if item.get("host") in moved:
                item["host"] = moved[item["host"]]
    for h in list(procs):
        if h[0] in moved:
            procs.discard(h)
            procs.add((moved[h[0]], h[1]))
    by_host = net.get("hosts") or {}
    for h in [h for h in by_host if h in moved]:
        line = by_host.pop(h)
        if moved[h] is not None:
            by_host.setdefault(moved[h], line)
    for name, hs in (net.get("chosen") or {}).items():
        net["chosen"][name] = [moved.get(x, x) if x in moved else x for x in hs if not (x in moved and moved[x] is None)]


def longest_suffix(text: str, hosts: Collection[str], longest: int) -> str | None:
    """The longest of ``hosts`` that ``text`` ends with (none longer than ``longest``), or None:
    ``max((h for h in hosts if text.endswith(h)), key=len)`` by lookups of text's own suffixes."""
    for i in range(max(0, len(text) - longest), len(text)):
        if text[i:] in hosts:
            return text[i:]
    return None


def suffix_owners(known: Collection[str]) -> dict[str, str]:
    """Each proper end of a host of ``known`` (its own last characters, '' too) -> the greatest
    host of ``known`` that ends with it: ``max(k for k in known if k.endswith(s))`` for any ``s``
    not in ``known``, by one lookup."""
    out: dict[str, str] = {}
    for k in known:
        for i in range(1, len(k) + 1):
            end = k[i:]
            if end not in out or k > out[end]:
                out[end] = k
    return out
