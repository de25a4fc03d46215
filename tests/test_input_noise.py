"""Input that is not quite input (issue 18, class 7): a host that accepts TCP but never
sends a banner leaves no paramiko traceback on the terminal (the run's ssh.log has it);
a lone surrogate in a YAML or JSON string and an out-of-range --seed are one-line
errors (exit 2), never an internal error."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
DEMO = str(ROOT / "fixtures" / "inventories" / "demo-2sn.yaml")


@pytest.fixture
def silent_host():  # type: ignore[no-untyped-def]
    """A TCP server on loopback that accepts and never says a word."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(2)
    for c in held:
        c.close()
    srv.close()


def test_a_host_that_sends_no_banner_prints_no_traceback(silent_host: int, tmp_path: Path,
                                                          capfd: pytest.CaptureFixture[str]) -> None:
    inv = tmp_path / "inv.yaml"
    inv.write_text("name: t\ndesign: {scale_up: {bandwidth: 100, latency: 3}}\n"
                   "supernodes: [{name: sn0, hosts: 'h[1-2]', cards_per_host: 1}]\n"
                   "ssh: {connect_timeout: 1}\n"
                   f"hosts: {{h1: {{address: 127.0.0.1, port: {silent_host}}}, "
                   f"h2: {{address: 127.0.0.2, port: {silent_host}}}}}\n")  # one endpoint each (H10-09)
    known = tmp_path / "known_hosts"
    known.write_text("")
    cfg = tmp_path / "ssh_config"
    cfg.write_text("")
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["connectivity", "-i", str(inv), "--backend", "ssh", "--ssh-config", str(cfg),
                                  "--known-hosts", str(known), "--out", str(out), "-q"])
    captured = capfd.readouterr()
    terminal = r.output + captured.out + captured.err
    assert r.exit_code == 1, r.output  # unreachable hosts are findings
    assert "Traceback" not in terminal and "paramiko" not in terminal, terminal
    assert "banner" in (out / "ssh.log").read_text().lower()


@pytest.mark.parametrize("seed", ["-5", str(2**32), "1e3"])
def test_seed_out_of_range_is_a_usage_error(seed: str, tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["connectivity", "-i", DEMO, "--backend", "mock", "--seed", seed,
                                  "--out", str(tmp_path / "run")])
    assert r.exit_code == 2 and "--seed" in r.output and "Traceback" not in r.output, r.output
    assert not (tmp_path / "run").exists()


def test_a_lone_surrogate_in_yaml_is_refused_at_its_line(tmp_path: Path) -> None:
    inv = tmp_path / "inv.yaml"
    inv.write_text('name: t\ndesign: {scale_up: {bandwidth: 100, latency: 3}}\n'
                   'supernodes:\n  - name: "sn\\ud800"\n    hosts: "h[1-2]"\n    cards_per_host: 1\n')
    r = CliRunner().invoke(main, ["inventory", "check", str(inv)])
    assert r.exit_code == 2, r.output
    assert f"{inv}:4" in r.output and "surrogate" in r.output and "Traceback" not in r.output


def test_a_lone_surrogate_in_a_fault_plan_leaves_no_internal_error(tmp_path: Path) -> None:
    plan = tmp_path / "f.yaml"
    plan.write_text('faults:\n  - {type: slow_card, target: "node003/gpu2\\udfff", factor: 0.5}\n')
    r = CliRunner().invoke(main, ["connectivity", "-i", DEMO, "--backend", "mock", "--faults", str(plan),
                                  "--out", str(tmp_path / "run")])
    assert r.exit_code == 2 and "surrogate" in r.output and "internal error" not in r.output, r.output


def test_a_lone_surrogate_in_json_is_refused(tmp_path: Path) -> None:
    from sncheck.config.jsonio import read_json
    from sncheck.errors import ConfigError

    p = tmp_path / "b.json"
    p.write_text('{"name": "x\\ud800y"}')
    with pytest.raises(ConfigError, match="surrogate"):
        read_json(p, "baseline")
    p.write_text('{"name": "\\u00e9t\\u00e9 \\ud83d\\ude00"}')  # a real pair and accents are fine
    assert read_json(p, "baseline") == {"name": "été 😀"}
