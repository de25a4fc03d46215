"""Configuration cannot run commands (issue 18, class 6): an ssh_config that would run a
local command is refused before paramiko evaluates it, and a name that reaches a
scheduler's argv (``node-check --node``, a drain, a taint) is a host name or an error."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.actions import kubernetes, slurm
from sncheck.cli.main import main
from sncheck.errors import ConfigError

HOSTILE = ["-x", "NodeName=evil", "n01 State=RESUME", "n01\nState=RESUME", "", "a" * 300, "n01;reboot"]


def _recording_tools(tmp_path: Path) -> Path:
    """``scontrol`` and ``sinfo`` that only record that they were called."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("scontrol", "sinfo"):
        p = bin_dir / tool
        p.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/called\n")
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return bin_dir


@pytest.mark.parametrize("node", HOSTILE)
def test_node_check_refuses_a_node_name_that_is_not_a_host_name(tmp_path: Path, node: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{_recording_tools(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    res = CliRunner().invoke(main, ["node-check", "--node", node, "--cards", "1", "--no-collectives"])
    assert res.exit_code == 2, res.output
    assert "bad node name" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    assert not (tmp_path / "called").exists()  # neither sinfo nor scontrol saw it


def test_node_check_refuses_a_hostile_slurmd_nodename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{_recording_tools(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURMD_NODENAME", "n01 State=RESUME")
    res = CliRunner().invoke(main, ["node-check", "--cards", "1", "--no-collectives"])
    assert res.exit_code == 2 and "bad node name" in res.output, res.output
    assert not (tmp_path / "called").exists()


@pytest.mark.parametrize("host", HOSTILE)
@pytest.mark.parametrize("argv", [slurm.query_argv, slurm.resume_argv, kubernetes.get_argv,
                                  kubernetes.cordon_argv, kubernetes.uncordon_argv, kubernetes.untaint_argv])
def test_scheduler_argv_takes_only_host_names(host: str, argv) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="bad host name"):
        argv(host)


def test_scheduler_argv_of_a_good_name() -> None:
    assert slurm.drain_argv("node003", "sncheck: x") == [
        "scontrol", "update", "NodeName=node003", "State=DRAIN", "Reason=sncheck: x"]
    assert kubernetes.cordon_argv("gpu-7.rack2") == ["kubectl", "cordon", "gpu-7.rack2"]


def test_run_with_a_match_exec_ssh_config_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f'Host *\n  User root\nMatch exec "touch {marker}"\n  Port 2299\n')
    inv = tmp_path / "inv.yaml"
    inv.write_text("name: t\ndesign: {scale_up: {bandwidth: 100, latency: 3}}\n"
                   "supernodes: [{name: sn0, hosts: 'h[1-2]', cards_per_host: 1}]\n"
                   "hosts: {h1: {address: 127.0.1.1}, h2: {address: 127.0.1.2}}\n")
    res = CliRunner().invoke(main, ["connectivity", "-i", str(inv), "--backend", "ssh", "--ssh-config", str(cfg),
                                    "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 2, res.output
    assert f"{cfg}:3: Match exec" in res.output and "Traceback" not in res.output
    assert not marker.exists()
