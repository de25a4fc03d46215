from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ConfigError
from sncheck.config.hostlist import expand
from sncheck.config.inventory import local_inventory
from sncheck.run.inputs import load_inventory, load_inventory_text
from sncheck.config.units import parse_bandwidth, parse_latency, parse_size

ROOT = Path(__file__).resolve().parent.parent
INVENTORIES = sorted((ROOT / "fixtures" / "inventories").glob("*.yaml"))

GOOD = """\
name: t
design:
  scale_up:  {bandwidth: "450 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "15 us"}
supernodes:
  - name: sn0
    hosts: node[001-002]
    cards_per_host: 4
  - name: sn1
    hosts: node[003-004]
    cards_per_host: 4
"""


@pytest.mark.parametrize("expr, hosts", [
    ("node[001-003]", ["node001", "node002", "node003"]),
    ("gpu[1-3,7]", ["gpu1", "gpu2", "gpu3", "gpu7"]),
    ("a[1-2],b[08-10]", ["a1", "a2", "b08", "b09", "b10"]),
    ("r[1-2]n[01-02]", ["r1n01", "r1n02", "r2n01", "r2n02"]),
    ("single", ["single"]),
])
def test_hostlist_expands(expr, hosts):
    assert expand(expr) == hosts


@pytest.mark.parametrize("expr", ["node[3-1]", "node[1-", "node[a-b]", "node]1[", "", "bad;host", "a,,b"])
def test_hostlist_rejects(expr):
    with pytest.raises(ValueError):
        expand(expr)


@pytest.mark.parametrize("text, gbps", [("450 GB/s", 450), ("400 Gb/s", 50), ("800 MB/s", 0.8), (25, 25), ("1.5", 1.5)])
def test_bandwidth_units(text, gbps):
    assert parse_bandwidth(text) == pytest.approx(gbps)


@pytest.mark.parametrize("text, us", [("3 us", 3), ("3µs", 3), ("2 ms", 2000), ("500 ns", 0.5), (7, 7)])
def test_latency_units(text, us):
    assert parse_latency(text) == pytest.approx(us)


@pytest.mark.parametrize("bad", ["450 GB", "fast", "-3 us", "3 parsecs"])
def test_bad_units(bad):
    with pytest.raises(ValueError):
        parse_latency(bad) if "us" in bad or "parsec" in bad else parse_bandwidth(bad)


def test_sizes():
    assert parse_size("1G") == 1 << 30 and parse_size("64K") == 65536 and parse_size(8) == 8


@pytest.mark.parametrize("path", INVENTORIES, ids=lambda p: p.name)
def test_shipped_inventories_load(path):
    inv = load_inventory(path)
    assert inv.card_count > 0 and inv.design_for("scale_up") is not None


def test_shipped_sizes():
    by_name = {p.stem: load_inventory(p) for p in INVENTORIES}
    assert by_name["demo-2sn"].card_count == 64 and len(by_name["demo-2sn"].supernodes) == 2
    assert by_name["nvl72"].card_count == 72 and by_name["nvl72"].design["scale_up"].bandwidth_GBps == 900
    assert by_name["pod-384"].card_count == 384


def test_overrides_and_ssh():
    inv = load_inventory_text(GOOD + "ssh: {user: root, port: 22}\nhosts:\n  node001: {address: 127.0.1.1, port: 2222, user: ops}\n")
    h = inv.hosts["node001"]
    assert (h.address, h.port, h.user, h.supernode, h.cards) == ("127.0.1.1", 2222, "ops", "sn0", 4)
    assert inv.ssh.user == "root" and inv.hosts["node002"].address is None


def test_local_inventory():
    inv = local_inventory(3)
    assert inv.card_count == 3 and inv.design == {} and inv.backend == "local"
    with pytest.raises(ConfigError):
        local_inventory(1)


BAD = {
    "unknown_key": (GOOD.replace("name: t", "name: t\nsupernode: []"), 2, "did you mean 'supernodes'"),
    "unknown_nested": (GOOD.replace("cards_per_host: 4\n  - name: sn1", "cards_per_hots: 4\n  - name: sn1"), 8, "did you mean 'cards_per_host'"),
    "bad_unit": (GOOD.replace('"3 us"', '"3 parsecs"'), 3, "unknown latency unit"),
    "bad_bw_unit": (GOOD.replace('"450 GB/s"', '"450 GiB"'), 3, "unknown bandwidth unit"),
    "duplicate_host": (GOOD.replace("node[001-002]", "node[001-002],node001"), 7, "listed twice"),
    "two_supernodes": (GOOD.replace("node[003-004]", "node[002-004]"), 10, "in two supernodes"),
    "zero_cards": (GOOD.replace("cards_per_host: 4\n  - name: sn1", "cards_per_host: 0\n  - name: sn1"), 8, "must be an integer from 1 to 1024"),
    "text_cards": (GOOD.replace("cards_per_host: 4\n  - name: sn1", "cards_per_host: four\n  - name: sn1"), 8, "must be an integer from 1 to 1024"),
    "empty_supernode": (GOOD.replace("node[003-004]", '""'), 10, "has no hosts"),
    "bad_hostlist": (GOOD.replace("node[003-004]", "node[004-003]"), 10, "runs backwards"),
    "malformed": (GOOD + "  - {name: sn2, hosts: [\n", 13, "malformed YAML"),
    "override_unknown_host": (GOOD + "hosts:\n  node999: {port: 22}\n", 13, "in no supernode"),
    "shell_in_address": (GOOD + "hosts:\n  node001: {address: '127.0.0.1; rm -rf /'}\n", 13, "not allowed"),
    # hostile round 25: h1 and h1.example.com were taken as two hosts (one machine, measured twice)
    "short_and_domain_name": (GOOD.replace("node[003-004]", "node003,NODE001.example.com"), 10,
                              "host 'NODE001.example.com' and host 'node001' may be one machine"),
}


def test_two_domain_names_and_addresses_are_two_hosts():
    inv = load_inventory_text(GOOD.replace("node[003-004]", "node003.a.example,node003.b.example,10.0.0.3,10.0.1.3"))
    assert len(inv.hosts) == 6


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_inventory_names_file_and_line(tmp_path, case):
    text, line, needle = BAD[case]
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["inventory", "check", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}:" in result.output and needle in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_inventory_check_ok():
    result = CliRunner().invoke(main, ["inventory", "check", str(ROOT / "fixtures/inventories/demo-2sn.yaml")])
    assert result.exit_code == 0, result.output
    assert "2 supernodes, 16 hosts, 64 cards" in result.output


def test_missing_file():
    result = CliRunner().invoke(main, ["inventory", "check", "/nonexistent/inv.yaml"])
    assert result.exit_code == 2 and "file not found" in result.output
