"""Command builders of sncheck.launch.commands: exact argv, and safe quoting through build_command."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from sncheck.launch import commands as launch
from sncheck.launch.commands import LaunchPart
from sncheck.transport import build_command
from sncheck.vendors.nccltests import tool as nccl_tool

NASTY = "x$(touch /tmp/sncheck-pwned);`id`|&>'\"*"


def roundtrip(argv: list[str]) -> list[str]:
    return shlex.split(build_command(argv))


def test_torchrun_static_rendezvous_line() -> None:
    argv = launch.torchrun_argv(3, 4, 1, "127.0.1.1:29731", launch.torch_probe_args("/t/job.json", "/t/out"),
                                python="/opt/py/bin/python3")
    assert argv == ["/opt/py/bin/python3", "-m", "torch.distributed.run", "--nnodes", "3",
                    "--nproc-per-node", "4", "--node-rank", "1", "--rdzv-backend", "static",
                    "--rdzv-endpoint", "127.0.1.1:29731", "--max-restarts", "0",
                    "-m", "sncheck.worker.torchdist", "--job", "/t/job.json", "--out", "/t/out"]


@pytest.mark.parametrize(("args", "match"), [((2, 4, 2), "node_rank=2"), ((0, 1, 0), "nnodes=0"),
                                             ((2, 0, 0), "nproc_per_node=0")])
def test_torchrun_refuses_bad_geometry(args: tuple[int, int, int], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        launch.torchrun_argv(*args, "h:1", [])


def test_endpoint_brackets_ipv6() -> None:
    assert launch.format_endpoint("10.0.0.1", 29500) == "10.0.0.1:29500"
    assert launch.format_endpoint("fd00::1", 29500) == "[fd00::1]:29500"


def test_nccl_tests_line_has_validation_on() -> None:
    assert nccl_tool.argv("all_reduce", 8, 1 << 30) == [
        "all_reduce_perf", "-b", "8", "-e", "1073741824", "-f", "2", "-g", "1", "-c", "1"]
    argv = nccl_tool.argv("all_to_all", 1024, 4096, step_factor=4, iters=5, warmup=2,
                                  directory="/opt/nccl-tests/build")
    assert argv == ["/opt/nccl-tests/build/alltoall_perf", "-b", "1024", "-e", "4096", "-f", "4",
                    "-g", "1", "-c", "1", "-n", "5", "-w", "2"]
    assert nccl_tool.argv("sendrecv", 8, 8)[0] == "sendrecv_perf"
    with pytest.raises(ValueError, match="no nccl-tests binary"):
        nccl_tool.argv("broadcast", 8, 8)
    with pytest.raises(ValueError, match="size sweep"):
        nccl_tool.argv("all_reduce", 64, 8)


def test_mpirun_plain_job_with_hostfile() -> None:
    parts = [LaunchPart("10.0.0.1", 4), LaunchPart("10.0.0.2", 4)]
    assert launch.hostfile_text(parts) == "10.0.0.1 slots=4\n10.0.0.2 slots=4\n"
    cmd = nccl_tool.argv("all_reduce", 8, 64)
    argv = launch.launcher_argv("mpirun", parts, ["--mca", "btl", "^openib"], cmd, hostfile="/t/hosts")
    assert argv == ["mpirun", "--hostfile", "/t/hosts", "-np", "8", "--mca", "btl", "^openib", *cmd]
    assert launch.needs_hostfile("mpirun", parts)
    with pytest.raises(ValueError, match="hostfile"):
        launch.launcher_argv("mpirun", parts, [], cmd)


def test_rail_group_pins_its_gpu_on_every_host() -> None:
    parts = [LaunchPart("a", 1, (3,)), LaunchPart("b", 1, (3,))]
    cmd = ["all_reduce_perf", "-b", "8"]
    argv = launch.launcher_argv("mpirun", parts, [], cmd, hostfile="/h")
    assert argv == ["mpirun", "--hostfile", "/h", "-np", "2", "env", "CUDA_VISIBLE_DEVICES=3", *cmd]
    argv = launch.launcher_argv("srun", parts, ["--mpi=pmix"], cmd)
    assert argv == ["srun", "-N", "2", "--ntasks-per-node", "1", "--nodelist", "a,b", "--mpi=pmix",
                    "env", "CUDA_VISIBLE_DEVICES=3", *cmd]


def test_pair_on_different_gpus_is_one_mpmd_job() -> None:
    parts = [LaunchPart("10.0.0.1", 1, (2,)), LaunchPart("10.0.0.2", 1, (5,))]
    cmd = ["sendrecv_perf", "-b", "8"]
    assert not launch.needs_hostfile("mpirun", parts)
    assert launch.launcher_argv("mpirun", parts, ["-x", "NCCL_DEBUG=WARN"], cmd) == [
        "mpirun", "-x", "NCCL_DEBUG=WARN",
        "-np", "1", "--host", "10.0.0.1:1", "env", "CUDA_VISIBLE_DEVICES=2", *cmd, ":",
        "-np", "1", "--host", "10.0.0.2:1", "env", "CUDA_VISIBLE_DEVICES=5", *cmd]
    assert launch.launcher_argv("srun", parts, [], cmd) == [
        "srun", "-N", "1", "-n", "1", "--nodelist", "10.0.0.1", "env", "CUDA_VISIBLE_DEVICES=2", *cmd, ":",
        "-N", "1", "-n", "1", "--nodelist", "10.0.0.2", "env", "CUDA_VISIBLE_DEVICES=5", *cmd]


def test_srun_plain_and_bad_launcher() -> None:
    assert launch.srun_argv(2, 8, [], ["x"], ["n1", "n2"]) == [
        "srun", "-N", "2", "--ntasks-per-node", "8", "--nodelist", "n1,n2", "x"]
    with pytest.raises(ValueError, match="mpirun or srun"):
        launch.launcher_argv("pdsh", [LaunchPart("a", 1)], [], ["x"])
    with pytest.raises(ValueError, match="bad host name"):
        launch.hostfile_text([LaunchPart("a b", 1)])
    with pytest.raises(ValueError, match="bad host name"):
        launch.srun_argv(1, 1, [], ["x"], ["-n9"])


def test_metacharacters_stay_one_literal_argument() -> None:
    # Every variable part of every builder survives quoting as exactly the word it was.
    cmd = nccl_tool.argv("all_reduce", 8, 64, directory=f"/opt/{NASTY}")
    built = [
        launch.torchrun_argv(2, 1, 0, f"{NASTY}:1", launch.torch_probe_args(NASTY, NASTY), python=NASTY),
        launch.mpirun_argv(NASTY, 2, [NASTY, "--mca", NASTY], cmd),
        launch.srun_argv(1, 1, [NASTY], cmd),
        launch.exec_with_pidfile_argv(NASTY, cmd),
        launch.kill_pidfile_argv(NASTY),
        launch.tail_from_argv(NASTY, 7),
        launch.remove_tree_argv(NASTY),
        launch.free_port_argv(NASTY),
        launch.module_check_argv([NASTY]),
        launch.which_argv(NASTY),
        *launch.write_file_argvs(NASTY, NASTY + "\n{json}"),
    ]
    for argv in built:
        assert roundtrip(argv) == argv
    assert cmd[0] == f"/opt/{NASTY}/all_reduce_perf"
    assert launch.mpirun_argv(NASTY, 2, [NASTY], cmd).count(NASTY) == 2


def test_shell_helpers_run_literally(tmp_path) -> None:
    """The constant sh programs see their arguments as data, never as code."""
    target = tmp_path / f"job {NASTY.replace('/', '_')}.json"
    text = 'a $(touch pwned) `x` \'q\' "d" \\n %s %d\n' * 50
    for argv in launch.write_file_argvs(str(target), text, chunk_chars=100):
        subprocess.run(build_command(argv), shell=True, check=True, cwd=tmp_path)
    assert target.read_text() == text
    assert not (tmp_path / "pwned").exists()
    out = subprocess.run(build_command(launch.tail_from_argv(str(target), 5)), shell=True, check=True,
                         capture_output=True, text=True, cwd=tmp_path).stdout
    assert out == text[5:]
    pidfile = tmp_path / "pid"
    cmd = launch.exec_with_pidfile_argv(str(pidfile), [sys.executable, "-c", "import os; print(os.getpid())"])
    printed = subprocess.run(build_command(cmd), shell=True, check=True, capture_output=True, text=True).stdout
    assert pidfile.read_text().strip() == printed.strip()  # exec: the pid written is the program's
    done = subprocess.run(build_command(launch.kill_pidfile_argv(str(tmp_path / "absent"))), shell=True, check=False)
    assert done.returncode == 0


def test_module_check_and_free_port_programs() -> None:
    r = subprocess.run(launch.module_check_argv(["json", "no_such_mod_x", "no_pkg_y.sub"], sys.executable),
                       capture_output=True, text=True, check=False)
    assert r.returncode == launch.MISSING_MODULES_EXIT
    assert r.stdout.split() == ["no_such_mod_x", "no_pkg_y.sub"]
    r = subprocess.run(launch.free_port_argv("127.0.0.1", sys.executable), capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0 and 0 < int(r.stdout) < 65536


def test_write_file_chunks_bound_the_argument_size() -> None:
    argvs = launch.write_file_argvs("/t/job.json", "x" * 200_000)
    assert len(argvs) == 4
    assert all(len(build_command(a)) < 100_000 for a in argvs)
    assert argvs[0][2] != argvs[1][2]  # the first truncates, the rest append
    assert launch.write_file_argvs("/t/empty", "") == [["sh", "-c", launch._WRITE, "sh", "/t/empty", ""]]
    with pytest.raises(ValueError):
        launch.mktemp_dir_argv("a/b")


# --------------------------------------------------------------------------- the job, shared


def _ssh_job_text(backend, layer: str, hosts: list[str], plan, monkeypatch) -> dict:
    """The job JSON the SSH backend writes to its hosts: its own staging path, with the
    write captured instead of sent."""
    import json

    written: dict[str, str] = {}

    def write(hosts_, workdirs, name, text, layer_, emit):
        written[name] = text
        return False  # stop there: nothing is launched

    monkeypatch.setattr(backend, "_stage", lambda hosts_, layer_, prefix, emit: {h: f"/t/{h}" for h in hosts_})
    monkeypatch.setattr(backend, "_write_everywhere", write)
    monkeypatch.setattr(backend, "_cleanup", lambda workdirs: None)
    backend._torch_job(layer, hosts, plan, lambda row: None)
    return json.loads(written["job.json"])


def test_the_local_and_ssh_backends_build_one_job(tmp_path, monkeypatch) -> None:
    """One builder (sncheck.launch.job): the same cards, plan, faults and knobs from both
    backends; they differ only in what their launcher adds (heartbeats, CPU pair turns)."""
    import json

    from sncheck.backends.local import LocalBackend
    from sncheck.backends.ssh import SshBackend
    from sncheck.config.faultplan import Fault, FaultPlan
    from sncheck.config.inventory import local_inventory
    from sncheck.launch.job import JOB_SCHEMA, build_job
    from sncheck.probeplan import Group, StressPlan, connectivity_plan
    from sncheck.topology import Topology
    from sncheck.worker import torchdist

    topo = Topology(local_inventory(3))
    faults = FaultPlan((Fault("collective_corruption", "localhost/gpu1"), Fault("slow_card", "localhost/gpu2",
                                                                                 factor=0.5)))
    local = LocalBackend(topo, faults, seed=7, dist_backend="gloo", op_timeout_s=9)
    ssh = SshBackend(topo, faults, seed=7, dist_backend="gloo", op_timeout_s=9, act_faults_on_real_hosts=True)
    stress = StressPlan(groups=(Group("host:localhost", "host", tuple(topo.cards_of_host("localhost"))),),
                        collectives=("all_reduce",), sizes=(4096,), warmup=1, iters=2)
    p2p = connectivity_plan(topo, bw_bytes=1 << 16)
    for layer, plan, local_plan in (("collectives", stress, stress), ("p2p", p2p, local._p2p_plan_dict(p2p))):
        from_ssh = _ssh_job_text(ssh, layer, ["localhost"], plan, monkeypatch)
        from_local = json.loads(local._job(layer, local_plan, tmp_path).to_json())  # as job.json holds it
        assert from_ssh == json.loads(build_job(ssh, layer, topo.cards_of_host("localhost"), plan).to_json())
        launcher_own = {"heartbeat_dir", "serialize_pairs", "golden_config"}
        assert {k: v for k, v in from_ssh.items() if k not in launcher_own} == \
            {k: v for k, v in from_local.items() if k not in launcher_own}
        assert from_ssh["schema"] == from_local["schema"] == JOB_SCHEMA == torchdist.JOB_SCHEMA
        assert from_ssh["cards"] == ["localhost/gpu0", "localhost/gpu1", "localhost/gpu2"]
        assert [f["type"] for f in from_ssh["faults"]] == ["collective_corruption", "slow_card"]
        assert (from_ssh["seed"], from_ssh["op_timeout_s"], from_ssh["dist_backend"]) == (7, 9.0, "gloo")
        assert from_local["heartbeat_dir"] == str(tmp_path) and from_ssh["heartbeat_dir"] is None


def test_a_job_for_an_unknown_layer_is_refused() -> None:
    from sncheck.backends.local import LocalBackend
    from sncheck.config.inventory import local_inventory
    from sncheck.launch.job import build_job
    from sncheck.topology import Topology

    with pytest.raises(ValueError, match="unknown layer 'stres'"):
        build_job(LocalBackend(Topology(local_inventory(2))), "stres", [], {})


def test_the_worker_numbers_cuda_devices_in_bus_order():
    """cuda:N is nvidia-smi's GPU N (the card sncheck names) unless the job's env says otherwise."""
    import os
    import subprocess
    import sys
    code = "import os, sncheck.worker.torchdist; print(os.environ['CUDA_DEVICE_ORDER'])"
    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_ORDER"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "PCI_BUS_ID"
    env["CUDA_DEVICE_ORDER"] = "FASTEST_FIRST"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "FASTEST_FIRST"
