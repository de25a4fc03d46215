"""The torch probe's device and dist backend per vendor plug-in: cuda+nccl (NVIDIA, AMD),
npu+hccl through torch_npu (Ascend). torch_npu cannot be installed here, so the choice is
tested with a stand-in torch and importer, and a missing torch_npu is tested for real:
one line and exit 3 from the worker, the local backend and the CLI; a not-run row from
the SSH backend's readiness check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.run.inputs import load_inventory
from sncheck.vendors import registry
from sncheck.worker.device import Device, DeviceUnavailableError, choose

REPO = Path(__file__).resolve().parents[1]
INV = REPO / "fixtures" / "inventories"


class _Accel:
    def __init__(self, available: bool) -> None:
        self.available = available

    def is_available(self) -> bool:
        return self.available


def _torch(cuda: bool = False, npu: bool | None = None):
    """A stand-in for the torch module: what choose() reads of it."""
    t = types.SimpleNamespace(__version__="2.9.0", cuda=_Accel(cuda), device=lambda s: f"device({s})")
    if npu is not None:
        t.npu = _Accel(npu)  # torch_npu registers torch.npu when imported
    return t


def _importer(ok: bool):
    def imp(name: str):
        if not ok:
            raise ModuleNotFoundError(f"No module named '{name}'")
        return types.ModuleType(name)
    return imp


def test_vendor_pairs_are_declared_by_the_plug_ins() -> None:
    v = registry.vendors()
    assert (v["nvidia"].torch_device, v["nvidia"].dist_backend) == ("cuda", "nccl")
    assert (v["amd"].torch_device, v["amd"].dist_backend) == ("cuda", "nccl")
    assert (v["ascend"].torch_device, v["ascend"].dist_backend) == ("npu", "hccl")
    cm = load_inventory(INV / "cm384.yaml")
    assert registry.torch_device(cm, list(cm.hosts)[:2]) == "npu"
    rack = load_inventory(INV / "nvl72-rack.yaml")
    assert registry.torch_device(rack, list(rack.hosts)) == "cuda"
    demo = load_inventory(INV / "demo-2sn.yaml")  # no platform: NVIDIA's default
    assert registry.torch_device(demo, list(demo.hosts)) == "cuda"


def test_choice_of_device_and_backend() -> None:
    yes, no = _importer(True), _importer(False)
    # explicit gloo is the CPU whatever the vendor or the hardware
    assert choose("gloo", "npu", _torch(cuda=True, npu=True), no) == Device("gloo", "cpu")
    assert choose("nccl", None, _torch(), no) == Device("nccl", "cuda")
    # nothing named: CUDA where it is, else gloo (NVIDIA and AMD, as before)
    assert choose(None, "cuda", _torch(cuda=True), no) == Device("nccl", "cuda")
    assert choose(None, None, _torch(cuda=False), no) == Device("gloo", "cpu")
    # Ascend: the vendor's npu, or hccl named: npu + hccl through torch_npu
    dev = choose(None, "npu", _torch(npu=True), yes)
    assert dev == Device("hccl", "npu") and dev.accelerated
    assert dev.torch_device(_torch(npu=True), 3) == "device(npu:3)"
    assert choose("hccl", None, _torch(npu=True), yes) == Device("hccl", "npu")
    assert Device("gloo", "cpu").torch_device(_torch(), 3) == "device(cpu)"


def test_npu_without_torch_npu_never_falls_back_to_the_cpu() -> None:
    with pytest.raises(DeviceUnavailableError) as e:
        choose(None, "npu", _torch(cuda=True), _importer(False))
    msg = str(e.value)
    assert "hccl backend (npu devices) needs torch_npu" in msg and "No module named 'torch_npu'" in msg
    assert "torch 2.9.0" in msg and "--dist-backend gloo" in msg and "\n" not in msg
    with pytest.raises(DeviceUnavailableError, match="torch_npu is installed but torch sees no npu device"):
        choose("hccl", None, _torch(npu=False), _importer(True))
    with pytest.raises(DeviceUnavailableError, match="unknown dist_backend 'mpi'"):
        choose("mpi", None, _torch(), _importer(True))


def test_the_worker_says_it_in_one_line_and_exits_3(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    if subprocess.run([sys.executable, "-c", "import torch_npu"], capture_output=True).returncode == 0:
        pytest.skip("torch_npu is installed here")
    job = {"schema": "sncheck.job/1", "layer": "p2p", "cards": ["localhost/gpu0"], "plan": {"rounds": []},
           "dist_backend": None, "torch_device": "npu", "supernode_of_host": {"localhost": "local"}}
    (tmp_path / "job.json").write_text(json.dumps(job))
    env = {**os.environ, "PYTHONPATH": str(REPO), "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    r = subprocess.run([sys.executable, "-m", "sncheck.worker.torchdist", "--job", str(tmp_path / "job.json"),
                        "--out", str(tmp_path / "out.jsonl")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 3, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("DeviceUnavailableError: the hccl backend (npu devices) needs "
                                                   "torch_npu"), r.stderr


def test_local_backend_with_hccl_and_no_torch_npu_exits_3_in_one_line(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("torch_npu") is not None:
        pytest.skip("torch_npu is installed here")
    result = CliRunner().invoke(main, ["connectivity", "--backend", "local", "--dist-backend", "hccl",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 3, result.output
    out = result.output.strip().splitlines()
    assert out == ["sncheck: error: dist_backend hccl needs torch_npu, which this Python cannot import; install "
                   "it (Ascend: the torch_npu build matching torch) or use --dist-backend gloo"], result.output


@pytest.mark.sshd
def test_ssh_torch_probe_on_ascend_hosts_checks_for_torch_npu(sshd_cluster, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from test_ssh_backend import install_python

    from sncheck.backends.ssh import SshBackend
    from sncheck.launch.job import build_job, cards_of_hosts
    from sncheck.topology import Topology

    cluster = sshd_cluster(2, ["cm001", "cm002"])
    for h in cluster:
        install_python(h)
    inv = tmp_path / "inv.yaml"
    hosts = "\n".join(f"  {h.name}: {{address: {h.address}, port: {h.port}}}" for h in cluster)
    inv.write_text("name: cm-ssh\nplatform: ascend-cm384\nsupernodes:\n  - {name: sp0, hosts: \"cm[001-002]\"}\n"
                   f"backend: {{type: ssh}}\nhosts:\n{hosts}\n")
    topo = Topology(load_inventory(inv))
    backend = SshBackend(topo, known_hosts=str(cluster.known_hosts), ssh_config=str(cluster.ssh_config))
    rows: list[dict] = []
    try:
        job = build_job(backend, "p2p", cards_of_hosts(topo, ["cm001", "cm002"]), {})
        assert job.torch_device == "npu"
        ready = backend._torch_ready(["cm001", "cm002"], "connectivity", rows.append)
    finally:
        backend.close()
    assert ready == []
    assert [(r["entity"], r["status"]) for r in rows] == [("cm001", "error"), ("cm002", "error")]
    assert all("cannot import torch_npu" in r["message"] for r in rows), rows
    # on CPU (gloo) the Ascend hosts need no torch_npu
    gloo = SshBackend(topo, known_hosts=str(cluster.known_hosts), ssh_config=str(cluster.ssh_config),
                      dist_backend="gloo")
    rows = []
    try:
        assert gloo._torch_ready(["cm001", "cm002"], "connectivity", rows.append) == ["cm001", "cm002"]
    finally:
        gloo.close()
