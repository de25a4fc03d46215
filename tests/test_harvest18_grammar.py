"""Harvest 18's findings (issue 28's measure, fixtures/real/harvest18): values a tool's own output carries
that the view mixed or dropped, held here as capture-shaped texts. Each test failed on main before its fix."""

from __future__ import annotations

from sncheck.vendors.parsers import parse_text

# RCCL issue 1423: two hosts' 'NET/IB : Using' lines (ncclIbInit prints one a process), the first host
# listing seven HCAs, the second eight: the reporter's hang came from the NIC the first host lacked
_TWO_HOSTS = (
    "[3] GRN-1:744139:744139 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.10.98.12<0>\n"
    "[8] GRN-2:525248:525248 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [RO]; "
    "OOB eth0:10.10.98.8<0>\n")


def test_net_keeps_one_lines_devices_with_that_lines_oob() -> None:
    """net had the first line's devices and the last line's OOB: one host's HCAs under another host's
    address. Each line is its own process's: the OOB kept is the chosen line's own."""
    net = parse_text("nccl-debug", _TWO_HOSTS)["net"]
    assert [d["device"] for d in net["devices"]] == ["mlx5_0", "mlx5_1"], net
    assert net["oob"] == "eth0:10.10.98.12<0>", net


def test_every_hosts_own_net_line_is_kept() -> None:
    """A host listing fewer NICs than another was lost (only one line was kept): net_hosts holds each
    host's own line, its devices and OOB."""
    data = parse_text("nccl-debug", _TWO_HOSTS)
    assert data["net_hosts"] == [
        {"host": "GRN-1", "network": "IB", "devices": ["mlx5_0", "mlx5_1"], "oob": "eth0:10.10.98.12<0>"},
        {"host": "GRN-2", "network": "IB", "devices": ["mlx5_0", "mlx5_1", "mlx5_2"], "oob": "eth0:10.10.98.8<0>"},
    ], data["net_hosts"]


def test_a_hosts_bootstrap_socket_line_gives_way_to_its_ib_line() -> None:
    """NCCL up to 2.5 prints the bootstrap's 'NET/Socket : Using' first: each host's record, as net,
    takes its IB line (devices and OOB) over it."""
    text = ("m:20:20 [0] NCCL INFO NET/Socket : Using [0]ib0:192.168.11.1<0>\n"
            "m:20:20 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.1<0>\n"
            "w:50:50 [0] NCCL INFO NET/Socket : Using [0]ib0:192.168.11.2<0>\n"
            "w:50:50 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.2<0>\n")
    data = parse_text("nccl-debug", text)
    assert data["net"]["network"] == "IB" and data["net"]["oob"] == "ib0:192.168.11.1<0>", data["net"]
    assert [(h["host"], h["network"], h["devices"], h["oob"]) for h in data["net_hosts"]] == [
        ("m", "IB", ["mlx5_0"], "ib0:192.168.11.1<0>"), ("w", "IB", ["mlx5_0"], "ib0:192.168.11.2<0>")]
