"""Stop 44's review (reviewq): a report that raises, amd-smi monitor rounds cut in a header,
dcgmi -j's Warn read per entry, a watchdog line cut before its message."""

import json
from pathlib import Path

import pytest

from mock_gate import mock_gate

from sncheck.run import runner
from sncheck.run.inputs import load_inventory

R5 = Path(__file__).parent / "data" / "scenarios-r5"


def test_a_report_that_raises_leaves_the_final_record_with_its_isolation(tmp_path, monkeypatch):
    """1d0b453 wrote results.json after the reports and caught only OSError: a report raising
    anything else (a template's error, memory at fleet size) left the last layer's snapshot,
    unfinished, without the isolation the run had carried out."""
    def broken(*_a, **_k):
        raise ValueError("report bug")

    monkeypatch.setattr(runner, "write_reports", broken)
    with pytest.raises(ValueError):
        mock_gate(tmp_path, load_inventory(R5 / "inv-hgx-h100-fat.yaml"),
                  ["{type: slow_nic, target: pb05, port: 6, factor: 0.45}"], seed=1)
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["verdict"] == "error" and res["finished"], res.get("error")
    assert res["error"] == "cannot write the reports: ValueError: report bug", res["error"]
    assert [(i["entity"], i["action"]) for i in res["isolation"]] == \
        [("pb05/nic5", "quarantine"), ("pb05/nic5", "isolate")], res["isolation"]


@pytest.mark.parametrize("processes", [False, True])
def test_amd_smi_monitor_watch_cut_inside_a_later_rounds_header_is_cut_not_refused(processes):
    """81990cc: the last piece only a header ('... TIMESTAMP  GPU') raised 'no GPU header row' and the
    rounds read before were thrown away. Every cut of a three-round watch after its first round is
    read, and fails (cut short)."""
    from test_parse_leftovers_s44 import _monitor_watch

    from sncheck.vendors.parsers import failures, parse_text

    text = _monitor_watch(3, processes=processes)
    heads = [i for i in range(len(text)) if text.startswith("TIMESTAMP  GPU  ", i)][1:]  # rounds 2 and 3
    headers = 0
    for head in heads:  # every cut inside a later round's header, and right after it (no row yet)
        for cut in range(head + 1, text.index("\n", head) + 2):
            got = parse_text("amd-smi-monitor", text[:cut])
            assert failures(got), (cut, text[cut - 30:cut])
            headers += any("cut inside its header" in e for e in failures(got))
    assert headers > 0


def test_dcgmi_json_warn_is_read_per_failed_entry():
    """8eacb18 counted every message of the Software test together: GPU 1 at "Fail" with no message
    of its own became a Warn because GPU 0's and the summary's messages were warn codes. Each
    entry at "Fail" must say its Warn itself."""
    import json as _json

    from test_parse_leftovers_s44 import _dcgm4_json

    from sncheck.vendors.parsers import parse_text

    warn = {"warning": "Persistence mode for GPU 0 is disabled.", "error_id": 29}
    doc = _json.loads(_dcgm4_json(warn))
    software = doc["DCGM Diagnostic"]["test_categories"][0]["tests"][0]
    software["results"][1]["status"] = "Fail"  # GPU 1 failed, saying nothing
    got = parse_text("dcgmi-diag", _json.dumps(doc, indent=4) + "\n")
    assert got["result"] == "Fail", got["result"]
    assert {(g["gpu"], g["result"]) for g in got["tests"][0]["gpus"]} == {(0, "Fail"), (1, "Fail")}
    software["results"][1]["warnings"] = [dict(warn, warning="Persistence mode for GPU 1 is disabled.")]
    got = parse_text("dcgmi-diag", _json.dumps(doc, indent=4) + "\n")
    assert got["result"] == "Warn" and {g["result"] for g in got["tests"][0]["gpus"]} == {"Warn"}
