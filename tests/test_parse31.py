"""parse31: amd-smi-json reads amd-smi's documents by the keys each command prints (amd_smi_json.py, from
amdsmi_cli's own source), and refuses a JSON value that is none of them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ParseError
from sncheck.vendors.amd import amd_smi
from sncheck.vendors.parsers import failures, parse_text


@pytest.mark.parametrize("doc", [
    {"password": "hunter22", "user": "root"},  # an object: no id, not version's, none of amd-smi's keys
    [{"password": "hunter22"}],  # a list of objects without the logger's id
    [{"gpu": 0, "password": "hunter22"}],  # the id, and a key no command stores
    [{"gpu": "zero", "usage": {}}],  # the id as no logger writes it (int(gpu_id))
    [1, 2, 3],  # a list of scalars
    {"gpu_data": "hunter22", "extra": 1},  # 26.x's key around no list, and a foreign one
])
def test_a_json_value_no_amd_smi_command_prints_is_refused(doc: object, tmp_path) -> None:
    """Before: any JSON object was a GPU record ({"password": ...} read as gpus[0], exit 0)."""
    with pytest.raises(ParseError):
        amd_smi.parse_amd_smi_json(json.dumps(doc, indent=4))
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc, indent=4) + "\n")
    got = CliRunner().invoke(main, ["parse", "amd-smi-json", str(path)])
    said = got.output.strip().splitlines()
    assert got.exit_code == 1 and len(said) == 1 and str(path) in said[0] and "hunter22" not in got.output, got.output
    assert "no amd-smi" in said[0] or "not amd-smi's" in said[0], said


def test_a_foreign_record_among_gpus_is_an_error_the_gpus_kept() -> None:
    doc = [{"gpu": 0, "usage": {"gfx_activity": {"value": 3, "unit": "%"}}}, {"gpu": 1, "ssh_key": "AAAA"}]
    got = parse_text("amd-smi-json", json.dumps(doc))
    assert [g["gpu"] for g in got["gpus"]] == [0]
    assert [e for e in failures(got) if "device record 2 of 2 is no amd-smi record" in e], failures(got)


def test_version_and_26x_combined_documents_read_by_their_parts() -> None:
    """amd-smi version --json ([self.output]) was read as one GPU; 26.x's {"xgmi_metric": [[...]], ...} too."""
    version = [{"tool": "AMDSMI Tool", "version": "24.6.3", "amdsmi_library_version": "24.6.3", "rocm_version": "6.2.2"}]
    got = amd_smi.parse_amd_smi_json(json.dumps(version))
    assert got["gpus"] == [] and got["version"]["rocm_version"] == "6.2.2" and not got["errors"]
    rec = {"gpu": 0, "bdf": "0000:05:00.0", "link_metrics": {"bit_rate": {"value": 32, "unit": "Gb/s"}, "links": []}}
    got = amd_smi.parse_amd_smi_json(json.dumps({"xgmi_metric": [[rec, {**rec, "gpu": 1}]], "link_status": [
        {"gpu": 0, "bdf": "0000:05:00.0", "link_status": ["U"]}]}))
    assert [g["gpu"] for g in got["gpus"]] == [0, 1] and got["link_status"][0]["link_status"] == ["U"]


def test_a_jq_section_and_a_cut_record_are_still_read() -> None:
    """What stays: `| jq '.[0].vram'` (amd-smi's own keys, no id) and a document cut before a record's id."""
    assert amd_smi.parse_amd_smi_json('{"type": "HBM", "size": {"value": 196592, "unit": "MB"}}')["gpus"][0]["type"] == "HBM"
    cut = amd_smi.parse_amd_smi_json('[\n    {\n        "gpu": 0,\n        "power": {"socket_power": "N/A"}\n    },\n    {\n')
    assert cut["gpus"][0]["gpu"] == 0 and any("cut short" in e for e in cut["errors"])


def test_the_simulated_hccn_tool_prints_the_vendor_s_net_health_status() -> None:
    """hccn_link_down's -net_health line is tool_ops.c's 'net health status: Socket fail' (g_net_health_status[1]);
    the simulator printed faultdiag 910A capture's 'Socket failed', a wording no source prints (parse30)."""
    from sncheck.vendors.ascend import sim
    from sncheck.vendors.ascend.hccn_tool_grammar import NET_HEALTH

    class Fault:
        type, target = "hccn_link_down", "cm006/gpu2"

    out = sim.outputs("cm006", 0, [Fault()])["roce_net_health"]
    statuses = [ln.split(": ", 1)[1] for ln in out.splitlines() if ln.startswith("net health status: ")]
    assert len(statuses) == 16 and statuses[2] == "Socket fail" and set(statuses) <= set(NET_HEALTH), statuses


def test_ibqueryerrors_link_info_cut_or_edited_is_an_error_not_skipped() -> None:
    """print_port_config's 'Link info:' line (-r) was skipped whatever it held; one cut inside its link, or under
    no port, is now an error (ibqueryerrors.c @691953d)."""
    head = 'Errors for "node11 HCA-1"\n   GUID 0x0002c90300005678 port 1: [LinkDownedCounter == 2]\n'
    tail = ("\n## Summary: 1 nodes checked, 1 bad nodes found\n"
            "##          2 ports checked, 1 ports have errors beyond threshold\n## Thresholds: \n## Suppressed:\n")
    whole = '       Link info:     21   1[  ] ==(                Down/ Polling)==>             [  ] "" ( )\n'
    assert parse_text("ibqueryerrors", head + whole + tail)["ports"][0]["link"]["state"] == "Down"
    for bad in ('       Link info:     21   1[  ] ==(                Down/ Pol\n',
                '       Link info:     21   2[  ] ==(                Down/ Polling)==>             [  ] "" ( )\n'):
        got = parse_text("ibqueryerrors", head + bad + tail)
        assert any("'Link info:' line not as ibqueryerrors prints it" in e for e in failures(got)), failures(got)


def test_hccn_link_value_cut_inside_is_no_fault_of_the_npu() -> None:
    """tool_ops.c tool_link_get_linkstatus prints 'link status: UP' or 'DOWN' only: 'DOW' was a fault 'link DOW'
    on the NPU's NIC (parse and the run's roce_link alike); now the line's cut, said, and no NIC named."""
    from sncheck.vendors import hostjudge
    from sncheck.vendors.ascend import checks, sweep

    got = parse_text("hccn-link", "link status: DOW\n")
    assert got["link"] is None and any("no status hccn_tool prints" in e for e in failures(got)), got
    text = "".join(f"== device {i} link\nlink status: {'DOW' if i == 2 else 'UP'}\n" for i in range(4))
    row, = checks.check_link("h1", sweep.parse_sweep(text), hostjudge.Expect(cards=4))
    assert not row["ok"] and not row.get("nics") and "NPU 2: link" not in row["message"], row
    assert "no status hccn_tool prints" in row["message"], row


def test_a_net_health_status_cut_inside_names_no_npu_in_the_run() -> None:
    """parse30 read a status outside g_net_health_status as null with an error; the run's roce_net_health still
    named the NPU ('NPU 2: net health None'), its NIC the finding's entity, for a cut line."""
    from sncheck.vendors import hostjudge
    from sncheck.vendors.ascend import checks, sweep

    text = "".join(f"== device {i} net_health\nnet health status: {'Socket f' if i == 2 else 'Success'}\n"
                   for i in range(4))
    row, = checks.check_net_health("h1", sweep.parse_sweep(text), hostjudge.Expect(cards=4))
    assert not row["ok"] and "NPU 2: net health" not in row["message"], row
    assert "no status hccn_tool prints" in row["message"], row
