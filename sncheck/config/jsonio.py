"""JSON input files (baselines, golden curves, run results): read with a size cap and
validated against typed schemas (pydantic), so a bad file is one line naming the file,
the line (for JSON syntax) or the field (for a wrong value), before anything runs.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sncheck.errors import ConfigError
from sncheck.config.fileio import LIMITS, read_input
from sncheck.config.units import BANDWIDTH_GBPS, LATENCY_US
from sncheck.config.yamlio import is_unicode, decode_text

MAX_JSON_BYTES = LIMITS["json"]  # a baseline of 10^5 cards is ~10 MB


class KeyGivenTwice(ValueError):
    """An object gives a key twice: no tool prints that, and json keeps the last silently (a
    rocm-smi document with 'card0' twice lost a card, exit 0): two outputs spliced, or an edited
    one. A ValueError, not a ``json.JSONDecodeError``: a reader's fallback for text that is not
    JSON (or is cut) must not take it for that."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key {key!r} is given twice in one object: two outputs spliced, or an edited one")


def once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose every key is given once (:class:`KeyGivenTwice`): the ``object_pairs_hook``
    of every JSON reader here (a decoder of its own, the watcher's, passes it too)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise KeyGivenTwice(key)
        out[key] = value
    return out


class NotFinite(ValueError):
    """A JSON number that is no finite number: ``1e999`` (json reads it as infinity), ``NaN``,
    ``Infinity``. No tool measures one (printf of a double past its range writes ``inf``, which
    is no JSON): an edited or corrupted document, refused naming the field it stands in."""

    def __init__(self, where: str, value: float) -> None:
        self.where = where
        word = "NaN" if math.isnan(value) else "infinite (1e999 or Infinity)"
        super().__init__(f"{where or 'the document'}: {word}, no finite number: no measurement")


def all_finite(doc: Any, where: str = "") -> Any:
    """``doc`` when every number in it is finite, else :class:`NotFinite` naming the first field
    that is not (``coll_perf.coll_busbw_gbs``, ``gpus[0].power``): every JSON reader here passes
    what it loaded through this."""
    if isinstance(doc, float) and not math.isfinite(doc):
        raise NotFinite(where, doc)
    if isinstance(doc, dict):
        for key, value in doc.items():
            all_finite(value, f"{where}.{key}" if where else str(key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            all_finite(value, f"{where}[{i}]")
    return doc


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")


def read_json(path: str | Path, what: str, limit: int | None = None, kind: str = "json") -> Any:
    """Parse a JSON file: capped in size (``kind``'s limit, or ``limit``), text only,
    NaN/Infinity, nesting past the interpreter's depth, integers of more digits than it
    converts and an object giving a key twice (:class:`KeyGivenTwice`: json keeps the last, so a
    results.json ending ``"findings": [], "verdict": "pass"`` after its own read as a passing run;
    hostile round 21) all refused, errors with file:line. Every JSON file sncheck is given is read here."""
    p = Path(path)
    text = decode_text(read_input(p, kind, what, limit), str(p), what)
    try:
        data = all_finite(json.loads(text, parse_constant=_no_constant, object_pairs_hook=once))
        if "\\u" in text.lower() and not is_unicode(json.dumps(data, ensure_ascii=False)):
            raise ValueError("a string holds a lone surrogate (\\ud800-\\udfff escape): not valid Unicode")
        return data
    except json.JSONDecodeError as e:
        raise ConfigError(f"{what} is not valid JSON: {e.msg} (column {e.colno})", f"{p}:{e.lineno}") from e
    except ValueError as e:  # NaN, Infinity, 1e999, an integer past sys.get_int_max_str_digits()
        why = (f"holds an integer of more than {sys.get_int_max_str_digits()} digits"
               if "integer string conversion" in str(e) else str(e))
        raise ConfigError(f"{what}: {why}", str(p)) from e
    except RecursionError as e:
        raise ConfigError(f"{what} is nested too deeply", str(p)) from e


def validate(model: type[BaseModel], data: Any, path: str | Path, what: str) -> BaseModel:
    """``model`` over ``data``; the first error names the file and the field."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
        if err["type"] == "value_error":  # our own check: the message says it all
            raise ConfigError(f"{what}: field {loc}: {err['msg'].removeprefix('Value error, ')}",
                              str(path)) from e
        shown = err.get("input")
        shown = "a list" if isinstance(shown, list) else "a mapping" if isinstance(shown, dict) else repr(shown)
        if len(shown) > 60:
            shown = shown[:60] + "..."
        raise ConfigError(f"{what}: field {loc}: {err['msg']} (got {shown})", str(path)) from e


def finite(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)




class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class GoldenBand(_Open):
    """Relative to the reference loss: below 1, for a band of 1 (100%) or more holds a loss of 0 (a
    band of 100 held every loss up to 101 times the reference: a diverged model passed; hostile r15)."""
    step_rel: float = Field(0.05, ge=0, lt=1, allow_inf_nan=False)
    final_rel: float = Field(0.03, ge=0, lt=1, allow_inf_nan=False)


class GoldenCurve(_Open):
    """``sncheck.golden/1``: a known-good loss curve and its band."""

    schema_: str = Field(alias="schema", pattern=r"^sncheck\.golden/1$")
    name: str | None = Field(None, max_length=4096)
    loss: list[float] = Field(min_length=1, max_length=1_000_000)
    band: GoldenBand = GoldenBand()
    step_time_s: float | None = Field(None, gt=0, allow_inf_nan=False)
    comm_share: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)

    @field_validator("loss")
    @classmethod
    def _loss_positive(cls, loss: list[float]) -> list[float]:
        for i, v in enumerate(loss):
            if not (math.isfinite(v) and v > 0):  # the band divides by the reference loss
                raise ValueError(f"loss[{i}] must be a finite positive number, got {v!r}")
        return loss


class BaselineMetric(_Open):
    tier: dict[str, float] = Field(default_factory=dict)
    card: dict[str, dict[str, float]] = Field(default_factory=dict)
    unit: str | None = None


class Baseline(_Open):
    """``sncheck.baseline/1``: per-tier and per-card values from known-good runs."""

    schema_: str = Field(alias="schema", pattern=r"^sncheck\.baseline/1$")
    name: str | None = None
    inventory: str | None = None  # the inventory its runs measured (absent: made before it was said)
    metrics: dict[str, BaselineMetric]

    @field_validator("metrics")
    @classmethod
    def _values_positive(cls, metrics: dict[str, BaselineMetric]) -> dict[str, BaselineMetric]:
        for m, spec in metrics.items():
            if m in _PHYSICAL and spec.unit not in (None, _PHYSICAL[m][1]):  # its values are read in sncheck's unit
                raise ValueError(f"{m}.unit is {spec.unit!r}; sncheck's baselines hold {m} in {_PHYSICAL[m][1]}")
            for t, v in spec.tier.items():
                _positive(v, f"{m}.tier.{t}", m)
            for t, cards in spec.card.items():
                for c, v in cards.items():
                    _positive(v, f"{m}.card.{t}.{c}", m)
        return metrics


# A baseline's bandwidth and latency are a link's, held to what any link does as a design value is
# (config.units): a baseline of 1e-300 GB/s made every pair thousands of times its baseline, and a card
# slowed to 0.85 passed the baseline rule, exit 0 (hostile round 23, H23-04).
_PHYSICAL = {"p2p_bandwidth": (BANDWIDTH_GBPS, "GB/s"), "p2p_latency": (LATENCY_US, "us")}


def _positive(v: float, where: str, metric: str) -> None:
    if not (math.isfinite(v) and v > 0):  # a ratio to the baseline divides by it
        raise ValueError(f"{where} must be a finite positive number, got {v!r}")
    if metric in _PHYSICAL:
        (lo, hi), unit = _PHYSICAL[metric]
        if not lo <= v <= hi:
            raise ValueError(f"{where} is {v:g} {unit}, outside what any link does ({lo:g} to {hi:g} {unit}): "
                             "no known-good run measured it")
