"""Every recorded input (inventories, fault plans, playbooks, rules under fixtures/, tests/data/
and the package) loaded to plain data, for tests/test_schema_inputs.py: the schemas of issue 27
item 5 must load each to the same objects, and refuse the same files at the same lines.

``python3 -m tests.schema_snapshot > tests/data/schema/inputs.json`` writes the reference; it
was made with the hand-written loaders (main at 03d50c4) before the schemas replaced them."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import re
from pathlib import Path
from typing import Any

from sncheck.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
INVENTORIES = sorted([*(ROOT / "fixtures/inventories").glob("*.yaml"), *(ROOT / "tests/data/inventories").glob("*.yaml")])
FAULTS = sorted((ROOT / "fixtures/faults").glob("*.yaml"))
RULES = sorted((ROOT / "fixtures/rules").glob("*.yaml"))
PLAYBOOKS = sorted((ROOT / "playbooks").glob("*.yaml"))
FAULT_INVENTORIES = ("demo-2sn", "hgx-2su", "nvl72-2rack", "nvl72-rack", "mi300x-pod", "cm384")
_LINE = re.compile(r":(\d+): ")


def plain(obj: Any) -> Any:
    """Plain JSON data of a loaded object: dataclass fields that take part in equality,
    containers, enums by value, floats exactly (repr)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.compare}
    if isinstance(obj, enum.Enum):
        return plain(obj.value)
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(x) for x in obj]
    if isinstance(obj, float):
        return repr(obj) if math.isfinite(obj) else str(obj)
    if isinstance(obj, str):  # where a rule was read: the same in every checkout
        return obj.replace(str(ROOT), "<root>")
    return obj


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def refusal(e: ConfigError) -> dict[str, Any]:
    """A refusal as compared: which line of the file it names (the wording may change)."""
    m = _LINE.search(str(e))
    return {"refused_at_line": int(m[1]) if m else None}


def snapshot() -> dict[str, Any]:
    from sncheck.health.rules import load_rules
    from sncheck.run.inputs import load_faults, load_inventory, load_playbook
    from sncheck.topology import Topology

    out: dict[str, Any] = {"inventories": {}, "faults": {}, "rules": {}, "playbooks": {}}
    for p in INVENTORIES:
        inv = load_inventory(p)
        out["inventories"][_rel(p)] = {**plain(inv), "source": None, "platforms": sorted(inv.platforms)}
    topos = {n: Topology(load_inventory(ROOT / "fixtures/inventories" / f"{n}.yaml")) for n in FAULT_INVENTORIES}
    for p in FAULTS:
        for n, topo in topos.items():
            try:
                plan = plain(load_faults(p, topo))
            except ConfigError as e:
                plan = refusal(e)
            out["faults"][f"{_rel(p)} on {n}"] = plan
    for p in RULES:
        out["rules"][_rel(p)] = {**plain(load_rules(str(p))), "source": None, "path": None}
    for p in PLAYBOOKS:
        out["playbooks"][_rel(p)] = {**plain(load_playbook(str(p))), "source": None}
    return out


if __name__ == "__main__":
    print(json.dumps(snapshot(), indent=1, sort_keys=True))
