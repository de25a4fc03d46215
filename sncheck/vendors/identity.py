"""Device identity across machines: which listed values name one device in the world
(:func:`unique_id`, read by :meth:`sncheck.vendors.hostjudge.FactJudge.shared`: one card is in
one machine), and the harnesses' rewrite that gives each simulated host its own (:func:`own_ids`).

What the tools print that identifies a device, by where it was read:

* NVIDIA: the GPU UUID ``GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`` (NVML; nvidia-smi -L, -q,
  --query-gpu), the board serial.
* AMD: amd-smi's UUID (``amd-smi list``'s ``UUID:``, ``--json``'s ``"uuid"``), which is the ASIC
  serial in a version-1 UUID: ``amdsmi_get_gpu_device_uuid`` calls ``amdsmi_uuid_gen(serial =
  strtoull(asic_serial, 16), device id, fcn 0xff)`` (ROCm/amdsmi ``src/amd_smi/amd_smi.cc`` and
  ``amd_smi_uuid.cc`` at 0ceca28, Oct 2024), printed ``%08x-%04x-%04x-%02x%02x-%04x%08x``: time_low
  = serial byte 7 << 24 | fcn << 16 | device id, time_mid 0, version 1 and time_high 0 (``1000``),
  variant 2 and clk_seq_hi 0 (``80``), clk_seq_low = serial byte 6, then serial bytes 5-4 and 3-0.
  ``AMD_SMI_UUID``: a capture's ``afff74a1-0000-1000-8054-e92b0a5d57c8`` is MI300X (0x74a1) serial
  0xAF54E92B0A5D57C8, the ``ASIC_SERIAL`` amd-smi static prints (``0x{:016X}``,
  py-interface/amdsmi_interface.py) and rocm-smi's ``Unique ID`` (``--showuniqueid``). A card whose
  serial the driver does not give prints a placeholder shared by every such card: ``ASIC_SERIAL:
  N/A`` (strtoull reads 0: UUID ``00ff73bf-0000-1000-8000-000000000000``) or, on Radeon boards (the
  amdsmi README's Navi 21), ``0xffffffffffffffff``; the board's ``PRODUCT_SERIAL`` is ``N/A`` or ``0``
  on most. Never an identity.
* Ascend: ``npu-smi info -t board -i N -c C``'s ``VDie ID`` (five groups of 8 hex digits; "可以保证
  全局唯一", globally unique, in MindCluster's vNPU guide, which names the die by it), its ``NDie
  ID``, and older chips' ``Die ID`` (the 310P form: gpustack's npu-smi detector quotes both).
  A die that reads none prints ``NA``.
* InfiniBand / RoCE: an adapter's node GUID, an IEEE EUI-64 burnt in by its maker (ibstat's ``Node GUID:
  0x%016x``, ca_dump in infiniband-diags ``src/ibstat.c``; ibv_devinfo's ``node_guid:`` in four groups of 4,
  ``libibverbs/examples/devinfo.c`` guid_str). An SR-IOV function whose GUID is not set prints zeros:
  never an identity. Two hosts listing one are one adapter answering twice (hostile round 20, H20-11).
* Never a PCI bus id: every machine numbers its slots alike (amd-smi's BDF, npu-smi's Bus-Id).

:func:`own_ids` rewrites, key-aware, exactly those values: the NVIDIA UUID wherever it stands
(its ``GPU-`` is its key), and the AMD and Ascend values only after the keys the tools print
them under, so no other hex in an output moves. Each rewrite keeps the value's form (width, case,
separators), keeps a placeholder a placeholder, is one-to-one on a host and its own inverse, and
moves an AMD serial alike in its UUID and where it is printed bare, each in its tool's form
(amd-smi's ``0x{:016X}``, rocm-smi's ``hex()``: rocm_smi_lib ``python_smi_tools/rocm_smi.py``
showUId, ``printLog(device, "Unique ID", hex(dv_uid.value))``), so a replayed amd-smi list and
static and rocm-smi still agree on one card. A CSV (amd-smi's and rocm-smi's ``--csv``: values without
keys on their lines) is rewritten by its header's columns (``uuid``, ``asic_serial``, ``product_serial``,
``Unique ID``, ``Serial Number``: :func:`_csv_ids`).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

_GPU_UUID = re.compile(r"GPU-([0-9a-fA-F]{8})-([0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4})-([0-9a-fA-F]{12})")
# amdsmi_uuid_gen's layout: serial byte 7, fcn, device id; 0000-1000-80; serial byte 6; bytes 5-0
AMD_SMI_UUID = re.compile(r"([0-9a-fA-F]{2})([0-9a-fA-F]{2}[0-9a-fA-F]{4})-0000-1000-80([0-9a-fA-F]{2})-"
                          r"([0-9a-fA-F]{12})")
_AMD_UUID_KEYED = re.compile(r"(\b(?:UUID|uuid)\"?\s*:\s*\"?)(" + AMD_SMI_UUID.pattern + r")(?![0-9a-fA-F-])")
_AMD_SERIAL_KEYED = re.compile(r"(\b(?:ASIC_SERIAL|asic_serial|Unique ID)\"?\s*:\s*\"?)(0[xX])([0-9a-fA-F]{1,16})\b")
# a board's serial: amd-smi static's BOARD PRODUCT_SERIAL (also --json), rocm-smi --showserial's
# 'GPU[0]\t\t: Serial Number: X' (and its --json "Serial Number"); nvidia-smi's own 'Serial Number'
# lines are not rewritten (an NVIDIA card's identity is its UUID)
_BOARD_SERIAL_KEYED = re.compile(r"(\b(?:PRODUCT_SERIAL|product_serial)\"?\s*:\s*\"?|GPU\[\d+\]\s*:\s*Serial Number:\s*"
                                 r"|\"Serial Number\"\s*:\s*\")((?=[0-9A-Za-z]*\d)[0-9A-Za-z]+)\b")
_DIE_ID_KEYED = re.compile(r"(\b(?:VDie|NDie|Die) ID\s*:\s*)([0-9a-fA-F]{8}(?: [0-9a-fA-F]{8}){4})\b")
_BUS_ID = re.compile(r"^(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
# an adapter's GUID after its key: ibstat's 'Node GUID: 0x...' (also its System image and Port GUIDs), and
# ibv_devinfo's 'node_guid:' / 'sys_image_guid:' in groups of 4 hex digits
_GUID_KEYED = re.compile(r"(\b(?:Node|System image|Port) GUID:[ \t]*0[xX])([0-9a-fA-F]{16})\b"
                         r"|(\b(?:node_guid|sys_image_guid):[ \t]*)([0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){3})\b")
_PLACEHOLDER_SERIALS = (0, (1 << 64) - 1)
# what the tools print where a device has no identity to give (npu-smi's NA, amd-smi's and
# rocm-smi's N/A, nvidia-smi's [N/A] and Not Supported)
_NONE = frozenset({"", "NA", "N/A", "[N/A]", "NOT SUPPORTED", "[NOT SUPPORTED]"})


def amd_uuid_serial(uuid: str) -> int | None:
    """The ASIC serial an amd-smi UUID carries, or None for a text of another form."""
    m = AMD_SMI_UUID.fullmatch(uuid.strip())
    if not m:
        return None
    node = int(m[4], 16)
    return int(m[1], 16) << 56 | int(m[3], 16) << 48 | node


def unique_id(ident: str) -> bool:
    """A device identity no other machine's device has: a GPU UUID, an AMD UUID or ASIC serial, an
    Ascend die id or a serial; not a PCI bus id (every machine numbers its slots alike) nor a
    placeholder (none printed: NA, N/A; zeros; an AMD serial of none or all ones). The one home
    for "placeholder": a fact that lists ids (a host's duplicates, two hosts' shared) asks here."""
    ident = ident.strip()
    if (ident.upper() in _NONE or _BUS_ID.match(ident)
            or not re.search(r"[1-9a-zA-Z]", ident.removeprefix("GPU-").removeprefix("0x").removeprefix("0X"))):
        return False  # (0x0000000000000000: a GUID of none)
    serial = amd_uuid_serial(ident)
    return serial not in _PLACEHOLDER_SERIALS


@lru_cache(maxsize=1 << 16)
def _moves(host: str) -> tuple[int, int]:
    digest = hashlib.blake2b(host.encode(), digest_size=10).digest()
    return int.from_bytes(digest[:4], "big"), int.from_bytes(digest[4:], "big")


@lru_cache(maxsize=1 << 16)
def _key(host: str) -> bytes:
    """32 bytes of the host's name for the keyed rewrites: 0-7 the AMD serial's mask, 8-27 the
    Ascend die id's (five groups of 4), 28-31 the board serial's per-character moves."""
    return hashlib.blake2b(b"sncheck own ids\0" + host.encode(), digest_size=32).digest()


def _amd_serial(serial: int, host: str) -> int:
    return serial if serial in _PLACEHOLDER_SERIALS else serial ^ int.from_bytes(_key(host)[:8], "big")


def _amd_uuid(m: re.Match[str], host: str) -> str:
    uuid = m[2]
    serial = amd_uuid_serial(uuid)
    if serial is None:
        return m[0]
    moved = _amd_serial(serial, host)
    u = AMD_SMI_UUID.fullmatch(uuid)
    assert u is not None
    text = f"{moved >> 56:02x}{u[2]}-0000-1000-80{moved >> 48 & 0xFF:02x}-{moved & (1 << 48) - 1:012x}"
    return m[1] + (text.upper() if uuid == uuid.upper() and any(c.isalpha() for c in uuid) else text.lower())


def _hex_serial(m: re.Match[str], host: str) -> str:
    """An AMD serial printed bare, moved as the 64-bit value it is and printed back in its tool's
    form: amd-smi's ``ASIC_SERIAL`` is ``0x{:016X}`` (its width kept), rocm-smi's ``Unique ID`` is
    Python's ``hex()`` of the uint64 (no leading zeros: ``0x4edfb117a17a07d``)."""
    digits = m[3]
    serial = int(digits, 16)
    moved = _amd_serial(serial, host)
    if "Unique ID" in m[1]:
        text = f"{moved:x}"
    else:
        text = f"{moved & ((1 << 4 * len(digits)) - 1):0{len(digits)}x}"
    return m[1] + m[2] + (text.upper() if digits != digits.lower() else text)


def _board_serial(m: re.Match[str], host: str) -> str:
    value = m[2]
    if not re.search(r"[1-9a-zA-Z]", value):  # '0': no serial
        return m[0]
    moves = _key(host)[28:]
    out = []
    for i, c in enumerate(value):
        k = moves[i % len(moves)] + i
        if c.isdecimal():  # (k - d) mod 10: an involution per position, digits stay digits
            out.append(str((k - int(c)) % 10))
        elif "a" <= c <= "z" or "A" <= c <= "Z":
            base = ord("a") if c.islower() else ord("A")
            out.append(chr(base + (k - (ord(c) - base)) % 26))
        else:
            out.append(c)
    return m[1] + "".join(out)


@lru_cache(maxsize=1 << 16)
def _guid_mask(host: str) -> int:
    return int.from_bytes(hashlib.blake2b(b"sncheck own guid\0" + host.encode(), digest_size=8).digest(), "big")


def _guid(m: re.Match[str], host: str) -> str:
    """An adapter's GUID XORed with 64 bits of the host's name, in its form (case, groups); zeros kept."""
    key, digits = (m[1], m[2]) if m[1] is not None else (m[3], m[4])
    value = int(digits.replace(":", ""), 16)
    if not value:
        return m[0]
    text = f"{value ^ _guid_mask(host):016x}"
    if ":" in digits:
        text = ":".join(text[i:i + 4] for i in range(0, 16, 4))
    return key + (text.upper() if digits != digits.lower() else text)


def _die_id(m: re.Match[str], host: str) -> str:
    groups = m[2].split(" ")
    if not any(int(g, 16) for g in groups):
        return m[0]
    key = _key(host)[8:28]
    moved = [f"{int(g, 16) ^ int.from_bytes(key[4 * i:4 * i + 4], 'big'):08x}" for i, g in enumerate(groups)]
    return m[1] + " ".join(x.upper() if g != g.lower() else x for x, g in zip(moved, groups, strict=True))


# a CSV's identity columns (amd-smi --csv: amdsmi_logger _print_csv_output, csv.DictWriter whose header is
# flatten_dict's keys: list's 'uuid', static's 'asic_serial' and 'product_serial'; rocm-smi --csv: formatCsv,
# 'device,' then the JSON keys, 'Unique ID', 'Serial Number') -> the key each moves under in a keyed line
_CSV_KEYS = {"uuid": "UUID", "asic_serial": "ASIC_SERIAL", "unique id": "Unique ID",
             "product_serial": "PRODUCT_SERIAL", "serial number": "PRODUCT_SERIAL"}
_CSV_CELL = re.compile(r'"(?:[^"]|"")*"|[^,\r\n]*')


def _cells(line: str) -> list[tuple[int, int]]:
    """The spans of a CSV line's cells (a quoted cell, commas and doubled quotes inside, is one)."""
    spans, at = [], 0
    while True:
        m = _CSV_CELL.match(line, at)
        assert m is not None  # (the pattern matches the empty cell)
        spans.append((m.start(), m.end()))
        if m.end() >= len(line) or line[m.end()] != ",":
            return spans
        at = m.end() + 1


def _csv_header(text: str) -> bool:
    """Whether a line of ``text`` is a CSV header naming an identity column (as the tools spell them:
    found by the names, each line that holds one split: linear, where one regex over a 70 kB
    ``nvidia-smi -q`` took longer than the rewrite)."""
    for name in ("uuid", "asic_serial", "product_serial", "Unique ID", "Serial Number"):
        at = text.find(name)
        while at >= 0:
            start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
            line = text[start:end if end >= 0 else len(text)]
            if "," in line and name.lower() in (c.strip().strip('"').lower() for c in line.split(",")):
                return True
            at = text.find(name, at + len(name))
    return False


def _csv_ids(text: str, host: str) -> str:
    """The identity cells of the CSV tables in ``text`` moved as :func:`own_ids` moves them after
    their keys: a header row naming an identity column (:data:`_CSV_KEYS`) keys the rows after
    it that have its number of cells, up to a blank line or another header."""
    lines = text.split("\n")
    keys: dict[int, str] = {}
    width = 0
    for i, line in enumerate(lines):
        spans = _cells(line)
        names = [line[a:b].strip().strip('"').lower() for a, b in spans]
        if any(n in _CSV_KEYS for n in names):
            keys, width = {j: _CSV_KEYS[n] for j, n in enumerate(names) if n in _CSV_KEYS}, len(spans)
            continue
        if not line.strip() or len(spans) != width:
            keys = {} if not line.strip() else keys
            continue
        out = line
        for j in sorted(keys, reverse=True):
            a, b = spans[j]
            head = f"{keys[j]}: "
            out = out[:a] + _keyed(head + line[a:b], host)[len(head):] + out[b:]
        lines[i] = out
    return "\n".join(lines)


def own_ids(text: str, host: str) -> str:
    """``text`` (a rendered or replayed output, or a value read from it) with every device identity
    made ``host``'s own: an NVIDIA GPU UUID's first and last groups XORed with 80 bits of a hash of
    the name; an AMD serial (in amd-smi's UUID, ASIC_SERIAL, rocm-smi's Unique ID) XORed with 64
    bits of another, a board serial moved character by character, an Ascend die id's five groups
    XORed with 160 bits, an InfiniBand adapter's GUIDs with 64 (the keys: the module's docstring). One capture replayed on many hosts (the
    mock, the SSH and Slurm fake tools) then lists other cards on each, as real machines do; within
    a host the map is one-to-one (and its own inverse), so the capture's identities stay distinct.
    Other UUIDs (a fabric's ClusterUUID, MIG-...) and placeholders are kept."""
    if "GPU-" in text:
        first, last = _moves(host)

        def moved(m: re.Match[str]) -> str:
            a, b = f"{int(m[1], 16) ^ first:08x}", f"{int(m[3], 16) ^ last:012x}"
            mid = m[2]
            return f"GPU-{a.upper()}-{mid}-{b.upper()}" if (m[1] + m[3]).isupper() else f"GPU-{a}-{mid}-{b}"

        text = _GPU_UUID.sub(moved, text)
    return _keyed(text, host)


def _keyed(text: str, host: str) -> str:
    """:func:`own_ids`' rewrites of the AMD and Ascend values after their keys, and of the CSV tables'
    identity columns (an NVIDIA UUID carries its own key, ``GPU-``: moved once, before)."""
    if "-0000-1000-80" in text:
        text = _AMD_UUID_KEYED.sub(lambda m: _amd_uuid(m, host), text)
    if "SERIAL" in text or "serial" in text or "Unique ID" in text:
        text = _AMD_SERIAL_KEYED.sub(lambda m: _hex_serial(m, host), text)
    if "Serial" in text or "SERIAL" in text or "serial" in text:
        text = _BOARD_SERIAL_KEYED.sub(lambda m: _board_serial(m, host), text)
    if "ie ID" in text:
        text = _DIE_ID_KEYED.sub(lambda m: _die_id(m, host), text)
    if "GUID" in text or "_guid" in text:
        text = _GUID_KEYED.sub(lambda m: _guid(m, host), text)
    if "," in text and ("-0000-1000-80" in text or "_serial" in text or "Unique ID" in text or "Serial Number" in text) \
            and _csv_header(text):
        text = _csv_ids(text, host)  # (an AMD UUID or a serial's column: not --query-gpu's GPU- uuid column)
    return text


def own_id(ident: str, host: str) -> str:
    """One listed identity (a row's ``ids`` entry: the bare value, no key) made ``host``'s own,
    as :func:`own_ids` moves it in the text it was read from."""
    if AMD_SMI_UUID.fullmatch(ident):
        return own_ids(f"UUID: {ident}", host)[len("UUID: "):]
    if re.fullmatch(r"[0-9a-fA-F]{8}(?: [0-9a-fA-F]{8}){4}", ident):
        return own_ids(f"VDie ID : {ident}", host)[len("VDie ID : "):]
    if re.fullmatch(r"0[xX][0-9a-fA-F]{16}", ident):
        return own_ids(f"Node GUID: {ident}", host)[len("Node GUID: "):]
    return own_ids(ident, host)
