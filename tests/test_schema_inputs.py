"""The pydantic schemas of issue 27 item 5 (sncheck/config/schema.py) against the inputs
the team recorded, and attacked.

Every recorded inventory, fault plan (on each fixture topology), rules file and playbook
loads to the same objects as with the hand-written loaders they replaced, and each one
refused is refused at the same line (tests/data/schema/inputs.json, written by
tests/schema_snapshot.py with main's code at 03d50c4). Hostile documents are each one
line ``file:line: field: why``, exit 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from tests.schema_snapshot import snapshot

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests/data/schema/inputs.json"
# Fields the schemas added to the loaded objects since the reference: (section, field) -> value
# every recorded input has.
ADDED = {("inventories", "description"): None, ("inventories", "near_budget_s"): None}
# ... and to every inventory host: field -> value
ADDED_HOST = {"ssh_gateway": False}


def test_recorded_inputs_load_to_the_same_objects() -> None:
    ref = json.loads(REFERENCE.read_text())
    now = json.loads(json.dumps(snapshot(), sort_keys=True))
    for (section, field), value in ADDED.items():
        for name, loaded in now[section].items():
            assert loaded.pop(field) == value, (name, field)
    for name, loaded in now["inventories"].items():
        for host in (loaded.get("hosts") or {}).values() if isinstance(loaded, dict) else ():
            for field, value in ADDED_HOST.items():
                assert host.pop(field) == value, (name, field)
    assert now.keys() == ref.keys()
    for section in ref:
        assert sorted(now[section]) == sorted(ref[section]), section
        for name in ref[section]:
            assert now[section][name] == ref[section][name], name


GOOD = """\
name: t
supernodes:
  - name: sn0
    hosts: node[001-002]
    cards_per_host: 4
ssh:
  port: 22
"""


def _check(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "inv.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    r = CliRunner().invoke(main, ["inventory", "check", str(path)])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1, r.output
    return r.output.strip().replace(f"{path}:", "inv.yaml:")


@pytest.mark.parametrize("text, says", [
    (GOOD + "  prot: 2\n", "inv.yaml:8: ssh.prot: unknown key 'prot' in ssh; did you mean 'port'?"),
    (GOOD.replace("port: 22", "port: '22'"), "inv.yaml:7: ssh.port: must be an integer from 1 to 65535, got '22'"),
    (GOOD.replace("port: 22", "port: 22.0"), "inv.yaml:7: ssh.port: must be an integer from 1 to 65535, got 22.0"),
    (GOOD.replace("port: 22", "port: true"), "inv.yaml:7: ssh.port: must be an integer from 1 to 65535, got True"),
    (GOOD.replace("port: 22", "port: null"), "inv.yaml:7: ssh.port: must not be null"),
    (GOOD.replace("port: 22", "port: [22]"), "inv.yaml:7: ssh.port: must be an integer from 1 to 65535, got a list"),
    (GOOD.replace("ssh:\n  port: 22", "ssh: [port, 22]"), "inv.yaml:6: ssh: ssh must be a mapping, got a list"),
    (GOOD.replace("cards_per_host: 4", "cards_per_host: 4.5"),
     "inv.yaml:5: supernodes[0].cards_per_host: must be an integer from 1 to 1024, got 4.5"),
    (GOOD.replace("cards_per_host: 4", "cards_per_host: {n: 4}"),
     "inv.yaml:5: supernodes[0].cards_per_host: must be an integer from 1 to 1024, got a mapping"),
    ("supernodes: {name: sn0}\n", "inv.yaml:1: supernodes: must be a non-empty list of supernodes, got a mapping"),
    (GOOD.replace("supernodes:\n", "supernodes: []\n").replace("  - name: sn0\n    hosts: node[001-002]\n"
                                                               "    cards_per_host: 4\n", ""),
     "inv.yaml:2: supernodes: must be a non-empty list of supernodes, got an empty list"),
    (GOOD + "  port: 23\n", "inv.yaml:8: malformed YAML: duplicate key 'port'"),
    (GOOD.replace("    hosts:", "    name: sn1\n    hosts:"), "inv.yaml:4: malformed YAML: duplicate key 'name'"),
    ("x: &a {port: 22, forks: 0}\n" + GOOD.replace("ssh:\n  port: 22", "ssh: {<<: *a}"),
     "inv.yaml:1: x: unknown key 'x' in inventory"),
    ("defaults: &d {port: 22}\n", "inv.yaml:1: defaults: unknown key 'defaults' in inventory"),
    (GOOD.replace("name: t\n", "name: t\nlauncher: &l {type: srun, nope: 1}\n"),
     "inv.yaml:2: launcher.nope: unknown key 'nope' in launcher"),
    (GOOD.replace("name: t", "name: " + "x" * (1 << 20)), "inv.yaml:1: name: is 1048576 characters long (the cap is 4096)"),
    ("- 1\n- 2\n", "inv.yaml: (top level): inventory must be a mapping, got a list"),
    (GOOD.replace("hosts: node[001-002]", "hosts: {a: 1}"),
     "inv.yaml:4: supernodes[0].hosts: must be a hostlist expression (node[001-018]) or a list of them, got a mapping"),
    (GOOD + "hosts:\n  node001: {cards: 0}\n", "inv.yaml:9: hosts.node001.cards: must be an integer from 1 to 1024, got 0"),
    (GOOD + "hosts:\n  7: {cards: 2}\n", "inv.yaml:9: hosts.7: must be a string, got 7"),
    (GOOD + "fabric: {spines: [{name: s0, rails: [0, -1]}]}\n",
     "inv.yaml:8: fabric.spines[0].rails[1]: must be an integer of at least 0, got -1"),
    (GOOD + "fabric: {leaves: [{name: a, ports: {node001/nic0: 0}}]}\n",
     "inv.yaml:8: fabric.leaves[0].ports.node001/nic0: must be an integer from 1 to 65535, got 0"),
    (GOOD.replace("port: 22", "connect_timeout: .nan"),
     "inv.yaml:7: ssh.connect_timeout: must be a finite number of seconds above 0 up to 604800, got nan"),
], ids=lambda x: x if len(x) < 100 else f"{len(x)} characters")
def test_hostile_inventory_is_one_line_naming_file_line_and_field(tmp_path: Path, text: str, says: str) -> None:
    out = _check(tmp_path, text)
    assert says in out, out


def test_a_merge_key_loads_like_the_keys_written_out() -> None:
    from sncheck.run.inputs import load_inventory_text

    merged = load_inventory_text("supernodes:\n  - &sn {name: a, hosts: h1, cards_per_host: 2}\n"
                                 "  - {<<: *sn, name: b, hosts: h2}\n")
    written = load_inventory_text("supernodes:\n  - {name: a, hosts: h1, cards_per_host: 2}\n"
                                  "  - {name: b, hosts: h2, cards_per_host: 2}\n")
    assert merged == written


def test_a_16_mb_file_is_refused_unread(tmp_path: Path) -> None:
    out = _check(tmp_path, GOOD.encode() + b"#" * (16 << 20))
    assert out.startswith("sncheck: error: inv.yaml: ") and "cap" in out, out
