"""The review of stop 47: cases its reviewer found short in what landed that session."""

from __future__ import annotations

from sncheck.vendors.amd import amd_smi_xgmi, checks
from sncheck.vendors.facts import Expect
from test_harvest20_grammar import _BDFS
from test_parse28g import _ports_table


def test_a_gpu_with_every_xgmi_port_disabled_beside_healthy_ones_has_lost_its_links() -> None:
    """6.4-7.1's per-port XGMI LINK STATUS: a port X is disabled (MI300X: one of eight on every
    GPU). GPU0 with all eight X beside seven GPUs of 7 U and 1 X read no fault and '49/49 links up'
    (a006c07 counted an X as nothing); the configuration disables the same ports on every GPU of a
    hive, so GPU0's seven more are links lost."""
    got = amd_smi_xgmi.parse_amd_smi_xgmi(_ports_table([["X"] * 8] + [["U"] * 7 + ["X"]] * 7))
    assert got["faults"] == ["GPU0: 8 of 8 XGMI ports disabled (X), where other GPUs here have 1: links lost"], got
    row = checks.check_xgmi_status("n1", got, Expect(cards=8))[0]
    assert row["ok"] is False and set(row["cards"]) == {"0"}, row  # the card named, not the host


def test_every_xgmi_port_disabled_is_no_link_not_a_pass() -> None:
    """Every port of every GPU X: no XGMI link at all read '0/0 links up', ok (exit 0)."""
    got = amd_smi_xgmi.parse_amd_smi_xgmi(_ports_table([["X"] * 8] * 8))
    assert got["errors"] == ["every XGMI port of the 8 GPUs disabled (X): no XGMI link in this output: not measured"]
    row = checks.check_xgmi_status("n1", got, Expect(cards=8))[0]
    assert row["ok"] is False, row


def test_a_link_status_row_with_more_cells_than_its_header_s_gpus_is_no_whole_row() -> None:
    """A per-peer LINK STATUS row with more states than the header names GPUs (a header that lost a
    column) read by zip: the extra state dropped, its peer unjudged, no error (a2233ff checked fewer only)."""
    text = ("LINK STATUS TABLE:\n       bdf          " + " ".join(_BDFS) + "\n"
            f"GPU0   {_BDFS[0]} X U D\nGPU1   {_BDFS[1]} U X\n")
    assert amd_smi_xgmi.parse_amd_smi_xgmi(text)["errors"] == [
        "GPU0: 3 link status cells for 2 GPUs: a GPU column of the header lost"]


def test_a_control_whose_pairs_with_other_controls_failed_is_not_only_beside_the_suspect() -> None:
    """8be65ee's only_beside read status 'ok' rows alone: a control whose pairs with the other
    controls failed (the clearest sign it is bad) read 'measured only against the suspect', and its
    finding became the suspect's hit: the dead control never seen."""
    import pandas as pd

    from sncheck.run.retestbar import only_beside

    rows = pd.DataFrame([{"kind": "p2p", "src": "a2/gpu0", "dst": "a1/gpu0", "status": "ok"},
                         {"kind": "p2p", "src": "a2/gpu1", "dst": "a1/gpu0", "status": "ok"},
                         {"kind": "p2p", "src": "a1/gpu0", "dst": "a1/gpu1", "status": "error"},
                         {"kind": "p2p", "src": "a1/gpu0", "dst": "a1/gpu2", "status": "timeout"}])
    assert only_beside({"a1/gpu0"}, {"a2/gpu0", "a2/gpu1"}, rows, None, None) is False  # type: ignore[arg-type]
    assert only_beside({"a1/gpu0"}, {"a2/gpu0", "a2/gpu1"}, rows[:2], None, None) is True  # type: ignore[arg-type]


def test_xgmi_ports_disabled_alike_on_every_gpu_fall_short_of_the_platform_s_links() -> None:
    """The reviewer's second case: every GPU 'U U U U U U X X' (a link disabled on each, a perfect
    matching) passed as '48/48 links up': judged only against the hive's fewest X. The platform says
    how many links a GPU has (MI300X: 7): fewer ports enabled are links lost. Without a platform the
    output cannot say, and stays as read."""
    from sncheck.vendors.amd.plugin import MI300X

    got = amd_smi_xgmi.parse_amd_smi_xgmi(_ports_table([["U"] * 6 + ["X", "X"]] * 8))
    row = checks.check_xgmi_status("n1", got, Expect(cards=8, platform=MI300X))[0]
    assert row["ok"] is False and set(row["cards"]) == {str(g) for g in range(8)}, row
    assert "GPU0: 6 XGMI ports enabled, the platform has 7: links lost" in row["message"]
    healthy = amd_smi_xgmi.parse_amd_smi_xgmi(_ports_table([["U"] * 7 + ["X"]] * 8))
    assert checks.check_xgmi_status("n1", healthy, Expect(cards=8, platform=MI300X))[0]["ok"] is True


def test_a_sqlite_side_file_removed_between_the_two_looks_is_no_dangling_link(tmp_path, monkeypatch) -> None:
    """The suite of stop 47 (random order): three isolate/release commands at once on one state
    directory; one exited 2, 'state.db-shm: the state store's file cannot be used (No such file or
    directory): a dangling link?'. Another sncheck closing the store had SQLite remove its -shm side
    file between check_files' lexists and its stat. A file gone is no file to refuse; a dangling link
    (still there) is refused as before."""
    import os

    import pytest

    from sncheck.errors import ConfigError
    from sncheck.store import statedir

    db = tmp_path / "state.db"
    db.write_bytes(b"")
    shm = tmp_path / "state.db-shm"
    shm.write_bytes(b"")
    real_stat = os.stat

    def vanishing(path, *args, **kwargs):
        if str(path) == str(shm) and os.path.lexists(str(shm)):
            shm.unlink()  # the other process's close, just after our lexists
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(statedir.os, "stat", vanishing)
    statedir.check_files(db)  # no error: the side file is gone, not dangling
    monkeypatch.setattr(statedir.os, "stat", real_stat)
    shm.symlink_to(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="dangling link"):
        statedir.check_files(db)


def test_a_gpu_short_of_its_hive_and_its_platform_is_said_once() -> None:
    """GPU0 with every port X beside healthy GPUs, under MI300X: one 'links lost' for GPU0, not the
    hive's and the platform's each (the lead's reread of 14a9213 beside the platform check)."""
    from sncheck.vendors.amd.plugin import MI300X

    got = amd_smi_xgmi.parse_amd_smi_xgmi(_ports_table([["X"] * 8] + [["U"] * 7 + ["X"]] * 7))
    row = checks.check_xgmi_status("n1", got, Expect(cards=8, platform=MI300X))[0]
    assert row["ok"] is False and set(row["cards"]) == {"0"} and row["message"].count("GPU0:") == 1, row["message"]
