"""The job file as one Job dataclass, and a worker that imports nothing of the control side."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import sncheck.worker
from sncheck.worker.job import JOB_SCHEMA, Job

REPO = Path(__file__).resolve().parents[1]


def test_no_worker_module_loads_the_control_side() -> None:
    """The worker runs on the hosts: importing any of its modules loads no inventory, no YAML
    loading, no fault plan and no vendor registry (sncheck.config.*, sncheck.vendors, yaml)."""
    names = sorted(m.name for m in pkgutil.iter_modules(sncheck.worker.__path__, "sncheck.worker."))
    assert "sncheck.worker.torchdist" in names and "sncheck.worker.job" in names
    code = ("import importlib, json, sys\n"
            f"for name in {names!r}:\n"
            "    importlib.import_module(name)\n"
            "out = sorted(m for m in sys.modules if m == 'yaml' or m.startswith(('yaml.', 'sncheck.config',\n"
            "             'sncheck.vendors', 'sncheck.topology', 'sncheck.launch', 'sncheck.backends')))\n"
            "print(json.dumps(out))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [], f"the worker loaded control-side modules: {r.stdout}"


def test_the_check_sees_a_control_side_import() -> None:
    """The sys.modules check above can fail: importing a control module does show."""
    r = subprocess.run([sys.executable, "-c", "import sys, sncheck.launch.job; "
                        "print(int('sncheck.config.faultplan' in sys.modules and 'yaml' in sys.modules))"],
                       capture_output=True, text=True, timeout=300, cwd=REPO, env={"PYTHONPATH": str(REPO)})
    assert r.stdout.strip() == "1", r.stderr


def test_a_job_round_trips_and_states_its_defaults_once(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"layer": "p2p", "cards": ["h/gpu0", "h/gpu1"]}))
    job = Job.load(path)
    assert (job.seed, job.op_timeout_s, job.faults, job.plan, job.serialize_pairs) == (0, 60.0, (), {}, False)
    d = job.to_dict()
    assert next(iter(d)) == "schema" and d["schema"] == JOB_SCHEMA and d["cards"] == ["h/gpu0", "h/gpu1"]
    assert Job.from_dict(json.loads(job.to_json())) == job
    # null is the default too, as an older launcher wrote it
    assert Job.from_dict({"layer": "p2p", "cards": [], "faults": None, "plan": None}).faults == ()


@pytest.mark.parametrize("data, message", [
    ({"layer": "p2p", "cards": [], "fautls": []}, "job field(s) 'fautls' unknown"),
    ({"layer": "stres", "cards": []}, "unknown layer 'stres'"),
    ({"schema": "sncheck.job/2", "layer": "p2p", "cards": []}, "job schema 'sncheck.job/2'"),
    ({"layer": "p2p"}, "the job has no 'cards'"),
    ({"layer": "p2p", "cards": "h/gpu0"}, "job cards must be a list"),
    ([], "a job is a JSON object"),
])
def test_a_bad_job_is_refused_naming_what(data, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Job.from_dict(data)


def test_the_launcher_sends_each_fault_with_its_defaults() -> None:
    """The worker knows no fault defaults: a slow_card with no factor goes out with the plan's 0.6."""
    from sncheck.backends.local import LocalBackend
    from sncheck.config.faultplan import FAULT_TYPES, Fault, FaultPlan
    from sncheck.config.inventory import local_inventory
    from sncheck.launch.job import build_job
    from sncheck.topology import Topology
    from sncheck.worker.faults import FaultActor

    topo = Topology(local_inventory(2))
    plan = FaultPlan((Fault("slow_card", "localhost/gpu0"), Fault("jittery_card", "localhost/gpu1", factor=4.0)))
    job = build_job(LocalBackend(topo, plan), "p2p", topo.card_ids, {})
    by_type = {f["type"]: f for f in job.faults}
    assert by_type["slow_card"]["factor"] == FAULT_TYPES["slow_card"].params["factor"] == 0.6
    assert by_type["jittery_card"] == {"type": "jittery_card", "target": "localhost/gpu1", "factor": 4.0,
                                       "probability": FAULT_TYPES["jittery_card"].params["probability"]}
    assert FaultActor(list(job.faults), "localhost/gpu0", 0).slow == 0.6
    # a fault without its parameter is the launcher's bug, refused rather than guessed
    with pytest.raises(ValueError, match="slow_card fault on h/gpu0 has no factor"):
        FaultActor([{"type": "slow_card", "target": "h/gpu0"}], "h/gpu0", 0)


def test_every_probe_fault_type_is_one_the_worker_acts_out() -> None:
    """A new probe fault type the worker does not act out would be accepted by the local backend
    and then silently left out of its jobs. The worker keeps its own list (it imports nothing
    of config/): the plan's TORCH_PROBE_FAULTS is exactly it."""
    from sncheck.config.faultplan import ACTED_BY, PROBE_FAULTS, TORCH_PROBE_FAULTS
    from sncheck.worker.faults import ACTED_TYPES

    assert set(PROBE_FAULTS) <= set(ACTED_TYPES) and set(TORCH_PROBE_FAULTS) == set(ACTED_TYPES)
    assert set(ACTED_BY["local"]) <= set(ACTED_TYPES)
