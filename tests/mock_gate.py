"""A gate on the mock backend with planted faults: the one helper of the tests that run a
whole playbook (retests and isolation included) and read what it named and did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sncheck.config.inventory import Inventory
from sncheck.config.playbook import Playbook
from sncheck.run.inputs import load_inventory, load_playbook
from sncheck.run.runner import RunOptions, RunResult, execute

ROOT = Path(__file__).resolve().parent.parent
GATE = load_playbook(str(ROOT / "playbooks/pre-upgrade-gate.yaml"))
# where an inventory named by its name is looked for, in this order
INVENTORIES = (ROOT / "fixtures/inventories", ROOT / "tests/data/inventories", ROOT / "tests/data/inventories-unseen")


def inventory(name: str) -> Inventory:
    """The inventory ``name`` of the shipped ones or the tests' (``INVENTORIES``)."""
    for folder in INVENTORIES:
        if (folder / f"{name}.yaml").is_file():
            return load_inventory(folder / f"{name}.yaml")
    raise FileNotFoundError(f"no inventory {name!r} under {', '.join(map(str, INVENTORIES))}")


def mock_gate(tmp_path: Path, inv: str | Inventory, faults: list[str], seed: int = 1, playbook: Playbook = GATE,
              **options: Any) -> RunResult:
    """``playbook`` (the pre-upgrade gate) over ``inv`` (a name: :func:`inventory`) on the
    mock backend with ``faults`` (each a fault plan's list item, as YAML), run under
    ``tmp_path`` (its ``run`` folder); ``options``: more :class:`RunOptions`."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    plan = tmp_path / "faults.yaml"
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    return execute(playbook, inventory(inv) if isinstance(inv, str) else inv,
                   RunOptions(backend="mock", faults=str(plan), seed=seed, out=str(tmp_path / "run"), **options))


def named(res: dict) -> set[tuple[str, str]]:
    """(entity, kind) of each warning or critical finding of results.json ``res``."""
    return {(f["entity"], f["entity_kind"]) for f in res["findings"] if f["severity"] in ("warning", "critical")}


def actions(res: dict) -> dict[str, list[str]]:
    """Each entity's isolation actions in order."""
    out: dict[str, list[str]] = {}
    for step in res["isolation"]:
        out.setdefault(step["entity"], []).append(step["action"])
    return out


def ends(res: dict) -> dict[str, str]:
    """Each entity's last isolation action."""
    return {i["entity"]: i["action"] for i in res["isolation"]}
