"""Mock evidence bundles hold the tool output the mock rendered from real captures, as an
SSH run's hold the real tools' output; rendered on demand, only for hosts evidence asks
about, never kept for the whole fleet."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.backends.mock import MockBackend
from sncheck.cli.main import main
from sncheck.run.inputs import load_faults_text, load_inventory
from sncheck.topology import Topology

INV = Path(__file__).resolve().parents[1] / "fixtures" / "inventories"
FAULTS = """faults:
  - {type: remap_pending, target: node009/gpu1}
  - {type: ib_port_down, target: node011, port: 1, transient: true}
  - {type: missing_tool, target: node013, tool: dcgmi}
"""


def test_mock_renders_a_hosts_tool_output_only_when_asked() -> None:
    topo = Topology(load_inventory(INV / "demo-2sn.yaml"))
    backend = MockBackend(topo, load_faults_text(FAULTS, topo), seed=1)
    rows: list[dict] = []
    backend.host_facts(tuple(topo.inventory.hosts), rows.append)
    assert not backend.__dict__.get("_raw_outputs")  # 16 hosts read, nothing kept
    ib = [o for o in backend.raw_outputs("node011") if o["tool"] == "ibstat"]
    assert len(ib) == 1 and ib[0]["command"] == "ibstat" and "State: Down" in ib[0]["stdout"]
    assert set(backend._raw_outputs) == {"node011"}  # only the host asked about
    # the rows judged the same output
    fact = next(r for r in rows if r["host"] == "node011" and r["fact"] == "ib_ports")
    assert fact["ok"] is False
    dcgmi = next(o for o in backend.raw_outputs("node013") if o["tool"] == "dcgmi")
    assert dcgmi["exit_code"] == 127 and "not found" in dcgmi["stderr"]
    # a retest read after the transient fault ended is rendered as it was read then
    backend2 = MockBackend(topo, load_faults_text(FAULTS, topo), seed=1)
    backend2.host_facts(("node011",), [].append)
    backend2.begin_confirmation()
    backend2.host_facts(("node011",), [].append)
    reads = [o["stdout"] for o in backend2.raw_outputs("node011") if o["tool"] == "ibstat"]
    assert len(reads) == 2 and "State: Down" in reads[0] and "State: Down" not in reads[1]


def test_a_mock_runs_evidence_holds_the_rendered_tool_output(tmp_path: Path) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text(FAULTS.replace(", transient: true", ""))
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["connectivity", "-i", str(INV / "demo-2sn.yaml"), "--backend", "mock",
                                       "--faults", str(faults), "--seed", "1", "--out", str(out), "-q"])
    assert result.exit_code == 1, result.output
    findings = {f["entity"]: f for f in json.loads((out / "results.json").read_text())["findings"]}
    remaps = [f for e, f in findings.items() if e.split("/")[0] == "node009"]  # the host, or its card
    # the port down names rail 0's NIC (its scale-out pairs fold into it); the missing tool the host
    assert len(remaps) == 1 and set(findings) == {remaps[0]["entity"], "node011/nic0", "node013"}, sorted(findings)
    for f in findings.values():
        assert all((out / p).exists() for p in f["evidence"]["files"]), f
    remap = remaps[0]
    texts = {Path(p).name: (out / p).read_text() for p in remap["evidence"]["files"]}
    assert "Pending                           : Yes" in texts["nvidia-smi.txt"]  # the real capture spliced in
    assert "# command: nvidia-smi -q" in texts["nvidia-smi.txt"]
    ib = {Path(p).name: (out / p).read_text() for p in findings["node011/nic0"]["evidence"]["files"]}
    assert "State: Down" in ib["ibstat.txt"]
    missing = {Path(p).name: (out / p).read_text() for p in findings["node013"]["evidence"]["files"]}
    assert "# exit: 127" in missing["dcgmi.txt"]


def test_a_clean_mock_run_records_its_tools_and_versions(tmp_path: Path) -> None:
    """results.json ``tools`` (the report's provenance) names the commands the mock's
    host reads stand for and the versions their output prints, with no finding to ask
    for a host's output; one host of each platform is rendered, not the fleet."""
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["connectivity", "-i", str(INV / "demo-2sn.yaml"), "--backend", "mock",
                                       "--seed", "1", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["findings"] == []
    tools = results["tools"]
    assert {"nvidia-smi -q", "ibstat", "dcgmi diag -r 1"} <= set(tools["commands"]), tools
    assert tools["versions"]["driver"] and tools["versions"]["hca firmware"], tools
    html = (out / "report.html").read_text()
    assert tools["versions"]["driver"][0] in html and "nvidia-smi -q" in html


def test_a_bundles_rows_keep_every_value_and_drop_only_empty_cells() -> None:
    """``rows.jsonl`` of a bundle: each row's cells as plain JSON values, the empty ones
    (null, NaN, NaT, NA) left out; a categorical gives its labels (a slice of a fleet's
    frame keeps thousands of unused categories), and the first ``limit`` rows the masks
    pick, each row's line made once however many masks pick it."""
    import numpy as np
    import pandas as pd

    from sncheck.store.evidence import _Lines
    from sncheck.store.frames import RowFrames

    frame = pd.DataFrame({
        "src": pd.Categorical(["n1/gpu0", None, "n2/gpu1"], categories=[f"n{i}/gpu{j}" for i in range(9) for j in range(8)]),
        "round": pd.Categorical([3, 4, None]),
        "bw": [1.5, float("nan"), 2.0],
        "ok": [True, False, True],
        "count": pd.array([1, None, 7], dtype="Int64"),
        "at": pd.to_datetime(["2026-12-05", None, "2026-12-06"]),
        "note": ["a", None, "c"],
    })
    lines = _Lines(RowFrames({"p2p": frame}))
    picked, total = lines.pick([("p2p", np.array([False, True, True])), ("p2p", np.array([True, True, True]))], 4)
    lines.make()
    rows = lines.lines(picked)
    assert total == 5
    assert rows == [
        '{"round": 4, "ok": false}',
        '{"src": "n2/gpu1", "bw": 2.0, "ok": true, "count": 7, "at": "2026-12-06 00:00:00", "note": "c"}',
        '{"src": "n1/gpu0", "round": 3, "bw": 1.5, "ok": true, "count": 1, "at": "2026-12-05 00:00:00", "note": "a"}',
        '{"round": 4, "ok": false}',
    ]
    assert sorted(lines.made["p2p"]) == [0, 1, 2]  # one line a row, however many masks picked it
