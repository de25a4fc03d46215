"""rocm-smi's per-GPU log form: ``--json`` and the ``GPU[N]\\t\\t: metric: value`` lines.

Every ``--show*`` option of ``rocm_smi.py`` reports through ``printLog(device, metricName,
value)``: in text ``GPU[%d]\\t\\t: %s: %s`` (the ``--showmetrics`` section, ``--showallinfo``),
under ``--json`` the same pair into ``{"card%d": {metricName: value}}`` (``formatJson``), the
system's values (``printSysLog``: ``Driver version``, the topology) under ``"system"``, the
whole printed once, as JSON, at the end. So one reader serves both: the metrics the ``rocm-smi``
view reports are read from their ``metricName`` as each ROCm version names it (a name not
listed is kept in ``metrics`` as printed, never guessed at):

- temperature: ``Temperature (Sensor edge) (C)`` (``junction`` where no edge sensor),
  ``temperature_edge (C)`` in ``--showmetrics``;
- power: ``Average Graphics Package Power (W)`` (to ROCm 5.x), ``Current Socket Graphics
  Package Power (W)`` (6.x), ``Current Graphics Package Power (W)``, ``average_socket_power (W)``
  / ``current_socket_power (W)`` (``--showmetrics``); the cap ``Max Graphics Package Power (W)``;
- clocks: ``sclk clock speed:`` / ``mclk clock speed:`` as ``(500Mhz)``, ``current_gfxclk (MHz)``
  / ``current_uclk (MHz)``; ROCm 4.x's ``showCurrentClocks`` (``-a``, ``-c``) prints the current level
  with its clock in one pair, ``sclk clock level: 2 (2100Mhz)`` (rocm_smi_lib-issue77): the clock;
  without a named clock the level sits in the metric name, ``'%s clock level: %s' % (clk_type,
  freq_index)``, ``(%sMhz)`` the value: ``sclk clock level: 1: (2100Mhz)`` (8f9f943, 2020 on), the
  deep-sleep level ``S`` since rocm-6.0.0 (3d40c4b: ``sclk clock level: S: (137Mhz)``, named:
  ``sclk clock level: S (137Mhz)``; harvest 27's MI300X ``-a``);
- use: ``GPU use (%)``, ``average_gfx_activity (%)``; VRAM ``GPU memory use (%)`` or ``GPU Memory
  Allocated (VRAM%)``; fan ``Fan speed (%)``; ``Performance Level``.
- 1.x (ROC-smi ``rocm_smi.py``, 2016-2018: printLog with one string, ``GPU[%d]\\t\\t: `` before it, its
  rules of ``.`` then ``=``): ``Temperature: 81.0c``, ``GPU Clock Level: 1 (991Mhz)``, ``GPU Memory Clock
  Level: 3 (945Mhz)``, ``Fan Level: 124 (48.63)%`` (the 0-255 level, then the speed), ``Average Graphics
  Package Power: 73.68W``, ``Max Graphics Package Power: 250.0W``, ``Current GPU use: 12%``, ``Current
  PowerPlay Level`` / ``Current Performance Level``; 2.x ``Temperature (Sensor edge) (c): 50.0`` (a lower
  case ``c``) and ``Fan Level: 79 (30%)`` (real captures ROCm/ROC-smi#22, #62).

Whole: the JSON document closes (jsonprefix: a cut one keeps what was printed before the cut,
exit 1); the text lines end at ``main``'s `` End of ROCm SMI Log `` spacer (without it: cut).
"""

from __future__ import annotations

import re
from typing import Any

from sncheck.vendors import jsonprefix

_CARD = re.compile(r"^card(\d+)$")
_LOG_LINE = re.compile(r"^GPU\[(\d+)\]\s*:\s*(.+?):\s+(\S.*?)\s*$")  # printLog's 'GPU[%d]\t\t: %s: %s'
_END = "End of ROCm SMI Log"
# main() of ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py from 8f9f943 (2020) to rocm-5.0.2, before the footer:
# 'if RETCODE and not PRINT_JSON: logging.warning(' \t\t One or more commands failed')' under basicConfig's
# '%(levelname)s: %(message)s' (stderr), then exit(RETCODE): a command it ran failed (rsmi_ret_ok set RETCODE) and
# the tool exits non-zero; 007f326 ('Hide Failed Command Warning', rocm-5.1.0 on) made it logging.debug: silent
COMMANDS_FAILED = re.compile(r"^WARNING:\s+One or more commands failed\.?$")


def commands_failed(line: str) -> str | None:
    """The error a rocm-smi output carries when ``line`` is main()'s failed-command warning."""
    if not COMMANDS_FAILED.match(line.strip()):
        return None
    return ("rocm-smi says one or more of its commands failed ('WARNING: One or more commands failed'; it exits "
            "non-zero): a value it was asked for was not read")
# the view's value: the metric names that report it, first found wins
_METRICS: dict[str, tuple[str, ...]] = {
    "temp_C": ("Temperature (Sensor edge) (C)", "temperature_edge (C)", "Temperature (Sensor junction) (C)",
               "Temperature (Sensor edge) (c)", "Temperature (Sensor junction) (c)", "Temperature"),
    "power_W": ("Average Graphics Package Power (W)", "Current Socket Graphics Package Power (W)",
                "Current Graphics Package Power (W)", "average_socket_power (W)", "current_socket_power (W)",
                "Average Graphics Package Power"),
    "pwrcap_W": ("Max Graphics Package Power (W)", "Max Graphics Package Power"),
    "sclk_MHz": ("sclk clock speed:", "current_gfxclk (MHz)"),
    "mclk_MHz": ("mclk clock speed:", "current_uclk (MHz)"),
    "gpu_pct": ("GPU use (%)", "average_gfx_activity (%)", "Current GPU use"),
    "vram_pct": ("GPU memory use (%)", "GPU Memory Allocated (VRAM%)"),
    "fan_pct": ("Fan speed (%)",),
    "perf": ("Performance Level", "Current Performance Level", "Current PowerPlay Level"),
}
# 1.x's 'Temperature: %sc' prints the unit in lower case
_NUMBER = re.compile(r"^\(?(-?\d+(?:\.\d+)?)\s*(?:Mhz|MHz|W|C|c|%)?\)?$")
# a current level with its clock in one pair: ROCm 4.x showCurrentClocks printLog(device, '%s clock level' % clk,
# '%s (%sMhz)' % (level, freq)); 1.x (ROC-smi rocm_smi.py) 'GPU Clock Level: ' + level + ' (' + freq + ')' and
# 'GPU Memory Clock Level: ...'; without a named clock (-a) the level ends the metric name, '%s clock level: %s' %
# (clk_type, freq_index) with '(%sMhz)', so the line's first ': ' leaves 'L: (FREQ)' as the value; freq_index 'S'
# is the deep-sleep level (has_deep_sleep, rocm-6.0.0 on)
_LEVEL_CLOCK = {"sclk_MHz": ("sclk clock level", "GPU Clock Level"),
                "mclk_MHz": ("mclk clock level", "GPU Memory Clock Level")}
_LEVEL_VALUE = re.compile(r"^(?:\d+|S):?\s+\((\d+(?:\.\d+)?)\s*Mhz\)$", re.I)
# the fan's level (0-255) with its speed: 1.x 'Fan Level: ' + level + ' (' + speed + ')%', 2.x 'Fan Level: L (S%)'
_FAN_LEVEL = re.compile(r"^\d+\s+\((\d+(?:\.\d+)?)%?\)%?$")


def is_log_form(text: str) -> bool:
    """Whether ``text`` holds rocm-smi's JSON (a ``cardN`` key) or printLog lines."""
    return bool(re.search(r'"card\d+"\s*:', text) or re.search(r"^\s*GPU\[\d+\]\s*:\s*\S.*?:\s+\S", text, re.M))


def _value(text: Any) -> Any:
    if not isinstance(text, str) or text in ("N/A", ""):
        return None
    m = _NUMBER.match(text.strip())
    if not m:
        return text
    return float(m.group(1)) if "." in m.group(1) else int(m.group(1))


def _gpu(device: int, metrics: dict[str, Any]) -> dict[str, Any]:
    g: dict[str, Any] = {"device": device, "name": metrics.get("Card series") or metrics.get("Device Name")}
    for key, names in _METRICS.items():
        found = next((metrics[n] for n in names if n in metrics), None)
        g[key] = _value(found)
        level = next((metrics[n] for n in _LEVEL_CLOCK.get(key, ()) if n in metrics), None)  # --json: any JSON type
        if g[key] is None and isinstance(level, str) and (lv := _LEVEL_VALUE.match(level)):
            g[key] = _value(lv.group(1))
    fan = metrics.get("Fan Level")
    if g["fan_pct"] is None and isinstance(fan, str) and (fl := _FAN_LEVEL.match(fan.strip())):
        g["fan_pct"] = _value(fl.group(1))
    g["metrics"] = metrics
    return g


def parse_log_form(text: str) -> dict[str, Any]:
    """The rocm-smi view's values from ``--json`` or printLog lines (see the module)."""
    errors: list[str] = []
    start = text.find("{")
    if re.search(r'"card\d+"\s*:', text) and start >= 0:
        try:
            doc, whole = jsonprefix.load(text[start:])
        except ValueError as e:
            return {"tool": "rocm-smi", "gpus": [], "warnings": [], "errors": [f"rocm-smi --json: {e}"]}
        if not whole:
            errors.append("the JSON document is cut short (it does not close): the values before the cut are kept")
        cards = doc if isinstance(doc, dict) else {}
        gpus = [_gpu(int(m.group(1)), v) for k, v in cards.items()
                if (m := _CARD.match(k)) and isinstance(v, dict)]
        # formatJson writes each card's metrics as an object: a card of another value read nothing
        errors += [f"{k}: not an object of metrics ({type(v).__name__}): nothing of it read"
                   for k, v in cards.items() if _CARD.match(k) and not isinstance(v, dict)]
        # formatJson makes a card's object for the first metric printLog gives it: an empty one was emptied
        errors += [f"{k}: no metric in its object: nothing of it read" for k, v in cards.items()
                   if _CARD.match(k) and v == {}]
        if not gpus and not errors:
            errors.append("no card's metrics in the JSON document: no GPU was read")
        system = cards.get("system")
        system = system if isinstance(system, dict) else {}
        return {"tool": "rocm-smi", "driver_version": system.get("Driver version"), "gpus": gpus, "warnings": [],
                "errors": errors}
    per: dict[int, dict[str, Any]] = {}
    ended = False
    for raw in text.splitlines():
        body = raw.strip()
        if _END in body:
            ended = True
        elif said := commands_failed(body):
            errors.append(said)
        elif m := _LOG_LINE.match(body):
            per.setdefault(int(m.group(1)), {})[m.group(2)] = m.group(3)
    if not ended:
        errors.append(f"no '{_END}' line: output cut short")
    return {"tool": "rocm-smi", "driver_version": None, "gpus": [_gpu(d, v) for d, v in sorted(per.items())],
            "warnings": [], "errors": errors}
