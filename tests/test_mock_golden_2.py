"""The mock's 2-rank golden reference (fixtures/golden/mock-2.json): 2-card hosts' replicas are
judged like the 4-, 8- and 16-card ones. Without it every 2-card mock host's golden layer was
'golden-not-judged' (r6's duo inventory: 30 extras a seed) and a diverging card there was
never named."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.backends.mock import GOLDEN_REFERENCES
from sncheck.cli.main import main
from sncheck.run.inputs import load_inventory
from sncheck.run.recording import record_golden_curve

ROOT = Path(__file__).resolve().parents[1]
DUO = """name: mock-golden-2
design:
  scale_up:  {bandwidth: "450 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "15 us"}
supernodes:
  - {name: sn0, hosts: "g[1-4]", cards_per_host: 2}
backend:
  type: mock
"""


def _golden(tmp_path: Path, faults: str = "faults: []\n") -> tuple[int, dict, str]:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "inv.yaml").write_text(DUO)
    (tmp_path / "pb.yaml").write_text("name: golden-only\nlayers:\n  - golden\ngate: warning\n")
    (tmp_path / "faults.yaml").write_text(faults)
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(tmp_path / "pb.yaml"), "-i", str(tmp_path / "inv.yaml"), "--backend",
                                  "mock", "--faults", str(tmp_path / "faults.yaml"), "--seed", "3", "--out", str(out),
                                  "-q"])
    return r.exit_code, json.loads((out / "results.json").read_text()), r.output


def test_2_card_hosts_are_judged_by_the_2_rank_reference(tmp_path: Path) -> None:
    code, res, out = _golden(tmp_path)
    assert code == 0 and res["findings"] == [], (out, res["findings"])  # main: golden-not-judged, exit 1
    golden = next(layer for layer in res["layers"] if layer["name"] == "golden")
    assert golden["verdict"] == "pass" and golden["summary"]["reference"]["name"] == "mock-2", golden
    code, res, out = _golden(tmp_path / "d", "faults:\n  - {type: diverge, target: g2/gpu1}\n")
    assert code == 1, out
    assert {(f["entity"], f["rule"]) for f in res["findings"]} == {("g2/gpu1", "golden-loss-out-of-band")}, \
        res["findings"]


def test_the_2_rank_reference_is_the_mock_models_own_clean_runs(tmp_path: Path) -> None:
    """mock-2.json is what `sncheck golden record --backend mock --repeats 10 --seed 0` records
    on 2-card hosts today: the same published model as the other sizes' references, not a
    curve made to fit."""
    (tmp_path / "inv.yaml").write_text(DUO)
    curve = record_golden_curve(load_inventory(str(tmp_path / "inv.yaml")), "mock", 60, 10, 0, "mock-2",
                                lambda _line: None)
    shipped = json.loads((ROOT / "fixtures" / "golden" / f"{GOLDEN_REFERENCES[2]}.json").read_text())
    assert json.loads(json.dumps(curve)) == shipped
