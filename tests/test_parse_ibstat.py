"""ibstat / ibstatus parsers, checked against real captured output in fixtures/real/ib/."""

from __future__ import annotations

from pathlib import Path

import pytest
from parser_checks import only_parse_error_or_json
from hypothesis import given, settings
from hypothesis import strategies as st

from sncheck.errors import ParseError
from sncheck.vendors.infiniband.ibstat import parse_ibstat, parse_ibstatus
from sncheck.vendors.parsers import strip_source_header

REAL = Path(__file__).parent.parent / "fixtures" / "real" / "ib"

PANIC = "03_ibstat_a100_azure_8xIB200_ibpanic_error.txt"
ROCE_12 = "04_ibstat_h100_roce_12CA_all_active_eth.txt"
IBSTATUS = "05_ibstatus_a100_azure_8xHDR.txt"
CX6DX = "06_ibstat_2CA_cx6dx_roce_100g_space_indented.txt"


def load(name: str) -> str:
    return strip_source_header((REAL / name).read_text())


def test_ibpanic_is_an_error_and_the_cas_before_it_are_kept():
    result = parse_ibstat(load(PANIC))
    assert [ca["name"] for ca in result["cas"]] == [f"mlx5_{i}" for i in range(8)]
    assert result["errors"] == [
        "ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory"
    ]
    first = result["cas"][0]
    assert first == {
        "name": "mlx5_0",
        "ca_type": "MT4124",
        "num_ports": 1,
        "firmware_version": "20.41.1000",
        "hardware_version": "0",
        "node_guid": "0x00155dfffe3411eb",
        "system_image_guid": "0xb83fd203006e2704",
        "ports": [
            {
                "port": 1,
                "state": "Active",
                "physical_state": "LinkUp",
                "rate_gbps": 200,
                "base_lid": 13247,
                "lmc": 0,
                "sm_lid": 1,
                "capability_mask": "0xa651ec48",
                "port_guid": "0x00155dfffd3411eb",
                "link_layer": "InfiniBand",
            }
        ],
    }
    assert result["cas"][7]["ports"][0]["base_lid"] == 13305
    assert all(ca["ports"][0]["state"] == "Active" for ca in result["cas"])


def test_h100_roce_twelve_cas_mixed_400_and_100():
    result = parse_ibstat(load(ROCE_12))
    assert len(result["cas"]) == 12 and result["errors"] == []
    ports = [ca["ports"][0] for ca in result["cas"]]
    assert sorted(p["rate_gbps"] for p in ports) == [100] * 4 + [400] * 8
    assert {p["link_layer"] for p in ports} == {"Ethernet"}
    assert {p["state"] for p in ports} == {"Active"} and {
        p["physical_state"] for p in ports
    } == {"LinkUp"}
    by_name = {ca["name"]: ca for ca in result["cas"]}
    assert (
        by_name["mlx5_1"]["ca_type"] == "MT4125"
        and by_name["mlx5_1"]["ports"][0]["rate_gbps"] == 100
    )
    assert by_name["mlx5_10"]["firmware_version"] == "28.39.1002"


def test_space_indented_paste():
    result = parse_ibstat(load(CX6DX))
    assert [ca["name"] for ca in result["cas"]] == ["mlx5_0", "mlx5_1"]
    assert result["cas"][1]["ports"][0]["port_guid"] == "0x0e42a1fffe1dd12b"
    assert result["cas"][1]["system_image_guid"] == "0x0c42a103001dd12a"
    assert result["cas"][0]["ports"][0]["rate_gbps"] == 100


def test_a_port_that_is_down():
    text = (
        load(CX6DX)
        .replace("State: Active", "State: Down", 1)
        .replace("Physical state: LinkUp", "Physical state: Disabled", 1)
    )
    result = parse_ibstat(text)
    port = result["cas"][0]["ports"][0]
    assert (port["state"], port["physical_state"]) == ("Down", "Disabled")
    # a link not up is what the listing shows wrong, as ibv_devinfo and ibportstate say it
    assert result["faults"] == [f"{result['cas'][0]['name']} port 1: Down / Disabled"]
    assert parse_ibstat(load(CX6DX))["faults"] == []
    polling = load(IBSTATUS).replace("4: ACTIVE", "1: DOWN", 1).replace("5: LinkUp", "2: Polling", 1)
    assert parse_ibstatus(polling)["faults"] == ["mlx5_0 port 1: DOWN / Polling"]
    assert parse_ibstatus(load(IBSTATUS))["faults"] == []


def test_ibstatus_blocks_grouped_by_device():
    result = parse_ibstatus(load(IBSTATUS))
    assert result["tool"] == "ibstatus" and result["errors"] == []
    assert [ca["name"] for ca in result["cas"]] == [f"mlx5_{i}" for i in range(9)]
    port = result["cas"][0]["ports"][0]
    assert port == {
        "port": 1,
        "default_gid": "fe80:0000:0000:0000:0015:5dff:fd34:11eb",
        "base_lid": 0x33BF,
        "sm_lid": 1,
        "state": "ACTIVE",
        "state_code": 4,
        "physical_state": "LinkUp",
        "physical_state_code": 5,
        "rate": "200 Gb/sec (4X HDR)",
        "rate_gbps": 200,
        "link_layer": "InfiniBand",
    }
    assert result["cas"][0]["ca_type"] is None
    # mlx5_8 is the host's Ethernet NIC (the device ibstat panicked on in the other capture).
    eth = result["cas"][8]["ports"][0]
    assert (eth["link_layer"], eth["rate_gbps"], eth["rate"]) == (
        "Ethernet",
        40,
        "40 Gb/sec (4X QDR)",
    )
    assert eth["default_gid"] is None and eth["base_lid"] == 0  # "default gid: unknown"


def test_ibstat_and_ibstatus_agree_on_the_same_port():
    # Same node: mlx5_0's port GUID 0x00155dfffd3411eb is the tail of ibstatus's GID,
    # and ibstat's decimal lid 13247 is ibstatus's 0x33bf.
    port = parse_ibstat(load(PANIC))["cas"][0]["ports"][0]
    status = parse_ibstatus(load(IBSTATUS))["cas"][0]["ports"][0]
    assert status["default_gid"].replace(":", "").endswith(port["port_guid"][2:])
    assert port["base_lid"] == status["base_lid"] == 13247
    assert port["rate_gbps"] == status["rate_gbps"] == 200


@pytest.mark.parametrize("parser", [parse_ibstat, parse_ibstatus])
@pytest.mark.parametrize("text", ["", "hello\n", "Port 1:\n\tState: Active\n"])
def test_text_without_devices_raises(parser, text):
    with pytest.raises(ParseError):
        parser(text)


def test_only_an_ibpanic_line_is_an_error_result():
    result = parse_ibstat(
        "ibpanic: [42] main: stat of IB device 'mlx5_0' failed: No such file or directory\n"
    )
    assert result["cas"] == [] and len(result["errors"]) == 1


REAL_LINES = sorted(
    {ln for name in (PANIC, IBSTATUS) for ln in load(name).splitlines()}
)


@pytest.mark.parametrize("parser", [parse_ibstat, parse_ibstatus])
@settings(max_examples=150, deadline=None)
@given(text=st.text())
def test_random_text_only_ever_raises_parse_error(parser, text):
    only_parse_error_or_json(parser, text)


@pytest.mark.parametrize("parser", [parse_ibstat, parse_ibstatus])
@settings(max_examples=100, deadline=None)
@given(
    lines=st.lists(st.sampled_from(REAL_LINES), max_size=40),
    cut=st.integers(min_value=0, max_value=40),
)
def test_shuffled_and_cut_real_lines_only_ever_raise_parse_error(parser, lines, cut):
    only_parse_error_or_json(parser, "\n".join(line[: cut or None] for line in lines))


def test_the_one_port_form_of_ibstat_ca_port() -> None:
    """Harvest 15 (Heioy/Books): 'ibstat mlx4_0 2' was refused ('no CA sections'). ibstat.c's
    ca_stat prints one port so: "%s: '%s'" (node type, CA name), then port_dump(port, alone=1),
    its lines unindented. Read as the CA with that one port; the header with no port block after
    it, or a port cut before 'Link layer', is cut."""
    from sncheck.vendors.parsers import failures, parse_text

    port = ("CA: 'mlx4_0'\nPort 2:\nState: Active\nPhysical state: LinkUp\nRate: 56\nBase lid: 12\nLMC: 0\n"
            "SM lid: 9\nCapability mask: 0x02514868\nPort GUID: 0xec0d9a03000c8982\nLink layer: InfiniBand\n")
    got = parse_text("ibstat", port)
    assert not failures(got), failures(got)
    [ca] = got["cas"]
    assert ca["name"] == "mlx4_0" and [(p["port"], p["state"], p["rate_gbps"], p["base_lid"], p["sm_lid"])
                                       for p in ca["ports"]] == [(2, "Active", 56, 12, 9)]
    for cut in ("CA: 'mlx4_0'\n", port.split("Link layer")[0]):
        assert any("cut short" in f for f in failures(parse_text("ibstat", cut))), cut


def test_ibstat_s_lists_cas_without_ports() -> None:
    """Harvest 15 (Heioy/Books): 'ibstat -s' was read as cut ('0 of its 2 ports listed').
    ibstat.c's ca_stat returns after ca_dump when short_format: no CA has a port block. Whole where
    the pasted command says -s/--short, or where two CAs or more list none (a cut leaves the
    first CA's ports); one CA with none and no command line is still a cut."""
    from sncheck.vendors.parsers import failures, parse_text

    # (each CA its own node GUID, as adapters have: one GUID under two CAs is a CA listed twice, hostile r21)
    ca = ("CA 'mlx4_{n}'\n\tCA type: MT4099\n\tNumber of ports: 2\n\tFirmware version: 2.42.5000\n\tHardware version: 1\n"
          "\tNode GUID: 0xec0d9a03000c898{n}\n\tSystem image GUID: 0xec0d9a03000c8983\n")
    two = ca.format(n="0") + ca.format(n="1")
    for whole in ("#ibstat -s\n" + two, two, "$ ibstat --short mlx4_0\n" + ca.format(n="0"),
                  "#ibstat -s\n" + ca.format(n="0")):
        got = parse_text("ibstat", whole)
        assert not failures(got) and len(got["cas"]) in (1, 2), (whole, failures(got))
    for cut in (ca.format(n="0"), "#ibstat\n" + ca.format(n="0"),
                two + "\tPort 1:\n\t\tState: Active\n", "#ibstat -s\n" + two.rsplit("\tHardware version: 1\n\tNode", 1)[0] + "\n"):
        assert any("cut short" in f for f in failures(parse_text("ibstat", cut))), cut
