"""Every inventory key the reader accepts reaches the code, or is refused (issue 27, part C:
``launcher.hostfile_slots`` was validated and silently dropped).

For each key table of sncheck/config/inventory.py a sample value other than the default is
set, and the parsed Inventory must differ from the one read without it. A key added to a
table without a sample here fails the test (say what it changes, or refuse it)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.config import inventory as inv
from sncheck.errors import ConfigError
from sncheck.run.inputs import load_inventory_text

BASE = """name: keys
design:
  scale_up: {bandwidth: "450 GB/s", latency: "3 us"}
supernodes:
  - name: sn0
    hosts: node[001-002]
    cards_per_host: 2
backend:
  type: ssh
"""

SAMPLES = {  # table -> key -> a YAML value that is not the default
    "launcher": {"type": "srun", "extra_args": "['--bind-to', 'none']", "nccl_tests_dir": "/opt/nccl-tests",
                 "parallel_steps": "5"},
    "ssh": {"user": "alice", "port": "2222", "identity_file": "/keys/id_ed25519", "known_hosts": "/keys/known_hosts",
            "connect_timeout": "7", "command_timeout": "99", "forks": "3"},
    "backend": {"type": "mock", "dist_backend": "gloo"},
}
TABLES = {"launcher": inv.LAUNCHER_KEYS, "ssh": inv.SSH_KEYS, "backend": inv.BACKEND_KEYS}


def _with(table: str, key: str, value: str) -> str:
    if table == "backend":
        body = {"type": "ssh", key: value}
        return BASE.replace("backend:\n  type: ssh\n",
                            "backend:\n" + "".join(f"  {k}: {v}\n" for k, v in body.items()))
    return BASE + f"{table}:\n  {key}: {value}\n"


def test_every_key_has_a_sample() -> None:
    assert {t: sorted(keys) for t, keys in TABLES.items()} == {t: sorted(s) for t, s in SAMPLES.items()}


@pytest.mark.parametrize("table, key", [(t, k) for t, keys in TABLES.items() for k in keys])
def test_each_accepted_key_reaches_the_inventory(table: str, key: str) -> None:
    base = load_inventory_text(BASE)
    changed = load_inventory_text(_with(table, key, SAMPLES[table][key]))
    assert changed != base, f"{table}.{key} is accepted but changes nothing in the parsed inventory"


def test_hostfile_slots_is_refused_with_its_line(tmp_path) -> None:
    text = BASE + "launcher:\n  type: mpirun\n  hostfile_slots: 4\n"
    with pytest.raises(ConfigError) as e:
        load_inventory_text(text, "inv.yaml")
    assert "hostfile_slots" in str(e.value) and "not used" in str(e.value)
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    r = CliRunner().invoke(main, ["inventory", "check", str(path)])
    assert r.exit_code == 2, r.output
    assert f"{path}:12:" in r.output and "hostfile_slots" in r.output
