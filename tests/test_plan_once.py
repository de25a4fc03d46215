"""A run builds its connectivity plan once (issue 31: a fleet's plan is 50 M card pairs, 1.8 s
to build at 131,072 cards): the faults' check at resolve builds it for the playbook's options,
and the connectivity layer runs that plan, let go of before the layer is judged (the run's
memory peaks in judging). A run scoped by --targets runs a plan of its own (the check asks of
the whole cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sncheck.config.inventory import Inventory
from sncheck.config.playbook import single_layer
from sncheck.layers import base, connectivity
from sncheck.run.inputs import load_inventory_text
from sncheck.run.runner import Run, RunOptions


def _small() -> Inventory:
    return load_inventory_text("name: small\ndesign:\n  scale_up: {bandwidth: 450 GB/s, latency: 3 us}\n"
                               "supernodes:\n  - {name: sn0, hosts: 'h[1-3]', cards_per_host: 4}\n"
                               "backend: {type: mock}\n")


@pytest.fixture
def builds(monkeypatch) -> list:
    """Every connectivity plan built, and the plan each judging of a layer could still reach."""
    made: list = []
    real = connectivity.connectivity_plan
    monkeypatch.setattr(connectivity, "connectivity_plan", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    detect = base.LayerContext.detect

    def judged(ctx, layer):
        made.append(("judged", layer, ctx.plan))
        return detect(ctx, layer)

    monkeypatch.setattr(base.LayerContext, "detect", judged)
    return made


def _run(tmp_path: Path, targets: tuple[str, ...] = ()):
    faults = tmp_path / "faults.yaml"   # a link fault: the check asks the layers' plans
    faults.write_text('faults:\n  - {type: degraded_link, target: "h1/gpu0<->h2/gpu0", factor: 0.3}\n')
    return Run(single_layer("connectivity"), _small(),
               RunOptions(backend="mock", faults=str(faults), out=str(tmp_path / "run"), targets=targets)).execute()


def test_the_faults_check_and_the_layer_share_one_plan(tmp_path, builds):
    result = _run(tmp_path)
    plans = [b for b in builds if not isinstance(b, tuple)]
    assert len(plans) == 1                                     # built once, for the check and the layer
    assert result.results["layers"][0]["summary"]["pairs"] == plans[0].pair_count
    assert [b for b in builds if isinstance(b, tuple)] == [("judged", "connectivity", None)]   # not held in judging
    assert "h1/gpu0<->h2/gpu0" in {f.entity for f in result.findings}


def test_a_scoped_run_plans_its_own_pairs(tmp_path, builds):
    result = _run(tmp_path, targets=("h3",))
    plans = [b for b in builds if not isinstance(b, tuple)]
    assert len(plans) == 2                                      # the whole cluster's for the check, then the layer's
    pairs = result.results["layers"][0]["summary"]["pairs"]
    assert pairs < plans[0].pair_count and pairs == sum(
        1 for r in plans[1].rounds for p in r.pairs if p[0].startswith("h3/") or p[1].startswith("h3/"))


def test_a_plan_is_not_held_through_an_earlier_layer(tmp_path, builds):
    """Connectivity after stress: its plan is built again when it runs, not held through the
    stress layer's run and judging."""
    from sncheck.config.playbook import LayerSpec, Playbook

    faults = tmp_path / "faults.yaml"
    faults.write_text('faults:\n  - {type: degraded_link, target: "h1/gpu0<->h2/gpu0", factor: 0.3}\n')
    book = Playbook("late", (LayerSpec("stress", {"max_bytes": 1 << 20}), LayerSpec("connectivity", {})), "critical")
    Run(book, _small(), RunOptions(backend="mock", faults=str(faults), out=str(tmp_path / "run"))).execute()
    assert len([b for b in builds if not isinstance(b, tuple)]) == 2
    assert [(layer, plan) for _, layer, plan in (b for b in builds if isinstance(b, tuple))] == \
        [("stress", None), ("connectivity", None)]
