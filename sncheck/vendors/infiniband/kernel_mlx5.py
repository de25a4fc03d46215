"""mlx5 (ConnectX) health reports in the kernel log, read by the ``kernel-log`` view
(:mod:`sncheck.vendors.kernel_log` asks :func:`event` about every line, its time stripped).

Grammar: Linux ``drivers/net/ethernet/mellanox/mlx5/core/health.c`` (read at 3.x, 5.5, 5.15
and 6.x: NVIDIA/NV-Kernels), every line ``mlx5_core BDF: `` (the PCI function's
``dev_err``/``dev_warn``), then, from ``mlx5_core_err``/``_warn``, the function and line,
``FUNC:LINE:(pid N): `` (4.x-6.x; 4.x-5.x builds print the device name first,
``BDF:FUNC:LINE:(pid N): ``; later builds drop ``(pid N)``); 6.x's ``mlx5_log`` (the health
buffer) and ``dev_err`` lines print none.

- ``poll_health``, every 2 s per function:
  - ``Fatal error %u detected`` (4.13+): a fatal sensor (``MLX5_SENSOR_*``): 1 PCI reads
    return all ones (the NIC is gone from the bus), 2 the PCI channel is offline (AER/EEH),
    3 the NIC interface is disabled, 4 a NIC software reset, 5 a firmware syndrome with a
    reset-flow request (RFR); the driver then enters its error state and recovers;
  - ``device's health compromised - reached miss count`` (3.x-4.x: ``device's health
    compromised``): the firmware's health counter did not move in 3 polls (its heartbeat stopped);
- ``print_health_info``, after either (only while the syndrome is not 0): 6.x ``PCI slot is
  unavailable`` (and nothing else) or ``Health issue observed, SYND_TEXT, severity(N) LEVEL:``;
  then ``assert_var[i] 0x%08x`` (5), ``assert_exit_ptr``, ``assert_callra``, ``fw_ver X.Y.Z``,
  6.x ``time %u``, ``hw_id 0x%08x``, 6.x ``rfr %d``, 6.x ``severity %d (LEVEL)``,
  ``irisc_index %d``, ``synd 0x%x: SYND_TEXT`` (``hsynd_str``: firmware internal error, irisc
  not responding, unrecoverable hardware error, firmware CRC error, ICM fetch PCI error, HW
  fatal error, async EQ buffer overrun, EQ error, Invalid EQ referenced (3.x: "refrenced"),
  FFSER error, High temperature (3.x: "temprature"), unrecognized error), ``ext_synd 0x%04x``,
  4.x+ ``raw fw_ver 0x%08x``;
- the recovery (``mlx5_health_try_recover``, ``mlx5_fw_fatal_reporter_err_work``,
  ``mlx5_error_sw_reset``, ``mlx5_handle_bad_state``): ``handling bad device here``,
  ``starting health recovery flow``, then ``health recovery succeeded`` (5.x+), ``health recovery
  failed`` or ``health recovery flow aborted, PCI reads still not working``; ``Driver is in error
  state. Unloading`` (the grace period of devlink's fw_fatal reporter forbade a second recovery).

Events (``source: mlx5``): ``fatal`` (``code``: the sensor, ``sensor`` its name), ``health-compromised``,
``syndrome`` (a health buffer printed with neither line before it: 6.x's fw reporter), each with
what its buffer said: ``synd`` (the number), ``syndrome`` (its text), ``ext_synd``, ``fw_version``,
``fw_severity`` (6.x), ``rfr``, ``pci_unavailable``; and ``recovery``: ``succeeded``, ``failed`` or
``unloaded`` where a recovery line of the same function follows. A recovery line with no such
event before it in the log (its error was read by an earlier run) is an event of its own:
``recovered``, ``recovery-failed``, ``unloaded``. ``bus_id`` is the function's ``dddd:bb:dd``,
``port`` its ``dddd:bb:dd.f``. Failures: every event but ``recovered``.
"""

from __future__ import annotations

import re
from typing import Any

_LINE = re.compile(r"(?:^|\s)mlx5_core (?P<dev>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])(?: [\w.-]+)?: "
                   r"(?:[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]:)?"
                   r"(?:(?P<func>[A-Za-z_]\w*):\d+:(?:\(pid \d+\):)? ?)?(?P<msg>.*)$")
_FATAL = re.compile(r"^Fatal error (?P<n>\d+) detected")
_COMPROMISED = re.compile(r"^device's health compromised")
_OBSERVED = re.compile(r"^Health issue observed, (?P<text>.*?), severity\((?P<n>\d+)\) (?P<level>[A-Z]+):?")
_SYND = re.compile(r"^synd 0x(?P<n>[0-9a-fA-F]+): (?P<text>.*?)\s*$")
_EXT = re.compile(r"^ext_synd 0x(?P<n>[0-9a-fA-F]+)")
_FW = re.compile(r"^fw_ver (?P<v>\d+\.\d+\.\d+)")
_SEVERITY = re.compile(r"^severity (?P<n>\d+) \((?P<level>[A-Z]+)\)")
_RFR = re.compile(r"^rfr (?P<n>\d)")
_BUFFER = re.compile(r"^(?:assert_var\[\d\]|assert_exit_ptr|assert_callra|time \d|hw_id|irisc_index|raw fw_ver) ")
_SUCCEEDED = "health recovery succeeded"
_FAILED = ("health recovery failed", "health recovery flow aborted")
_UNLOADED = "Driver is in error state. Unloading"
SENSORS = {1: "PCI communication error (reads return all ones)", 2: "PCI channel offline", 3: "NIC interface disabled",
           4: "NIC software reset", 5: "firmware syndrome with a reset request (RFR)"}
PATTERN = (r"mlx5_core .*(Fatal error|health compromised|Health issue|PCI slot is unavailable|assert_|fw_ver |time [0-9]|"
           r"hw_id |rfr [0-9]|severity [0-9]|irisc_index|synd 0x|health recovery|error state)")


def event(body: str, open_: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The mlx5 event a line starts, ``{}`` for a line that continues the event of its
    function in ``open_`` (port -> the last event of that function, updated in place), None
    for a line not mlx5 health's."""
    if "mlx5_core" not in body:
        return None
    m = _LINE.search(body[:1024])
    if not m:
        return None
    port, msg = m["dev"].lower(), m["msg"].strip()
    base = {"source": "mlx5", "code": None, "class": None, "bus_id": port[:10], "port": port, "sensor": None,
            "synd": None, "syndrome": None, "ext_synd": None, "fw_version": None, "fw_severity": None, "rfr": None,
            "pci_unavailable": False, "recovery": None}
    last = open_.get(port)
    if f := _FATAL.match(msg):
        n = int(f["n"])
        e = {**base, "class": "fatal", "code": n, "sensor": SENSORS.get(n)}
    elif _COMPROMISED.match(msg):
        e = {**base, "class": "health-compromised"}
    elif msg.startswith(_SUCCEEDED) or msg.startswith(_FAILED) or msg.startswith(_UNLOADED):
        outcome = "succeeded" if msg.startswith(_SUCCEEDED) else "unloaded" if msg.startswith(_UNLOADED) else "failed"
        if last is not None and last["class"] in ("fatal", "health-compromised", "syndrome"):
            if last["recovery"] in (None, "succeeded") or outcome != "succeeded":
                last["recovery"] = outcome  # a failure or an unload is not undone by a later line
            return {}
        e = {**base, "class": {"succeeded": "recovered", "failed": "recovery-failed", "unloaded": "unloaded"}[outcome]}
    else:
        return _buffer(msg, last, base, open_)
    open_[port] = e
    return e


def _buffer(msg: str, last: dict[str, Any] | None, base: dict[str, Any],
            open_: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """A health buffer line: its value on the function's open event (a new ``syndrome`` event
    for a 6.x header or a syndrome line with none open); None for any other line."""
    fields: dict[str, Any] = {}
    if msg.startswith("PCI slot is unavailable"):
        fields["pci_unavailable"] = True
    elif m := _OBSERVED.match(msg):
        fields.update(syndrome=m["text"].strip(), fw_severity=m["level"])
    elif m := _SYND.match(msg):
        fields.update(synd=int(m["n"], 16), syndrome=m["text"].strip())
    elif m := _EXT.match(msg):
        fields["ext_synd"] = f"0x{m['n'].lower()}"
    elif m := _FW.match(msg):
        fields["fw_version"] = m["v"]
    elif m := _SEVERITY.match(msg):
        fields["fw_severity"] = m["level"]
    elif m := _RFR.match(msg):
        fields["rfr"] = int(m["n"])
    elif not _BUFFER.match(msg):
        return None
    if last is None or last["class"] not in ("fatal", "health-compromised", "syndrome"):
        if not ({"syndrome", "synd", "pci_unavailable"} & fields.keys()):
            return {}  # a register line of a buffer whose head was not read: nothing to name
        e = {**base, "class": "syndrome", **fields}  # a paste that starts inside the buffer
        open_[base["port"]] = e
        return e
    last.update(fields)
    return {}


def describe(e: dict[str, Any]) -> str:
    where = f" on {e['port']}" if e.get("port") else ""
    what = {"fatal": f"fatal error {e.get('code')} ({e.get('sensor') or 'unknown sensor'})",
            "health-compromised": "health compromised (firmware heartbeat missed)",
            "syndrome": "health syndrome", "recovered": "health recovery succeeded",
            "recovery-failed": "health recovery failed", "unloaded": "in error state, driver unloaded"}.get(
        str(e.get("class")), str(e.get("class")))
    synd = f", synd 0x{e['synd']:x} {e.get('syndrome') or ''}".rstrip() if isinstance(e.get("synd"), int) else \
        f", {e['syndrome']}" if e.get("syndrome") else ""
    more = (", PCI slot unavailable" if e.get("pci_unavailable") else "") + \
        (f", recovery {e['recovery']}" if e.get("recovery") else "")
    return f"mlx5 NIC {what}{where}{synd}{more}"


def is_fault(e: dict[str, Any]) -> bool:
    return e.get("class") != "recovered"
